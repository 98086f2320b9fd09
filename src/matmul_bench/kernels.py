"""Kernels as the benchmark runs them: the loader (:mod:`matmul_data.loader`, re-exported), a script pinned to a
configuration, and the command line and environment of a child process."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from matmul_data import paths
from matmul_data.decoding import Config

# The loader, re-exported for the benchmark's modules.
from matmul_data.loader import (  # noqa: F401
    EXPERIMENTS_DIR,
    KERNEL_DIR,
    SPECS_DIR,
    SpecError,
    import_spec,
    load,
    load_file,
)


def kernel_class(file: Path | str, cls: str) -> type:
    """The Tilus script class ``cls`` of a kernel or experiment file."""
    found = getattr(load_file(file), cls, None)
    if not isinstance(found, type):
        raise SpecError(f"{file} defines no class {cls}")
    return found


def make_kernel(file: Path | str, cls: str, config: Config | None, autotune: bool = False) -> Any:
    """An instance of the script: pinned to ``config``; with None, the file's ``config_for`` at each problem, else its
    ``TUNED`` (or, with ``autotune``, Tilus's whole autotune space)."""
    common = load("common")
    module = load_file(file)
    script = kernel_class(file, cls)
    if config is not None:
        return common.pinned(script, config)()
    if autotune:
        return script()
    rule = getattr(module, "config_for", None)
    if callable(rule):
        return common.PerProblem(script, rule)
    tuned = getattr(module, "TUNED", None)
    return common.pinned(script, tuned)() if isinstance(tuned, dict) else script()


def command(*args: str) -> list[str]:
    """The command line that runs ``python -m matmul_bench <args>`` in a child process."""
    return [sys.executable, "-m", "matmul_bench", *args]


def child_env() -> dict[str, str]:
    """This process's environment with src/ on PYTHONPATH (so that a child imports these packages too), unbuffered:
    a child's lines arrive as it prints them."""
    return paths.child_env(PYTHONUNBUFFERED="1")
