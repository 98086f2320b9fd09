"""The benchmark's CPU-side behaviour: arguments, version discovery, statistics, recording, and refusing to run
without a Hopper GPU. The timing itself runs on the GPU (the lead's benchmark run)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import benchmark
from matmul_site import results
from conftest import EXAMPLES

FAKE_GPU = benchmark.Gpu(name="NVIDIA H200", sm_count=132, capability="9.0", memory_gb=140.4, smi_id=None)
SMALL_SHAPE = (256, 512, 128)


@pytest.fixture
def kernel_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A directory laid out like examples/hopper_matmul, with fake kernel files that import nothing."""
    directory = tmp_path / "kernels"
    directory.mkdir()
    (directory / "common.py").write_text(f"BENCH_SHAPE = {SMALL_SHAPE}\n")
    for n in (0, 4, 7):
        (directory / f"matmul_v{n}.py").write_text(f"# V{n}: fake technique {n}\n\nclass MatmulV{n}:\n    pass\n")
    monkeypatch.setattr(sys, "path", list(sys.path))  # load_kernel_class prepends the directory it loads from
    real = {name: module for name, module in sys.modules.items() if name == "common" or name.startswith("matmul_v")}
    yield directory
    # The fakes must not stand in for the real kernels in later tests of this session.
    for name in [n for n, m in sys.modules.items() if str(getattr(m, "__file__", "")).startswith(str(directory))]:
        del sys.modules[name]
    sys.modules.update(real)


