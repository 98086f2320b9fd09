"""The nox sessions, called with a stand-in for nox that records what they would run: which folder each build
goes to, so that `nox -s docs` then `nox -s browser` leaves build/html as the user built it, and CI builds once."""

from __future__ import annotations

import runpy
import sys
import types
from pathlib import Path
from typing import Any

import pytest

from conftest import ROOT


class Recorder:
    """A nox.Session that records its run() calls instead of running them; error() raises."""

    def __init__(self) -> None:
        self.posargs: list[str] = []
        self.runs: list[tuple[tuple[str, ...], dict[str, str]]] = []

    def run(self, *args: str, env: dict[str, str] | None = None, **_: Any) -> None:
        self.runs.append((args, env or {}))

    def install(self, *args: str, **_: Any) -> None:
        pass

    def log(self, *args: Any) -> None:
        pass

    def error(self, message: str) -> None:
        raise RuntimeError(message)


@pytest.fixture
def noxfile(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """noxfile.py's namespace, loaded with a stand-in nox module (no nox needed in the test environment)."""
    import tomllib

    fake = types.ModuleType("nox")
    fake.options = types.SimpleNamespace()
    fake.Session = Recorder
    fake.project = types.SimpleNamespace(load_toml=lambda path: tomllib.loads((ROOT / path).read_text()))
    fake.session = lambda *a, **k: a[0] if a and callable(a[0]) else (lambda f: f)
    monkeypatch.setitem(sys.modules, "nox", fake)
    monkeypatch.chdir(ROOT)
    monkeypatch.delenv("HOPPER_MATMUL_SITE_DIR", raising=False)
    return runpy.run_path(str(ROOT / "noxfile.py"))


def built_into(session: Recorder) -> list[str]:
    """The output folder of every sphinx-build the session ran."""
    return [args[args.index("docs") + 1] for args, _ in session.runs if args[0] == "sphinx-build"]


def test_docs_then_browser_leaves_the_users_build_alone(noxfile: dict[str, Any]) -> None:
    docs, browser = Recorder(), Recorder()
    noxfile["docs"](docs)
    noxfile["browser"](browser)
    assert built_into(docs) == ["build/html"]
    assert built_into(browser) == ["build/browser-html"]
    tests = [env for args, env in browser.runs if args[0] == "pytest"]
    assert tests == [{"RUN_BROWSER_TESTS": "1", "SITE_DIR": "build/browser-html"}]


def test_told_to_reuse_a_build_docs_builds_there_and_browser_tests_it_without_building(
    noxfile: dict[str, Any], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    monkeypatch.setenv("HOPPER_MATMUL_SITE_DIR", str(site))
    docs, browser = Recorder(), Recorder()
    noxfile["docs"](docs)
    assert built_into(docs) == [str(site)]
    with pytest.raises(RuntimeError, match="holds no site built for"):
        noxfile["browser"](browser)  # nothing was really built there
    site.mkdir()
    (site / "sitemap.xml").write_text(f"<loc>{noxfile['BROWSER_BASEURL']}index.html</loc>")
    noxfile["browser"](browser)
    assert built_into(browser) == []
    assert [env["SITE_DIR"] for args, env in browser.runs if args[0] == "pytest"] == [str(site)]


def test_ci_builds_the_site_once_for_the_browser_and_never_into_build_html() -> None:
    commands = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if not line.lstrip().startswith("#")]
    where = {word: next(i for i, line in enumerate(commands) if word in line) for word in ("SITE_DIR=", "-s docs")}
    assert commands[where["SITE_DIR="]] == "export HOPPER_MATMUL_SITE_DIR=build/browser-html"
    assert commands[where["-s docs"]].startswith("HOPPER_MATMUL_BASEURL=http://127.0.0.1:8000/hopper-matmul/ nox")
    assert where["SITE_DIR="] < where["-s docs"] < next(i for i, line in enumerate(commands) if "-s browser" in line)


def test_ci_never_pip_installs_into_the_system_python() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    assert "python3 -m pip" not in ci and "pip3 install" not in ci and "--break-system-packages" not in ci
    assert 'python3 -m venv "$NOX_VENV"' in ci and "pipx run" in ci
