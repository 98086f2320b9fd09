"""The benchmark on the CPU: plan and refusals, aggregation with known answers, the worker protocol end to end
(a fake backend stands in for the GPU: made-up, deterministic times), ncu parsing."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import fake_gpu
import pytest

from matmul_bench import aggregate, cli, jobs, kernels, machine, ncu, plan, protocol, runner, worker
from matmul_data import field, model, replicate, results, versions


def make(*argv: str) -> plan.Plan:
    return plan.make_plan(plan.build_parser().parse_args(list(argv)))


# --- the plan and the command line ---


def test_no_section_plans_the_whole_record_ladder_sweep_and_ncu() -> None:
    p = make()
    assert p.sections() == ["ladder", "sweep"] and p.ncu and not p.quick
    ladder, names = p.section_runs("ladder")[0], versions.names()
    assert [i.name for i in ladder.impls] == [*names, "cublas"]
    assert ladder.step_over == dict(zip(names[1:], names[:-1], strict=True))  # each version over the one before
    assert all(i.config is None for i in ladder.impls if i.kind == "kernel")  # each file's own, read by import
    assert [r.shape for r in p.section_runs("sweep")] == list(plan.SWEEP_SHAPES)
    assert all([i.name for i in r.impls] == [*names[-3:], "cublas"] for r in p.section_runs("sweep"))


def test_plan_field_times_the_last_two_versions_and_cublas_at_every_field_shape(capsys) -> None:
    p = make("--field")
    assert p.sections() == ["field"] and not p.ncu and "field" not in make().sections()  # opt-in
    runs = p.section_runs("field")
    assert [r.shape for r in runs] == [f.shape for f in field.FIELD] and len(runs) == 18
    assert all([i.name for i in r.impls] == [*versions.names()[-2:], "cublas"] for r in runs)
    assert runs[0].field_info == {"name": "L3-8B qkv", "source": field.FIELD[0].source, "kind": "forward",
                                  "half": "fitted"}  # fmt: skip
    assert [r.shape for r in make("--field", "--quick").runs] == [f.shape for f in field.FIELD[:3]]
    assert all([i.name for i in r.impls][-3:] == list(plan.OPTIONAL_PEERS) for r in make("--field", "--peers").runs)
    assert cli.main(["plan", "--field"]) == 0
    printed = capsys.readouterr().out
    assert printed.count("  field ") == 18 and f"{', '.join(versions.names()[-2:])}, cublas" in printed
    assert "(of it field " in printed


def test_shapes_cuts_the_sweep_and_the_field_to_a_part_and_names_a_shape_neither_times() -> None:
    mixtral, dw = field.FIELD[4].shape, (4096, 4096, 5000)
    part = make(
        "--field", "--peers", "--sweep", "--shapes", f"{plan.shape_text(mixtral)},4096x4096x4096, 4096x4096x5000"
    )
    assert [(r.section, r.shape) for r in part.runs] == [("sweep", (4096, 4096, 4096)), ("field", mixtral),
                                                         ("field", dw)]  # fmt: skip
    assert all([i.name for i in r.impls][-3:] == list(plan.OPTIONAL_PEERS) for r in part.section_runs("field"))
    assert make("--ladder", "--field", "--shapes", "4096x4096x5000").sections() == ["ladder", "field"]
    for wrong, message in (("1x2x3", "1x2x3 is not a shape"), ("4096x4096", "not a shape"), ("big", "MxNxK")):
        with pytest.raises(plan.UsageError, match=message):
            make("--field", "--shapes", wrong)
    for sections in (("--ladder",), ("--peers",), ()):  # no section: the default record's ladder would run too
        with pytest.raises(plan.UsageError, match="add --sweep or --field"):
            make(*sections, "--shapes", "8192x8192x8192")


def test_the_plan_s_shape_is_the_one_every_chapter_quotes() -> None:
    assert kernels.load("common").BENCH_SHAPE == plan.BENCH_SHAPE


def test_quick_takes_fewer_processes_rounds_and_shapes_and_no_ncu() -> None:
    p = make("--quick")
    assert p.settings == plan.QUICK and not p.ncu
    assert [r.shape for r in p.section_runs("sweep")] == list(plan.QUICK_SWEEP_SHAPES)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sweep", "--ncu"], "--ncu profiles the rows of the ladder"),
        (["--ladder", "--peers"], "--peers adds to the sweep"),
        (["--steps", "round 9"], "unknown steps run"),
        (["--steps", "all", "--steps-file", "no/such/file.py"], "does not exist"),
        (["--ladder", "--versions", "v3"], "needs --ladder and a file of its own"),
        (["--ladder", "--versions", "v99", "--out", "x.json"], "unknown v99"),
        (["--ladder", "--out", "x.txt"], "give a .json file path"),
        (["--ladder", "--no-such-flag"], "unrecognized arguments"),
    ],
)
def test_bad_usage_exits_2_with_the_reason_on_one_line_and_writes_nothing(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["record", *argv]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_no_command_or_an_unknown_one_exits_2_with_the_usage_on_stderr(capsys) -> None:
    assert cli.main([]) == 2
    printed = capsys.readouterr()
    assert printed.out == "" and "usage: python -m matmul_bench" in printed.err and "record" in printed.err
    for wrong in ("recrod", "--no-such-flag"):
        assert cli.main([wrong]) == 2
        printed = capsys.readouterr()
        assert printed.out == "" and repr(wrong) in printed.err and "worker" not in printed.err


def test_help_lists_every_command_with_its_description_and_hides_the_internal_ones(capsys) -> None:
    assert cli.main(["--help"]) == 0
    shown = " ".join(capsys.readouterr().out.split())  # argparse may wrap a long line
    assert all(f"{name} {what}" in shown for name, (what, _, _) in cli.COMMANDS.items())
    assert not any(name in shown for name in cli.INTERNAL)


def test_an_internal_command_runs_though_help_does_not_list_it(tmp_path: Path) -> None:
    job, answer = tmp_path / "job.json", tmp_path / "answer.json"
    job.write_text(json.dumps({"mode": "probe", "backend": fake_gpu.BACKEND, "settings": {"process": 0}}))
    assert cli.main(["worker", str(job), str(answer)]) == 0
    assert json.loads(answer.read_text())["device"] == fake_gpu.FAKE_DEVICE


def test_dry_run_prints_the_plan_with_its_estimate_and_runs_nothing(tmp_path: Path, capsys) -> None:
    out = tmp_path / "r.json"
    assert cli.main(["plan", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "estimated duration: about" in printed and "ladder" in printed and not out.exists()


def test_the_estimate_keeps_the_record_near_15_minutes_and_quick_under_10() -> None:
    def minutes(*argv: str) -> float:
        return plan.estimate(make(*argv)) / 60

    assert minutes() <= 15 and minutes("--quick") < 10


@pytest.mark.parametrize("name", versions.names())
def test_each_file_s_tuned_config_lies_in_its_kernel_s_autotune_space(name: str) -> None:
    module = kernels.load(f"matmul_{name}")
    space: dict[str, list[Any]] = {}
    for names, choices in getattr(module, f"MatmulV{name[1:]}")._autotune_space.items():
        keys = [n.strip() for n in names.split(",")]
        for choice in choices:
            for key, value in zip(keys, choice if len(keys) > 1 else [choice], strict=True):
                space.setdefault(key, []).append(value)
    assert set(module.TUNED) == set(space)
    assert all(module.TUNED[key] in space[key] for key in space), (module.TUNED, space)


def test_every_steps_variant_names_a_class_its_file_defines() -> None:
    runs = plan.steps_runs("all", plan.STEPS_FILE)
    assert runs and all(r.after in versions.names() for r in runs)
    for run in runs:
        assert set(run.step_over.values()) <= {impl.name for impl in run.impls}
        assert all(over != impl for impl, over in run.step_over.items())
        assert run.check_shapes and all(s[1:] == run.shape[1:] for s in run.check_shapes)  # at the run's N and K
        for impl in run.impls[:-1]:
            assert isinstance(kernels.kernel_class(impl.file, impl.cls), type), impl


def test_kernels_are_built_once_per_config_with_every_shape_they_meet() -> None:
    made = make("--ladder", "--sweep")
    made = replace(made, runs=tuple(r for r in made.runs if r.section == "ladder" or r.shape == (2048,) * 3))
    specs = runner.build_specs(made)
    swept = [s for s in specs if s.cls == f"MatmulV{versions.names()[-3][1:]}"]
    assert len(specs) == len(versions.names()) and len(swept) == 1
    assert swept[0].shapes == ((8192, 8192, 8192), (2048, 2048, 2048)) and swept[0].check


def test_an_unpinned_kernel_is_pinned_to_its_own_build_s_choice_beside_a_pinned_variant(monkeypatch) -> None:
    # "v8 round 2": V8 (its rule picks the tile) and V8 pinned to 128 x 192, same file, class and shape.
    steps = make("--steps", "v8 round 2")
    ruled = {"block_m": 128, "block_n": 256, "consumers": 2, "num_stages": 3, "block_k": 64, "swizzle_size": 16}

    def build_all(specs: list[protocol.BuildSpec], *args: Any) -> list[protocol.BuildAnswer]:
        return [protocol.BuildAnswer.of(ok=True, checks=(), configs={"8192x8192x8192": s.config or ruled}, error=None)
                for s in specs]  # fmt: skip

    monkeypatch.setattr(jobs, "build_all", build_all)
    (run,) = runner.build_and_check(steps).runs
    configs = {impl.name: impl.config for impl in run.impls}
    assert configs["v8"] == ruled and configs["v8-128x192"]["block_n"] == 192


def test_a_wrong_build_stops_the_record_before_any_timing(monkeypatch) -> None:
    def build_all(specs: list[protocol.BuildSpec], *args: Any) -> list[protocol.BuildAnswer]:
        checks = [{"ok": False, "bad": 5, "max_abs_err": 1.0, "shape": [8192, 8192, 8192], "report": "wrong"}]
        return [protocol.BuildAnswer.from_json({"ok": False, "configs": {}, "checks": checks, "error": None})
                for _ in specs]  # fmt: skip

    monkeypatch.setattr(jobs, "build_all", build_all)
    with pytest.raises(jobs.WrongResult, match="5 wrong elements"):
        runner.build_and_check(make("--ladder", "--versions", "v3", "--out", "x.json"))


# --- aggregation: known answers from synthetic samples ---

SPEC = plan.RunSpec("ladder", "ladder", (8192, 8192, 8192),
                    tuple(plan.ImplSpec(n, "kernel", n.upper(), config={}) for n in ("v0", "v1", "cublas")),
                    {"v1": "v0"})  # fmt: skip


def process(clock: list[float], **extra: Any) -> dict[str, Any]:
    """One process's answer, as a worker writes it: v0 = 4 ms, v1 = 2 ms, cuBLAS = 1 ms, all scaled by the round's
    clock."""
    base = {"v0": 4.0, "v1": 2.0, "cublas": 1.0}
    return {
        "name": "ladder",
        "checks": {},
        "configs": {"v0": {"block_m": 64}, "v1": {}, "cublas": {}},
        "titles": {},
        "missing": {},
        "samples": {n: [ms * c for c in clock] for n, ms in base.items()},
        "clocks": {"v0": [1500.0, 1700.0, 1900.0], "v1": [], "cublas": [1800.0]},
        "power": {"v0": [700.0], "v1": [], "cublas": [650.0, 690.0]},
    } | extra


def make_run(per_process: list[dict[str, Any]], spec: plan.RunSpec = SPEC) -> dict[str, Any]:
    answers = [protocol.RunAnswer.from_json(p) for p in per_process]
    return aggregate.make_run(spec, answers, run_id="r", date="2026-12-01", git_commit="abc", warmup_s=1.0,
                              repeats=30, log="samples/r.json.gz").to_json()  # fmt: skip


def fake_results_file(ladder: dict[str, Any]) -> dict[str, Any]:
    import fake_results

    figure = aggregate.as_figure(model.Run.from_json(ladder)).to_json()
    return replicate.remerge(model.Results.from_json(fake_results.provenance() | {"ladder": figure})).to_json()


def test_ratios_are_paired_within_rounds_so_a_wandering_clock_cancels() -> None:
    run = make_run([process([1.0, 1.1, 0.9]), process([1.05, 0.95, 1.2])])
    v0, v1, cublas = (run["rows"][n] for n in ("v0", "v1", "cublas"))
    assert v0["ratio_to_cublas"] == pytest.approx({"median": 0.25, "low": 0.25, "high": 0.25})
    assert v1["step"] == pytest.approx({"over": "v0", "median": 2.0, "low": 2.0, "high": 2.0})
    assert cublas["ratio_to_cublas"] == {"median": 1.0, "low": 1.0, "high": 1.0}
    assert v1["latency_ms"] == pytest.approx(2.0 * 1.025)  # median of the six clock-scaled samples
    assert (v0["sm_clock_mhz"], v0["power_w"], v1["sm_clock_mhz"], cublas["power_w"]) == (1700.0, 700.0, None, 670.0)
    assert (run["rounds"], run["processes"], v0["config"], "step" not in v0) == (3, 2, {"block_m": 64}, True)
    results.validate(fake_results_file(run))


def test_a_run_needs_the_same_rounds_for_every_impl() -> None:
    broken = process([1.0, 1.1])
    broken["samples"]["v1"].pop()
    with pytest.raises(ValueError, match="same number of rounds"):
        make_run([broken])


def test_a_peer_missing_in_one_process_is_left_out_of_every_process_of_the_run() -> None:
    spec = replace(SPEC, impls=(*SPEC.impls, plan.PEER_SPECS[versions.QUACK]))
    timed = process([1.0, 1.1, 0.9])
    timed["samples"][versions.QUACK] = [0.9, 1.0, 0.8]
    lost = process([1.0, 1.0, 1.0], missing={versions.QUACK: {"version": "0.6.5", "error": "RuntimeError: x"}})
    run = make_run([timed, lost], spec)
    assert set(run["rows"]) == {"v0", "v1", "cublas"}
    assert run["peers_missing"] == {versions.QUACK: {"version": "0.6.5", "error": "RuntimeError: x"}}


def test_a_figure_shows_the_peers_its_newest_run_missed() -> None:
    figure = model.Figure.from_json(fake_results_file(make_run([process([1.0, 1.1])]))["ladder"])
    older = figure.runs[0].put(peers_missing={versions.QUACK: model.PeerMissing.of(version=None, error="x")})
    assert not replicate.merge_figure(figure.put(runs=(older, figure.runs[0])), 0.95, 0.01, 132).has("peers_missing")
    merged = replicate.merge_figure(figure.put(runs=(figure.runs[0], older)), 0.95, 0.01, 132)
    assert merged.peers_missing == older.peers_missing


# --- the worker protocol, end to end with the fake backend ---

STEPS_SPEC = """
VARIANTS = {
    "v5": ("matmul_v5.py", "MatmulV5", {"block_m": 128}, "the baseline"),
    "v6": ("matmul_v6.py", "MatmulV6", {"block_m": 128}, "the change"),
}
RUNS = {"try": {"after": "v6", "title": "a try", "baseline": "v5", "variants": ["v5", "v6"], "kept": ["v6"]}}
"""
SHAPE = (4096, 4096, 4096)


def fake(tmp_path: Path, *argv: str, processes: int = 2, commit: str = "abc1234", **options: Any) -> int:
    """A record on the fake GPU (``options``: fail_check, missing_peers), 3 rounds, the sweep at SHAPE only."""
    steps = tmp_path / "steps_spec.py"
    steps.write_text(STEPS_SPEC)
    out = ["--out", str(tmp_path / "res" / "nvidia-h200.json")] if "--out" not in argv else []
    made = make(*out, "--steps-file", str(steps), *argv)
    runs = tuple(r for r in made.runs if r.section != "sweep" or r.shape == SHAPE)
    with fake_gpu.on_child_path():  # the workers import the fake from tests/
        return cli.execute(replace(made, runs=runs, settings=plan.Settings(processes, 3, 30, 5.0),
                                   backend=fake_gpu.BACKEND, fake=options, git_commit=commit))  # fmt: skip


def test_a_fake_record_runs_the_whole_protocol_and_writes_paired_results_and_raw_samples(tmp_path: Path) -> None:
    assert fake(tmp_path, "--ladder", "--ncu", "--sweep", "--steps", "try") == 0
    data = results.load(tmp_path / "res" / "nvidia-h200.json")
    ladder, (sweep,), (steps,) = data["ladder"], data["sweep"], data["steps"]
    assert list(ladder["rows"]) == [*versions.names(), "cublas"]
    assert ladder["rows"]["v1"]["step"]["median"] == pytest.approx(3.5 / 2.0)  # the fake's V0 and V1 times
    first = versions.names()[-3]
    assert sweep["rows"][first]["ratio_to_cublas"]["median"] == pytest.approx(1.5 / fake_gpu.FAKE_MS.get(first, 1.6))
    step = {"over": "v5", "median": 1.7 / 1.6, "low": 1.7 / 1.6, "high": 1.7 / 1.6, "verdict": "pays", "band": 0.01}
    assert steps["rows"]["v6"]["step"] == pytest.approx(step)
    assert (steps["title"], steps["rows"]["v6"]["kept"], steps["rows"]["v5"]["kept"]) == ("a try", True, False)
    assert ladder["rows"]["v2"]["sm_clock_mhz"] == 1755.0 and ladder["rows"]["v2"]["counters"] is None  # no ncu
    assert {r["run_id"] for r in (ladder, sweep, steps)} == {ladder["run_id"]}  # one id for one invocation
    assert (ladder["git_commit"], ladder["processes"], ladder["rounds"]) == ("abc1234", 2, 3)
    assert ladder["log"] == f"samples/{ladder['run_id']}.json.gz"
    raw = runner.read_samples(tmp_path / "res" / ladder["log"])
    assert [len(p.samples["v0"]) for p in raw.runs[0].processes if p.samples] == [3, 3]
    recorded = [{k: v for k, v in f["runs"][-1].items() if k != "invocation_s"} for f in (ladder, sweep, steps)]
    recomputed = [r.to_json() for r in aggregate.runs_from_samples(raw, ladder["log"])]
    assert recomputed == recorded  # the intervals can be recomputed
    assert [p.name for p in (tmp_path / "res" / "samples").iterdir()] == [Path(ladder["log"]).name]  # no temp file


def test_a_second_invocation_merges_and_keeps_what_it_did_not_measure(tmp_path: Path) -> None:
    assert fake(tmp_path, "--ladder", processes=1) == 0
    first = results.load(tmp_path / "res" / "nvidia-h200.json")
    time.sleep(1.1)  # run ids have one-second resolution
    assert fake(tmp_path, "--sweep", processes=1) == 0
    merged = results.load(tmp_path / "res" / "nvidia-h200.json")
    assert merged["ladder"] == first["ladder"] and len(merged["sweep"]) == 1
    assert len(list((tmp_path / "res" / "samples").glob("*.json.gz"))) == 2


def test_a_wrong_result_exits_3_and_records_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert fake(tmp_path, "--ladder", fail_check="v3") == 3
    assert "v3 is wrong at 8192x8192x8192" in capsys.readouterr().err
    assert not (tmp_path / "res").exists()


def test_a_results_file_of_another_gpu_is_refused_before_measuring(tmp_path: Path, capsys) -> None:
    import fake_results

    path = tmp_path / "res" / "nvidia-h200.json"
    results.write_atomic(path, fake_results.typed(fake_results.fake_file("NVIDIA H100 PCIe")))
    before = path.read_bytes()
    assert fake(tmp_path, "--ladder") == 1
    assert "one file per GPU model" in capsys.readouterr().err and path.read_bytes() == before


def test_the_worker_checks_everything_first_then_alternates_the_order_round_by_round() -> None:
    run = replace(SPEC, section="sweep", shape=(1024, 1024, 1024))
    job = {"mode": "time", "backend": fake_gpu.BACKEND, "runs": [run.to_json()],
           "settings": {"rounds": 3, "repeats": 1, "warmup_s": 0, "process": 0}}  # fmt: skip
    answer, status = worker.run_job(protocol.Job.from_json(job))
    (got,) = answer.to_json()["runs"]
    assert status == 0 and got["orders"] == [["v0", "v1", "cublas"], ["cublas", "v1", "v0"], ["v0", "v1", "cublas"]]
    assert got["checks"]["v1"] == [{"ok": True, "bad": 0, "max_abs_err": 1e-4, "shape": [1024, 1024, 1024]}]


def test_a_worker_finds_the_fake_gpu_in_tests_through_its_path_and_src_holds_no_fake(monkeypatch) -> None:
    probe = protocol.Job.from_json({"mode": "probe", "backend": fake_gpu.BACKEND, "settings": {"process": 0}})
    monkeypatch.delenv("PYTHONPATH", raising=False)
    with fake_gpu.on_child_path():
        found = jobs.call_worker(probe, protocol.Answer, 300).device
        assert found is not None and found.to_json() == fake_gpu.FAKE_DEVICE
    with pytest.raises(jobs.BenchmarkError, match="No module named 'fake_gpu'"):
        jobs.call_worker(probe, protocol.Answer, 300)  # without tests/ on its path: the fake is no part of the package
    with pytest.raises(ValueError, match="module:factory"):
        worker.make_backend(protocol.Job.of(mode="probe", backend="fake"))


def v6_over_cublas(neighbour: str, warmup_s: float) -> float:
    """V6's median paired ratio to cuBLAS on the fake GPU, in a rotation with one other kernel before it."""
    impls = tuple(plan.ImplSpec(name, "kernel", name) for name in (neighbour, "v6")) + (plan.PEER_SPECS["cublas"],)
    run = plan.RunSpec("steps", f"beside {neighbour}", (8192, 8192, 8192), impls)
    job = {"mode": "time", "backend": fake_gpu.BACKEND, "runs": [run.to_json()],
           "settings": {"rounds": 4, "repeats": 30, "warmup_s": warmup_s, "process": 0}}  # fmt: skip
    answer, status = worker.run_job(protocol.Job.from_json(job))
    assert isinstance(answer, protocol.Answer)
    samples = answer.runs[0].samples or {}
    assert status == 0
    return statistics.median(a / b for a, b in zip(samples["cublas"], samples["v6"], strict=True))


