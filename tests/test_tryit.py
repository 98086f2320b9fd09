"""The chapters' "Try it" changes (specs/tryit.py): their spec holds to the kernels, the benchmark plans
the timed ones, the runner checks its input and classifies outcomes, and the results file and the pages
read the recorded outcomes. All on the CPU; the outcomes themselves come from a Hopper GPU.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

import fake_results
from matmul_bench import kernels
from matmul_bench import tryit as runner
from matmul_data import hopper, paths, results, versions

SPECS = paths.ROOT / "specs"
KERNELS = paths.ROOT / "examples" / "hopper_matmul"
TUNED = {name: kernels.load(f"matmul_{name}").TUNED for name in versions.names()}


def _spec() -> Any:
    return kernels.import_spec(SPECS / "tryit.py", "tryit")


SPEC = _spec()
EDITS = [(v, n, e) for v, entries in SPEC.EDITS.items() for n, e in entries.items()]


# --- the spec holds to the kernels ---


@pytest.mark.parametrize(("version", "name", "entry"), EDITS, ids=[f"{v}/{n}" for v, n, _ in EDITS])
def test_every_edit_old_text_occurs_exactly_once_in_its_kernel_file(version: str, name: str, entry: Any) -> None:
    text = (KERNELS / f"matmul_{version}.py").read_text(encoding="utf-8")
    for old, new in entry["edits"]:
        assert text.count(old) == 1, f"{version}/{name}: rewrite its old text to match matmul_{version}.py: {old!r}"
        assert old != new
    assert entry["edits"] or entry["config"], f"{version}/{name} changes nothing"


def test_every_chapter_has_between_two_and_seven_try_its() -> None:

    for version in TUNED:
        timed = [v for r in SPEC.RUNS.values() if r["after"] == version for v in r["variants"] if v != r["baseline"]]
        recorded = SPEC.RECORDED.get(version, [])
        count = len(timed) + len(recorded) + len(SPEC.EDITS.get(version, {}))
        # V0, V7 and V9 have two; V6 seven (three recorded steps and four edits): a table a reader finishes.
        assert 2 <= count <= 7, (version, count)


def test_edit_configs_name_only_knobs_the_chapter_tunes() -> None:

    for version, name, entry in EDITS:
        assert set(entry["config"]) <= set(TUNED[version]), f"{version}/{name}"


def test_timed_runs_compare_with_the_chapter_tuned_configuration_and_are_titled_try_it() -> None:

    assert SPEC.TITLE_PREFIX == results.TRYIT_TITLE_PREFIX
    for name, run in SPEC.RUNS.items():
        version = run["after"]
        assert run["title"].startswith(results.TRYIT_TITLE_PREFIX), name
        assert run["baseline"] == f"try-{version}" and run["variants"][0] == run["baseline"] and run["kept"] == []
        file, cls, config, _ = SPEC.VARIANTS[run["baseline"]]
        assert (file, cls, config) == (f"matmul_{version}.py", f"MatmulV{version[1:]}", TUNED[version])
        for variant in run["variants"]:
            # Own names: never mistaken for the steps after V6 (the "What each step bought" page globs v6*).
            assert variant.startswith(f"try-{version}"), variant
            assert SPEC.VARIANTS[variant][:2] == (file, cls)
            assert set(SPEC.VARIANTS[variant][2]) == set(TUNED[version])


def _shared_bytes(version: str, config: dict[str, Any]) -> int:
    """The ring (and V6's staging buffer for C) in bytes: what the kernel file allocates for this config."""
    bm, bn, bk = config["block_m"], config["block_n"], config["block_k"]
    stages = config.get("num_stages", 1)
    staging = bm * bn * 2 if version == "v6" else 0
    return stages * (bm + bn) * bk * 2 + staging


@pytest.mark.parametrize("variant", sorted(SPEC.VARIANTS))
def test_timed_configs_fit_the_shared_memory_of_one_block(variant: str) -> None:
    file, _, config, _ = SPEC.VARIANTS[variant]
    version = file.removeprefix("matmul_").removesuffix(".py")
    # 227 KB per block on Hopper, less a few hundred bytes of mbarriers and Tilus's own scratch.
    assert _shared_bytes(version, config) <= hopper.SHARED_BYTES_PER_SM - hopper.SHARED_RESERVED_PER_BLOCK - 1024
    assert config["block_m"] % 64 == 0 and config["block_n"] % 64 == 0 and config["block_k"] == 64


def test_the_v6_four_stage_edit_is_the_one_that_does_not_fit() -> None:

    config = {**TUNED["v6"], **SPEC.EDITS["v6"]["stages-4"]["config"]}
    assert _shared_bytes("v6", config) > 227 * 1024


def test_recorded_try_its_name_a_planned_steps_row_and_its_recorded_step_once_measured() -> None:
    planned_runs = kernels.import_spec(SPECS / "steps.py", "steps").RUNS
    recorded = results.load_default() or {"steps": []}
    names = versions.names()
    for version, entries in SPEC.RECORDED.items():
        # A version's own steps runs, or the runs that measured it against the version before it.
        afters = {version, names[names.index(version) - 1]}
        for title, variant, change in entries:
            planned = [r for r in planned_runs.values() if r["after"] in afters and r["title"] == title]
            assert len(planned) == 1, (title, "names no run of specs/steps.py")
            assert variant in planned[0]["variants"] and variant != planned[0]["baseline"], (title, variant)
            runs = [r for r in recorded["steps"] if r["after"] in afters and r["title"] == title]
            assert len(runs) <= 1, title
            if runs:  # measured: the row holds the step the page quotes (until then it prints "not measured yet")
                assert runs[0]["rows"][variant].get("step"), (title, variant)
            assert change


def test_the_benchmark_plans_the_timed_runs_from_the_steps_file_flag() -> None:
    from matmul_bench import plan

    args = plan.build_parser().parse_args(["--steps", "all", "--steps-file", str(SPECS / "tryit.py")])
    made = plan.make_plan(args)
    assert [r.name for r in made.runs] == list(SPEC.RUNS)
    for run in made.runs:
        assert run.section == "steps" and run.title.startswith(results.TRYIT_TITLE_PREFIX)
        assert set(run.step_over.values()) == {f"try-{run.after}"}
    timed = sum(len(r["variants"]) for r in SPEC.RUNS.values())
    assert timed <= 14  # each timed variant costs GPU time in every process


# --- the runner, on the CPU ---


def _run_runner(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    """`python -m matmul_bench tryit ARGS` in this process (the command line reaches it: tests/test_readme.py):
    its exit status, stdout and stderr."""
    status = runner.main(args)
    out, err = capsys.readouterr()
    return status, out, err


def test_runner_dry_run_lists_every_edit_without_a_gpu(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, err = _run_runner(capsys, "--dry-run")
    assert status == 0, err
    for version, name, _ in EDITS:
        assert f"{version}/{name}" in out
    assert "estimated duration" in out and "nothing is built, launched or written" in out


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--only", "v99"], "no such version or edit"),
        ([], "--out FILE is required"),
        (["--out", "missing.json"], "give an existing results file"),
    ],
)
def test_runner_refuses_bad_input_before_anything_runs(
    args: list[str], message: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(paths.ROOT)  # "missing.json" is looked for where the command runs
    status, out, err = _run_runner(capsys, *args)
    assert status == 2 and message in err and out == "", err


def test_runner_refuses_an_edit_that_no_longer_applies(tmp_path: Path) -> None:
    spec = {"EDITS": {"v5": {"gone": {"title": "x", "edits": [["no such text", "y"]], "config": {}}}},
            "CHECKS": ((128, 256, 64),)}  # fmt: skip
    with pytest.raises(runner.UsageError, match="occurs 0 times"):
        runner.plan_jobs(spec, None)
    spec["EDITS"]["v5"]["gone"] = {"title": "x", "edits": [], "config": {"num_warps": 4}}
    with pytest.raises(runner.UsageError, match="unknown knobs"):
        runner.plan_jobs(spec, None)


def test_runner_merges_into_an_existing_results_file_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "r.json"
    out.write_text("{}")
    status, printed, err = _run_runner(capsys, "--out", str(out))
    assert status == 2 and "--out" in err and printed == "", err
    assert out.read_text() == "{}"


def test_first_error_line_picks_the_exception_that_says_why() -> None:
    text = (
        "RuntimeError: No valid schedule found during building programs:\n  Traceback (most recent call last):\n"
        '    File "x.py", line 1\n  RuntimeError: Requested dynamic shared memory bytes 262272 exceed the device '
        "limit 232448 for target nvgpu/sm90a.\n"
    )
    assert runner.first_error_line(text).startswith("RuntimeError: Requested dynamic shared memory bytes 262272")
    assert runner.first_error_line("ValueError: The register usage (256) of given config is too high.") == (
        "ValueError: The register usage (256) of given config is too high."
    )
    assert runner.first_error_line("\n  plain words\n") == "plain words"


def _job() -> runner.Job:
    return runner.plan_jobs(runner.load_spec(SPECS / "tryit.py"), "v5/release-before-wait")[0]


def _check(bad: int = 0, nonfinite: int = 0, err: float | None = 0.001) -> dict[str, Any]:
    return {"event": "check", "shape": {"m": 8192, "n": 8192, "k": 8192}, "bad": bad, "nonfinite": nonfinite,
            "max_abs_err": err}  # fmt: skip


STAMP = {"run_id": "2026-12-01T100000Z", "date": "2026-12-01", "git_commit": "abc1234"}


@pytest.mark.parametrize(
    ("events", "timed_out", "outcome"),
    [
        ([_check()] * 5 + [{"event": "done"}], None, "exact"),
        ([_check(), _check(bad=12, nonfinite=3, err=2.5)], "check", "wrong"),
        ([{"event": "built", "prebuilt": True}, {"event": "launch", "index": 0}], "check", "hangs"),
        ([{"event": "error", "stage": "build", "error": "ValueError: too high"}], None, "does not build"),
        ([{"event": "launch", "index": 0}, {"event": "error", "stage": "run", "error": "illegal address"}], None,
         "crashes"),
    ],
)  # fmt: skip
def test_runner_classifies_what_the_child_said(
    events: list[dict[str, Any]], timed_out: str | None, outcome: str
) -> None:
    job = _job()
    got = runner.classify(job, events, timed_out, [], 0)
    assert got.record is not None and got.record["outcome"] == outcome
    record = {k: v for k, v in got.record.items() if k != "device"} | STAMP
    results.validate(fake_results.provenance() | {"tryit": [record]})


def test_runner_records_nothing_when_the_child_gave_no_outcome() -> None:
    got = runner.classify(_job(), [{"event": "device", "name": "NVIDIA H200"}], "build", ["oops"], None)
    assert got.record is None and "building" in (got.problem or "")
    got = runner.classify(_job(), [], None, ["Traceback"], 1)
    assert got.record is None and "exit status 1" in (got.problem or "")


def test_runner_merges_an_outcome_into_the_file_and_refuses_another_gpu(tmp_path: Path) -> None:
    out = tmp_path / "r.json"
    results.write_atomic(out, fake_results.typed(fake_results.provenance()))
    record = runner.classify(_job(), [_check()] * 5 + [{"event": "done"}], None, [], 0).record
    assert record is not None
    runner.record_outcome(out, record | STAMP | {"device": "NVIDIA H200"})
    assert [e["outcome"] for e in results.load(out)["tryit"]] == ["exact"]
    with pytest.raises(results.ResultsError, match="not of this"):
        runner.record_outcome(out, record | STAMP | {"device": "NVIDIA H100 80GB HBM3"})


# --- the results file ---


def test_results_accept_a_tryit_section_and_merge_it_by_version_and_edit() -> None:
    data = fake_results.provenance() | {"tryit": fake_results.fake_tryit()}
    results.validate(data)
    replaced = copy.deepcopy(data["tryit"][0]) | {"run_id": "later"}
    typed = fake_results.typed
    merged = results.merge(typed(data), typed(fake_results.provenance() | {"tryit": [replaced]}))
    assert [e.run_id for e in merged.tryit][0] == "later" and len(merged.tryit) == len(data["tryit"])
    # A benchmark run (no tryit section) keeps the recorded outcomes.
    assert results.merge(typed(data), typed(fake_results.provenance())).to_json()["tryit"] == data["tryit"]
    assert "tryit" not in results.merge(None, typed(fake_results.provenance())).to_json()


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ({"outcome": "maybe"}, "must be one of"),
        ({"outcome": "exact"}, "is exact only when"),  # entry 1 is wrong: its checks found bad elements
        ({"version": "five"}, "version name"),
        ({"edits": [["", "x"]]}, "old not empty"),
        ({"checks": [{"shape": {"m": 2, "n": 2, "k": 8}, "bad": 5, "nonfinite": 0, "max_abs_err": 1.0}]}, "<= m"),
    ],
)
def test_results_refuse_a_tryit_entry_that_contradicts_itself(change: dict[str, Any], problem: str) -> None:
    entries = fake_results.fake_tryit()
    entries[1] |= change
    with pytest.raises(results.ResultsError, match=problem):
        results.validate(fake_results.provenance() | {"tryit": entries})


