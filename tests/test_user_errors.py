"""A user's mistake is one line that says what is wrong, with the command's name first, and nothing runs: a results
file that cannot be read, a tool that is not there, a file of another GPU, no GPU at all. All on the CPU: where a
command would go on to a GPU, torch cannot be imported (``import torch`` raises), so any launch fails the test."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

import fake_results
from matmul_bench import buildcheck, cli, machine
from matmul_bench import tryit as tryit_runner
from matmul_data import paths, results
from matmul_site import render

H100 = "NVIDIA H100 80GB HBM3"  # fake_results' files are the H200's


def results_file(tmp_path: Path, gpu: str = fake_results.GPU) -> Path:
    """A valid results file of ``gpu``."""
    path = tmp_path / "results.json"
    results.write_atomic(path, fake_results.typed(fake_results.fake_file(gpu)))
    return path


def broken_file(tmp_path: Path) -> Path:
    """A results file cut short, as an interrupted copy leaves it."""
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(fake_results.fake_file())[:500])
    return path


def one_line(err: str) -> str:
    """The one line a refusal printed on stderr (the test fails on more, or a traceback)."""
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


@pytest.fixture
def no_torch(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import torch`` raises ImportError: a launch, or a GPU looked for, cannot happen unnoticed."""
    monkeypatch.setitem(sys.modules, "torch", None)


def on_another_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    """A Hopper GPU here, the H100, not the H200 of fake_results' files."""
    monkeypatch.setattr(machine, "require_hopper", lambda: None)
    monkeypatch.setattr(machine, "device", lambda: SimpleNamespace(name=H100))


def tripwire(what: str) -> Any:
    """A stand-in for a step that must not be reached."""

    def reached(*args: Any, **kwargs: Any) -> Any:
        pytest.fail(f"{what} was reached")

    return reached


# --- plan: the results file beside the estimate