def test_the_warm_up_makes_a_ratio_independent_of_the_neighbour_in_the_rotation() -> None:
    # The fake GPU's power state follows what runs: without a warm-up V6 meets the state its neighbour left (the
    # slow V0 leaves a cool GPU, V8 a hot one) and its ratio to cuBLAS moves by more than the band; with the
    # default warm-up both rotations give V6's own ratio.
    slow, fast = v6_over_cublas("v0", 0.0), v6_over_cublas("v8", 0.0)
    assert abs(slow / fast - 1.0) > 0.015
    slow, fast = v6_over_cublas("v0", plan.DEFAULT.warmup_s), v6_over_cublas("v8", plan.DEFAULT.warmup_s)
    assert abs(slow / fast - 1.0) < 0.005
    assert fast == pytest.approx(fake_gpu.FAKE_MS["cublas"] / fake_gpu.FAKE_MS["v6"], rel=0.005)


def test_the_sampler_reads_only_while_a_window_is_open() -> None:
    reads: list[float] = []

    def read() -> machine.Reading:
        reads.append(time.monotonic())
        return 1800.0, 700.0

    sampler = machine.WindowSampler(read, interval_s=0.001)
    try:
        time.sleep(0.05)
        assert reads == []
        with sampler.window("v1"):
            time.sleep(0.02)
        clocks, power = sampler.take("v1")
        assert len(clocks) >= 1 and set(clocks) == {1800.0} and set(power) == {700.0}
        count = len(reads)
        time.sleep(0.05)
        assert len(reads) == count and sampler.take("v1") == ([], [])
    finally:
        sampler.close()


