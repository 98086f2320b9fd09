"""Where the reader's kernels live, and how the tooling imports them and starts processes that do.

The kernel files import their helpers by bare name (``import common``, ``from pipeline import
Pipeline``), as a reader running ``python examples/hopper_matmul/matmul_v3.py`` does; the tooling puts
that folder on ``sys.path`` once, here, before it imports any of them.
"""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

from matmul_data import paths

KERNEL_DIR = paths.KERNEL_DIR
PACKAGE_ROOT = Path(__file__).resolve().parents[1]  # src/: matmul_bench and matmul_site


def use_kernel_dir(kernel_dir: Path = KERNEL_DIR) -> None:
    """Make ``import common`` and ``import matmul_v3`` work in this process."""
    if str(kernel_dir) not in sys.path:
        sys.path.insert(0, str(kernel_dir))


def command(*args: str) -> list[str]:
    """The command line that runs ``python -m matmul_bench <args>`` in a child process."""
    return [sys.executable, "-m", "matmul_bench", *args]


def child_env() -> dict[str, str]:
    """This process's environment, with src/ on PYTHONPATH so that a child finds the packages too."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(PACKAGE_ROOT), env.get("PYTHONPATH", "")) if p)
    return env


class SpecError(ValueError):
    """A spec file (experiments/steps.py, experiments/tryit.py) that is missing or does not import."""


def import_spec(path: Path, kind: str) -> ModuleType:
    """A spec module of plain data, imported by path; SpecError says why it cannot be read."""
    if not path.is_file():
        raise SpecError(f"{kind} spec {path} does not exist")
    spec = importlib.util.spec_from_file_location(f"_{kind.replace('-', '_')}_spec_{path.stem}", path)
    if spec is None or spec.loader is None:
        raise SpecError(f"cannot import the {kind} spec {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # as importlib's own recipe: a dataclass in the module looks itself up there
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # a spec that does not import is a usage problem, reported before any run
        del sys.modules[spec.name]
        raise SpecError(f"cannot import the {kind} spec {path}: {type(exc).__name__}: {exc}") from exc
    return module
