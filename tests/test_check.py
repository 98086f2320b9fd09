"""``python -m matmul_bench check NAME`` on the CPU: its command line, what each check builds and times and in which
order, and the logs it writes from the fake GPU's timings, read back by the readers the site and the tests use."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import fake_gpu
import pytest
import v8_checks

from matmul_bench import checks, cli, jobs, kernels
from matmul_bench.checks import core, correctness, menus
from matmul_data import field, paths
from matmul_data.check_log import CheckLog
from matmul_site import v9_check

TILES = ("128x256", "256x128", "128x192", "128x128", "192x192")  # tile_model.CANDIDATES, in order


def run(*argv: str, **fake: Any) -> int:
    """``check`` on the fake GPU (``fake``: its fail_check and fail_build)."""
    with fake_gpu.on_child_path():  # the workers import the fake from tests/
        return checks.main(list(argv), core.Target(fake_gpu.BACKEND, fake))


def dry_run(*argv: str) -> core.Work:
    """The work a check's command line asks for (what --dry-run prints)."""
    args = checks.build_parser().parse_args(list(argv))
    return checks.CHECKS[args.name][3](args)


# --- the command line


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["no-such-check"], "invalid choice"),
        (["v8-menu", "--shapes", "4096x4096"], "give a shape as MxNxK"),
        (["v9-menu", "--shapes", "0x4096x4096"], "must be positive"),
        (["v9-menu", "--extra", "v9-999x999-b"], "unknown configuration v9-999x999-b"),
        (["v9-menu", "--check", "v9-128x256-q"], "unknown configuration v9-128x256-q"),
        (["v9-menu", "--menu", "--check", "v9-128x256-q"], "unknown configuration v9-128x256-q"),
    ],
)
def test_bad_usage_exits_2_with_the_reason_and_starts_no_worker(argv: list[str], message: str, monkeypatch,
                                                                capsys) -> None:  # fmt: skip
    monkeypatch.setattr(jobs, "call_worker", lambda *a, **k: pytest.fail("a worker was started"))
    assert cli.main(["check", *argv]) == 2
    assert message in capsys.readouterr().err


def test_every_check_is_listed_and_its_help_runs_without_torch_or_tilus() -> None:
    script = """
import sys
for module in ("torch", "tilus", "numpy", "tvm_ffi"):
    sys.modules[module] = None  # any import of them now raises ImportError
from matmul_bench import checks, cli
for name in checks.CHECKS:
    assert cli.main(["check", name, "--help"]) == 0, name
assert cli.main(["check", "clusters", "--dry-run"]) == 0
"""
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert all(f"usage: python -m matmul_bench check {name}" in done.stdout for name in checks.CHECKS)


def test_a_dry_run_prints_the_work_in_order_and_runs_nothing(monkeypatch, capsys) -> None:
    monkeypatch.setattr(jobs, "call_worker", lambda *a, **k: pytest.fail("a worker was started"))
    assert cli.main(["check", "v8-menu", "--shapes", "2048x2048x2048", "--dry-run"]) == 0
    printed = capsys.readouterr().out.splitlines()
    builds = [line.split()[:2] for line in printed if line.startswith("  ") and "MatmulV" in line]
    assert builds == [[tile, shape] for tile in TILES for shape in ("2048x2048x2048", "129x257x64", "1000x3000x520")]
    assert printed[-2].split() == ["2048x2048x2048", *(f"{t}," for t in TILES), "cuBLAS"]  # V7: 8192^3 only
    assert printed[-1] == "(dry run: nothing is built, checked or timed)"


# --- what each check builds and times


def test_v8_menu_checks_every_tile_at_the_timed_and_ragged_shapes_and_v7_only_at_8192() -> None:
    work = dry_run("v8-menu", "--shapes", "8192x8192x8192", "3000x5000x4096")
    built = [(spec.name, tuple(spec.shapes[0])) for spec in work.builds]
    shapes = [(8192, 8192, 8192), (3000, 5000, 4096), *menus.V8_CHECK_ONLY]
    assert built == [*((tile, s) for tile in TILES for s in shapes), ("V7", (8192, 8192, 8192))]
    assert all(spec.check and len(spec.shapes) == 1 for spec in work.builds)  # one (impl, shape) per worker
    assert [[i.name for i in run.impls] for run in work.runs] == [[*TILES, "V7", "cuBLAS"], [*TILES, "cuBLAS"]]
    assert work.settings is not None and (work.settings.rounds, work.settings.repeats) == (8, 10)


