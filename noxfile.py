"""Sessions: docs, tests, browser, lint (in fresh venvs); bench, plots (in the current environment, on GPU machines)."""

from __future__ import annotations

import nox

nox.options.sessions = ["lint", "tests", "docs"]
nox.options.reuse_existing_virtualenvs = True

EXTRAS = nox.project.load_toml("pyproject.toml")["project"]["optional-dependencies"]
BUILD_DIR = "build/html"
# The browser session builds the site for a sub-path, as GitHub Pages serves it (the 404 page's links depend on it).
BROWSER_BASEURL = "http://127.0.0.1:8000/hopper-matmul/"


def requirements(name: str) -> list[str]:
    """One optional-dependency group of pyproject.toml, with self-references expanded."""
    reqs: list[str] = []
    for requirement in EXTRAS[name]:
        if requirement.startswith("hopper-matmul-tutorial["):
            for group in requirement.split("[", 1)[1].rstrip("]").split(","):
                reqs += requirements(group)
        else:
            reqs.append(requirement)
    return reqs


@nox.session
def docs(session: nox.Session) -> None:
    """Build the HTML site into build/html; warnings are errors, references are checked."""
    session.install(*requirements("docs"))
    session.run(
        "sphinx-build", "-W", "--keep-going", "-n", "-b", "html", "-c", ".", "docs", BUILD_DIR, *session.posargs
    )


@nox.session
def tests(session: nox.Session) -> None:
    """Run pytest on the CPU (GPU tests skip themselves with the reason)."""
    session.install(*requirements("test"))
    session.run("pytest", *session.posargs)


@nox.session
def browser(session: nox.Session) -> None:
    """Build the site, serve it on 127.0.0.1 and check every page in headless Chromium."""
    session.install(*requirements("browser"))
    build = ("sphinx-build", "-W", "--keep-going", "-n", "-q", "-b", "html", "-c", ".", "docs", BUILD_DIR)
    session.run(*build, env={"HOPPER_MATMUL_BASEURL": BROWSER_BASEURL})
    session.run("pytest", "tests/browser", *session.posargs, env={"RUN_BROWSER_TESTS": "1", "SITE_DIR": BUILD_DIR})


@nox.session
def lint(session: nox.Session) -> None:
    """Check the Python with ruff."""
    session.install(*requirements("lint"))
    session.run("ruff", "check", ".", *session.posargs)
    session.run("ruff", "format", "--check", ".")


@nox.session(venv_backend="none")
def bench(session: nox.Session) -> None:
    """Rerun the benchmark on this machine's Hopper GPU (current env) and rewrite plots/results/."""
    session.run("python", "examples/hopper_matmul/benchmark.py", *session.posargs)


@nox.session(venv_backend="none")
def plots(session: nox.Session) -> None:
    """Redraw the charts from the recorded results; pass --rerun to benchmark first (needs a Hopper GPU)."""
    session.run("python", "plots/draw_all.py", *session.posargs)