@pytest.mark.parametrize("command", [["plan"], ["record", "--dry-run"]], ids=["plan", "record --dry-run"])
@pytest.mark.parametrize("problem", ["broken", "missing"])
def test_plan_prints_the_plan_and_says_why_the_measured_durations_are_unknown_when_the_results_file_cannot_be_read(
    command: list[str], problem: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    path = broken_file(tmp_path) if problem == "broken" else tmp_path / "typo.json"
    monkeypatch.setenv(paths.ENV_RESULTS, str(path))
    assert cli.main([*command, "--ladder"]) == 0  # a record never reads the variable: the plan is all there
    printed = capsys.readouterr()
    measured = [line for line in printed.out.splitlines() if line.startswith("  measured")]
    assert "estimated duration: about" in printed.out and printed.err == "", printed.err
    assert len(measured) == 1 and "the results file cannot be read" in measured[0] and str(path) in measured[0]
    assert ("not valid JSON" if problem == "broken" else paths.ENV_RESULTS) in measured[0], measured[0]


# --- buildcheck: the tools it needs


def test_buildcheck_without_nvcc_is_one_line_naming_it_and_builds_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    missing = tmp_path / "bin" / "nvcc"
    monkeypatch.setenv("NVCC", str(missing))  # find_tool reads $NVCC before the wheels and PATH
    monkeypatch.setattr(buildcheck, "build_all", tripwire("a build"))
    assert cli.main(["buildcheck"]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith("python -m matmul_bench buildcheck: nvcc not found") and str(missing) in line, line


def test_find_tool_refuses_a_variable_that_names_no_executable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PTXAS", str(tmp_path / "ptxas"))
    with pytest.raises(buildcheck.BuildCheckError, match=r"ptxas not found: \$PTXAS is .*ptxas, not an executable"):
        buildcheck.find_tool("ptxas")


# --- the results file the site and the charts read


def test_a_results_variable_naming_no_file_is_an_error_naming_both(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    typo = tmp_path / "nvidia-h20.json"
    monkeypatch.setenv(paths.ENV_RESULTS, str(typo))
    with pytest.raises(paths.ResultsFileError, match=f"{paths.ENV_RESULTS}={typo}: no such results file"):
        paths.results_file()
    with pytest.raises(results.ResultsError, match=paths.ENV_RESULTS):  # the charts' way in
        results.read_default()
    assert render.main(["--check"]) == 1  # not a site of "not measured yet" everywhere
    line = one_line(capsys.readouterr().err)
    assert line.startswith("render: ") and paths.ENV_RESULTS in line and str(typo) in line, line


def test_the_results_variable_set_to_the_null_device_means_no_results_file(
    monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    monkeypatch.setenv(paths.ENV_RESULTS, paths.NO_RESULTS)
    assert paths.results_file() is None and results.read_default() is None
    render.main(["--check"])  # writes nothing; the committed pages have numbers, so they read as stale here
    first = capsys.readouterr().err.splitlines()[0]
    assert first.startswith(f"render: no results file ({paths.ENV_RESULTS} is {paths.NO_RESULTS})"), first


# --- how to remake a results file: the site says it, the data core only what is wrong


def test_the_site_says_how_to_remake_a_broken_results_file_and_the_data_core_names_no_command(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    broken = broken_file(tmp_path)
    for read in (results.load, results.read):
        for path in (broken, tmp_path / "absent.json"):
            with pytest.raises(results.ResultsError) as raised:
                read(path)
            assert str(path) in str(raised.value) and "nox" not in str(raised.value), raised.value
    monkeypatch.setenv(paths.ENV_RESULTS, str(broken))
    assert render.main(["--check"]) == 1
    line = one_line(capsys.readouterr().err)
    assert f"render: {broken}: not valid JSON" in line and "restore it from git" in line, line
    assert "rerun `nox -s bench`" in line, line


# --- baseline: its --into file and the GPU, before any launch


def test_baseline_refuses_a_broken_into_file_before_looking_for_a_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, no_torch: None
) -> None:
    broken = broken_file(tmp_path)
    before = broken.read_bytes()
    monkeypatch.setattr(machine, "require_hopper", tripwire("the GPU check"))
    assert cli.main(["baseline", "--into", str(broken)]) == 2
    line = one_line(capsys.readouterr().err)
    assert line.startswith("python -m matmul_bench baseline: error: --into: ") and "not valid JSON" in line, line
    assert broken.read_bytes() == before


def test_baseline_without_a_hopper_gpu_is_one_line_and_profiles_nothing(
    tmp_path: Path, capsys: Any, no_torch: None
) -> None:
    into = results_file(tmp_path)
    assert cli.main(["baseline", "--into", str(into)]) == 1
    line = one_line(capsys.readouterr().err)
    assert line.startswith("python -m matmul_bench baseline: torch is not installed"), line


def test_baseline_refuses_an_into_file_of_another_gpu_before_any_launch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, no_torch: None
) -> None:
    into = results_file(tmp_path)
    before = into.read_bytes()
    on_another_gpu(monkeypatch)
    assert cli.main(["baseline", "--into", str(into)]) == 1
    line = one_line(capsys.readouterr().err)
    assert f"holds results of {fake_results.GPU!r}, not of this {H100!r}" in line and "baseline" in line, line
    assert into.read_bytes() == before


# --- tryit: its --out file and the GPU, before any build


def test_tryit_refuses_a_broken_out_file_before_anything_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, no_torch: None
) -> None:
    monkeypatch.setattr(machine, "require_hopper", tripwire("the GPU check"))
    monkeypatch.setattr(tryit_runner, "build_job", tripwire("a build"))
    assert cli.main(["tryit", "--out", str(broken_file(tmp_path))]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and "error: --out: " in one_line(printed.err) and "not valid JSON" in printed.err


def test_tryit_without_a_hopper_gpu_is_one_line_before_the_plan_or_any_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, no_torch: None
) -> None:
    monkeypatch.setattr(tryit_runner, "build_job", tripwire("a build"))
    assert cli.main(["tryit", "--out", str(results_file(tmp_path))]) == 1
    printed = capsys.readouterr()
    assert printed.out == "", printed.out
    assert one_line(printed.err).startswith("python -m matmul_bench tryit: torch is not installed"), printed.err


def test_tryit_refuses_an_out_file_of_another_gpu_before_any_build(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any, no_torch: None
) -> None:
    out = results_file(tmp_path)
    before = out.read_bytes()
    on_another_gpu(monkeypatch)
    monkeypatch.setattr(tryit_runner, "build_job", tripwire("a build"))
    assert cli.main(["tryit", "--out", str(out)]) == 1
    printed = capsys.readouterr()
    line = one_line(printed.err)
    assert printed.out == "" and f"holds results of {fake_results.GPU!r}, not of this {H100!r}" in line, line
    assert line.startswith("python -m matmul_bench tryit: --out ") and out.read_bytes() == before
