"""The kernel gallery's staging (matmul_site.sphinx.kernel_source): titles, runnable zips, order.

The cards' images are checked on the built site (tests/test_docs.py).
"""

from __future__ import annotations

import ast
import io
import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from matmul_data import versions
from matmul_site.sphinx import kernel_source

KERNELS = [v.name for v in versions.all_versions() if kernel_source.kernel_path(v.name).exists()]


def local_modules(source: bytes) -> set[str]:
    """The top-level names a file imports that are modules of the kernel folder (a second reading, not the code's)."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.module:
            names = [node.module]
        found |= {n.split(".")[0] for n in names if (kernel_source.KERNELS / f"{n.split('.')[0]}.py").is_file()}
    return found


@pytest.mark.parametrize("version", KERNELS)
def test_each_zip_holds_the_kernel_and_every_module_of_its_folder_that_it_imports(version: str) -> None:
    source = kernel_source.kernel_path(version)
    with zipfile.ZipFile(io.BytesIO(kernel_source.zip_bytes(source))) as archive:
        files = {Path(info.filename).name: archive.read(info) for info in archive.infolist()}
        folders = {Path(info.filename).parent.as_posix() for info in archive.infolist()}
        times = {info.date_time for info in archive.infolist()}
    assert folders == {source.stem}, f"{source.name}'s zip should unpack into one folder {source.stem}/: {folders}"
    assert files[source.name] == source.read_bytes()
    assert {"common.py", "tilus_fixes.py"} <= set(files), f"{source.name}'s zip lacks the run helpers: {sorted(files)}"
    for name, text in files.items():
        missing = {f"{m}.py" for m in local_modules(text)} - set(files)
        assert not missing, f"{name} in {source.name}'s zip imports {sorted(missing)}, which the zip lacks"
        assert text == (kernel_source.KERNELS / name).read_bytes(), f"{name} in the zip is not the repository file"
    assert times == {kernel_source.ZIP_TIME}, f"zip timestamps are not fixed: {times}"


def test_a_zip_is_the_same_bytes_every_time() -> None:
    source = kernel_source.kernel_path(KERNELS[-1])
    assert kernel_source.zip_bytes(source) == kernel_source.zip_bytes(source)


def test_helpers_are_followed_through_the_modules_that_import_them(tmp_path: Path) -> None:
    (tmp_path / "matmul_v9.py").write_text("import a\n")
    (tmp_path / "a.py").write_text("def f():\n    from b import g\n    import os, json\n")
    (tmp_path / "b.py").write_text("import a\nimport matmul_v9\n")  # cycles end
    (tmp_path / "unused.py").write_text("")
    assert [p.name for p in kernel_source.bundle_files(tmp_path / "matmul_v9.py")] == ["matmul_v9.py", "a.py", "b.py"]


@pytest.mark.slow
def test_the_first_unzipped_kernel_of_each_helper_set_and_the_last_import_with_only_their_own_folder(
    tmp_path: Path,
) -> None:
    """What "runs as downloaded" can mean without a GPU: the kernel module and its helpers import from the zip alone."""
    pytest.importorskip("tilus")
    assert len(KERNELS) == len(versions.all_versions()), f"a kernel file is missing: only {KERNELS}"
    # The first version of each set of helpers its zip holds (V0: common; V4 adds pipeline and raster; V8
    # tile_model), and the last; bundle_files' closure is unit-tested above for all. Each check imports torch and
    # Tilus afresh, about 3 CPU-seconds apiece: every version would add half a minute of CPU to the suite.
    helper_sets = {v: frozenset(p.name for p in kernel_source.bundle_files(kernel_source.kernel_path(v))[1:])
                   for v in KERNELS}  # fmt: skip
    first_of_each = {helpers: v for v, helpers in reversed(helper_sets.items())}.values()
    checked = tuple(dict.fromkeys([*sorted(first_of_each, key=KERNELS.index), KERNELS[-1]]))
    assert len(set(helper_sets.values())) >= 3 and KERNELS[0] in checked
    for version in checked:
        zipfile.ZipFile(io.BytesIO(kernel_source.zip_bytes(kernel_source.kernel_path(version)))).extractall(tmp_path)
    # One process per kernel (tilus_fixes registers its functions with Tilus once per process), all at once.
    script = (
        "import sys; sys.path.insert(0, '.'); import {0}; assert {0}.__file__.startswith(sys.argv[1]), {0}.__file__"
    )
    runs = {
        v: subprocess.Popen(
            [sys.executable, "-I", "-c", script.format(f"matmul_{v}"), str(tmp_path / f"matmul_{v}")],
            cwd=tmp_path / f"matmul_{v}",
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for v in checked
    }
    errors = {v: run.communicate()[1] for v, run in runs.items()}
    failed = {v: errors[v][-2000:] for v, run in runs.items() if run.returncode != 0}
    assert not failed, "\n".join(f"{v}: {err}" for v, err in failed.items())


def test_gallery_cards_and_pages_are_titled_with_the_chapter_heading_and_no_escapes(tmp_path: Path) -> None:
    from sphinx_gallery.gen_rst import extract_intro_and_title

    staged = kernel_source.stage_gallery(tmp_path / "src")
    assert [p.stem for p in staged] == [f"matmul_{v}" for v in KERNELS]
    for path in staged:
        version = versions.get(path.stem.removeprefix("matmul_"))
        text = path.read_text(encoding="utf-8")
        docstring = ast.get_docstring(ast.parse(text), clean=False) or ""
        intro, title = extract_intro_and_title(path.name, docstring)
        assert title == version.heading, f"{path.name}: the card's title is {title!r}"
        assert "\\" not in title and not set("<>&*`|") & set(title), f"{path.name}: {title!r} needs escaping"
        assert f":download:`matmul_{version.name}.zip </../" in text, f"{path.name}: no zip download in the docstring"
        assert (tmp_path / "gallery_downloads" / f"matmul_{version.name}.zip").is_file()
        assert text.endswith(kernel_source.kernel_path(version.name).read_text(encoding="utf-8"))
        assert "sphinx_gallery_thumbnail_path" not in text
        compile(text, str(path), "exec")


def test_staging_again_leaves_every_staged_file_alone(tmp_path: Path) -> None:
    """An unchanged kernel folder rewrites nothing, so that sphinx-gallery and Sphinx see nothing new."""
    staged = kernel_source.stage_gallery(tmp_path / "src")
    written = sorted(p for p in tmp_path.rglob("*") if p.is_file())
    times = {p: p.stat().st_mtime_ns for p in written}
    for path in written:
        os.utime(path, ns=(1, 1))
    assert kernel_source.stage_gallery(tmp_path / "src") == staged
    assert {p: p.stat().st_mtime_ns for p in written} == dict.fromkeys(times, 1)


def test_cards_follow_the_ladder_order() -> None:
    order = kernel_source.VersionOrder("")
    names = ["matmul_v10.py", "matmul_v2.py", "matmul_v0.py", "matmul_v9.py"]
    assert sorted(names, key=order) == ["matmul_v0.py", "matmul_v2.py", "matmul_v9.py", "matmul_v10.py"]
