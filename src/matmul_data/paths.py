"""Where the repository's pieces live, and which results file the site, the charts and the benchmark use."""

from __future__ import annotations

import os
from pathlib import Path

# The package is installed in editable mode from the repository (src/matmul_site), so the checkout is two up.
ROOT = Path(__file__).resolve().parents[2]
KERNEL_DIR = ROOT / "examples" / "hopper_matmul"
DOCS_DIR = ROOT / "docs"
CHAPTERS_DIR = DOCS_DIR / "chapters"
PLOTS_DIR = ROOT / "plots"
RESULTS_DIR = PLOTS_DIR / "results"
BUILD_DIR = ROOT / "build"

ENV_RESULTS = "HOPPER_MATMUL_RESULTS"
# How to make a results file when there is none: part of every "missing" message.
HOW_TO_CREATE = "create it by running `nox -s bench` on a machine with a Hopper GPU (H100/H200)"


class ResultsFileError(ValueError):
    """It is not clear which results file to use; the message says how to choose."""


def results_file() -> Path | None:
    """The results file to read: ``$HOPPER_MATMUL_RESULTS`` when set, else the one file in plots/results/; None when
    there is none yet (the site then says "not measured yet"); several files and no choice is an error naming them."""
    override = os.environ.get(ENV_RESULTS)
    if override:
        return Path(override) if Path(override).exists() else None
    found = sorted(RESULTS_DIR.glob("*.json"))
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise ResultsFileError(f"{RESULTS_DIR}: several results files ({names}); set {ENV_RESULTS} to the one to use")
    return found[0] if found else None
