"""Sessions: docs, tests, browser, lint (in fresh venvs); bench, plots (in the current environment, on GPU machines)."""

from __future__ import annotations

import re
import urllib.request
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests", "docs"]
nox.options.reuse_existing_virtualenvs = True

PYPROJECT = nox.project.load_toml("pyproject.toml")
BUILD_DIR = "build/html"
# PyTorch's CPU-only wheels (about 200 MB) instead of the package index's CUDA build (about 2.7 GB with its libraries).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# The browser session builds the site for a sub-path, as GitHub Pages serves it (the 404 page's links depend on it).
BROWSER_BASEURL = "http://127.0.0.1:8000/hopper-matmul/"


def torch_pin() -> str:
    """The torch requirement of the test extra in pyproject.toml (e.g. "torch==2.13.0")."""
    for requirement in PYPROJECT["project"]["optional-dependencies"]["test"]:
        if re.match(r"torch\b", requirement):
            return requirement.split("#")[0].strip()
    raise RuntimeError("pyproject.toml's test extra pins no torch")


def install_cpu_torch(session: nox.Session) -> None:
    """Install torch's CPU build from PyTorch's index; where that index is unreachable, from the package index."""
    try:
        urllib.request.urlopen(f"{TORCH_CPU_INDEX}/torch/", timeout=5).close()
    except OSError as exc:
        session.log(f"{TORCH_CPU_INDEX} unreachable ({exc.__class__.__name__}): torch comes from the package index")
        session.install(torch_pin(), silent=False)
        return
    session.install("--index-url", TORCH_CPU_INDEX, torch_pin(), silent=False)


def install_project(session: nox.Session, extra: str) -> None:
    """The project itself (matmul_site, editable) with one extra of pyproject.toml; pip shows its progress."""
    session.install("--progress-bar", "on", "-e", f".[{extra}]", silent=False)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the HTML site into build/html; warnings are errors, references are checked."""
    install_project(session, "docs")
    session.run(
        "sphinx-build", "-W", "--keep-going", "-n", "-b", "html", "-c", ".", "docs", BUILD_DIR, *session.posargs
    )


@nox.session
def tests(session: nox.Session) -> None:
    """Run pytest on the CPU (GPU tests skip themselves with the reason)."""
    install_cpu_torch(session)
    install_project(session, "test")
    session.run("pytest", *session.posargs)


@nox.session
def browser(session: nox.Session) -> None:
    """Check the site in headless Chromium, served under a sub-path as GitHub Pages serves it.

    Reuses build/html when `nox -s docs` built it for that address (.ci/run does: the site is built once);
    otherwise builds it here first.
    """
    install_project(session, "browser")
    sitemap = Path(BUILD_DIR, "sitemap.xml")
    if sitemap.exists() and BROWSER_BASEURL in sitemap.read_text(encoding="utf-8"):
        session.log(f"testing the site already built in {BUILD_DIR} for {BROWSER_BASEURL}")
    else:
        build = ("sphinx-build", "-W", "--keep-going", "-n", "-q", "-b", "html", "-c", ".", "docs", BUILD_DIR)
        session.run(*build, env={"HOPPER_MATMUL_BASEURL": BROWSER_BASEURL})
    session.run("pytest", "tests/browser", *session.posargs, env={"RUN_BROWSER_TESTS": "1", "SITE_DIR": BUILD_DIR})


@nox.session
def lint(session: nox.Session) -> None:
    """Check the Python with ruff."""
    session.install(*PYPROJECT["project"]["optional-dependencies"]["lint"])
    session.run("ruff", "check", ".", *session.posargs)
    session.run("ruff", "format", "--check", ".")


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    """Rerun the benchmark on this machine's Hopper GPU (current env) and rewrite plots/results/."""
    session.run("python", "-m", "matmul_bench", "record", *session.posargs)


@nox.session(venv_backend="none")
def plots(session: nox.Session) -> None:
    """Redraw the charts from the recorded results; pass --rerun to benchmark first (needs a Hopper GPU)."""
    session.run("python", "plots/draw_all.py", *session.posargs)
