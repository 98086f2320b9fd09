"""The contributor's recipe (CONTRIBUTING.md), carried out: a new chapter is a kernel file and a page.

In a copy of the repository: copy the last kernel to the next version, write its page from the skeleton in
CONTRIBUTING.md and build the site (warnings are errors, references checked); then remove the version and build
again into the same folder.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import early
from matmul_data import paths, versions

pytestmark = pytest.mark.slow

ROOT = paths.ROOT


def skeleton() -> str:
    """The chapter skeleton between the markers of CONTRIBUTING.md (one source for the page and this test)."""
    text = (ROOT / "CONTRIBUTING.md").read_text(encoding="utf-8")
    found = re.search(r"<!-- chapter skeleton: start -->\n```rst\n(.*?)```\n<!-- chapter skeleton: end -->", text, re.S)
    assert found, "CONTRIBUTING.md lost its chapter skeleton markers"
    return found.group(1)


def copy_repository(dest: Path) -> Path:
    """The files git tracks (and new ones it does not ignore), without the raw benchmark logs."""
    listed = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    for name in listed:
        source = ROOT / name
        if name.startswith("plots/results/logs/") or not source.is_file():
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
    return dest


def add_version(repo: Path) -> str:
    """Steps 1 and 2 of the recipe: the next kernel file, copied from the last, and its page."""
    last = versions.all_versions()[-1]
    n = last.number + 1
    title = "the recipe's copy"
    text = last.path.read_text(encoding="utf-8")
    text = re.sub(
        r"\A# What changed from V\d+:.*?\n(?=\S)",
        f"# What changed from V{last.number}: nothing yet.\n\n",
        text,
        flags=re.S,
    )
    text = re.sub(r'^TITLE = "[^"]*"', f'TITLE = "{title}"', text, flags=re.M)
    text = text.replace(last.class_name, f"MatmulV{n}")
    (repo / "examples" / "hopper_matmul" / f"matmul_v{n}.py").write_text(text, encoding="utf-8")
    heading = f"V{n}: {title}"
    page = skeleton().format(n=n, prev=last.number, title=title, underline="=" * len(heading))
    (repo / "docs" / "chapters" / f"v{n}.rst").write_text(page, encoding="utf-8")
    return f"v{n}"


def run(repo: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**early.ENVIRON, "PYTHONPATH": str(repo / "src"), "PYTHONWARNINGS": "error::DeprecationWarning"}
    env.pop(paths.ENV_RESULTS, None)
    return subprocess.run([sys.executable, *args], cwd=repo, capture_output=True, text=True, env=env, timeout=600)


def build(repo: Path, out: Path) -> str:
    """What `nox -s docs` does: the generated files for the pages as they are now, then the strict build."""
    rendered = run(repo, "-m", "matmul_site.render")
    assert rendered.returncode == 0, rendered.stderr
    done = run(repo, "-m", "sphinx", "-W", "--keep-going", "-n", "-q", "-b", "html", "-c", ".", "docs", str(out))
    assert done.returncode == 0, f"the docs build failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return (out / "index.html").read_text(encoding="utf-8")


def add_build_remove_build(where: Path) -> tuple[str, dict[str, str], bool, str]:
    """Steps 1 and 2 in a copy of the repository, the build, then the new version removed and the build again in
    the same output folder: (the new version, the first build's index and chapter page, whether the first build
    has the kernel's gallery page, the second build's index)."""
    repo = copy_repository(where / "repo")
    name = add_version(repo)
    out = where / "html"
    build(repo, out)
    first = {page: (out / page).read_text(encoding="utf-8") for page in ("index.html", f"chapters/{name}.html")}
    in_gallery = (out / "gallery" / f"matmul_{name}.html").exists()
    (repo / "examples" / "hopper_matmul" / f"matmul_{name}.py").unlink()
    (repo / "docs" / "chapters" / f"{name}.rst").unlink()
    return (
        name,
        first,
        in_gallery,
        build(repo, out),
    )  # the same output folder: what the first build left must not break it


# Started when this file's test is collected (tests/early.py): it runs while the tests before it run.
early.register(__file__, "recipe", add_build_remove_build)


def test_a_new_chapter_is_a_kernel_and_a_page_and_removing_it_builds_again() -> None:
    name, first, in_gallery, index_after_removal = early.result("recipe")
    assert f'href="chapters/{name}.html"' in first["index.html"], "the index does not list the new chapter"
    page = first[f"chapters/{name}.html"]
    assert "not measured yet" in page and "budget" in page.lower()
    assert page.count('<details class="kernel-diff">') == 1, "the new chapter does not offer its diff"
    assert in_gallery, "the gallery has no page for the new kernel"
    assert f"chapters/{name}.html" not in index_after_removal and f"matmul_{name}" not in index_after_removal
