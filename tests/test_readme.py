"""The commands of README.md and docs/method.rst, read at test time, work as a reader pastes them.

* `nox -s <session>`: the session exists, and .ci/run runs the README's two main ones (tests, docs);
* `python <file>` / `python -m <module> <command> --flags`: the file or module exists, and the command and its
  flags are in its `--help`; `VAR=value` prefixes are read by the code; `pytest -m gpu` names every GPU test file;
* the install step (`pip install -e ".[kernels]"`), run verbatim in a fresh environment that has torch and the
  kernels' packages but not this project: then every python command of the page imports what it needs there
  (a reader once met `ModuleNotFoundError: matmul_site`).
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

ROOT = Path(__file__).resolve().parents[1]
DOCUMENTS = ("README.md", "docs/method.rst")
MARKDOWN_BLOCK = re.compile(r"^```console\n(.*?)^```", re.M | re.S)
RST_BLOCK = re.compile(r"^\.\. code-block:: console\n\n((?:[ \t]+.*\n|[ \t]*\n)*)", re.M)
ENV_PREFIX = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=\S*\s+)+")
INSTALL = re.compile(r"^pip install -e ")
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
    def words(self) -> list[str]:
        return shlex.split(self.bare)

    @property
    def session(self) -> str:
        return self.words[2] if self.words[:2] == ["nox", "-s"] else ""


def commands() -> list[Command]:
    """Every $ command of the documents' console blocks, in order, read now."""
    found = []
    for name in DOCUMENTS:
        text = (ROOT / name).read_text(encoding="utf-8")
        blocks = MARKDOWN_BLOCK.findall(text) if name.endswith(".md") else RST_BLOCK.findall(text)
        for line in (line.strip() for block in blocks for line in block.splitlines()):
            if line.startswith("$ "):
                found.append(Command(name, re.sub(r"\s+#.*$", "", line[2:]).strip()))
    return found


def python_commands() -> list[Command]:
    """The commands that run this project's Python (not `python3 -m venv` or `-m pip`: setting up, not running)."""
    python = [c for c in commands() if c.words[:1] in (["python"], ["python3"])]
    return [c for c in python if c.words[1:3] not in (["-m", "venv"], ["-m", "pip"])]


def nox_sessions() -> set[str]:
    return set(re.findall(r"@nox\.session(?:\([^)]*\))?\s*\ndef (\w+)\(", (ROOT / "noxfile.py").read_text()))


def ci_sessions() -> set[str]:
    lines = [line for line in (ROOT / ".ci" / "run").read_text().splitlines() if not line.lstrip().startswith("#")]
    return {m for line in lines for m in re.findall(r"\bnox -s (\w+)", line)}


def leading_words(args: list[str]) -> list[str]:
    """The words before the first flag: a subcommand such as ``record`` in ``python -m matmul_bench record --x``."""
    words = []
    for arg in args:
        if arg.startswith("-"):
            break
        words.append(arg)
    return words


def target(command: Command) -> tuple[str, str, list[str]]:
    """("file", path, args) or ("module", name, args) of a `python ...` command."""
    words = command.words
    return ("module", words[2], words[3:]) if words[1] == "-m" else ("file", words[1], words[2:])


def test_ci_runs_the_readmes_two_commands_and_every_session_named_exists() -> None:
    named = {c.session for c in commands() if c.session}
    assert {"tests", "docs"} <= {c.session for c in commands() if c.document == "README.md"}
    assert {"tests", "docs"} <= ci_sessions(), f".ci/run runs {ci_sessions()}"
    assert named <= nox_sessions(), f"the documents run sessions noxfile.py lacks: {named - nox_sessions()}"
    assert ci_sessions() <= nox_sessions(), f".ci/run runs sessions noxfile.py lacks: {ci_sessions() - nox_sessions()}"


def test_variables_set_in_the_documents_commands_are_read_by_the_code() -> None:
    files = [p for top in CODE for p in [ROOT / top, *(ROOT / top).rglob("*.py")] if p.is_file()]
    texts = [p.read_text(encoding="utf-8") for p in files]
    for command in commands():
        for variable in re.findall(r"([A-Z_][A-Z0-9_]*)=", command.text[: len(command.text) - len(command.bare)]):
            assert any(variable in t for t in texts), f"{command.document}: `{command.text}`: nothing reads {variable}"


