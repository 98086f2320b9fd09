"""Versions are found from the kernel files, and every version has its chapter, toctree entry and chart.

A kernel file ``examples/hopper_matmul/matmul_vN.py`` is a version; its TITLE is the one wording of its
name. These tests fail when a kernel has no chapter page, toctree entry or chart script, when a chapter
or chart has no kernel, and when a chapter's title differs from its kernel's TITLE.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from matmul_site import paths, versions

KERNEL = """# What changed from V{prev}: something.

import common

TITLE = "{title}"


class MatmulV{n}:
    pass
"""


def toctree_entries(index_rst: str) -> list[str]:
    """Every document named in a toctree of the index page."""
    entries = []
    for block in re.findall(r"\.\. toctree::\n((?:[ \t]+.*\n|\n)+)", index_rst):
        entries += [line.strip() for line in block.splitlines() if line.strip() and not line.strip().startswith(":")]
    return entries


def missing_pieces(kernel_dir: Path, docs_dir: Path, plots_dir: Path) -> list[str]:
    """What the site lacks for the versions in ``kernel_dir``, and what it has for versions that do not exist."""
    found = versions.all_versions(kernel_dir)
    names = {v.name for v in found}
    toctree = toctree_entries((docs_dir / "index.rst").read_text(encoding="utf-8"))
    problems = []
    for version in found:
        chapter = docs_dir / "chapters" / f"{version.name}.rst"
        if not chapter.exists():
            problems.append(f"{version.name}: no chapter page {chapter.relative_to(docs_dir.parent)}")
        else:
            heading = chapter.read_text(encoding="utf-8").splitlines()[0]
            if heading != version.heading:
                problems.append(f"{version.name}: chapter title {heading!r} is not the kernel's {version.heading!r}")
        if f"chapters/{version.name}" not in toctree:
            problems.append(f"{version.name}: no toctree entry chapters/{version.name} in index.rst")
        if not (plots_dir / f"plot_{version.name}.py").exists():
            problems.append(f"{version.name}: no chart script plots/plot_{version.name}.py")
    for chapter in sorted((docs_dir / "chapters").glob("v*.rst")):
        if chapter.stem not in names:
            problems.append(f"{chapter.stem}: a chapter page without a kernel file matmul_{chapter.stem}.py")
    for chart in sorted(plots_dir.glob("plot_v*.py")):
        if chart.stem.removeprefix("plot_") not in names:
            problems.append(f"{chart.stem}: a chart script without a kernel file")
    return problems


def test_every_version_has_its_chapter_toctree_entry_and_chart() -> None:
    assert missing_pieces(paths.KERNEL_DIR, paths.DOCS_DIR, paths.PLOTS_DIR) == []


def test_versions_are_found_from_the_kernel_files_in_numeric_order() -> None:
    found = versions.all_versions()
    assert [v.number for v in found] == list(range(len(found)))
    assert all(v.path == paths.KERNEL_DIR / f"matmul_{v.name}.py" for v in found)
    assert versions.get("v3").heading.startswith("V3: ")


def copy_site(tmp_path: Path) -> tuple[Path, Path, Path]:
    """A copy of the kernel titles, the pages and the chart scripts that a test may add to or remove from."""
    kernel_dir, docs_dir, plots_dir = tmp_path / "kernels", tmp_path / "docs", tmp_path / "plots"
    (docs_dir / "chapters").mkdir(parents=True)
    kernel_dir.mkdir()
    plots_dir.mkdir()
    for version in versions.all_versions():
        (kernel_dir / version.path.name).write_text(version.path.read_text(encoding="utf-8"), encoding="utf-8")
        (docs_dir / "chapters" / version.chapter.name).write_text(version.chapter.read_text(encoding="utf-8"))
        (plots_dir / version.chart.name).write_text(version.chart.read_text(encoding="utf-8"))
    (docs_dir / "index.rst").write_text((paths.DOCS_DIR / "index.rst").read_text(encoding="utf-8"))
    return kernel_dir, docs_dir, plots_dir


def test_a_kernel_file_without_chapter_toctree_entry_or_chart_fails(tmp_path: Path) -> None:
    kernel_dir, docs_dir, plots_dir = copy_site(tmp_path)
    n = len(versions.all_versions())
    (kernel_dir / f"matmul_v{n}.py").write_text(KERNEL.format(prev=n - 1, n=n, title="beyond"), encoding="utf-8")
    problems = missing_pieces(kernel_dir, docs_dir, plots_dir)
    assert [p.split(":")[0] for p in problems] == [f"v{n}"] * 3, problems


def test_a_chapter_or_chart_without_a_kernel_fails(tmp_path: Path) -> None:
    kernel_dir, docs_dir, plots_dir = copy_site(tmp_path)
    last = versions.all_versions()[-1]
    (kernel_dir / last.path.name).unlink()
    problems = missing_pieces(kernel_dir, docs_dir, plots_dir)
    assert any("chapter page without a kernel" in p for p in problems), problems
    assert any("chart script without a kernel" in p for p in problems), problems


def test_a_chapter_title_that_differs_from_the_kernel_title_fails(tmp_path: Path) -> None:
    kernel_dir, docs_dir, plots_dir = copy_site(tmp_path)
    path = kernel_dir / "matmul_v2.py"
    path.write_text(re.sub(r'TITLE = "[^"]*"', 'TITLE = "renamed"', path.read_text(encoding="utf-8")))
    assert missing_pieces(kernel_dir, docs_dir, plots_dir) == [
        "v2: chapter title 'V2: a multi-stage pipeline' is not the kernel's 'V2: renamed'"
    ]


def test_a_kernel_file_without_title_is_refused_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "matmul_v0.py").write_text("# no title here\n", encoding="utf-8")
    with pytest.raises(versions.VersionError, match='TITLE = "..."'):
        versions.all_versions(tmp_path)
