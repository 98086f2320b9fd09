"""The worker protocol's typed objects (matmul_bench.protocol): the committed raw-sample files decode and encode back
byte for byte and still give the recorded runs, a build check and a time check say their shape alike, and a bad job
or answer is refused with the field that is wrong."""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path

import fake_gpu
import pytest

from matmul_bench import aggregate, jobs, plan, runner, worker
from matmul_bench.protocol import Answer, BuildAnswer, BuildSpec, Check, Job, SampleFile, SampleRun
from matmul_data import paths
from matmul_data.decoding import ResultsError

SAMPLE_FILES = sorted((paths.RESULTS_DIR / runner.SAMPLES).glob("*.json.gz"))


def test_the_results_folder_holds_sample_files() -> None:
    assert len(SAMPLE_FILES) >= 10


@pytest.mark.parametrize("path", SAMPLE_FILES, ids=lambda p: p.name)
def test_a_committed_sample_file_decodes_and_encodes_back_byte_for_byte(path: Path) -> None:
    text = gzip.decompress(path.read_bytes()).decode("utf-8")
    decoded = SampleFile.from_json(json.loads(text))
    assert json.dumps(decoded.to_json(), indent=1) + "\n" == text  # as runner.run_plan writes it


def test_every_recorded_run_is_recomputed_from_its_committed_samples() -> None:
    data = json.loads((paths.RESULTS_DIR / "nvidia-h200.json").read_text(encoding="utf-8"))
    figures = [data["ladder"], *(f for section in ("sweep", "steps", "field") for f in data.get(section, []))]
    recorded = [run for figure in figures for run in figure["runs"] if run.get("log")]

    def key(run: dict) -> str:  # a run of a sample file: its shape, its steps or field labels and its rows
        return json.dumps([run["run_id"], run["shape"], run.get("title"), run.get("after"), run.get("field"),
                           list(run["rows"])])  # fmt: skip

    def kept(run: dict) -> dict:  # a published file names the commit, not the dirty tree that recorded it
        return {k: v for k, v in run.items() if k not in ("git_commit", "invocation_s")}

    samples = {log: runner.read_samples(paths.RESULTS_DIR / log) for log in sorted({run["log"] for run in recorded})}
    recomputed = {key(run.to_json()): kept(run.to_json()) for log, data in samples.items()
                  for run in aggregate.runs_from_samples(data, log)}  # fmt: skip
    assert len(recorded) >= 90
    assert [key(run) for run in recorded if recomputed.get(key(run)) != kept(run)] == []


def test_a_build_check_and_a_time_check_give_the_shape_as_m_n_k() -> None:
    spec = BuildSpec.of(name="v1", file="matmul_v1.py", cls="MatmulV1", config=None, shapes=((129, 257, 64),),
                        check=True)  # fmt: skip
    job = Job.of(mode="build", backend=fake_gpu.BACKEND, build=spec)
    built, status = worker.run_job(job)
    assert status == 0 and isinstance(built, BuildAnswer)
    assert built.to_json()["checks"][0]["shape"] == [129, 257, 64] and built.checks[0].report
    impls = (plan.ImplSpec("v1", "kernel", "V1"), plan.PEER_SPECS["cublas"])
    run = plan.RunSpec("sweep", "sweep", (256, 128, 64), impls)
    settings = {"rounds": 1, "repeats": 1, "warmup_s": 0, "process": 0}
    timed, status = worker.run_job(Job.from_json({"mode": "time", "backend": fake_gpu.BACKEND, "settings": settings,
                                                  "runs": [run.to_json()]}))  # fmt: skip
    assert status == 0 and isinstance(timed, Answer)
    assert timed.to_json()["runs"][0]["checks"]["v1"][0]["shape"] == [256, 128, 64]


def test_a_check_s_largest_error_may_be_nan_or_infinite_but_must_be_a_number() -> None:
    for error in (math.nan, math.inf):
        check = Check.from_json({"ok": False, "bad": 3, "max_abs_err": error, "shape": [1, 2, 3]})
        assert check.to_json()["max_abs_err"] is error
    with pytest.raises(ResultsError, match="max_abs_err"):
        Check.from_json({"ok": False, "bad": 3, "max_abs_err": "nan", "shape": [1, 2, 3]})
    with pytest.raises(ResultsError, match="shape"):
        Check.from_json({"ok": True, "bad": 0, "max_abs_err": 0.0, "shape": "1x2x3"})


def test_a_bad_job_is_answered_with_the_field_that_is_wrong_and_nothing_runs(tmp_path: Path) -> None:
    job, answer = tmp_path / "job.json", tmp_path / "answer.json"
    job.write_text(json.dumps({"mode": "time", "backend": "no_such_module:backend", "runs": [], "rounds": 3}))
    assert worker.main([str(job), str(answer)]) == 1  # the backend is never imported: the job fails first
    assert "'rounds' is not a key of Job" in json.loads(answer.read_text())["error"]
    job.write_text(json.dumps({"mode": "tune", "backend": "no_such_module:backend"}))
    assert worker.main([str(job), str(answer)]) == 1
    assert "field 'mode' must be one of probe, build, time, profile" in json.loads(answer.read_text())["error"]


def test_a_failed_job_s_answer_reads_as_its_error_whatever_the_caller_asked_for() -> None:
    failed = jobs.read_answer({"error": "RuntimeError: x"}, BuildAnswer)
    assert isinstance(failed, Answer) and failed.error == "RuntimeError: x"
    with pytest.raises(ResultsError):
        jobs.read_answer({"ok": True, "configs": {}}, BuildAnswer)


def test_a_build_answer_that_breaks_the_protocol_names_its_own_bad_field() -> None:
    check = {"ok": True, "bad": 0, "max_abs_err": 0.001, "shape": [8, 8, 8], "report": ""}
    with pytest.raises(ResultsError, match=r"checks\[0\]\.report"):  # not "'ok' is not a key of Answer"
        jobs.read_answer({"ok": True, "configs": {}, "checks": [check], "error": None}, BuildAnswer)


def test_a_sample_run_s_counters_may_be_null_for_one_row() -> None:
    data = {"spec": {}, "processes": [], "counters": {"v1": None, "v2": {"tensor_pipe_pct": 80.0,
                                                                        "dram_throughput_pct": None}}}  # fmt: skip
    run = SampleRun.from_json(data)
    assert run.counters is not None and run.counters["v1"] is None and run.counters["v2"] is not None
    assert run.to_json() == data
