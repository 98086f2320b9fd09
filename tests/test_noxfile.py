"""The nox sessions, called with a stand-in for nox that records what they would run and install.

Which folder each build goes to (`nox -s docs` then `nox -s browser` leaves build/html as the user built it; CI
builds once), that a reused environment installs nothing, and what the tests session hands pytest.
"""

from __future__ import annotations

import logging
import os
import runpy
import shutil
import subprocess
import sys
import types
import urllib.request
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]


class Recorder:
    """A nox.Session in an environment at `location`: records run() and install() calls; error() raises."""

    def __init__(self, location: Path | None = None, venv_backend: str = "virtualenv") -> None:
        self.venv_backend = venv_backend
        self.posargs: list[str] = []
        self.runs: list[tuple[tuple[str, ...], dict[str, str]]] = []
        self.installs: list[tuple[str, ...]] = []
        self.install_envs: list[dict[str, str]] = []
        self.logs: list[str] = []
        self.created: list[str] = []
        self.virtualenv = types.SimpleNamespace(location=str(location) if location else None, create=self._create)

    def _create(self) -> bool:
        """What nox's create() does where no environment is left: a new, empty one."""
        Path(self.virtualenv.location).mkdir(parents=True)
        self.created.append(self.virtualenv.location)
        return True

    def run(self, *args: str, env: dict[str, str] | None = None, **_: Any) -> None:
        self.runs.append((args, env or {}))

    def install(self, *args: str, env: dict[str, str] | None = None, **_: Any) -> None:
        self.installs.append(args)
        self.install_envs.append(env or {})

    def log(self, *args: Any) -> None:
        self.logs.append(" ".join(map(str, args)))

    def error(self, message: str) -> None:
        raise RuntimeError(message)


def load_noxfile(folder: Path) -> dict[str, Any]:
    """The namespace of folder/noxfile.py, loaded with a stand-in nox module (no nox needed here)."""
    import tomllib

    fake = types.ModuleType("nox")
    fake.options = types.SimpleNamespace()
    fake.Session = Recorder
    fake.project = types.SimpleNamespace(load_toml=lambda path: tomllib.loads((folder / path).read_text()))
    fake.session = lambda *a, **k: a[0] if a and callable(a[0]) else (lambda f: f)
    real = sys.modules.get("nox")
    sys.modules["nox"] = fake
    try:
        return runpy.run_path(str(folder / "noxfile.py"))
    finally:
        if real is None:
            del sys.modules["nox"]
        else:
            sys.modules["nox"] = real


