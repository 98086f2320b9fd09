"""The packages under src/ are cut at seams: no private name used across modules, none over 400 lines, one loader
of files by path, and kernels that import none of the tooling.

Their layers and the absence of import cycles are `lint-imports`'s contracts (pyproject.toml, [tool.importlinter]),
which the tests session runs before pytest.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

SRC = Path(__file__).resolve().parent.parent / "src"


def modules(root: Path) -> dict[str, Path]:
    """Dotted name -> file of every module of the packages under ``root``."""
    found = {}
    for path in root.glob("*/**/*.py"):
        parts = path.relative_to(root).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def imports(name: str, path: Path, known: dict[str, Path]) -> Iterator[tuple[str, str | None]]:
    """(module imported, name taken from it or None) for each project import in one module."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            yield from ((a.name, None) for a in node.names if a.name in known)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from . import x, from .x import y
                base = ".".join(
                    [*package.split(".")[: len(package.split(".")) - node.level + 1], *filter(None, [base])]
                )
            for alias in node.names:
                if f"{base}.{alias.name}" in known:
                    yield f"{base}.{alias.name}", None
                elif base in known:
                    yield base, alias.name


def private_imports(root: Path) -> list[str]:
    """Each use of a ``_private`` name of one project module by another: imported, or read as an attribute."""
    known = modules(root)
    found = []
    for name, path in known.items():
        pairs = list(imports(name, path, known))
        aliases = {m.rpartition(".")[2]: m for m, taken in pairs if taken is None}
        found += [f"{name}: from {m} import {t}" for m, t in pairs if t and t.startswith("_") and m != name]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and node.value.id in aliases
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                found.append(f"{name}: {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_private_name_is_used_across_modules() -> None:
    assert modules(SRC), "no modules found under src/"
    assert private_imports(SRC) == []


def test_the_check_finds_a_private_name_imported_or_read_as_an_attribute(tmp_path: Path) -> None:
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "a.py").write_text("from pkg import b\n\ndef f():\n    return b._helper()\n")
    (package / "b.py").write_text("def g():\n    from pkg.a import f\n    return f()\n\ndef _helper():\n    pass\n")
    (package / "c.py").write_text("from pkg.b import _helper\n")
    assert sorted(private_imports(tmp_path)) == ["pkg.a: pkg.b._helper", "pkg.c: from pkg.b import _helper"]


def test_the_kernel_folder_imports_none_of_the_tooling() -> None:
    # The bottom layer under matmul_data: the teaching files run as plain scripts, with Tilus and torch alone.
    packages = {path.name for path in SRC.iterdir() if (path / "__init__.py").is_file()}
    kernels = SRC.parent / "examples" / "hopper_matmul"
    found = []
    for path in sorted(kernels.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            names += [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            found += [f"{path.name}: {name}" for name in names if name.split(".")[0] in packages]
    assert packages >= {"matmul_data", "matmul_site", "matmul_bench"} and list(kernels.glob("matmul_v*.py"))
    assert found == []


def test_the_data_core_names_the_benchmark_nowhere_not_even_in_a_string() -> None:
    # The docs build imports the data core: a command or module of the benchmark written there (a how-to in an error,
    # code in a string) is a side door past the import contracts; the site or the benchmark says it instead.
    found = [path.name for path in sorted((SRC / "matmul_data").glob("*.py"))
             if any(name in path.read_text(encoding="utf-8") for name in ("matmul_bench", "nox -s bench"))]  # fmt: skip
    assert list((SRC / "matmul_data").glob("*.py")) and found == []


def test_only_the_kernel_loader_edits_the_import_path_or_imports_files_by_path() -> None:
    root = SRC.parent
    folders = [SRC, root / "experiments", root / "specs", root / "figures", root / "plots", root / "tests"]
    found = [
        path.relative_to(root).as_posix()
        for folder in folders
        for path in folder.rglob("*.py")
        if path != SRC / "matmul_data" / "loader.py"
        and path.name not in ("test_modules.py", "test_gallery.py")  # the gallery's test runs a kernel as a script
        and any(hack in path.read_text(encoding="utf-8") for hack in ("sys.path.", "spec_from_file_location"))
    ]
    assert found == []


def test_no_module_under_src_grows_past_400_lines() -> None:
    # A module past this is two rooms: cut it at its seam (as v9_check.py was cut from field_pages.py).
    long = {
        name: n
        for name, path in modules(SRC).items()
        if (n := len(path.read_text(encoding="utf-8").splitlines())) > 400
    }
    assert long == {}, f"modules over 400 lines: {long}"


def test_the_sm_count_assumed_without_a_gpu_is_one_number_everywhere() -> None:
    from matmul_bench import kernels
    from matmul_data import hopper

    common, tile_model = kernels.load("common"), kernels.load("tile_model")
    assert common.H100_SMS == tile_model.H100_SMS == hopper.SM_COUNT == 132  # H100 SXM and H200