def test_results_refuse_a_hang_without_its_timeout_and_a_repeated_edit() -> None:
    entries = fake_results.fake_tryit()
    hang = next(e for e in entries if e["outcome"] == "hangs")
    hang["timeout_s"] = None
    with pytest.raises(results.ResultsError, match="timeout_s"):
        results.validate(fake_results.provenance() | {"tryit": entries})
    entries = fake_results.fake_tryit()
    with pytest.raises(results.ResultsError, match="repeats"):
        results.validate(fake_results.provenance() | {"tryit": [*entries, entries[0]]})


# --- what pages read ---


def test_each_chapter_ends_with_a_try_it_section_that_shows_its_table() -> None:
    for version in [f"v{i}" for i in range(7)]:
        text = (paths.ROOT / "docs" / "chapters" / f"{version}.rst").read_text(encoding="utf-8")
        _, found, after = text.rpartition("\nTry it\n------\n")
        assert found, f"{version}.rst has no 'Try it' section"
        assert not any(set(line) == {"-"} for line in after.splitlines()), f"{version}.rst: a section after Try it"
        assert f"/_generated/{version}-tryit.csv" in after, version


def test_try_it_runs_stay_out_of_the_steps_after_a_version() -> None:
    data = fake_results.fake_file() | {"tryit": fake_results.fake_tryit()}
    data["steps"] = [*data["steps"], fake_results.fake_tryit_run()]
    results.validate(data)
    read = fake_results.typed(data)
    tryit_runs = results.steps_runs(read, "v2", tryit=True)
    assert [r.title for r in tryit_runs] == [fake_results.fake_tryit_run()["title"]]
    assert results.steps_runs(read, "v6", tryit=True) == [] and results.steps_runs(read, "v2") == []
    assert [results.is_tryit_run(r) for r in read.steps] == [False, True]


def test_the_committed_file_validates_with_or_without_tryit_outcomes() -> None:
    recorded = results.load_default()
    if recorded is None:
        pytest.skip("no results file is committed")
    for entry in recorded.get("tryit", []):
        # A recorded outcome belongs to the edit as it is specified now: a changed edit must be rerun.
        spec = SPEC.EDITS[entry["version"]][entry["name"]]
        assert entry["edits"] == [list(e) for e in spec["edits"]], f"{entry['version']}/{entry['name']} is stale"
    json.dumps(recorded, allow_nan=False)
    # The section is optional: the file validates as committed and as a benchmark run writes it, without one.
    without = {key: value for key, value in recorded.items() if key != "tryit"}
    for data in (recorded, without):
        results.validate(data)
    # ...and the pages then read no outcome for any chapter.
    assert all(results.tryit_entries(fake_results.typed(without), version) == [] for version in TUNED)
