"""The kernel versions, found by convention, and how every page, chart and table names them.

A version is a file ``examples/hopper_matmul/matmul_vN.py``; its title is the module constant ``TITLE = "..."`` in that
file and its measured configuration the constant ``TUNED = {...}``, both read here with :mod:`ast` (no torch, no Tilus,
nothing executed). Its chapter is ``docs/chapters/vN.rst``, whose plot directive draws its chart (images named
``plot_vN``); the tests hold every version to having a title, a configuration and a chapter. Implementations that are
not ours (cuBLAS, torch.compile, Triton's templates, QuACK) are ``PEERS``; :func:`label` names any implementation.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from matmul_data import paths
from matmul_data.decoding import Config

_KERNEL_FILE = re.compile(r"matmul_v(0|[1-9][0-9]*)\.py")
_NAME = re.compile(r"v(0|[1-9][0-9]*)")

CUBLAS = "cublas"
TORCH_COMPILE = "torch-compile-max-autotune"
TRITON = "triton-templates"  # torch.compile with GEMM autotuning among Triton's templates only
QUACK = "quack"  # QuACK's CuTe-DSL GEMM in its default configuration
QUACK_AUTOTUNED = "quack-autotuned"  # the same GEMM, autotuned at each shape
# Implementations we compare against but did not write: how tables and legends name them.
PEERS: dict[str, str] = {
    CUBLAS: "cuBLAS",
    TORCH_COMPILE: "torch.compile (max-autotune)",
    TRITON: "Triton (torch.compile templates)",
    QUACK: "QuACK (CuTe DSL)",
    QUACK_AUTOTUNED: "QuACK (CuTe DSL, autotuned)",
}


class VersionError(ValueError):
    """A version name or kernel file that does not follow the convention; the message says what to fix."""


@dataclass(frozen=True)
class Version:
    """One chapter of the tutorial: a kernel file, its page and its chart."""

    number: int
    title: str
    path: Path

    @property
    def name(self) -> str:
        """The key used in the results file and in roles: "v3"."""
        return f"v{self.number}"

    @property
    def label(self) -> str:
        """How a table or chart names it: "V3"."""
        return f"V{self.number}"

    @property
    def heading(self) -> str:
        """The chapter page's title: "V3: warp specialization"."""
        return f"{self.label}: {self.title}"

    @property
    def class_name(self) -> str:
        """The Tilus script class the kernel file defines: "MatmulV3"."""
        return f"MatmulV{self.number}"

    @property
    def tuned(self) -> Config:
        """The configuration the chapter measured (the kernel file's ``TUNED``): what the benchmark pins."""
        return read_tuned(self.path)

    @property
    def per_problem(self) -> bool:
        """Whether the kernel file picks its configuration for each problem: a top-level ``config_for(m, n, k)``
        (V8's tile model). The benchmark then pins that rule's choice at each shape instead of ``TUNED``."""
        tree = ast.parse(self.path.read_text(encoding="utf-8"), filename=str(self.path))
        return any(isinstance(node, ast.FunctionDef) and node.name == "config_for" for node in tree.body)

    @property
    def chart_name(self) -> str:
        """What the chapter's chart images are called ("plot_v3"): found by convention, no script file."""
        return f"plot_{self.name}"


def read_title(path: Path) -> str:
    """The string assigned to ``TITLE`` at the top level of a kernel file, without importing it."""
    node = _top_level_constant(path, "TITLE")
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.strip():
        return node.value
    raise VersionError(f'{path}: no top-level TITLE = "..." (a non-empty string naming what this version adds)')


def _top_level_constant(path: Path, name: str) -> ast.expr | None:
    tree = ast.parse(Path(path).read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        if isinstance(node, ast.Assign) and [getattr(t, "id", None) for t in node.targets] == [name]:
            return node.value
    return None


def read_tuned(path: Path) -> Config:
    """The dict literal assigned to ``TUNED`` at the top level of a kernel file, without importing it."""
    node = _top_level_constant(path, "TUNED")
    try:
        value = ast.literal_eval(node) if node is not None else None
    except ValueError:
        value = None
    if isinstance(value, dict) and value and all(isinstance(k, str) for k in value):
        return value
    raise VersionError(f"{path}: no top-level TUNED = {{...}} (the configuration the chapter measured, as a literal)")


@cache
def _discover(kernel_dir: Path) -> tuple[Version, ...]:
    found = [(number, p) for p in kernel_dir.glob("matmul_v*.py") if (number := number_of(p.name)) is not None]
    return tuple(sorted((Version(number, read_title(path), path) for number, path in found), key=lambda v: v.number))


def number_of(filename: str) -> int | None:
    """The version number of a kernel file's name ("matmul_v3.py" -> 3); None for any other name."""
    match = _KERNEL_FILE.fullmatch(filename)
    return int(match[1]) if match else None


def kernel_file(name: str, kernel_dir: Path | None = None) -> Path:
    """Where the kernel file of version ``name`` ("v3") is, or will be: it need not exist yet."""
    if not is_version_name(name):
        raise VersionError(f"{name!r} is not a version name (v0, v1, ...)")
    return Path(kernel_dir or paths.KERNEL_DIR) / f"matmul_{name}.py"


def all_versions(kernel_dir: Path | None = None) -> tuple[Version, ...]:
    """Every version, V0 first, in numeric order (V10 follows V9)."""
    return _discover(Path(kernel_dir or paths.KERNEL_DIR).resolve())


def names(kernel_dir: Path | None = None) -> tuple[str, ...]:
    """("v0", "v1", ...): the keys of every version."""
    return tuple(v.name for v in all_versions(kernel_dir))


def get(name: str, kernel_dir: Path | None = None) -> Version:
    """The version called ``name`` ("v3"); VersionError lists the ones that exist."""
    found = {version.name: version for version in all_versions(kernel_dir)}
    if name in found:
        return found[name]
    raise VersionError(f"unknown version {name!r} (known: {', '.join(found) or 'none'})")


def is_version_name(name: str) -> bool:
    """True for names of the form "v<N>", whether or not the file exists."""
    return bool(_NAME.fullmatch(name))


def previous(name: str, kernel_dir: Path | None = None) -> Version | None:
    """The version before ``name`` in the ladder, or None for the first."""
    found = all_versions(kernel_dir)
    index = [v.name for v in found].index(get(name, kernel_dir).name)
    return found[index - 1] if index else None


def label(impl: str) -> str:
    """How a table or chart names any implementation: "V3", "cuBLAS", "torch.compile (max-autotune)"."""
    return impl.upper() if is_version_name(impl) else PEERS.get(impl, impl)


def title(impl: str) -> str:
    """What an implementation is, in words: a version's TITLE, or a peer's label."""
    return get(impl).title if is_version_name(impl) else label(impl)