GMMA, DRAM = ncu.NCU_METRICS["tensor_pipe_pct"][0], ncu.NCU_METRICS["dram_throughput_pct"][0]
NCU_CSV = f"""==PROF== Connected to process 1
"ID","Kernel Name","{GMMA}","{DRAM}"
"","","%","%"
"0","matmul","78.25","1,234.5"
"1","other","1","2"
"""


def test_ncu_asks_for_every_stall_reason_and_keeps_them_among_the_raw_metrics(tmp_path: Path) -> None:
    stall = ncu.STALL_METRICS[ncu.STALL_REASONS.index("long_scoreboard")]
    assert set(ncu.STALL_METRICS) <= set(ncu.metric_names()) and len(set(ncu.STALL_METRICS)) == len(ncu.STALL_REASONS)
    log = tmp_path / "ncu.csv"
    log.write_text(NCU_CSV.replace(f',"{DRAM}"', f',"{DRAM}","{stall}"').replace('"%","%"', '"%","%",""')
                   .replace('"1,234.5"', '"1,234.5","1.92"').replace('"1","2"', '"1","2","3"'))  # fmt: skip
    counters = ncu.counters(log, ncu.metric_names())
    assert counters is not None and counters.ncu_metrics is not None
    assert counters.ncu_metrics[stall] == 1.92 and counters.tensor_pipe_pct == 78.25


