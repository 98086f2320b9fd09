"""The README's commands name sessions, files and flags that exist (CI runs the two main ones)."""

from __future__ import annotations

import os
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


def pythons_called_tested(text: str) -> set[str]:
    """The Python versions a text says are tested: every 3.x in the sentences that say "tested" or "Tested"."""
    sentences = re.split(r"(?<=[.;])\s", " ".join(text.split()))
    said = [s for s in sentences if re.search(r"\btested\b", s, re.I) and "not tested" not in s]
    return {v for s in said for v in re.findall(r"\b3\.\d+\b", s)}


def test_the_readme_calls_tested_only_the_pythons_ci_the_workflow_and_the_gpu_runs_used() -> None:
    import yaml

    from matmul_data import results

    claimed = pythons_called_tested(README)
    assert claimed, "the README names no Python version it is tested on"
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "pages.yml").read_text())
    setup = next(s for s in workflow["jobs"]["build"]["steps"] if str(s.get("uses", "")).startswith("actions/setup-py"))
    recorded = results.load_default()
    used = {str(setup["with"]["python-version"])}
    if recorded:
        used.add(".".join(recorded["software"]["python"].split(".")[:2]))
    lowest = re.search(r'requires-python = ">=(3\.\d+)"', (ROOT / "pyproject.toml").read_text())
    used.add(lowest[1])  # .ci/run refuses anything older, and tests on python3: its version is held below in CI
    assert claimed <= used, f"the README says {sorted(claimed - used)} are tested; CI and the workflow use {used}"
    assert str(setup["with"]["python-version"]) in claimed, "the README does not name the workflow's Python"


def test_ci_runs_on_a_python_the_readme_names_as_tested() -> None:
    if os.environ.get("HOPPER_MATMUL_CI") != "1":
        pytest.skip("holds only under .ci/run, whose Python this session runs on")
    here = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert here in pythons_called_tested(README), f"CI runs on Python {here}, which the README does not name as tested"


def test_the_tested_reader_finds_the_versions_of_a_tested_sentence_only() -> None:
    text = "You need Python 3.11 or newer. Tested on Python 3.11 (CI) and 3.12 (Pages); 3.13 is not tested."
    assert pythons_called_tested(text) == {"3.11", "3.12"}


def test_gitignore_names_each_pattern_once() -> None:
    lines = [line for line in (ROOT / ".gitignore").read_text().splitlines() if line.strip()]
    assert len(lines) == len(set(lines)), (
        f"repeated lines in .gitignore: {sorted({x for x in lines if lines.count(x) > 1})}"
    )