def test_v9_menu_times_v8_v9_and_the_extras_and_checks_the_extras_at_the_common_check_shapes() -> None:
    work = dry_run("v9-menu", "--extra", "v9-128x256-b", "--shapes", "4096x4096x4096")
    assert [run.shape for run in work.runs] == [(4096, 4096, 4096)]
    assert [i.name for i in work.runs[0].impls] == ["V8", "V9", "v9-128x256-b", "cuBLAS"]
    extra = [tuple(spec.shapes[0]) for spec in work.builds if spec.name == "v9-128x256-b"]
    assert set(extra) == {*kernels.load("common").CHECK_SHAPES, (4096, 4096, 4096)}
    assert work.builds[2].config == {"block_m": 128, "block_n": 256, "consumers": 2, "num_stages": 3,
                                        "block_k": 64, "swizzle_size": 8, "share": "b"}  # fmt: skip
    assert work.build_timeout_s == 300  # --build-timeout's default: a hang ends


def test_v9_menu_fitted_times_the_field_set_s_fitted_half() -> None:
    work = dry_run("v9-menu", "--fitted", "--menu", "--tiles", "128x256", "--check")
    fitted = [f.shape for f in field.half(field.FITTED)]
    assert [run.shape for run in work.runs] == fitted
    assert [i.name for i in work.runs[0].impls] == ["V8", "V9", "v9-128x256-none", "v9-128x256-b", "v9-128x256-a",
                                                    "cuBLAS"]  # fmt: skip


def test_stream_k_checks_each_shape_twice_on_fresh_inputs_with_the_tail_split() -> None:
    work = dry_run("stream-k")
    assert [(tuple(s.shapes[0]), s.seed) for s in work.builds] == [
        (shape, seed) for shape in correctness.STREAM_K_SHAPES for seed in (1, 2)]  # fmt: skip
    assert all((s.config or {})["stream_k"] and s.cls == "MatmulV7StreamK" for s in work.builds) and not work.runs


def test_the_sanitizer_checks_build_in_this_process_so_that_a_sanitizer_sees_the_kernels(monkeypatch,
                                                                                        capsys) -> None:  # fmt: skip
    monkeypatch.setattr(jobs, "call_worker", lambda *a, **k: pytest.fail("a worker was started"))
    assert run("sanitize") == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[:2] for line in lines] == [[t, f"{m}x{n}x{k}:"] for t in TILES
                                                    for m, n, k in correctness.SANITIZE_SHAPES]  # fmt: skip
    assert run("sanitize", fail_check="192x192") == 3
    assert "192x192 1000x3000x520: max |err| 7.00e+00, 17 bad" in capsys.readouterr().out
    assert run("v9-menu", "--sanitize", "--extra", "v9-128x192-b", "v9-256x128-a") == 0
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()] == [
        f"{name}" for name in ("v9-128x192-b", "v9-256x128-a") for _ in menus.V9_SANITIZE_SHAPES]  # fmt: skip


# --- the checks run on the fake GPU, and their logs


def test_shapes_checks_each_file_at_each_shape_in_order_and_a_wrong_one_exits_3(tmp_path: Path, capsys) -> None:
    files = [str(paths.KERNEL_DIR / f"matmul_{v}.py") for v in ("v1", "v2")]
    argv = ("shapes", "--files", *files, "--shapes", "1000x3000x520", "129x257x64", "--jobs", "2")
    assert run(*argv) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split(": ")[:2] for line in lines[:-1]] == [
        [f"matmul_{v}", shape] for v in ("v1", "v2") for shape in ("1000x3000x520", "129x257x64")]  # fmt: skip
    assert lines[-1] == "4 checks, 0 failed"
    assert run(*argv, fail_check="matmul_v2") == 3
    assert capsys.readouterr().out.splitlines()[-1] == "4 checks, 2 failed"