def test_ncu_csv_gives_the_first_kernel_s_counters(tmp_path: Path) -> None:
    log = tmp_path / "ncu.csv"
    log.write_text(NCU_CSV)
    counters = ncu.counters(log, ncu.metric_names())
    assert counters is not None and counters.tensor_pipe_pct == 78.25 and counters.dram_throughput_pct == 1234.5
    assert ncu.counters(tmp_path / "none.csv", ncu.metric_names()) is None
    log.write_text(NCU_CSV.replace('"1,234.5"', '"nan"'))  # a metric ncu could not measure: null, not an error
    counters = ncu.counters(log, ncu.metric_names())
    assert counters is not None and counters.tensor_pipe_pct == 78.25 and counters.dram_throughput_pct is None


def test_a_partial_ladder_times_the_named_versions_and_cublas_into_its_own_file(tmp_path: Path) -> None:
    made = make("--ladder", "--versions", "v3", "--quick", "--out", str(tmp_path / "v3.json"))
    assert [impl.name for impl in made.runs[0].impls] == ["v3", "cublas"]


def test_a_steps_run_may_pair_a_variant_with_another_than_the_baseline_and_ask_for_ncu(tmp_path: Path) -> None:
    spec = tmp_path / "steps_spec.py"
    spec.write_text(STEPS_SPEC.replace('"kept": ["v6"]}}', '"kept": ["v6"]}, "more": {"after": "v6", "title": "more", '
                                       '"baseline": "v4", "over": {"v6": "v5"}, "profile": True, '
                                       '"variants": ["v4", "v5", "v6"]}}').replace(
        '"v5": (', '"v4": ("matmul_v4.py", "MatmulV4", {}, "older"),\n    "v5": ('))  # fmt: skip
    (more,) = plan.steps_runs("more", spec)
    assert more.step_over == {"v5": "v4", "v6": "v5"} and more.profile
    assert not plan.steps_runs("try", spec)[0].profile
    spec.write_text(spec.read_text().replace('"over": {"v6": "v5"}', '"over": {"v6": "v9"}'))
    with pytest.raises(plan.UsageError, match="'over'"):
        plan.steps_runs("more", spec)


