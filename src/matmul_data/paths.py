"""Where the repository's pieces live, and which results file the site, the charts and the benchmark use."""

from __future__ import annotations

import os
from pathlib import Path

# The package is installed in editable mode from the repository (src/matmul_data), so the checkout is two up.
ROOT = Path(__file__).resolve().parents[2]
SRC_DIR = ROOT / "src"  # the packages: what a child process (``python -m <package>``) must import from this checkout
KERNEL_DIR = ROOT / "examples" / "hopper_matmul"
DOCS_DIR = ROOT / "docs"
CHAPTERS_DIR = DOCS_DIR / "chapters"
PLOTS_DIR = ROOT / "plots"
RESULTS_DIR = PLOTS_DIR / "results"
BUILD_DIR = ROOT / "build"

ENV_RESULTS = "HOPPER_MATMUL_RESULTS"
# $HOPPER_MATMUL_RESULTS set to this says "no results file": the site with every number "not measured yet" (a path
# that does not exist is an error instead: a typo must not publish a site with no numbers). How to make a results
# file is the callers' to say: the data core names no command of the benchmark.
NO_RESULTS = os.devnull


class ResultsFileError(ValueError):
    """It is not clear which results file to use; the message says how to choose."""


def results_file() -> Path | None:
    """The results file to read: ``$HOPPER_MATMUL_RESULTS`` when set, else the one file in plots/results/; None when
    there is none yet, or the variable is :data:`NO_RESULTS` (the site then says "not measured yet"); the variable
    naming no file, or several files and no choice, is an error that says how to choose."""
    override = os.environ.get(ENV_RESULTS)
    if override:
        if Path(override) == Path(NO_RESULTS):
            return None
        if not Path(override).is_file():
            raise ResultsFileError(f"{ENV_RESULTS}={override}: no such results file; point it at one, unset it to use "
                                   f"the one in {RESULTS_DIR}, or set it to {NO_RESULTS} for none")  # fmt: skip
        return Path(override)
    found = sorted(RESULTS_DIR.glob("*.json"))
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise ResultsFileError(f"{RESULTS_DIR}: several results files ({names}); set {ENV_RESULTS} to the one to use")
    return found[0] if found else None


def child_env(**extra: str) -> dict[str, str]:
    """This process's environment, with ``extra`` and src/ first on PYTHONPATH, for a child process of this
    checkout's packages: it imports them from here, not an installed copy found first elsewhere."""
    env = dict(os.environ, **extra)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(SRC_DIR), env.get("PYTHONPATH")]))
    return env
