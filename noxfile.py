"""Sessions: docs, tests, browser, lint (in fresh venvs); bench, plots (in the current environment, on GPU machines)."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import shutil
import urllib.request
from collections.abc import Callable
from pathlib import Path

import nox

nox.options.sessions = ["lint", "tests", "docs"]
nox.options.reuse_existing_virtualenvs = True
# uv where nox finds it (`nox[uv]`, as .ci/run installs it, or uv on PATH): it installs the tests session's
# packages in seconds where pip takes most of a minute. Without uv, virtualenv and pip as before.
nox.options.default_venv_backend = "uv|virtualenv"
# nox looks for uv before every session's first command, whichever backend it uses, and where there is none it says
# "uv binary not found." at info level: on the plain route (nox without uv) that is expected, so the line is dropped.
NO_UV_MESSAGE = "uv binary not found."
logging.getLogger("nox").addFilter(lambda record: record.getMessage() != NO_UV_MESSAGE)
PYPROJECT = nox.project.load_toml("pyproject.toml")
BUILD_DIR = "build/html"
# The strict HTML build both site sessions run: quiet (warnings and errors only), warnings are errors, every
# reference checked.
SPHINX_BUILD = ("sphinx-build", "-q", "-W", "--keep-going", "-n", "-b", "html", "-c", ".")
# The browser session's own build (for a sub-path): it never overwrites the site a user built with `nox -s docs`.
BROWSER_DIR = "build/browser-html"
# Where `nox -s docs` builds instead of build/html, and which build `nox -s browser` tests instead of building its own:
# .ci/run sets it to BROWSER_DIR so that the site is built once.
SITE_DIR_ENV = "HOPPER_MATMUL_SITE_DIR"
# PyTorch's CPU-only wheels (about 200 MB) instead of the package index's CUDA build (about 2.7 GB with its libraries).
TORCH_CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# The browser session builds the site for a sub-path, as GitHub Pages serves it (the 404 page's links depend on it).
BROWSER_BASEURL = "http://127.0.0.1:8000/hopper-matmul/"
# What the tests session adds to pytest's environment: no tqdm progress bars (Tilus draws them while it builds).
TESTS_ENV = {"TQDM_DISABLE": "1"}


# uv reads none of pip's settings: where the environment points pip at other package locations (PIP_FIND_LINKS: a
# folder of wheels, such as torch's CPU build), uv is pointed there too. pip separates a list by spaces, UV_FIND_LINKS
# by commas.
PIP_TO_UV = {"PIP_FIND_LINKS": ("UV_FIND_LINKS", ","), "PIP_INDEX_URL": ("UV_INDEX_URL", " "),
             "PIP_EXTRA_INDEX_URL": ("UV_EXTRA_INDEX_URL", " ")}  # fmt: skip


def uv_env(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The UV_* settings that say what the environment's PIP_* ones say, where no UV_* one is set already."""
    environ = dict(os.environ) if environ is None else environ
    return {
        uv: separator.join(environ[pip].split())
        for pip, (uv, separator) in PIP_TO_UV.items()
        if environ.get(pip, "").strip() and uv not in environ
    }


def install_packages(session: nox.Session, *args: str, silent: bool = True) -> None:
    """session.install, with pip's package locations handed to uv (the same for pip, which ignores UV_*)."""
    session.install(*args, env=uv_env(), silent=silent)


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
        install_packages(session, torch_pin(), silent=False)
        # Which build the package index gave: PyPI's is the CUDA build, a local mirror may hold the CPU one. The sizes
        # are the README's alone (its table and the paragraph after it): one place to keep them right.
        version = (session.run("python", "-c", "import torch; print(torch.__version__)", silent=True) or "").strip()
        build = (
            "its CPU build"
            if "+cpu" in version
            else "its CUDA build, gigabytes more to download and store than the CPU build (README, the table of sizes)"
        )
        session.log(f"{TORCH_CPU_INDEX} unreachable ({exc.__class__.__name__}): {torch_pin()} came from the package "
                    f"index instead, {build}")  # fmt: skip
        return
    install_packages(session, "--index-url", TORCH_CPU_INDEX, torch_pin(), silent=False)


def install_project(session: nox.Session, extra: str) -> None:
    """The project itself (matmul_site, editable) with one extra of pyproject.toml; pip or uv shows its progress."""
    progress = () if session.venv_backend == "uv" else ("--progress-bar", "on")  # a flag of pip's that uv lacks
    install_packages(session, *progress, "-e", f".[{extra}]", silent=False)


