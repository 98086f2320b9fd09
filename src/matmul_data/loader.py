"""The one loader of the kernels, their helpers, the experiments' drafts and the benchmark's plain-data specs
(torch-free: it imports what it is asked for, nothing more). The benchmark, the generator, the tests, the
experiments and the figures use it; nothing else edits ``sys.path`` or imports a file by its path."""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import sys
from pathlib import Path
from types import CodeType, ModuleType

from matmul_data import paths

KERNEL_DIR = paths.KERNEL_DIR
EXPERIMENTS_DIR = paths.ROOT / "experiments"
# The benchmark's inputs, plain data read by path (import_spec): the steps runs (steps.py), the chapters' Try it
# edits (tryit.py). Not on sys.path: nothing imports them by name.
SPECS_DIR = paths.ROOT / "specs"
# The kernel files import their siblings by bare name (``import common``), as ``python matmul_v3.py`` does in
# their folder; the experiments import theirs (``streamk``) the same way. These folders go on sys.path here only.
FOLDERS = (KERNEL_DIR, EXPERIMENTS_DIR)


class _FreshSourceLoader(importlib.machinery.SourceFileLoader):
    """For :func:`load_file` (specs, edited copies): compiles the file as it is now, never from a cached .pyc.
    Python's cache is keyed on the source's mtime in whole seconds and its size, so an edit of the same size within
    a second would run the old code. Modules imported by name (:func:`load`) use the usual cache."""

    def get_code(self, fullname: str) -> CodeType:
        return self.source_to_code(self.get_data(self.path), self.path)


class SpecError(ValueError):
    """A file that cannot be imported (a missing or broken spec, kernel or experiment)."""


def importable() -> None:
    """Make the kernel folder's and experiments' modules importable by bare name here (what :func:`load` does)."""
    for folder in reversed(FOLDERS):
        if str(folder) not in sys.path:
            sys.path.insert(0, str(folder))


def load(name: str) -> ModuleType:
    """A module of the kernel folder or experiments/ by its bare name ("matmul_v3", "common", "streamk")."""
    importable()
    return importlib.import_module(name)


def load_file(path: Path | str, name: str | None = None, *, without: tuple[str, ...] = ()) -> ModuleType:
    """A module from a file anywhere (an edited copy, a spec), its siblings still importable; ``without`` hides
    packages (``import tilus`` raises ImportError) while it runs, and the module is then not registered."""
    path = Path(path).resolve()
    if path.parent in FOLDERS and name is None and not without:
        return load(path.stem)
    if not path.is_file():
        raise SpecError(f"{path} does not exist")
    importable()
    name = name or path.stem
    known = sys.modules.get(name)
    if not without and known is not None and Path(getattr(known, "__file__", "") or "").resolve() == path:
        return known
    spec = importlib.util.spec_from_file_location(name, path, loader=_FreshSourceLoader(name, str(path)))
    if spec is None or spec.loader is None:
        raise SpecError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    hidden = {package: sys.modules.get(package) for package in without}
    sys.modules.update(dict.fromkeys(without))  # type: ignore[arg-type]  # None: importing it raises ImportError
    if not without:
        sys.modules[name] = module  # as importlib's recipe: a dataclass or Tilus looks its module up there
    try:
        spec.loader.exec_module(module)
    except Exception:
        if not without:
            sys.modules.pop(name, None)
        raise
    finally:
        for package, before in hidden.items():
            if before is None:
                del sys.modules[package]
            else:
                sys.modules[package] = before
    return module


def import_spec(path: Path, kind: str) -> ModuleType:
    """A spec module of plain data (specs/steps.py, specs/tryit.py); SpecError says why it cannot be read."""
    name = f"_{kind.replace('-', '_')}_spec_{Path(path).stem}"
    sys.modules.pop(name, None)  # read afresh: a spec may have changed since
    try:
        return load_file(path, name)
    except SpecError as exc:
        raise SpecError(f"{kind} spec: {exc}") from exc
    except Exception as exc:  # a spec that does not import is a usage problem, reported before any run
        raise SpecError(f"cannot import the {kind} spec {path}: {type(exc).__name__}: {exc}") from exc
