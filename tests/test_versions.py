"""Versions are found from the kernel files; a version is a kernel file and a chapter page, nothing else.

A kernel file ``examples/hopper_matmul/matmul_vN.py`` is a version; its TITLE is the one wording of its
name. The index lists the chapters by convention (``.. chapters-toc::``) and each chapter's chart is drawn
by convention (no script per version). These tests fail when a kernel has no chapter page, when a chapter has
no kernel, when a chapter's title differs from its kernel's TITLE, or when the index lists chapters by hand;
every gap is listed at once, with the file to write.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from matmul_data import paths, versions

KERNEL = """# What changed from V{prev}: something.

import common

TITLE = "{title}"


class MatmulV{n}:
    pass
"""


def missing_pieces(kernel_dir: Path, docs_dir: Path) -> list[str]:
    """Every gap at once: what the site lacks for the versions in ``kernel_dir``, and pages without a kernel."""
    found = versions.all_versions(kernel_dir)
    names = {v.name for v in found}
    problems = []
    index = (docs_dir / "index.rst").read_text(encoding="utf-8")
    if ".. chapters-toc::" not in index:
        problems.append("index.rst: no `.. chapters-toc::` (the chapters' toctree, one entry per kernel file)")
    if re.search(r"^\s+chapters/v\d+\s*$", index, re.M):
        problems.append("index.rst: lists chapters by hand; `.. chapters-toc::` adds every chapter by convention")
    for version in found:
        chapter = docs_dir / "chapters" / f"{version.name}.rst"
        if not chapter.exists():
            problems.append(f"{version.name}: write the chapter page {chapter.relative_to(docs_dir.parent)}")
        else:
            heading = chapter.read_text(encoding="utf-8").splitlines()[0]
            if heading != version.heading:
                problems.append(f"{version.name}: chapter title {heading!r} is not the kernel's {version.heading!r}")
    for chapter in sorted((docs_dir / "chapters").glob("v*.rst")):
        if chapter.stem not in names:
            problems.append(f"{chapter.stem}: a chapter page without a kernel file matmul_{chapter.stem}.py")
    return problems


def test_every_version_has_its_chapter_and_the_index_lists_chapters_by_convention() -> None:
    assert missing_pieces(paths.KERNEL_DIR, paths.DOCS_DIR) == []


def test_versions_are_found_from_the_kernel_files_in_numeric_order() -> None:
    found = versions.all_versions()
    assert [v.number for v in found] == list(range(len(found)))
    assert all(v.path == paths.KERNEL_DIR / f"matmul_{v.name}.py" for v in found)
    assert versions.get("v3").heading.startswith("V3: ")


def copy_site(tmp_path: Path) -> tuple[Path, Path]:
    """A copy of the kernel titles and the pages that a test may add to or remove from."""
    kernel_dir, docs_dir = tmp_path / "kernels", tmp_path / "docs"
    (docs_dir / "chapters").mkdir(parents=True)
    kernel_dir.mkdir()
    for version in versions.all_versions():
        (kernel_dir / version.path.name).write_text(version.path.read_text(encoding="utf-8"), encoding="utf-8")
        chapter = f"{version.name}.rst"
        (docs_dir / "chapters" / chapter).write_text((paths.CHAPTERS_DIR / chapter).read_text(encoding="utf-8"))
    (docs_dir / "index.rst").write_text((paths.DOCS_DIR / "index.rst").read_text(encoding="utf-8"))
    return kernel_dir, docs_dir


def test_a_kernel_file_without_its_chapter_fails_and_says_which_file_to_write(tmp_path: Path) -> None:
    kernel_dir, docs_dir = copy_site(tmp_path)
    n = len(versions.all_versions())
    (kernel_dir / f"matmul_v{n}.py").write_text(KERNEL.format(prev=n - 1, n=n, title="beyond"), encoding="utf-8")
    (kernel_dir / f"matmul_v{n + 1}.py").write_text(KERNEL.format(prev=n, n=n + 1, title="more"), encoding="utf-8")
    problems = missing_pieces(kernel_dir, docs_dir)
    assert problems == [f"v{n}: write the chapter page docs/chapters/v{n}.rst",
                        f"v{n + 1}: write the chapter page docs/chapters/v{n + 1}.rst"]  # fmt: skip


def test_a_chapter_without_a_kernel_fails(tmp_path: Path) -> None:
    kernel_dir, docs_dir = copy_site(tmp_path)
    last = versions.all_versions()[-1]
    (kernel_dir / last.path.name).unlink()
    problems = missing_pieces(kernel_dir, docs_dir)
    assert problems == [f"{last.name}: a chapter page without a kernel file {last.path.name}"], problems


def test_an_index_that_lists_chapters_by_hand_fails(tmp_path: Path) -> None:
    kernel_dir, docs_dir = copy_site(tmp_path)
    index = docs_dir / "index.rst"
    index.write_text(index.read_text(encoding="utf-8").replace(".. chapters-toc::", ".. toctree::\n\n   chapters/v0"))
    problems = missing_pieces(kernel_dir, docs_dir)
    assert problems == [
        "index.rst: no `.. chapters-toc::` (the chapters' toctree, one entry per kernel file)",
        "index.rst: lists chapters by hand; `.. chapters-toc::` adds every chapter by convention",
    ], problems


def test_a_chapter_title_that_differs_from_the_kernel_title_fails(tmp_path: Path) -> None:
    kernel_dir, docs_dir = copy_site(tmp_path)
    path = kernel_dir / "matmul_v2.py"
    path.write_text(re.sub(r'TITLE = "[^"]*"', 'TITLE = "renamed"', path.read_text(encoding="utf-8")))
    assert missing_pieces(kernel_dir, docs_dir) == [
        "v2: chapter title 'V2: a multi-stage pipeline' is not the kernel's 'V2: renamed'"
    ]


def test_a_kernel_file_without_title_is_refused_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "matmul_v0.py").write_text("# no title here\n", encoding="utf-8")
    with pytest.raises(versions.VersionError, match='TITLE = "..."'):
        versions.all_versions(tmp_path)


def test_a_kernel_file_with_config_for_picks_per_problem_and_has_nothing_pinned(tmp_path: Path) -> None:
    body = KERNEL.format(prev=0, title="a rule", n=1) + 'TUNED = {"block_m": 128}\n'
    (tmp_path / "matmul_v1.py").write_text(body + "\n\ndef config_for(m, n, k):\n    return TUNED\n")
    (tmp_path / "matmul_v2.py").write_text(KERNEL.format(prev=1, title="fixed", n=2) + 'TUNED = {"block_m": 64}\n')
    ruled, fixed = versions.all_versions(tmp_path)
    assert ruled.per_problem and ruled.tuned == {"block_m": 128}
    assert not fixed.per_problem and fixed.tuned == {"block_m": 64}


def test_v8_picks_its_tile_per_problem_and_v7_does_not() -> None:
    assert versions.get("v8").per_problem and not versions.get("v7").per_problem
