"""The console blocks of README.md and docs/method.rst, read at test time, run as a reader pastes them.

Every ``$`` command is sorted into one of four kinds, from what it runs rather than from a list of names:

* setup: installing nox (pipx, a virtual environment): executed in a fresh HOME and a fresh environment; the nox
  it installs then lists the sessions, which must include every session the documents name;
* install: ``pip install ...`` of this project: executed verbatim in a fresh virtual environment in a copy of the
  repository, which sees torch and the packages the ``kernels`` extra names (taken from this test environment, so
  nothing is downloaded) but not this project and none of the docs, test or lint tooling, as on a GPU machine
  whose CUDA stack is set up; then every ``python <file>`` the same document runs must import all it needs there
  (executed without its ``__main__`` part: no GPU is touched), every ``--help`` or ``--dry-run`` command runs
  verbatim, every ``python -m <module> <command>`` must answer ``--help``, and ``python -m pytest`` runs verbatim
  (without a GPU, the GPU tests it selects skip; collecting them imports what they need);
* CI: ``nox -s <session>`` of the sessions that .ci/run runs (they are executed there, not here);
* GPU: everything else, checked for what it names: files exist, modules import, nox sessions exist, commands and
  flags appear in the script's ``--help`` (a subcommand's own), environment variables are read by the code, and a
  ``pytest -m gpu`` names every test file that holds GPU tests.

A reader who copies the method page's steps can thus not meet ``ModuleNotFoundError: matmul_site`` again.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from conftest import ROOT

DOCUMENTS = ("README.md", "docs/method.rst")
MARKDOWN_BLOCK = re.compile(r"^```console\n(.*?)^```", re.M | re.S)
RST_BLOCK = re.compile(r"^\.\. code-block:: console\n\n((?:[ \t]+.*\n|[ \t]*\n)*)", re.M)
ENV_PREFIX = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
SETUP = re.compile(r"^(pipx |python3? -m venv |~?[\w/.$]*/pip install |export PATH=)")
INSTALL = re.compile(r"^pip install ")
HELP = re.compile(r"\s--(help|dry-run)\b")
# Code that reads environment variables and whose folders hold the commands' files.
CODE = ("src", "noxfile.py", "conf.py", "plots", "examples", "experiments")


@dataclass(frozen=True)
class Command:
    document: str
    text: str  # as the reader pastes it, without its comment

    @property
    def bare(self) -> str:
        """The command without leading VAR=value assignments."""
        return ENV_PREFIX.sub("", self.text)

    @property
    def kind(self) -> str:
        if SETUP.match(self.bare):
            return "setup"
        if INSTALL.match(self.bare):
            return "install"
        if self.bare.startswith("nox -s ") and self.bare == self.text and self.session in ci_sessions():
            return "ci"
        return "gpu"

    @property
    def session(self) -> str:
        words = shlex.split(self.bare)
        return words[2] if words[:2] == ["nox", "-s"] else ""


def commands() -> list[Command]:
    """Every $ command of the documents' console blocks, in order, read now."""
    found = []
    for name in DOCUMENTS:
        text = (ROOT / name).read_text(encoding="utf-8")
        blocks = MARKDOWN_BLOCK.findall(text) if name.endswith(".md") else RST_BLOCK.findall(text)
        for block in blocks:
            for line in block.splitlines():
                line = line.strip()
                if line.startswith("$ "):
                    found.append(Command(name, re.sub(r"\s+#.*$", "", line[2:]).strip()))
    return found


def ci_sessions() -> set[str]:
    ci = (ROOT / ".ci" / "run").read_text()
    return {
        m for line in ci.splitlines() if not line.lstrip().startswith("#") for m in re.findall(r"nox -s (\w+)", line)
    }


def nox_sessions() -> set[str]:
    return set(re.findall(r"@nox\.session(?:\([^)]*\))?\s*\ndef (\w+)\(", (ROOT / "noxfile.py").read_text()))


def gpu_test_files() -> set[str]:
    """The test files that hold tests marked ``gpu`` (the ones a GPU machine must run)."""
    marked = re.compile(r"pytest\.mark\.gpu\b")
    return {p.relative_to(ROOT).as_posix() for p in (ROOT / "tests").glob("test_*.py") if marked.search(p.read_text())}


def leading_words(args: list[str]) -> list[str]:
    """The words before the first flag: a subcommand such as ``record`` in ``python -m matmul_bench record --x``."""
    words = []
    for arg in args:
        if arg.startswith("-"):
            break
        words.append(arg)
    return words


