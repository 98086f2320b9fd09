"""The benchmark on the CPU: plan and refusals, aggregation with known answers, the worker protocol end to end
(a fake backend stands in for the GPU: made-up, deterministic times), ncu parsing, the schema-1 conversion."""

from __future__ import annotations

import ast
import json
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from conftest import EXAMPLES
from matmul_bench import aggregate, cli, machine, ncu, peers, plan, replicate, runner, worker
from matmul_bench import fake as fake_backend
from matmul_data import results, versions


def make(*argv: str) -> plan.Plan:
    return plan.make_plan(plan.build_parser().parse_args(list(argv)))


# --- the plan and the command line ---


def test_no_section_plans_the_whole_record_ladder_sweep_and_ncu() -> None:
    p = make()
    assert p.sections() == ["ladder", "sweep"] and p.ncu and not p.quick
    ladder = p.section_runs("ladder")[0]
    assert [i.name for i in ladder.impls] == [*versions.names(), "cublas"]
    names = versions.names()
    assert ladder.step_over == dict(zip(names[1:], names[:-1], strict=True))  # each version over the one before
    # Each version pinned to its TUNED, or left to its config_for at each shape (V8).
    assert all(i.config == versions.get(i.name).fixed_config for i in ladder.impls if i.kind == "kernel")
    assert [r.shape for r in p.section_runs("sweep")] == list(plan.SWEEP_SHAPES)
    assert all([i.name for i in r.impls] == [*names[-3:], "cublas"] for r in p.section_runs("sweep"))


def test_the_plan_s_shape_is_the_one_every_chapter_quotes() -> None:
    tree = ast.parse((EXAMPLES / "common.py").read_text(encoding="utf-8"))
    found = next(n.value for n in tree.body if isinstance(n, ast.Assign) and n.targets[0].id == "BENCH_SHAPE")
    assert ast.literal_eval(found) == plan.BENCH_SHAPE


def test_quick_takes_fewer_processes_rounds_and_shapes_and_no_ncu() -> None:
    p = make("--quick")
    assert p.settings == plan.QUICK and not p.ncu
    assert [r.shape for r in p.section_runs("sweep")] == list(plan.QUICK_SWEEP_SHAPES)
    assert runner.describe_out(p).endswith("build/quick/<gpu>.json")


def test_options_override_the_settings_and_torch_compile_joins_the_sweep() -> None:
    p = make("--sweep", "--torch-compile", "--sweep-shapes", "1024x2048x512", "--rounds", "4", "--warmup", "0")
    assert p.settings == plan.Settings(processes=3, rounds=4, repeats=30, warmup=0)
    (run,) = p.runs
    assert run.shape == (1024, 2048, 512) and run.impls[-1].name == versions.TORCH_COMPILE


