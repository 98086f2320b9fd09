"""The README's commands name sessions, files and flags that exist (CI runs the two main ones)."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from conftest import ROOT

README = (ROOT / "README.md").read_text()
COMMANDS = [line.split("#")[0].strip()[2:].strip() for line in README.splitlines() if line.startswith("$ ")]


def nox_sessions() -> set[str]:
    noxfile = (ROOT / "noxfile.py").read_text()
    return set(re.findall(r"@nox\.session(?:\([^)]*\))?\s*\ndef (\w+)\(", noxfile))


def test_readme_shows_the_two_main_commands() -> None:
    assert "nox -s docs" in COMMANDS and "nox -s tests" in COMMANDS


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.startswith("nox -s")])
def test_every_nox_session_in_the_readme_exists(command: str) -> None:
    session = command.split()[2]
    assert session in nox_sessions(), f"README runs `{command}` but noxfile.py has no session {session!r}"


@pytest.mark.parametrize("command", [c for c in COMMANDS if c.startswith("python examples/")])
def test_every_script_in_the_readme_exists(command: str) -> None:
    assert (ROOT / command.split()[1]).is_file(), f"README runs `{command}` but the file is missing"


def test_ci_runs_the_readme_commands() -> None:
    ci = (ROOT / ".ci" / "run").read_text()
    for command in ("nox -s tests", "nox -s docs"):
        assert command in ci, f".ci/run does not run `{command}`"


def test_the_benchmark_dry_run_from_the_readme_works_without_a_gpu() -> None:
    done = subprocess.run([sys.executable, "-m", "matmul_bench", "plan"], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "dry run" in done.stdout