def test_a_steps_spec_anywhere_finds_its_variant_files_beside_it_in_the_drafts_or_the_kernels(tmp_path: Path) -> None:
    spec = tmp_path / "steps_spec.py"
    (tmp_path / "mine.py").write_text("")
    # v5 from a file beside the spec, v6 from a draft in experiments/ (the class is checked when a run builds it).
    spec.write_text(STEPS_SPEC.replace('"matmul_v5.py"', '"mine.py"').replace('"matmul_v6.py"', '"v6_variants.py"'))
    found = {impl.name: Path(impl.file) for impl in plan.steps_runs("try", spec)[0].impls[:-1]}
    assert found == {"v5": tmp_path / "mine.py", "v6": kernels.EXPERIMENTS_DIR / "v6_variants.py"}
    spec.write_text(STEPS_SPEC.replace('"matmul_v6.py"', '"nowhere.py"'))
    with pytest.raises(plan.UsageError, match="nowhere.py") as missing:
        plan.steps_runs("try", spec)
    assert all(str(folder) in str(missing.value) for folder in (tmp_path, kernels.EXPERIMENTS_DIR, kernels.KERNEL_DIR))


# --- the optional peers (Triton's templates, QuACK): rows beside cuBLAS, or recorded as missing ---


def test_peers_join_the_sweep_only_when_asked_each_paired_with_cublas() -> None:
    names = [*versions.names()[-3:], "cublas"]
    assert all([i.name for i in r.impls] == names for r in make("--sweep").runs)
    with_peers = make("--sweep", "--peers")
    expected = [*names, *plan.OPTIONAL_PEERS]
    assert all([i.name for i in r.impls] == expected for r in with_peers.runs)
    quack, tuned = (plan.PEER_SPECS[n] for n in (versions.QUACK, versions.QUACK_AUTOTUNED))
    assert (quack.config, tuned.config) == ({"tuned": False}, {"tuned": True})  # two rows, one GEMM
    assert plan.PEER_SPECS[versions.TRITON].config["inductor"]["max_autotune_gemm_backends"] == "TRITON"