@pytest.mark.parametrize("command", python_commands(), ids=lambda c: c.text)
def test_each_python_command_names_a_file_or_module_command_and_flags_that_exist(command: Command) -> None:
    where = f"{command.document}: `{command.text}`"
    kind, name, args = target(command)
    if kind == "file":
        assert (ROOT / name).is_file(), f"{where}: {name} does not exist"
        help_command = [sys.executable, name]
    else:
        import importlib.util

        assert importlib.util.find_spec(name), f"{where}: no module {name}"
        help_command = [sys.executable, "-m", name]
    if name == "pytest":
        if "-m" in args and args[args.index("-m") + 1 :][:1] == ["gpu"]:
            marked = re.compile(r"pytest\.mark\.gpu\b")
            gpu_files = {f"tests/{p.name}" for p in (ROOT / "tests").glob("test_*.py") if marked.search(p.read_text())}
            named = {a for a in args if a.startswith("tests/")}
            assert named == gpu_files, f"{where}: names {sorted(named)}, the GPU tests are in {sorted(gpu_files)}"
        return
    flags = [a.split("=")[0] for a in args if a.startswith("-") and a != "--help"]
    if not (flags or leading_words(args)):
        return
    shown = subprocess.run(
        [*help_command, *leading_words(args), "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert shown.returncode == 0, f"{where}: its --help failed: {shown.stderr[-2000:]}"
    missing = [f for f in flags if not re.search(rf"(?<![\w-]){re.escape(f)}(?![\w-])", shown.stdout)]
    assert not missing, f"{where}: {missing} are not in its --help"


# ---------------------------------------------------------------------------- the install step, executed


def fresh_env(home: Path, *bins: Path) -> dict[str, str]:
    """A reader's new terminal: a HOME of its own, no virtual environment, this machine's PATH."""
    drop = ("VIRTUAL_ENV", "PYTHONPATH", "PYTHONHOME")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    venv_bin = str(Path(sys.prefix) / "bin")
    path = [p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin]
    env.update(HOME=str(home), PATH=os.pathsep.join([*map(str, bins), *path]))
    return env


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
    GPU machine's environment has after the install step, without this project and the docs or test tooling."""
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    roots = {Requirement(r).name for r in extras["kernels"]} | {"torch"}
    where.mkdir()
    site = Path(sysconfig.get_paths()["purelib"])
    tops = {f.parts[0] for dist in requirement_closure(roots) for f in dist.files or [] if f.parts[0] != ".."}
    for top in sorted(tops - {"__pycache__"}):
        if (site / top).exists() and not top.endswith(".pth"):
            (where / top).symlink_to(site / top)
    return where


def bash(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_after_the_install_step_every_python_command_imports_what_it_needs(tmp_path: Path) -> None:
    installs = {c.text for c in commands() if INSTALL.match(c.bare)}
    assert installs, "neither document installs the project"
    install = next(c.text for c in commands() if INSTALL.match(c.bare))  # the first: the one every page starts with
    skip = shutil.ignore_patterns(".git", ".nox", "build", "*.egg-info", "__pycache__", ".*_cache", "gallery", "logs")
    repo = Path(shutil.copytree(ROOT, tmp_path / "repo", ignore=skip))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    site = next((venv / "lib").glob("python3*/site-packages"))
    (site / "gpu_machine_packages.pth").write_text(f"{linked_packages(tmp_path / 'packages')}\n")
    env = fresh_env(tmp_path, venv / "bin")
    done = bash(install, repo, env)
    assert done.returncode == 0, f"`{install}` failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    checks = []
    for command in python_commands():
        kind, name, args = target(command)
        if name == "pytest" or "--help" in args:  # pytest: without a GPU, the GPU tests skip
            checks.append(command.text)
        elif kind == "file":  # its imports, not its main(): nothing touches a GPU
            load = f"import runpy; runpy.run_path({Path(name).name!r})"  # from its folder, as `python name` sees it
            checks.append(f"(cd {shlex.quote(str(Path(name).parent))} && python -c {shlex.quote(load)})")
        else:  # a module's command, asked what it does: the module and that command are there
            checks.append(shlex.join(["python", "-m", name, *leading_words(args), "--help"]))
    # One shell for all, the checks side by side (each is a Python that imports torch or Tilus: seconds of CPU): a
    # failing check writes itself and the end of its output on stderr, in one write, and the others go on.
    report = 'printf "FAILED: %s\\n%s\\n" {} "$(printf %s "$out" | tail -n 15)" >&2'
    script = (
        "".join(f"(out=$({c} 2>&1) || {report.format(shlex.quote(c))}) &\n" for c in dict.fromkeys(checks)) + "wait"
    )
    done = bash(script, repo, env)
    assert not done.stderr, f"after `{install}`, these fail:\n{done.stderr}"