def test_v8_menu_logs_every_check_and_each_round_s_median_as_v8_checks_reads_them(tmp_path: Path, monkeypatch) -> None:
    log = tmp_path / "plots" / "results" / "logs" / "v8-check-fake.json"
    shapes = ("8192x8192x8192", "3000x5000x4096")
    argv = ("v8-menu", "--shapes", *shapes, "--rounds", "3", "--warmup-s", "0", "--jobs", "2", "--json", str(log))
    assert run(*argv, fail_check="128x192") == 3  # a wrong tile fails the check, is not timed, and is logged
    written = json.loads(log.read_text())
    assert (written["gpu"], written["num_sms"]) == (fake_gpu.FAKE_DEVICE["name"], 132)
    failed = {(c["impl"], tuple(c["shape"])) for c in written["checks"] if not c["ok"]}
    assert failed == {("128x192", s) for s in [(8192, 8192, 8192), (3000, 5000, 4096), *menus.V8_CHECK_ONLY]}
    timed = [t for t in TILES if t != "128x192"]
    assert [list(t["ms"]) for t in written["timings"]] == [[*timed, "V7", "cuBLAS"], [*timed, "cuBLAS"]]
    monkeypatch.setattr(paths, "ROOT", tmp_path)
    medians = v8_checks.medians((log.name,))
    assert set(medians) == {(8192, 8192, 8192), (3000, 5000, 4096)}
    assert medians[3000, 5000, 4096][log.name]["cuBLAS"] == pytest.approx(1.6 * 3000 * 5000 * 4096 / 8192**3, rel=0.1)
    assert all(len(ms) == 3 for t in written["timings"] for ms in t["ms"].values())  # one median per round


def test_v9_menu_writes_the_log_the_v9_page_reads(tmp_path: Path) -> None:
    log = tmp_path / "v9-check.json"
    argv = ("v9-menu", "--menu", "--tiles", "128x256", "--check", "--shapes", "4096x4096x4096", "--rounds", "2",
            "--warmup-s", "0", "--jobs", "2", "--json", str(log))  # fmt: skip
    assert run(*argv) == 0
    written = json.loads(log.read_text())
    assert written["gpu"] == fake_gpu.FAKE_DEVICE["name"] and len(written["checks"]) == 5
    assert all(c["label"].startswith(("matmul_v8 ", "matmul_v9 ")) and c["report"] for c in written["checks"])
    (shape,) = v9_check.checked(CheckLog.from_json(written))  # the log decodes as the page's model
    assert shape.shape == (4096, 4096, 4096) and shape.menu == ["v9-128x256-none", "v9-128x256-b", "v9-128x256-a"]
    assert shape.configs["v9-128x256-b"]["share"] == "b" and "cuBLAS" not in shape.configs
    assert shape.to_cublas("v9-128x256-b") > 0 and shape.best() in shape.menu


def test_a_failed_build_is_reported_and_its_implementation_left_out_of_the_timing(tmp_path: Path, capsys) -> None:
    log = tmp_path / "v9.json"
    argv = ("v9-menu", "--extra", "v9-128x256-b", "--check", "--shapes", "4096x4096x4096", "--rounds", "2",
            "--warmup-s", "0", "--jobs", "2", "--json", str(log))  # fmt: skip
    assert run(*argv, fail_build="v9-128x256-b") == 3
    assert "the fake's failed build" in capsys.readouterr().out
    assert list(json.loads(log.read_text())["timings"][0]["ms"]) == ["V8", "V9", "cuBLAS"]


def test_without_a_gpu_a_check_says_so_in_one_line_and_exits_1(tmp_path: Path) -> None:
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "PYTHONPATH": str(paths.SRC_DIR)}
    done = subprocess.run([sys.executable, "-m", "matmul_bench", "check", "shapes", "--shapes", "128x128x64"],
                          capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("python -m matmul_bench check shapes: no CUDA GPU")