def python_target(command: Command) -> tuple[str, str, list[str]] | None:
    """("file", path, args) or ("module", name, args) for a `python ...` command; None for anything else."""
    words = shlex.split(command.bare)
    if not words or words[0] not in ("python", "python3"):
        return None
    if words[1:2] == ["-m"]:
        return "module", words[2], words[3:]
    return "file", words[1], words[2:]


def bash(command: str, cwd: Path, env: dict[str, str], timeout: int = 600) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )


def test_the_documents_have_console_blocks_of_every_kind() -> None:
    kinds = {c.kind for c in commands()}
    assert kinds == {"setup", "install", "ci", "gpu"}, f"kinds found: {kinds}"
    assert {c.document for c in commands() if c.kind == "install"} == set(DOCUMENTS)


@pytest.mark.parametrize("command", [c for c in commands() if c.kind == "ci"], ids=lambda c: c.text)
def test_ci_runs_each_session_the_documents_tell_readers_to_run(command: Command) -> None:
    assert command.session in nox_sessions(), f"{command.document}: `{command.text}`: no such nox session"
    assert command.session in ci_sessions()


@pytest.mark.parametrize("command", [c for c in commands() if c.kind == "gpu"], ids=lambda c: c.text)
def test_each_gpu_command_names_files_modules_sessions_flags_and_variables_that_exist(command: Command) -> None:
    where = f"{command.document}: `{command.text}`"
    for variable in re.findall(r"([A-Z_][A-Z0-9_]*)=", command.text[: len(command.text) - len(command.bare)]):
        readers = [p for top in CODE for p in (ROOT / top).rglob("*.py") if variable in p.read_text(encoding="utf-8")]
        readers += [ROOT / top for top in CODE if top.endswith(".py") and variable in (ROOT / top).read_text()]
        assert readers, f"{where}: nothing in {', '.join(CODE)} reads {variable}"
    words = shlex.split(command.bare)
    if words[:2] == ["nox", "-s"]:
        assert command.session in nox_sessions(), f"{where}: noxfile.py has no session {command.session!r}"
        return
    if words[:2] == ["rm", "-rf"]:
        assert all(w.startswith("build/") for w in words[2:]), f"{where}: removes something outside build/"
        return
    target = python_target(command)
    assert target, f"{where}: neither python, nox nor rm: this test does not know how to check it"
    kind, name, args = target
    if kind == "file":
        assert (ROOT / name).is_file(), f"{where}: {name} does not exist"
        help_command = [sys.executable, name]
    else:
        import importlib.util

        assert importlib.util.find_spec(name), f"{where}: no module {name}"
        help_command = [sys.executable, "-m", name]
    if name == "pytest":
        if "-m" in args and args[args.index("-m") + 1 :][:1] == ["gpu"]:
            named = {a for a in args if a.startswith("tests/")}
            assert named == gpu_test_files(), f"{where}: names {sorted(named)}, the GPU tests are in {gpu_test_files()}"
        return  # its flags are pytest's own; the install check runs it
    help_command += [*leading_words(args), "--help"]
    flags = [a.split("=")[0] for a in args if a.startswith("-")]
    if flags or leading_words(args):
        shown = subprocess.run(help_command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False)
        assert shown.returncode == 0, f"{where}: `{' '.join(help_command[1:])}` failed: {shown.stderr[-2000:]}"
        missing = [f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", shown.stdout)]
        assert not missing, f"{where}: {missing} are not in its --help"


# ---------------------------------------------------------------------------- executed


def fresh_env(home: Path, *bins: Path) -> dict[str, str]:
    """The environment a reader's new terminal has: a HOME of its own, no virtual environment, this machine's PATH."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME", "FORCE_COLOR")  # colour codes would hide nox's session list
    env = {k: v for k, v in os.environ.items() if k not in drop}
    env["NO_COLOR"] = "1"
    venv_bin = str(Path(sys.prefix) / "bin")
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin]
    env.update(HOME=str(home), PATH=os.pathsep.join([*map(str, bins), *path]))
    return env


def listed_sessions(nox_listing: str) -> set[str]:
    return set(re.findall(r"^[*-] (\w+)", nox_listing, re.M))


@pytest.mark.slow
@pytest.mark.parametrize("tool", ["pipx", "venv"])
def test_the_readme_installs_nox_both_ways_on_a_fresh_account_and_it_finds_every_session(
    tool: str, tmp_path: Path
) -> None:
    steps = [c for c in commands() if c.kind == "setup" and c.document == "README.md"]
    steps = [c for c in steps if c.bare.startswith("pipx ") == (tool == "pipx")]
    assert steps, f"the README has no {tool} steps"
    home = tmp_path / "home"
    home.mkdir()
    bins = []
    if tool == "pipx" and not shutil.which("pipx"):  # what `apt install pipx` would give
        subprocess.run([sys.executable, "-m", "venv", str(tmp_path / "pipx")], check=True)
        done = subprocess.run([str(tmp_path / "pipx/bin/pip"), "install", "-q", "pipx"], capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        bins.append(tmp_path / "pipx" / "bin")
    env = fresh_env(home, *bins)
    script = " && ".join(c.text for c in steps)
    # A new terminal afterwards (pipx ensurepath edits the shell's startup files), in the repository.
    shell = "bash -lic 'nox --version && nox -l'" if tool == "pipx" else "nox --version && nox -l"
    done = bash(f"{script} && cd {shlex.quote(str(ROOT))} && {shell}", home, env)
    assert done.returncode == 0, f"{script}:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    named = {c.session for c in commands() if c.session}
    assert named <= listed_sessions(done.stdout), f"nox -l lists {listed_sessions(done.stdout)}, not all of {named}"


def repository_copy(where: Path) -> Path:
    skip = shutil.ignore_patterns(".git", ".nox", "build", "*.egg-info", "__pycache__", ".*_cache", "gallery")
    return Path(shutil.copytree(ROOT, where, ignore=skip))


def requirement_closure(roots: set[str]) -> list[metadata.Distribution]:
    """The installed distributions that ``roots`` need, their own requirements included (extras left out)."""
    found: dict[str, metadata.Distribution] = {}
    todo = list(roots)
    while todo:
        name = canonicalize_name(todo.pop())
        if name in found:
            continue
        try:
            found[name] = metadata.distribution(name)
        except metadata.PackageNotFoundError:
            continue  # not installed here: the install step would fetch it
        needs = [Requirement(text) for text in found[name].requires or []]
        todo += [r.name for r in needs if r.marker is None or r.marker.evaluate({"extra": ""})]
    return list(found.values())


def linked_packages(where: Path) -> Path:
    """Links to this environment's torch and the packages the ``kernels`` extra names, with what they need: what a
    GPU machine's environment has after the install step, without this project, the docs, test or lint tooling."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    roots = {Requirement(r).name for r in extras["kernels"]} | {"torch"}
    where.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    tops = {f.parts[0] for dist in requirement_closure(roots) for f in dist.files or [] if f.parts[0] != ".."}
    for top in sorted(tops - {"__pycache__"}):
        if (site / top).exists() and not top.endswith(".pth"):
            (where / top).symlink_to(site / top)
    return where


@pytest.mark.slow
@pytest.mark.parametrize("install", sorted({c.text for c in commands() if c.kind == "install"}))
def test_the_install_step_makes_every_python_command_of_its_page_import_what_it_needs(
    install: str, tmp_path: Path
) -> None:
    repo = repository_copy(tmp_path / "repo")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "gpu_machine_packages.pth").write_text(f"{linked_packages(tmp_path / 'packages')}\n")
    env = fresh_env(tmp_path, venv / "bin")
    done = bash(install, repo, env)
    assert done.returncode == 0, f"`{install}` failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    documents = {c.document for c in commands() if c.text == install}
    checked = 0
    for command in [c for c in commands() if c.document in documents and python_target(c)]:
        kind, name, args = python_target(command)
        if HELP.search(command.text) or name == "pytest":  # pytest: without a GPU, the GPU tests skip
            done = bash(command.text, repo, env, timeout=300)
        elif kind == "file":  # its imports, not its main(): nothing touches a GPU
            load = f"import runpy; runpy.run_path({Path(name).name!r})"  # `python -c` in its folder: siblings import
            done = bash(f"python -c {shlex.quote(load)}", repo / Path(name).parent, env, timeout=300)
        else:  # a module's command, asked what it does: the module and that command are there
            done = bash(shlex.join(["python", "-m", name, *leading_words(args), "--help"]), repo, env, timeout=300)
        where = f"{command.document}: after `{install}`, `{command.text}`"
        assert done.returncode == 0, f"{where} fails:\n{done.stderr[-3000:]}"
        checked += 1
    assert checked, f"no python command follows `{install}` in {documents}"