def test_the_plan_with_peers_needs_no_torch_and_no_peer_installed(monkeypatch, capsys) -> None:
    for module in ("torch", "triton", "quack", "cutlass", "tilus"):
        monkeypatch.setitem(sys.modules, module, None)  # any import of them now raises ImportError
    assert cli.main(["plan", "--sweep", "--peers"]) == 0
    assert "quack-autotuned" in capsys.readouterr().out


def test_every_command_s_help_and_the_plan_run_without_torch_tilus_or_numpy() -> None:
    script = """
import sys
for module in ("torch", "tilus", "numpy", "tvm_ffi"):
    sys.modules[module] = None  # any import of them now raises ImportError: a bare `pip install -e .`
from matmul_bench import cli
for name in cli.COMMANDS:
    try:
        status = cli.main([name, "--help"])
    except SystemExit as exc:  # argparse's --help
        status = exc.code or 0
    assert status == 0, name
assert cli.main(["plan"]) == 0
assert cli.main(["plan", "--field", "--peers"]) == 0
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "usage: python -m matmul_bench quick" in done.stdout and "estimated duration" in done.stdout


def test_a_missing_peer_is_recorded_with_its_error_and_the_run_goes_on(tmp_path: Path, capsys) -> None:
    assert fake(tmp_path, "--sweep", "--peers", missing_peers=[versions.QUACK]) == 0
    (sweep,) = results.load(tmp_path / "res" / "nvidia-h200.json")["sweep"]
    assert versions.QUACK not in sweep["rows"]
    missing = sweep["peers_missing"][versions.QUACK]
    assert missing["version"] is None and missing["error"].startswith("ModuleNotFoundError: No module named 'quack'")
    assert sweep["runs"][-1]["peers_missing"] == sweep["peers_missing"]
    for name in (versions.TRITON, versions.QUACK_AUTOTUNED):  # present peers: rows paired with cuBLAS
        assert sweep["rows"][name]["ratio_to_cublas"]["median"] == pytest.approx(1.5 / fake_gpu.FAKE_MS[name])
    printed = capsys.readouterr()
    assert f"{versions.QUACK} could not run at 4096x4096x4096" in printed.err  # said while it runs
    assert "not run here: not installed; ModuleNotFoundError" in printed.out  # and in the final table
    raw = runner.read_samples(tmp_path / "res" / sweep["log"])
    recorded = {k: v for k, v in sweep["runs"][-1].items() if k != "invocation_s"}
    recomputed = [r.to_json() for r in aggregate.runs_from_samples(raw, sweep["log"])]
    assert recomputed == [recorded]  # peers_missing recomputed too


def test_a_wrong_peer_is_not_timed_and_recorded_as_missing_with_its_check(tmp_path: Path) -> None:
    assert fake(tmp_path, "--sweep", "--peers", processes=1, fail_check=versions.TRITON) == 0  # a peer's: not exit 3
    (sweep,) = results.load(tmp_path / "res" / "nvidia-h200.json")["sweep"]
    assert versions.TRITON not in sweep["rows"] and versions.QUACK in sweep["rows"]
    assert sweep["peers_missing"][versions.TRITON]["error"] == (
        f"CheckFailed: {versions.TRITON} is wrong at 4096x4096x4096: 17 elements outside tolerance (max |err| 7); "
        "not timed"
    )


# --- the field set, and the baseline's own check ---


def test_a_fake_field_record_writes_a_field_section_that_merges_by_shape_over_repeated_runs(tmp_path: Path) -> None:
    for _ in range(3):
        assert fake(tmp_path, "--field", "--quick", processes=1) == 0
    data = results.read(tmp_path / "res" / "nvidia-h200.json")
    figures = results.field_runs(data)
    assert [f.shape.mnk for f in figures] == [f.shape for f in field.FIELD[:3]]
    assert [len(f.runs) for f in figures] == [3, 3, 3] and all(f.replicated for f in figures)
    assert figures[0].field == figures[0].runs[-1].field
    assert figures[0].field.to_json() == plan.field_runs()[0].field_info
    assert results.field_runs(data, field.HELD_OUT) == [figures[1]]
    assert data.sweep == () and "ladder" not in data.key_order
    assert all(results.inexact_baseline(f) is None for f in figures)


def test_an_inexact_cublas_is_timed_and_its_row_marked_with_its_wrong_elements(tmp_path: Path, capsys) -> None:
    odd = field.FIELD[1].shape
    assert fake(tmp_path, "--field", "--quick", inexact_baseline=[list(odd)]) == 0
    data = results.read(tmp_path / "res" / "nvidia-h200.json")
    first, second, third = results.field_runs(data)
    assert results.inexact_baseline(second) == 3 and second.runs[-1].rows["cublas"].wrong_elements == 3
    assert set(second.rows) == {*versions.names()[-2:], "cublas"}  # every row timed, paired with cuBLAS
    assert results.inexact_baseline(first) is None and results.inexact_baseline(third) is None
    assert all(row.wrong_elements is None for f in (first, second) for name, row in f.rows.items()
               if name != "cublas")  # fmt: skip
    printed = capsys.readouterr()
    assert "cuBLAS failed its float64 check at 4096x4096x14336 (3 elements" in printed.err
    assert "inexact: 3 elements outside tolerance" in printed.out
    raw = runner.read_samples(tmp_path / "res" / second.log)
    recorded = [{k: v for k, v in f.runs[-1].to_json().items() if k != "invocation_s"} for f in (first, second, third)]
    recomputed = [r.to_json() for r in aggregate.runs_from_samples(raw, second.log)]
    assert recomputed == recorded  # the mark is recomputed from the checks


def test_a_kernel_of_ours_that_misses_the_tolerance_in_the_field_stops_the_record(tmp_path: Path, capsys) -> None:
    newest = versions.names()[-1]
    assert fake(tmp_path, "--field", "--quick", fail_check=newest, inexact_baseline=True) == 3
    assert f"{newest} is wrong at" in capsys.readouterr().err
    assert not (tmp_path / "res").exists()


def test_without_a_gpu_record_says_so_in_one_line_and_exits_1() -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": ""}
    done = subprocess.run([sys.executable, "-m", "matmul_bench", "quick"], capture_output=True, text=True, env=env,
                          timeout=300)  # fmt: skip
    assert done.returncode == 1, done.stderr
    # One line, before any plan is printed (the plan's estimate would promise minutes of work that cannot run).
    no_gpu = "no CUDA GPU is visible: the benchmark needs an NVIDIA Hopper GPU (H100/H200, sm_90)"
    assert done.stdout == "" and done.stderr.strip().splitlines() == [f"python -m matmul_bench quick: {no_gpu}"]