@pytest.fixture
def no_gpu_probe(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Fails the test if anything asks for the GPU; returns the list of calls (stays empty)."""
    calls: list[str] = []

    def probe() -> benchmark.Gpu:
        calls.append("probe")
        raise AssertionError("the GPU was probed")

    monkeypatch.setattr(benchmark, "probe_hopper", probe)
    return calls


def run_main(argv: Sequence[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = benchmark.main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- arguments are checked before anything touches the GPU ---


def test_unknown_version_exits_2_naming_it_and_the_versions_that_exist(
    kernel_dir: Path, no_gpu_probe: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main(["--versions", "v0,v9", "--kernel-dir", str(kernel_dir)], capsys)
    assert code == 2
    assert "unknown version 'v9'" in err
    assert "found: v0, v4, v7" in err
    assert no_gpu_probe == []


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--repeats", "0"], "argument --repeats: must be a positive integer, got '0'"),
        (["--processes", "three"], "argument --processes: must be a positive integer, got 'three'"),
        (["--warmup", "-1"], "argument --warmup: must be an integer >= 0"),
        (["--timeout", "1.5"], "argument --timeout: must be a positive integer"),
        (["--versions", ","], "--versions needs at least one version"),
        (["--versions", "v0,v0"], "names a version twice"),
        (["--sweep-impls", "v0,triton"], "unknown sweep implementation 'triton'"),
        (["--sweep-shapes", "1024x1024"], "argument --sweep-shapes: bad shape '1024x1024': expected MxNxK"),
        (["--frobnicate"], "unrecognized arguments: --frobnicate"),
    ],
)
def test_bad_arguments_exit_2_with_a_message_and_no_gpu_probe(
    argv: list[str], message: str, kernel_dir: Path, no_gpu_probe: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main([*argv, "--kernel-dir", str(kernel_dir)], capsys)
    assert code == 2
    assert message in err
    assert no_gpu_probe == []


def test_out_pointing_at_a_directory_is_a_usage_error(
    kernel_dir: Path, tmp_path: Path, no_gpu_probe: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run_main(["--cublas", "--out", str(tmp_path), "--kernel-dir", str(kernel_dir)], capsys)
    assert code == 2
    assert "is a directory" in err


def test_a_version_file_without_its_class_is_a_usage_error(
    kernel_dir: Path, no_gpu_probe: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    (kernel_dir / "matmul_v7.py").write_text("class SomethingElse:\n    pass\n")
    code, _, err = run_main(["--versions", "v7", "--kernel-dir", str(kernel_dir)], capsys)
    assert code == 2
    assert "matmul_v7.py defines no class MatmulV7" in err


def test_the_cli_rejects_an_unknown_version_with_exit_code_2() -> None:
    script = EXAMPLES / "benchmark.py"
    proc = subprocess.run(
        [sys.executable, str(script), "--versions", "v999"], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 2
    assert "unknown version 'v999'" in proc.stderr


# --- versions by convention ---


def test_versions_are_the_matmul_v_n_files_in_numeric_order(tmp_path: Path) -> None:
    for name in ("matmul_v2.py", "matmul_v10.py", "matmul_v0.py", "matmul_v01.py", "matmul_vx.py", "matmul.py"):
        (tmp_path / name).write_text("")
    (tmp_path / "notes_v3.py").write_text("")
    assert benchmark.discover_versions(tmp_path) == ["v0", "v2", "v10"]


def test_every_real_kernel_file_defines_the_class_the_benchmark_looks_for() -> None:
    for version in benchmark.discover_versions():
        path = benchmark.kernel_file(version)
        assert benchmark.defines_class(path, benchmark.kernel_class_name(version)), f"{path.name}: no MatmulV<N>"


def test_a_version_loads_its_class_by_convention_and_reports_its_technique(kernel_dir: Path) -> None:
    cls = benchmark.load_kernel_class("v7", kernel_dir)
    assert cls.__name__ == "MatmulV7"
    assert benchmark.technique_of(cls) == "fake technique 7"


def test_the_benchmark_shape_is_read_from_common_without_importing_it() -> None:
    assert benchmark.bench_shape() == (8192, 8192, 8192)


# --- the plan ---


def plan_for(argv: list[str], kernel_dir: Path) -> benchmark.Plan:
    args = benchmark.build_parser().parse_args([*argv, "--kernel-dir", str(kernel_dir)])
    return benchmark.make_plan(args)


def test_no_selection_runs_every_version_cublas_and_the_sweep(kernel_dir: Path) -> None:
    plan = plan_for([], kernel_dir)
    assert plan.versions == ("v0", "v4", "v7")
    assert plan.cublas
    assert plan.sweep_impls == ("v4", benchmark.CUBLAS, benchmark.TORCH_COMPILE)  # v5, v6 do not exist here
    assert plan.shape == SMALL_SHAPE
    assert plan.processes == 3


def test_sweep_shapes_narrow_the_sweep_to_the_shapes_named(kernel_dir: Path) -> None:
    plan = plan_for(["--sweep-impls", "cublas", "--sweep-shapes", "1024x2048x512,8192x4096x4096"], kernel_dir)
    assert plan.sweep_shapes == ((1024, 2048, 512), (8192, 4096, 4096))
    assert plan_for(["--sweep-impls", "cublas"], kernel_dir).sweep_shapes == benchmark.SWEEP_SHAPES


def test_a_selection_runs_only_what_it_names(kernel_dir: Path) -> None:
    plan = plan_for(["--versions", "V4"], kernel_dir)
    assert (plan.versions, plan.cublas, plan.sweep_impls) == (("v4",), False, ())
    plan = plan_for(["--sweep-impls", "cublas"], kernel_dir)
    assert (plan.versions, plan.cublas, plan.sweep_impls) == ((), False, ("cublas",))
    plan = plan_for(["--versions", "all", "--cublas"], kernel_dir)
    assert (plan.versions, plan.cublas, plan.sweep_impls) == (("v0", "v4", "v7"), True, ())


def test_sweep_shapes_hold_the_squares_and_the_llm_shapes() -> None:
    squares = [s for s in benchmark.SWEEP_SHAPES if s[0] == s[1] == s[2]]
    assert [s[0] for s in squares] == [1024, 2048, 4096, 8192, 16384]
    llm = {s for s in benchmark.SWEEP_SHAPES if s not in squares}
    assert llm == {(8192, 4096, 4096), (8192, 14336, 4096), (8192, 4096, 14336)}


def test_dry_run_prints_the_plan_without_a_gpu(
    kernel_dir: Path, tmp_path: Path, no_gpu_probe: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out.json"
    code, text, _ = run_main(["--dry-run", "--versions", "v0,v7", "--sweep", "--out", str(out),
                              "--kernel-dir", str(kernel_dir)], capsys)  # fmt: skip
    assert code == 0
    assert "versions: v0, v7" in text
    assert "256x512x128" in text
    assert "3 fresh processes" in text
    assert "16384x16384x16384" in text and "8192x14336x4096" in text
    assert str(out) in text
    assert not out.exists()
    assert no_gpu_probe == []


# --- statistics and entries ---


def test_the_recorded_latency_is_the_median_of_the_process_medians() -> None:
    assert benchmark.median_of_medians([3.0, 1.0, 2.0]) == 2.0
    assert benchmark.median_of_medians([1.0, 5.0, 1.1]) == 1.1  # one slow process does not move it
    assert benchmark.median_index([3.0, 1.0, 2.0]) == 2
    with pytest.raises(ValueError):
        benchmark.median_of_medians([])


def test_an_entry_takes_medians_of_ours_and_cublas_and_the_median_process_config() -> None:
    runs = [
        {"latency_ms": 3.0, "cublas_latency_ms": 1.50, "config": {"block_k": 32}, "technique": "TMA + WGMMA"},
        {"latency_ms": 2.0, "cublas_latency_ms": 1.48, "config": {"block_k": 64}, "technique": "TMA + WGMMA"},
        {"latency_ms": 2.5, "cublas_latency_ms": 1.52, "config": {"block_k": 128}, "technique": "TMA + WGMMA"},
    ]
    entry = benchmark.make_entry("v1", (8192, 8192, 8192), runs, None, "2026-11-30", "abc1234")
    assert entry["latency_ms"] == 2.5
    assert entry["cublas_latency_ms"] == 1.50
    assert entry["fraction_of_cublas"] == pytest.approx(1.50 / 2.5)
    assert entry["process_latencies_ms"] == [3.0, 2.0, 2.5]
    assert entry["config"] == {"block_k": 128}
    assert entry["tflops"] == pytest.approx(2 * 8192**3 / 2.5e-3 / 1e12)
    assert entry["technique"] == "TMA + WGMMA"


def test_the_cublas_entry_is_its_own_reference() -> None:
    runs = [{"latency_ms": ms, "config": {}} for ms in (1.5, 1.4, 1.6)]
    entry = benchmark.make_entry("cublas", (8192, 8192, 8192), runs, None, "2026-11-30", "abc1234")
    assert entry["fraction_of_cublas"] == 1.0
    assert "cublas_latency_ms" not in entry
    assert entry["technique"] == benchmark.CUBLAS_TECHNIQUE


def test_published_peak_is_known_for_listed_gpus_and_null_otherwise() -> None:
    h200 = benchmark.gpu_record(FAKE_GPU, [])
    assert h200["published_dense_fp16_tflops"] == 989.4
    assert h200["published_source"].startswith("https://")
    other = benchmark.gpu_record(benchmark.Gpu("NVIDIA H200 NVL", 132, "9.0", 140.4, None), [])
    assert other["published_dense_fp16_tflops"] is None and other["published_source"] is None


def test_git_commit_is_unknown_outside_a_repository(tmp_path: Path) -> None:
    assert benchmark.git_commit(tmp_path) == "unknown"


# --- ncu output ---

_GMMA, _HMMA = (f"sm__pipe_tensor_op_{op}_cycles_active.avg.pct_of_peak_sustained_active" for op in ("gmma", "hmma"))
_DRAM = "dram__throughput.avg.pct_of_peak_sustained_elapsed"
NCU_CSV = f"""==PROF== Connected to process 123
"ID","Process ID","Process Name","Kernel Name","{_DRAM}","{_GMMA}","{_HMMA}"
"","","","","%","%","%"
"0","123","python","matmul_v1_kernel","21.75","1,041.5","0"
"""


def test_ncu_csv_gives_the_first_kernel_s_metrics() -> None:
    values = benchmark.parse_ncu_csv(NCU_CSV, benchmark.ncu_metric_names())
    assert values["dram__throughput.avg.pct_of_peak_sustained_elapsed"] == 21.75
    assert values["sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"] == 1041.5
    assert benchmark.parse_ncu_csv("==ERROR== ERR_NVGPUCTRPERM", benchmark.ncu_metric_names()) == {}


def test_tensor_pipe_counter_is_the_busier_of_wgmma_and_mma_sync() -> None:
    gmma, hmma = benchmark.NCU_METRICS["tensor_pipe_pct"]
    (dram,) = benchmark.NCU_METRICS["dram_throughput_pct"]
    counters = benchmark.counters_from_metrics({gmma: 0.0, hmma: 38.5, dram: 20.0})
    assert counters is not None
    assert (counters["tensor_pipe_pct"], counters["dram_throughput_pct"]) == (38.5, 20.0)
    assert benchmark.counters_from_metrics({}) is None


def test_worker_output_yields_the_result_line_and_passes_the_rest_on(capsys: pytest.CaptureFixture[str]) -> None:
    stdout = "tuning...\n" + benchmark.RESULT_PREFIX + json.dumps({"impl": "v1", "rows": []}) + "\n"
    assert benchmark.parse_worker_output(stdout) == {"impl": "v1", "rows": []}
    assert "tuning..." in capsys.readouterr().err
    assert benchmark.parse_worker_output("no result\n") is None


# --- no Hopper GPU: refuse, explain, touch nothing ---


def test_without_a_hopper_gpu_it_exits_non_zero_and_leaves_the_results_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("torch")
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    out = tmp_path / "nvidia-h200.json"
    out.write_text('{"kept": true}\n')
    code, _, err = run_main(["--cublas", "--no-ncu", "--out", str(out)], capsys)
    assert code == 1
    assert "no CUDA GPU is visible" in err and "Hopper" in err
    assert f"{out} is unchanged" in err
    assert out.read_text() == '{"kept": true}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nvidia-h200.json"]


# --- a whole run with fake workers ---


def fake_worker(failing: set[str] = frozenset()) -> Any:  # type: ignore[assignment]
    """Stands in for run_worker: canned measurements per implementation; `failing` ones raise WorkerError."""

    def run(cmd: Sequence[str], timeout_s: float) -> dict[str, Any]:
        impl = cmd[cmd.index("--impl") + 1]
        if impl in failing:
            raise benchmark.WorkerError("wrong result at 256x512x128")
        shapes = benchmark.parse_shapes(cmd[cmd.index("--shapes") + 1])
        base = {"v0": 3.0, "v4": 1.6, "v7": 2.0, "cublas": 1.5, benchmark.TORCH_COMPILE: 1.55}[impl]
        rows = [{"m": m, "n": n, "k": k, "latency_ms": base * m * n * k / 8192**3, "config": {"block_m": 128},
                 "cublas_latency_ms": 1.5 * m * n * k / 8192**3} for m, n, k in shapes]  # fmt: skip
        return {"impl": impl, "rows": rows, "technique": f"technique of {impl}"}

    return run


@pytest.fixture
def fake_machine(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(benchmark, "probe_hopper", lambda: FAKE_GPU)
    monkeypatch.setattr(benchmark, "software_record", lambda: {"cuda": "13.0", "torch": "2.11.0+cu130",
                                                               "tilus": "0.2.0", "python": "3.12.3"})  # fmt: skip
    monkeypatch.setattr(benchmark, "nvidia_smi", lambda fields, smi_id: None)


def test_a_run_records_entries_and_sweep_rows_into_a_valid_file(
    kernel_dir: Path, tmp_path: Path, fake_machine: None, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    monkeypatch.setattr(benchmark, "run_worker", fake_worker())
    out = tmp_path / "nvidia-h200.json"
    argv = ["--versions", "v0,v7", "--cublas", "--sweep-impls", "v4,cublas", "--no-ncu", "--git-commit", "f00d",
            "--out", str(out), "--kernel-dir", str(kernel_dir)]  # fmt: skip
    code, table, _ = run_main(argv, capsys)
    assert code == 0
    data = results.load(out)
    assert sorted(data["entries"]) == ["cublas", "v0", "v7"]
    v0 = data["entries"]["v0"]
    assert v0["latency_ms"] == pytest.approx(3.0 * 256 * 512 * 128 / 8192**3)
    assert v0["fraction_of_cublas"] == pytest.approx(0.5)
    assert v0["git_commit"] == "f00d" and v0["counters"] is None and v0["technique"] == "technique of v0"
    assert data["problem"] == {"m": 256, "n": 512, "k": 128, "dtype": "float16", "accumulate": "float32"}
    assert data["gpu"]["published_dense_fp16_tflops"] == 989.4
    assert {(r["impl"], r["m"], r["n"], r["k"]) for r in data["sweep"]} == {
        (impl, *shape) for impl in ("v4", "cublas") for shape in benchmark.SWEEP_SHAPES
    }
    assert "v0" in table and "v7" in table and "cublas" in table and "16384x16384x16384" in table


def test_a_failing_version_is_not_recorded_and_the_others_are_kept(
    kernel_dir: Path, tmp_path: Path, fake_machine: None, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    out = tmp_path / "nvidia-h200.json"
    common_args = ["--no-ncu", "--out", str(out), "--kernel-dir", str(kernel_dir)]
    monkeypatch.setattr(benchmark, "run_worker", fake_worker())
    assert run_main(["--versions", "v0,v7", *common_args], capsys)[0] == 0
    first = results.load(out)

    monkeypatch.setattr(benchmark, "run_worker", fake_worker(failing={"v7"}))
    code, _, err = run_main(["--versions", "v0,v7", *common_args], capsys)
    assert code == 1
    assert "wrong result" in err and "not recorded: v7" in err
    data = results.load(out)
    assert data["entries"]["v7"] == first["entries"]["v7"]  # the earlier measurement stays


def test_a_corrupt_results_file_stops_the_run_before_measuring(
    kernel_dir: Path, tmp_path: Path, fake_machine: None, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    def must_not_run(cmd: Sequence[str], timeout_s: float) -> dict[str, Any]:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(benchmark, "run_worker", must_not_run)
    out = tmp_path / "nvidia-h200.json"
    out.write_text('{"schema": 1')
    code, _, err = run_main(["--cublas", "--no-ncu", "--out", str(out), "--kernel-dir", str(kernel_dir)], capsys)
    assert code == 1
    assert "nvidia-h200.json: not valid JSON" in err
    assert out.read_text() == '{"schema": 1'


# --- the worker protocol, with stand-in processes ---


def python_printing(*lines: str, exit_code: int = 0, sleep_s: float = 0.0) -> list[str]:
    code = f"import sys, time\ntime.sleep({sleep_s})\nprint(*{list(lines)!r}, sep='\\n')\nsys.exit({exit_code})"
    return [sys.executable, "-c", code]


def result_line(payload: dict[str, Any]) -> str:
    return benchmark.RESULT_PREFIX + json.dumps(payload)


def test_run_worker_returns_the_payload_of_a_real_process() -> None:
    payload = {"impl": "v1", "rows": [{"m": 1, "n": 1, "k": 8, "latency_ms": 0.01}]}
    assert benchmark.run_worker(python_printing("noise", result_line(payload)), timeout_s=60) == payload


def test_run_worker_keeps_rows_of_a_worker_that_reports_a_wrong_result() -> None:
    payload = {"impl": "v6", "rows": [{"m": 1, "n": 1, "k": 8, "error": "wrong result"}]}
    cmd = python_printing(result_line(payload), exit_code=benchmark.WRONG_RESULT_EXIT)
    assert benchmark.run_worker(cmd, timeout_s=60)["rows"][0]["error"] == "wrong result"


@pytest.mark.parametrize(
    ("cmd", "message"),
    [
        (python_printing(result_line({"error": "ImportError: no tilus"}), exit_code=1), "ImportError: no tilus"),
        (python_printing("Segmentation fault", exit_code=139), "exited with code 139 and printed no result"),
        (python_printing(result_line({"rows": []}), exit_code=1), "exited with code 1"),
        (python_printing("never", sleep_s=30), "no result after 1 s (killed)"),
    ],
)
def test_run_worker_turns_failures_into_worker_errors(cmd: list[str], message: str) -> None:
    with pytest.raises(benchmark.WorkerError, match=re.escape(message)):
        benchmark.run_worker(cmd, timeout_s=1 if "sleep(30" in cmd[-1] else 60)


def test_worker_main_prints_one_result_line_and_exits_3_on_a_wrong_result(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    impl = benchmark.Impl(kernel=print, timed=print, config=dict, technique="fake")
    monkeypatch.setattr(benchmark, "make_impl", lambda name, kernel_dir: impl)

    def measure(impl: Any, shape: Any, tag: str, warmup: int, repeats: int, with_cublas: bool) -> dict[str, Any]:
        print("library chatter on stdout")
        m, n, k = shape
        return {"m": m, "n": n, "k": k, "error": "wrong"} if m == 64 else {"m": m, "n": n, "k": k, "latency_ms": 1.0}

    monkeypatch.setattr(benchmark, "measure_shape", measure)
    code = benchmark.main(["--worker", "--impl", "v9", "--shapes", "32x32x32,64x64x64"])
    out = capsys.readouterr().out
    assert code == benchmark.WRONG_RESULT_EXIT
    assert out.count("\n") == 1 and out.startswith(benchmark.RESULT_PREFIX)
    payload = json.loads(out[len(benchmark.RESULT_PREFIX) :])
    assert [row.get("error") for row in payload["rows"]] == [None, "wrong"]
    assert payload["technique"] == "fake"


def test_a_results_file_of_another_problem_size_stops_the_run_before_measuring(
    kernel_dir: Path, tmp_path: Path, fake_machine: None, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    from test_results import make_data  # a valid file measured at 8192^3; the fake kernel dir benchmarks 256x512x128

    def must_not_run(cmd: Sequence[str], timeout_s: float) -> dict[str, Any]:
        raise AssertionError("a worker was started")

    monkeypatch.setattr(benchmark, "run_worker", must_not_run)
    out = tmp_path / "nvidia-h200.json"
    results.write_atomic(out, make_data())
    before = out.read_bytes()
    code, _, err = run_main(["--cublas", "--no-ncu", "--out", str(out), "--kernel-dir", str(kernel_dir)], capsys)
    assert code == 1
    assert "rerun every entry into a new file" in err
    assert out.read_bytes() == before