def test_autotune_leaves_the_configs_to_tilus_and_builds_one_at_a_time() -> None:
    p = make("--ladder", "--autotune")
    assert p.build_jobs == 1 and all(i.config is None for i in p.runs[0].impls if i.kind == "kernel")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--sweep", "--ncu"], "--ncu profiles the rows of the ladder"),
        (["--ladder", "--torch-compile"], "--torch-compile adds a peer to the sweep"),
        (["--ladder", "--peers"], "--peers adds the peers to the sweep"),
        (["--ladder", "--sweep-shapes", "1024x1024x1024"], "--sweep-shapes needs --sweep"),
        (["--sweep", "--sweep-shapes", "4096x4096"], "bad shape '4096x4096'"),
        (["--sweep", "--sweep-shapes", "64x64x60"], "K must be a multiple of 8"),
        (["--sweep", "--sweep-shapes", "64x64x64,64x64x64"], "names a shape twice"),
        (["--ladder", "--rounds", "0"], "must be a positive integer"),
        (["--ladder", "--rounds", "1", "--processes", "1"], "no interval"),
        (["--steps", "round 9"], "unknown steps run"),
        (["--ladder", "--backend", "fake"], "needs --out"),
        (["--ladder", "--no-such-flag"], "unrecognized arguments"),
    ],
)
def test_bad_usage_exits_2_with_the_reason_and_writes_nothing(
    argv: list[str], message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    assert cli.main(["record", *argv]) == 2
    assert message in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []


def test_out_must_be_a_json_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main(["record", "--ladder", "--out", str(tmp_path)]) == 2
    assert "give a .json file path" in capsys.readouterr().err


def test_dry_run_prints_the_plan_with_its_estimate_and_runs_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "r.json"
    assert cli.main(["plan", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "estimated duration: about" in printed and "dry run" in printed and "ladder" in printed
    assert not out.exists()


def test_the_estimate_keeps_the_record_near_15_minutes_and_quick_under_10() -> None:
    def minutes(*argv: str) -> float:
        return sum(s for _, s in plan.estimate(make(*argv))) / 60

    assert minutes() <= 15 and minutes("--quick") < 10


def _autotune_space(path: Path, cls: str) -> dict[str, list[Any]]:
    """The @tilus.autotune lists of a kernel class, read from its source: {"block_m": [...], ...}."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == cls)
    space: dict[str, list[Any]] = {}
    for deco in node.decorator_list:
        if isinstance(deco, ast.Call) and getattr(deco.func, "attr", "") == "autotune":
            names = [n.strip() for n in ast.literal_eval(deco.args[0]).split(",")]
            for values in ast.literal_eval(deco.args[1]):
                values = values if len(names) > 1 else [values]
                for name, value in zip(names, values, strict=True):
                    space.setdefault(name, []).append(value)
    return space


def autotune_space(version: versions.Version) -> dict[str, list[Any]]:
    """The lists read from the source, or, where a list is computed (V8's menu), from the imported class."""
    try:
        return _autotune_space(version.path, version.class_name)
    except ValueError:
        from kernel_builds import autotune_space as configurations
        from kernel_builds import kernel_class

        space: dict[str, list[Any]] = {}
        for config in configurations(kernel_class(version.name)):
            for name, value in config.items():
                space.setdefault(name, []).append(value)
        return space


@pytest.mark.parametrize("version", versions.all_versions(), ids=lambda v: v.name)
def test_each_pinned_config_lies_in_its_kernel_s_autotune_space(version: versions.Version) -> None:
    space = autotune_space(version)
    pinned = versions.tuned_configs()[version.name]
    assert set(pinned) == set(space)
    assert all(pinned[name] in space[name] for name in space), (pinned, space)


def test_every_steps_variant_names_a_class_its_file_defines() -> None:
    runs = plan.steps_runs("all", plan.STEPS_FILE)
    assert runs and all(r.after in versions.names() for r in runs)
    for run in runs:
        # Every step is over one of the run's own variants (its baseline, or the one its 'over' names).
        assert set(run.step_over.values()) <= {impl.name for impl in run.impls}
        assert all(over != impl for impl, over in run.step_over.items())
        assert run.check_shapes and all(s[1:] == run.shape[1:] for s in run.check_shapes)  # at the run's N and K
        for impl in run.impls[:-1]:
            tree = ast.parse(Path(impl.file).read_text(encoding="utf-8"))
            assert impl.cls in {n.name for n in tree.body if isinstance(n, ast.ClassDef)}, impl


def test_kernels_are_built_once_per_config_with_every_shape_they_meet() -> None:
    specs = runner.build_specs(make("--ladder", "--sweep", "--sweep-shapes", "1024x1024x1024"))
    first_swept = f"MatmulV{versions.names()[-3][1:]}"  # the sweep times the last three versions
    swept = [s for s in specs if s["cls"] == first_swept]
    assert len(specs) == len(versions.names()) and len(swept) == 1
    assert swept[0]["shapes"] == [[8192, 8192, 8192], [1024, 1024, 1024]] and swept[0]["check"]


def test_a_rule_s_kernel_is_pinned_to_its_own_choice_beside_a_pinned_variant_of_the_same_class(monkeypatch) -> None:
    # "v8 round 2": V8 (its rule picks the tile) and V8 pinned to 128 x 192, same file, class and shape. Each build
    # reports the configuration it ran; only the rule's own answer may pin V8 for the timed processes.
    steps = make("--steps", "v8 round 2", "--steps-file", str(EXAMPLES.parent.parent / "experiments" / "steps.py"))
    specs = runner.build_specs(steps)
    ruled = {"block_m": 128, "block_n": 256, "consumers": 2, "num_stages": 3, "block_k": 64, "swizzle_size": 16}

    def build_all(specs: list[dict[str, Any]], jobs: int, timeout_s: float) -> list[dict[str, Any]]:
        return [{"ok": True, "checks": [], "configs": {"8192x8192x8192": s["config"] or ruled}} for s in specs]

    monkeypatch.setattr(runner.prebuild, "build_all", build_all)
    assert [s["config"] is None for s in specs] == [True, False]  # the pinned variant answers last
    (run,) = runner.build_and_check(steps).runs
    configs = {impl.name: impl.config for impl in run.impls}
    assert configs["v8"] == ruled and configs["v8-128x192"]["block_n"] == 192


# --- aggregation: known answers from synthetic samples ---

SPEC = plan.RunSpec(
    "ladder",
    "ladder",
    (8192, 8192, 8192),
    tuple(plan.ImplSpec(n, "kernel", n.upper(), config={}) for n in ("v0", "v1", "cublas")),
    {"v1": "v0"},
)


def process(clock: list[float], **extra: Any) -> dict[str, Any]:
    """One process's samples: v0 = 4 ms, v1 = 2 ms, cuBLAS = 1 ms, all scaled by the round's clock."""
    base = {"v0": 4.0, "v1": 2.0, "cublas": 1.0}
    return {
        "samples": {n: [ms * c for c in clock] for n, ms in base.items()},
        "clocks": {"v0": [1500.0, 1700.0, 1900.0], "v1": [], "cublas": [1800.0]},
        "power": {"v0": [700.0], "v1": [], "cublas": [650.0, 690.0]},
        "configs": {"v0": {"block_m": 64}, "v1": {}, "cublas": {}},
    } | extra


def make_run(per_process: list[dict[str, Any]]) -> dict[str, Any]:
    return aggregate.make_run(
        SPEC, per_process, run_id="r", date="2026-12-01", git_commit="abc", warmup=5, repeats=30, log="logs/r.json"
    )


def test_ratios_are_paired_within_rounds_so_a_wandering_clock_cancels() -> None:
    run = make_run([process([1.0, 1.1, 0.9]), process([1.05, 0.95, 1.2])])
    v0, v1, cublas = (run["rows"][n] for n in ("v0", "v1", "cublas"))
    assert v0["ratio_to_cublas"] == pytest.approx({"median": 0.25, "low": 0.25, "high": 0.25})
    assert v1["step"] == pytest.approx({"over": "v0", "median": 2.0, "low": 2.0, "high": 2.0})
    assert cublas["ratio_to_cublas"] == {"median": 1.0, "low": 1.0, "high": 1.0}
    assert v1["latency_ms"] == pytest.approx(2.0 * 1.025)  # median of the six clock-scaled samples
    assert v1["tflops"] == pytest.approx(results.tflops(8192, 8192, 8192, v1["latency_ms"]))
    assert (v0["sm_clock_mhz"], v0["power_w"], v1["sm_clock_mhz"], cublas["power_w"]) == (1700.0, 700.0, None, 670.0)
    assert (run["rounds"], run["processes"], v0["config"], "step" not in v0) == (3, 2, {"block_m": 64}, True)
    assert v0["counters"] is None and v0["title"] == "V0"
    results.validate(fake_results_file(run))


def fake_results_file(ladder: dict[str, Any]) -> dict[str, Any]:
    import fake_results

    return replicate.remerge(fake_results.provenance() | {"ladder": aggregate.as_figure(ladder)})


def test_a_run_needs_the_same_rounds_for_every_impl() -> None:
    broken = process([1.0, 1.1])
    broken["samples"]["v1"].pop()
    with pytest.raises(ValueError, match="same number of rounds"):
        make_run([broken])


# --- the worker protocol, end to end with the fake backend ---


STEPS_SPEC = """
VARIANTS = {
    "v5": ("matmul_v5.py", "MatmulV5", {"block_m": 128}, "the baseline"),
    "v6": ("matmul_v6.py", "MatmulV6", {"block_m": 128}, "the change"),
}
RUNS = {"try": {"after": "v6", "title": "a try", "baseline": "v5", "variants": ["v5", "v6"], "kept": ["v6"]}}
"""


def fake(tmp_path: Path, *argv: str, processes: int = 2) -> int:
    steps = tmp_path / "steps_spec.py"
    steps.write_text(STEPS_SPEC)
    out = tmp_path / "res" / "nvidia-h200.json"
    common = ["--backend", "fake", "--out", str(out), "--rounds", "3", "--processes", str(processes)]
    return cli.main(["record", *common, "--git-commit", "abc1234", "--steps-file", str(steps), *argv])


def test_a_fake_record_runs_the_whole_protocol_and_writes_paired_results_and_a_log(tmp_path: Path) -> None:
    assert fake(tmp_path, "--ladder", "--ncu", "--sweep", "--sweep-shapes", "4096x4096x4096", "--steps", "try") == 0
    data = results.load(tmp_path / "res" / "nvidia-h200.json")
    ladder, (sweep,), (steps,) = data["ladder"], data["sweep"], data["steps"]
    assert list(ladder["rows"]) == [*versions.names(), "cublas"]
    assert ladder["rows"]["v1"]["step"]["median"] == pytest.approx(3.5 / 2.0)  # the fake's V0 and V1 times
    first = versions.names()[-3]  # the sweep times the last three versions
    expected = 1.5 / fake_backend.BASE_MS.get(first, 1.6)  # the fake's cuBLAS over its time
    assert sweep["rows"][first]["ratio_to_cublas"]["median"] == pytest.approx(expected)
    assert steps["rows"]["v6"]["step"] == pytest.approx({"over": "v5", "median": 1.7 / 1.6, "low": 1.7 / 1.6,
                                                         "high": 1.7 / 1.6, "verdict": "pays"})  # fmt: skip
    assert (steps["title"], steps["rows"]["v6"]["kept"], steps["rows"]["v5"]["kept"]) == ("a try", True, False)
    assert ladder["rows"]["v2"]["sm_clock_mhz"] == 1755.0 and ladder["rows"]["v2"]["counters"] is None  # no ncu
    assert {r["run_id"] for r in (ladder, sweep, steps)} == {ladder["run_id"]}  # one id for one invocation
    assert (ladder["git_commit"], ladder["processes"], ladder["rounds"]) == ("abc1234", 2, 3)
    log = json.loads((tmp_path / "res" / ladder["log"]).read_text())
    assert [len(p["samples"]["v0"]) for p in log["runs"][0]["processes"]] == [3, 3]
    recorded = [{k: v for k, v in f["runs"][-1].items() if k != "invocation_s"} for f in (ladder, sweep, steps)]
    assert aggregate.runs_from_log(log) == recorded  # the intervals can be recomputed from the raw log


def test_a_second_invocation_merges_and_keeps_what_it_did_not_measure(tmp_path: Path) -> None:
    assert fake(tmp_path, "--ladder", processes=1) == 0
    first = results.load(tmp_path / "res" / "nvidia-h200.json")
    time.sleep(1.1)  # run ids have one-second resolution
    assert fake(tmp_path, "--sweep", "--sweep-shapes", "1024x1024x1024", processes=1) == 0
    merged = results.load(tmp_path / "res" / "nvidia-h200.json")
    assert merged["ladder"] == first["ladder"] and len(merged["sweep"]) == 1
    assert len(list((tmp_path / "res" / "logs").glob("*.json"))) == 2


def test_a_wrong_result_exits_3_and_records_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert fake(tmp_path, "--ladder", "--fake-fail-check", "v3") == 3
    assert "v3 is wrong at 8192x8192x8192" in capsys.readouterr().err
    assert not (tmp_path / "res").exists()


def test_a_results_file_of_another_gpu_is_refused_before_measuring(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import fake_results

    path = tmp_path / "res" / "nvidia-h200.json"
    results.write_atomic(path, fake_results.fake_file("NVIDIA H100 PCIe"))
    before = path.read_bytes()
    assert fake(tmp_path, "--ladder") == 1
    assert "one file per GPU model" in capsys.readouterr().err and path.read_bytes() == before


def test_the_worker_checks_everything_first_then_alternates_the_order_round_by_round() -> None:
    run = plan.RunSpec("sweep", "s", (1024, 1024, 1024), SPEC.impls)
    job = {"mode": "time", "backend": "fake", "settings": {"rounds": 3, "repeats": 1, "warmup": 0, "process": 0},
           "runs": [run.to_json()]}  # fmt: skip
    answer, status = worker.run_job(job)
    (got,) = answer["runs"]
    assert status == 0 and got["orders"] == [["v0", "v1", "cublas"], ["cublas", "v1", "v0"], ["v0", "v1", "cublas"]]
    assert got["checks"]["v1"] == [{"ok": True, "bad": 0, "max_abs_err": 1e-4, "shape": [1024, 1024, 1024]}]


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


def test_progress_lines_count_steps_and_say_how_long_is_left(capsys: pytest.CaptureFixture[str]) -> None:
    progress = runner.Progress([("a", 60.0), ("b", 120.0)])
    with progress.step("a"):
        pass
    with progress.step("b"):
        pass
    lines = capsys.readouterr().err.splitlines()
    assert lines[0] == "[1/2] a (elapsed 0s, about 2m00s left)"
    assert lines[1].startswith("[2/2] b (elapsed 0s, about ") and lines[1].endswith(" left)")


# --- ncu ---

GMMA, DRAM = ncu.NCU_METRICS["tensor_pipe_pct"][0], ncu.NCU_METRICS["dram_throughput_pct"][0]
NCU_CSV = f"""==PROF== Connected to process 1
"ID","Kernel Name","{GMMA}","{DRAM}"
"","","%","%"
"0","matmul","78.25","1,234.5"
"1","other","1","2"
"""


def test_ncu_csv_gives_the_first_kernel_s_counters() -> None:
    values = ncu.parse_csv(NCU_CSV, ncu.metric_names())
    counters = ncu.counters_from_metrics(values)
    assert counters is not None and counters["tensor_pipe_pct"] == 78.25 and counters["dram_throughput_pct"] == 1234.5
    assert ncu.counters_from_metrics({}) is None and ncu.parse_csv("no csv here", ncu.metric_names()) == {}


def test_a_partial_ladder_times_the_named_versions_and_cublas_into_its_own_file(tmp_path: Path) -> None:
    made = make("--ladder", "--versions", "v3", "--quick", "--out", str(tmp_path / "v3.json"))
    assert [impl.name for impl in made.runs[0].impls] == ["v3", "cublas"]


@pytest.mark.parametrize(
    "argv",
    [
        ["--ladder", "--versions", "v3"],
        ["--sweep", "--versions", "v3", "--out", "x.json"],
        ["--ladder", "--versions", "v99", "--out", "x.json"],
    ],
)
def test_a_partial_ladder_without_its_own_file_or_with_unknown_versions_is_refused(argv: list[str]) -> None:
    with pytest.raises(plan.UsageError):
        make(*argv)


def test_a_steps_run_may_pair_a_variant_with_another_than_the_baseline_and_ask_for_ncu(tmp_path: Path) -> None:
    spec = tmp_path / "steps_spec.py"
    spec.write_text(STEPS_SPEC.replace('"kept": ["v6"]}}', '"kept": ["v6"]}, "more": {"after": "v6", "title": "more", '
                                       '"baseline": "v4", "over": {"v6": "v5"}, "profile": True, '
                                       '"variants": ["v4", "v5", "v6"]}}').replace(
        '"v5": (', '"v4": ("matmul_v4.py", "MatmulV4", {}, "older"),\n    "v5": ('))  # fmt: skip
    (more,) = plan.steps_runs("more", spec)
    assert more.step_over == {"v5": "v4", "v6": "v5"} and more.profile
    (tried,) = plan.steps_runs("try", spec)
    assert not tried.profile
    profiled = plan.make_plan(
        plan.build_parser().parse_args(["--steps", "try,more", "--ncu", "--steps-file", str(spec)])
    )
    labels = [label for label, _ in plan.estimate(profiled) if label.startswith("ncu")]
    assert labels == ["ncu more: v4", "ncu more: v5", "ncu more: v6", "ncu more: cublas"]
    spec.write_text(spec.read_text().replace('"over": {"v6": "v5"}', '"over": {"v6": "v9"}'))
    with pytest.raises(plan.UsageError, match="'over'"):
        plan.steps_runs("more", spec)


# --- the optional peers (Triton's templates, QuACK): rows beside cuBLAS, or recorded as missing ---


def test_peers_join_the_sweep_only_when_asked_each_paired_with_cublas() -> None:
    names = [*versions.names()[-3:], "cublas"]
    assert all([i.name for i in r.impls] == names for r in make("--sweep").runs)
    with_peers = make("--sweep", "--peers", "--torch-compile")
    assert all(
        [i.name for i in r.impls] == [*names, versions.TORCH_COMPILE, *plan.OPTIONAL_PEERS] for r in with_peers.runs
    )
    quack, tuned = (plan.PEER_SPECS[n] for n in (versions.QUACK, versions.QUACK_AUTOTUNED))
    assert (quack.config, tuned.config) == ({"tuned": False}, {"tuned": True})  # two rows, one GEMM
    triton = plan.PEER_SPECS[versions.TRITON]
    assert triton.config["inductor"]["max_autotune_gemm_backends"] == "TRITON"  # no ATen choice: never cuBLAS
    assert "none" in plan.peers_text(make("--sweep")) and "peers_missing" in plan.peers_text(with_peers)


def test_the_triton_row_s_inductor_settings_are_this_torch_s_names() -> None:
    inductor_config = pytest.importorskip("torch._inductor.config")
    assert peers.inductor_settings(inductor_config) == (plan.TRITON_INDUCTOR_CONFIG, [])

    class OlderInductor:  # a torch without the persistent TMA templates: the row says what it could not set
        max_autotune_gemm_backends = "ATEN,TRITON"

        class triton:  # noqa: N801  (the name Inductor's config gives it)
            pass

    have, lacking = peers.inductor_settings(OlderInductor)
    assert have == {"max_autotune_gemm_backends": "TRITON"} and lacking == ["triton.enable_persistent_tma_matmul"]


def test_the_plan_with_peers_needs_no_torch_and_no_peer_installed(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for module in ("torch", "triton", "quack", "cutlass"):
        monkeypatch.setitem(sys.modules, module, None)  # any import of them now raises ImportError
    assert cli.main(["plan", "--sweep", "--peers"]) == 0
    assert "quack-autotuned" in capsys.readouterr().out


def test_a_missing_peer_is_recorded_with_its_error_and_the_run_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ("--sweep", "--sweep-shapes", "4096x4096x4096", "--peers", "--fake-missing-peer", versions.QUACK)
    assert fake(tmp_path, *argv) == 0
    data = results.load(tmp_path / "res" / "nvidia-h200.json")
    (sweep,) = data["sweep"]
    assert versions.QUACK not in sweep["rows"]
    missing = sweep["peers_missing"][versions.QUACK]
    assert missing["version"] is None and missing["error"].startswith("ModuleNotFoundError: No module named 'quack'")
    assert sweep["runs"][-1]["peers_missing"] == sweep["peers_missing"]
    for name in (versions.TRITON, versions.QUACK_AUTOTUNED):  # present peers: rows paired with cuBLAS
        expected = fake_backend.BASE_MS["cublas"] / fake_backend.BASE_MS[name]
        assert sweep["rows"][name]["ratio_to_cublas"]["median"] == pytest.approx(expected)
    printed = capsys.readouterr()
    assert f"{versions.QUACK} could not run at 4096x4096x4096" in printed.err  # said while it runs
    assert "not run here: not installed; ModuleNotFoundError" in printed.out  # and in the final table
    log = json.loads((tmp_path / "res" / sweep["log"]).read_text())
    recorded = {k: v for k, v in sweep["runs"][-1].items() if k != "invocation_s"}
    assert aggregate.runs_from_log(log) == [recorded]  # peers_missing is recomputed from the raw log too


def test_a_peer_missing_in_one_process_is_left_out_of_every_process_of_the_run() -> None:
    spec = plan.RunSpec("sweep", "s", (1024, 1024, 1024), (*SPEC.impls, plan.PEER_SPECS[versions.QUACK]))
    timed = process([1.0, 1.1, 0.9])
    timed["samples"][versions.QUACK] = [0.9, 1.0, 0.8]
    lost = process([1.0, 1.0, 1.0], missing={versions.QUACK: {"version": "0.6.5", "error": "RuntimeError: x"}})
    run = aggregate.make_run(spec, [timed, lost], run_id="r", date="2026-12-01", git_commit="abc", warmup=5,
                             repeats=30, log=None)  # fmt: skip
    assert set(run["rows"]) == {"v0", "v1", "cublas"}
    assert run["peers_missing"] == {versions.QUACK: {"version": "0.6.5", "error": "RuntimeError: x"}}


def _with_missing(entry: Any, on_figure: bool = True) -> dict[str, Any]:
    data = fake_results_file(make_run([process([1.0, 1.1]), process([0.9, 1.0])]))
    data["ladder"]["runs"][-1]["peers_missing"] = entry
    if on_figure:
        data["ladder"]["peers_missing"] = entry
    return data


def test_the_schema_takes_peers_missing_and_refuses_a_bad_one() -> None:
    results.validate(_with_missing({versions.QUACK: {"version": None, "error": "ModuleNotFoundError: quack"}}))
    bad = [
        ({"v1": {"version": None, "error": "x"}}, True, "a peer is either timed or missing"),
        ({versions.QUACK: {"version": "0.6.5"}}, True, "error' is missing"),
        ({versions.QUACK: {"version": None, "error": ""}}, True, "must be a non-empty string"),
        ({versions.QUACK: {"version": None, "error": "x"}}, False, "must be its newest run's"),
    ]
    for entry, on_figure, message in bad:
        with pytest.raises(results.ResultsError, match=message):
            results.validate(_with_missing(entry, on_figure))


def test_a_figure_shows_the_peers_its_newest_run_missed() -> None:
    figure = fake_results_file(make_run([process([1.0, 1.1])]))["ladder"]
    older = {**figure["runs"][0], "peers_missing": {versions.QUACK: {"version": None, "error": "x"}}}
    merged = replicate.merge_figure({**figure, "runs": [older, figure["runs"][0]]}, 0.95, 0.01, 132)
    assert "peers_missing" not in merged  # the newest run timed without it: nothing is missing now
    merged = replicate.merge_figure({**figure, "runs": [figure["runs"][0], older]}, 0.95, 0.01, 132)
    assert merged["peers_missing"] == older["peers_missing"]


def test_a_wrong_peer_is_not_timed_and_recorded_as_missing_with_its_check(tmp_path: Path) -> None:
    argv = ("--sweep", "--sweep-shapes", "1024x1024x1024", "--peers", "--fake-fail-check", versions.TRITON)
    assert fake(tmp_path, *argv, processes=1) == 0  # a wrong kernel of ours stops the record (exit 3); a peer's not
    (sweep,) = results.load(tmp_path / "res" / "nvidia-h200.json")["sweep"]
    assert versions.TRITON not in sweep["rows"] and versions.QUACK in sweep["rows"]
    error = sweep["peers_missing"][versions.TRITON]["error"]
    assert error == f"CheckFailed: {versions.TRITON} is wrong at 1024x1024x1024: 17 elements outside tolerance " \
                    "(max |err| 7); not timed"  # fmt: skip