@pytest.fixture
def noxfile(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.chdir(ROOT)  # nox runs the sessions from the noxfile's folder
    monkeypatch.delenv("HOPPER_MATMUL_SITE_DIR", raising=False)
    return load_noxfile(ROOT)


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


def test_a_reused_environment_installs_again_only_when_pyproject_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("noxfile.py", "pyproject.toml"):
        shutil.copy(ROOT / name, repo / name)
    monkeypatch.chdir(repo)
    monkeypatch.delenv("HOPPER_MATMUL_SITE_DIR", raising=False)
    noxfile = load_noxfile(repo)
    venv = tmp_path / "venv"
    venv.mkdir()

    def installs(session_name: str) -> list[tuple[str, ...]]:
        session = Recorder(venv)
        noxfile[session_name](session)
        return session.installs

    assert installs("docs"), "a new environment got nothing installed"
    assert installs("docs") == [], "a rebuild with nothing changed installed again"
    (repo / "pyproject.toml").write_text((repo / "pyproject.toml").read_text() + "\n# changed\n")
    assert installs("docs"), "a changed pyproject.toml was not installed"
    assert installs("lint") == [], "the same environment, nothing changed since"
    stamps = list(venv.iterdir())
    for stamp in stamps:
        stamp.unlink()
    skipped = Recorder(venv)  # nox --no-install: nox skips the installs, so nothing may be stamped as done
    skipped._runner = types.SimpleNamespace(global_config=types.SimpleNamespace(no_install=True))
    noxfile["docs"](skipped)
    assert not list(venv.iterdir()) and stamps, "a run under --no-install stamped the environment as installed"
    no_venv = Recorder(None)  # nox --no-venv: no environment of its own, so nothing to remember
    noxfile["lint"](no_venv)
    assert no_venv.installs


def test_a_checkout_moved_or_copied_with_its_environments_installs_again_into_a_fresh_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOPPER_MATMUL_SITE_DIR", raising=False)

    def checkout(name: str) -> Path:
        repo = tmp_path / name
        repo.mkdir()
        for file in ("noxfile.py", "pyproject.toml"):
            shutil.copy(ROOT / file, repo / file)
        return repo

    def run_docs(repo: Path, venv: Path) -> Recorder:
        monkeypatch.chdir(repo)
        session = Recorder(venv)
        load_noxfile(repo)["docs"](session)
        return session

    first = checkout("first")
    venv = first / ".nox" / "docs"
    venv.mkdir(parents=True)
    assert run_docs(first, venv).installs and run_docs(first, venv).installs == []
    # Copied, .nox/ with it: the copy's environment still starts the first checkout's Python, so it is made again.
    copy = checkout("copy")
    shutil.copytree(first / ".nox", copy / ".nox")
    (copy / ".nox" / "docs" / "left-over").write_text("")
    again = run_docs(copy, copy / ".nox" / "docs")
    assert again.created == [str(copy / ".nox" / "docs")] and again.installs, "the copy reused the first's install"
    assert not (copy / ".nox" / "docs" / "left-over").exists() and "moved or copied" in again.logs[0]
    assert run_docs(copy, copy / ".nox" / "docs").installs == [], "the copy's own environment installed twice"
    assert run_docs(first, venv).installs == [], "the first checkout's environment was touched by the copy"
    # Moved where the environments stay (nox --envdir elsewhere): the editable install points at the old folder.
    outside = tmp_path / "envs" / "docs"
    outside.mkdir(parents=True)
    assert run_docs(first, outside).installs
    moved = first.rename(tmp_path / "moved")
    after_move = run_docs(moved, outside)
    assert after_move.installs and after_move.created == [], "a moved checkout kept the old folder's install"


def test_the_plain_route_drops_noxs_uv_not_found_line_and_keeps_the_rest(
    noxfile: dict[str, Any], caplog: pytest.LogCaptureFixture
) -> None:
    logger = logging.getLogger("nox")
    with caplog.at_level(logging.INFO, logger="nox"):
        logger.info(noxfile["NO_UV_MESSAGE"])  # what nox logs where it finds no uv (nox.virtualenv.uv_version)
        logger.info("Creating virtual environment (virtualenv) using python in .nox/docs")
    assert [r.getMessage() for r in caplog.records] == [
        "Creating virtual environment (virtualenv) using python in .nox/docs"
    ]
    assert noxfile["nox"].options.default_venv_backend.split("|")[0] == "uv", "the uv route no longer uses uv"


def test_the_tests_session_checks_the_import_contracts_before_pytest(noxfile: dict[str, Any]) -> None:
    session = Recorder()
    noxfile["tests"](session)
    ran = [args[0] for args, _ in session.runs if args[0] != "python"]  # python: which torch the install got
    assert ran == ["lint-imports", "pytest"], ran
    # The test extra installs it, and pyproject.toml holds its contracts for the packages under src/.
    config = noxfile["PYPROJECT"]
    assert any(r.startswith("import-linter") for r in config["project"]["optional-dependencies"]["test"])
    packages = {p.name for p in (ROOT / "src").iterdir() if (p / "__init__.py").is_file()}
    assert set(config["tool"]["importlinter"]["root_packages"]) == packages


def test_the_tests_session_gives_pytest_an_environment_in_which_tqdm_draws_no_bar(noxfile: dict[str, Any]) -> None:
    session = Recorder()
    noxfile["tests"](session)
    [(args, env)] = [(args, env) for args, env in session.runs if args[0] == "pytest"]
    bar = "from tqdm import tqdm\nfor _ in tqdm(range(3), desc='Building', miniters=1, delay=0): pass\nprint('done')"
    done = subprocess.run(
        [sys.executable, "-c", bar], env={**os.environ, **env}, capture_output=True, text=True, check=True
    )
    assert (done.stdout, done.stderr) == ("done\n", ""), f"a progress bar was drawn: {done.stderr!r}"


def test_without_pytorchs_index_torch_comes_at_the_pinned_version_and_the_message_names_it(
    noxfile: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable(*_: Any, **__: Any) -> None:
        raise OSError("no route")

    monkeypatch.setattr(urllib.request, "urlopen", unreachable)
    session = Recorder()
    noxfile["install_cpu_torch"](session)
    pin = noxfile["torch_pin"]()
    assert session.installs == [(pin,)]
    assert len(session.logs) == 1 and pin in session.logs[0], session.logs
    assert "CUDA build" in session.logs[0]  # the recorder's torch reports no version: not known to be the CPU build
    # A mirror that serves the CPU wheel is named as such, not as gigabytes of CUDA.
    cpu = Recorder()
    cpu.run = lambda *args, **kwargs: "2.13.0+cpu\n"  # type: ignore[method-assign]
    noxfile["install_cpu_torch"](cpu)
    assert len(cpu.logs) == 1 and "its CPU build" in cpu.logs[0] and "gigabytes" not in cpu.logs[0], cpu.logs


def test_under_uv_installs_pass_no_pip_only_flag_and_uv_finds_the_wheels_pip_is_pointed_at(
    noxfile: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PIP_FIND_LINKS", "/opt/wheels  /srv/more")
    monkeypatch.setenv("PIP_EXTRA_INDEX_URL", "file:///opt/pypi/simple")
    monkeypatch.setenv("UV_EXTRA_INDEX_URL", "https://mine.example/simple")  # set for uv already: left as it is
    monkeypatch.delenv("UV_FIND_LINKS", raising=False)
    for name in ("docs", "browser", "lint"):
        uv, pip = Recorder(venv_backend="uv"), Recorder()
        noxfile[name](uv)
        noxfile[name](pip)
        assert uv.installs and not any("--progress-bar" in args for args in uv.installs), uv.installs  # uv: error
        assert all(env == {"UV_FIND_LINKS": "/opt/wheels,/srv/more"} for env in uv.install_envs), uv.install_envs
        assert [a for a in pip.installs if "-e" in a] in ([], [("--progress-bar", "on", "-e", f".[{name}]")])