def install_once(session: nox.Session, install: Callable[[], None]) -> None:
    """Run `install` unless this reused environment already ran it for the pyproject.toml of now, in this checkout.

    A stamp in the environment holds a hash of pyproject.toml, of this file and of the checkout's absolute path: a
    rebuild with none changed installs nothing and prints nothing (the project is installed editable, so its code
    needs no reinstall). A new environment (`nox --reuse-venv=no`, or .nox/ removed) has no stamp and installs
    everything. An environment made in another folder (the checkout was moved or copied with its .nox/) is made
    afresh: its programs still start the old folder's Python, which imports the old folder's code.
    """
    location = getattr(session.virtualenv, "location", None)  # none where nox makes no environment
    # Under `nox --no-install` nox skips the installs itself: nothing may be stamped as installed then.
    no_install = getattr(getattr(getattr(session, "_runner", None), "global_config", None), "no_install", False)
    if not location or no_install:
        install()
        return
    location = str(Path(location).resolve())
    stamp = Path(location, "hopper-matmul-installed")
    checkout = str(Path(__file__).resolve().parent)
    inputs = Path("pyproject.toml").read_bytes() + Path(__file__).read_bytes() + checkout.encode()
    wanted = {"inputs": hashlib.sha256(inputs).hexdigest(), "environment": location}
    try:
        found = json.loads(stamp.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        found = None
    if found == wanted:
        return
    made_in = found.get("environment") if isinstance(found, dict) else None
    if made_in and made_in != location:
        session.log(f"{location} was made as {made_in} (the checkout was moved or copied): making it afresh")
        shutil.rmtree(location)
        session.virtualenv.create()
    stamp.unlink(missing_ok=True)
    install()
    stamp.write_text(json.dumps(wanted), encoding="utf-8")


def chosen_site_dir() -> str:
    """The build folder named by $HOPPER_MATMUL_SITE_DIR, or "" when none is."""
    return os.environ.get(SITE_DIR_ENV, "").strip()


@nox.session
def docs(session: nox.Session) -> None:
    """Build the HTML site into build/html (or $HOPPER_MATMUL_SITE_DIR); warnings are errors, references checked."""
    install_once(session, lambda: install_project(session, "docs"))
    out = chosen_site_dir() or BUILD_DIR
    # docs/_generated/ from the results file and the build record first (it writes only what changed), then Sphinx,
    # quiet: warnings and errors only (a rebuild with nothing new reads no page and says nothing).
    session.run("python", "-m", "matmul_site.render")
    session.run(*SPHINX_BUILD, "docs", out, *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """Check the import contracts, then run pytest on the CPU (GPU tests skip themselves with the reason)."""

    def install() -> None:
        install_cpu_torch(session)
        install_project(session, "test")

    install_once(session, install)
    # The packages' layers and no import cycles (pyproject.toml's [tool.importlinter]), from the editable install of
    # this checkout; the import graph takes well under a second, so nothing is cached.
    session.run("lint-imports", "--no-cache", "--no-logo")
    # Tilus draws tqdm progress bars while it builds (in the background build processes too): they would land
    # between pytest's lines. TQDM_DISABLE turns every tqdm bar off, in this process and the ones it starts.
    session.run("pytest", *session.posargs, env=TESTS_ENV)


@nox.session
def browser(session: nox.Session) -> None:
    """Check the site in headless Chromium, served under a sub-path as GitHub Pages serves it.

    Builds the site for that address into build/browser-html (never over build/html, which is the user's
    `nox -s docs` build); with $HOPPER_MATMUL_SITE_DIR set, tests the site already built there for that address
    instead (.ci/run: `nox -s docs` builds it once, for both).
    """
    install_once(session, lambda: install_project(session, "browser"))
    site = chosen_site_dir()
    if site:
        sitemap = Path(site, "sitemap.xml")
        if not (sitemap.exists() and BROWSER_BASEURL in sitemap.read_text(encoding="utf-8")):
            session.error(
                f"{SITE_DIR_ENV}={site} holds no site built for {BROWSER_BASEURL}: build it with "
                f"`HOPPER_MATMUL_BASEURL={BROWSER_BASEURL} {SITE_DIR_ENV}={site} nox -s docs`, or unset {SITE_DIR_ENV}"
            )
        session.log(f"testing the site already built in {site} for {BROWSER_BASEURL}")
    else:
        site = BROWSER_DIR
        # As `nox -s docs` builds: docs/_generated/ brought up to date first, then the strict build.
        session.run("python", "-m", "matmul_site.render")
        session.run(*SPHINX_BUILD, "docs", site, env={"HOPPER_MATMUL_BASEURL": BROWSER_BASEURL})
    # The test files side by side, each in its own process with its own Chromium: most of their time is spent
    # waiting for pages to load and go quiet. loadfile keeps a file's tests in one process, in order, so that each
    # page is loaded once per file.
    files = len(list(Path("tests", "browser").glob("test_*.py")))
    parallel = ("-n", str(files), "--dist", "loadfile")
    env = {"RUN_BROWSER_TESTS": "1", "SITE_DIR": site}
    session.run("pytest", *parallel, "tests/browser", *session.posargs, env=env)


@nox.session
def lint(session: nox.Session) -> None:
    """Check the Python with ruff."""
    install_once(session, lambda: install_packages(session, *PYPROJECT["project"]["optional-dependencies"]["lint"]))
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
