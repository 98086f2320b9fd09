"""Valid schema-3 results for test fixtures: provenance, runs, and a whole file (``fake_file()``).

Every derived number follows from what it is derived from, as the benchmark computes it (TFLOPS from
latency, ratios from paired samples through :func:`matmul_data.stats.interval`), so the data passes
:func:`matmul_data.results.validate`. The numbers are made up; nothing here was measured.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from matmul_data import model, results, stats, versions

TUNED = {v.name: v.tuned for v in versions.all_versions()}

GPU = "NVIDIA H200"
BENCH_SHAPE = (8192, 8192, 8192)
RUN_ID = "2026-12-01T100000Z"
DATE = "2026-12-01"
COMMIT = "abc1234"

# Made-up latencies at 8192^3 (ms): the ladder climbs towards cuBLAS, as the real one does.
LADDER_MS: dict[str, float] = {
    "v0": 3.54,
    "v1": 1.97,
    "v2": 1.92,
    "v3": 1.90,
    "v4": 1.65,
    "v5": 1.70,
    "v6": 1.55,
    "v7": 1.50,
    "cublas": 1.47,
}
LADDER_CONFIGS: dict[str, dict[str, Any]] = {**TUNED, "cublas": {}}  # the configurations the benchmark pins
STEPS_TITLE = "tile order at swizzle 16 and beyond, and clusters with TMA multicast"
SWEEP_SHAPES: tuple[tuple[int, int, int], ...] = ((2048, 2048, 2048), (4096, 4096, 4096), (8192, 14336, 4096))


def provenance(gpu_name: str = GPU, shape: tuple[int, int, int] = BENCH_SHAPE) -> dict[str, Any]:
    """Everything of a valid results file but its runs (ladder, sweep, steps), as the benchmark writes it."""
    return {
        "schema": results.SCHEMA_VERSION,
        "gpu": {
            "name": gpu_name,
            "sm_count": 132,
            "compute_capability": "9.0",
            "memory_gb": 139.8,
            "driver": "580.159.04",
            "clocks_mhz": {"sm_max": 1980, "mem_max": 3201},
            "power_limit_w": 700.0,
            "published_dense_fp16_tflops": 989.4,
            "published_source": "https://www.nvidia.com/en-us/data-center/h200/",
        },
        "software": {"cuda": "13.0", "torch": "2.11.0+cu130", "tilus": "0.2.0", "python": "3.12.3"},
        "method": {
            "timer": "CUDA events around each call",
            "warmup": 5,
            "repeats": 30,
            "statistic": "median of every per-round median (each round: the median of the repeats)",
            "interval": "95% bootstrap over processes, then rounds, of the median paired ratio",
            "l2_flush": "512 MiB zero-fill before each timed call",
            "order": "rounds alternate forward and reversed order; cuBLAS in every run",
            "clocks": "NVML SM clock and power sampled only while a row's timed window is open",
        },
        "problem": {"m": shape[0], "n": shape[1], "k": shape[2], "dtype": "float16", "accumulate": "float32"},
    }


def _samples(ms: float, processes: int, rounds: int, offset: int) -> list[list[float]]:
    """Per process, per round latencies around ``ms``: a deterministic wobble (1%) standing in for the clock."""
    return [
        [ms * (1.0 + 0.01 * (((p * 7 + r * 3 + offset) % 5) - 2) / 2) for r in range(rounds)] for p in range(processes)
    ]


def fake_run(
    shape: tuple[int, int, int],
    latencies_ms: Mapping[str, float],
    *,
    configs: Mapping[str, dict[str, Any]] | None = None,
    titles: Mapping[str, str] | None = None,
    step_over: Mapping[str, str] | None = None,
    kept: Mapping[str, bool] | None = None,
    counters: Mapping[str, dict[str, Any] | None] | None = None,
    processes: int = 3,
    rounds: int = 10,
    run_id: str = RUN_ID,
) -> dict[str, Any]:
    """One run whose rows follow from made-up paired samples; ``latencies_ms`` must include "cublas"."""
    if results.CUBLAS not in latencies_ms:
        raise ValueError("a run needs a cublas row: every ratio is paired with it")
    m, n, k = shape
    samples = {impl: _samples(ms, processes, rounds, i) for i, (impl, ms) in enumerate(latencies_ms.items())}
    rows: dict[str, Any] = {}
    for impl in latencies_ms:
        pooled = [x for per_process in samples[impl] for x in per_process]
        latency = sorted(pooled)[len(pooled) // 2]
        ratio = [stats.paired_ratios(c, s) for c, s in zip(samples[results.CUBLAS], samples[impl], strict=True)]
        row: dict[str, Any] = {
            "latency_ms": latency,
            "tflops": results.tflops(m, n, k, latency),
            "ratio_to_cublas": stats.interval(ratio),
            "sm_clock_mhz": 1755.0,
            "power_w": 690.0,
            "config": dict((configs or {}).get(impl, {})),
            "title": (titles or {}).get(impl) or versions.label(impl),
        }
        over = (step_over or {}).get(impl)
        if over is not None:
            paired = [stats.paired_ratios(o, s) for o, s in zip(samples[over], samples[impl], strict=True)]
            row["step"] = {"over": over, **stats.interval(paired)}
        if counters is not None:
            row["counters"] = counters.get(impl)
        if kept is not None and impl != results.CUBLAS:
            row["kept"] = bool(kept.get(impl, False))
        rows[impl] = row
    return {
        "run_id": run_id,
        "date": DATE,
        "git_commit": COMMIT,
        "shape": {"m": m, "n": n, "k": k},
        "rounds": rounds,
        "processes": processes,
        "warmup": 5,
        "repeats": 30,
        "rows": rows,
    }


def figure(run: dict[str, Any]) -> dict[str, Any]:
    """A figure of one run: its rows are that run's (a single run without per-round samples merges to itself)."""
    return run | {"runs": [copy.deepcopy(run)]}


def fake_ladder(names: Sequence[str] | None = None) -> dict[str, Any]:
    """The ladder at 8192^3: the given versions (each stepped over the one before) and cuBLAS, with counters."""
    names = versions.names() if names is None else tuple(names)
    latencies = {name: LADDER_MS.get(name, 1.6) for name in names} | {"cublas": LADDER_MS["cublas"]}
    titles = {name: versions.title(name) for name in names if name in versions.names()}
    step_over = {later: earlier for earlier, later in zip(names, names[1:], strict=False)}
    counters = {  # as matmul_bench.ncu records them: two summary numbers and the raw metrics they came from
        impl: {"tensor_pipe_pct": 40.0 + 5.0 * i, "dram_throughput_pct": 20.0, "ncu_metrics": {"x.pct": 20.0}}
        for i, impl in enumerate(latencies)
    }
    return figure(
        fake_run(BENCH_SHAPE, latencies, configs=LADDER_CONFIGS, titles=titles, step_over=step_over, counters=counters)
    )


def fake_sweep(shapes: Sequence[tuple[int, int, int]] = SWEEP_SHAPES, peers: bool = True) -> list[dict[str, Any]]:
    """One run per shape with the last three versions and cuBLAS; then, ``peers``, one more at the first shape that
    times torch.compile too (record --peers: a rotation of its own, beside the other)."""
    runs = []
    swept = versions.names()[-3:]  # as the benchmark's sweep
    titles = {name: versions.title(name) for name in swept}
    for shape in shapes:
        scale = shape[0] * shape[1] * shape[2] / 8192**3
        latencies = {impl: LADDER_MS.get(impl, 1.6) * scale for impl in (*swept, "cublas")}
        runs.append(figure(fake_run(shape, latencies, configs=LADDER_CONFIGS, titles=titles)))
    if peers and shapes:
        scale = math.prod(shapes[0]) / 8192**3
        latencies = {impl: LADDER_MS.get(impl, 1.6) * scale * 1.01 for impl in (*swept, "cublas")}
        latencies[versions.TORCH_COMPILE] = LADDER_MS["cublas"] * scale * 1.05
        runs.append(figure(fake_run(shapes[0], latencies, configs=LADDER_CONFIGS, titles=titles)))
    return runs


def fake_steps() -> list[dict[str, Any]]:
    """One steps run after V6: a baseline, a kept change and a change that was not kept, each over the baseline."""
    latencies = {"v6-rows": 1.62, "v6-rows-sw16": 1.55, "v6-chunks": 1.60, "cublas": 1.47}
    titles = {
        "v6-rows": "V6 before its steps (row-major tile order)",
        "v6-rows-sw16": "swizzle groups of 16 tile rows: V6 now",
        "v6-chunks": "swizzled 64-column chunks of C: no bank conflicts",
    }
    step_over = {"v6-rows-sw16": "v6-rows", "v6-chunks": "v6-rows"}
    kept = {"v6-rows-sw16": True}
    run = fake_run(BENCH_SHAPE, latencies, titles=titles, step_over=step_over, kept=kept, processes=1, rounds=15)
    # The title of the recorded run that holds v6-rows-sw16, which V6's Try it quotes (specs/tryit.py RECORDED).
    return [figure(run | {"after": "v6", "title": STEPS_TITLE})]


@cache
def _fake_runs() -> dict[str, Any]:
    return {"ladder": fake_ladder(), "sweep": fake_sweep(), "steps": fake_steps()}  # about a second of bootstraps


def fake_file(gpu_name: str = GPU) -> dict[str, Any]:
    """A complete, valid schema-3 results file: ladder v0..v6 + cuBLAS, 3 sweep shapes, 1 steps run (a fresh copy)."""
    data = provenance(gpu_name) | copy.deepcopy(_fake_runs())
    results.validate(data)
    return data


def _tryit(version: str, name: str, outcome: str, checks: list[tuple[tuple[int, int, int], int, int]], **extra: Any):
    """One try-it edit's record; ``checks`` are (shape, bad, nonfinite) as the runner records them."""
    return {
        "version": version,
        "name": name,
        "title": f"{name} (made up)",
        "file": f"examples/hopper_matmul/matmul_{version}.py",
        "edits": [["old text", "new text"]],
        "config": dict(TUNED[version]),
        "outcome": outcome,
        "checks": [
            {
                "shape": {"m": s[0], "n": s[1], "k": s[2]},
                "bad": bad,
                "nonfinite": nonfinite,
                "max_abs_err": 0.0009 if not bad else 3.5,
            }
            for s, bad, nonfinite in checks
        ],  # fmt: skip
        "error": None,
        "timeout_s": None,
        "run_id": RUN_ID,
        "date": DATE,
        "git_commit": COMMIT,
    } | extra


def fake_tryit() -> list[dict[str, Any]]:
    """Made-up outcomes of try-it edits, one of each kind (exact, wrong, hangs, does not build)."""
    big, ragged = (8192, 8192, 8192), (1000, 8192, 8192)
    return [
        _tryit("v5", "release-before-wait", "exact", [(big, 0, 0), (big, 0, 0), (ragged, 0, 0)]),
        _tryit("v6", "no-sync-after-store", "wrong", [(big, 4096, 1024), (big, 0, 0), (ragged, 0, 0)]),
        _tryit("v3", "producer-phase-0", "hangs", [],
               error="no answer 20 s after launch 1 of 5 (8192x8192x8192); the process was killed", timeout_s=20.0),
        _tryit("v6", "stages-4", "does not build", [], edits=[],
               error="RuntimeError: Requested dynamic shared memory bytes 262272 exceed the device limit 232448"),
    ]  # fmt: skip


def fake_tryit_run() -> dict[str, Any]:
    """A timed try-it run after V2 (a steps run titled "Try it: ..."): the tuned config and two changes."""
    latencies = {"try-v2": 1.92, "try-v2-s2": 2.10, "try-v2-s4": 1.90, "cublas": 1.47}
    titles = {"try-v2": "V2 as tuned: 3 stages", "try-v2-s2": "2 stages", "try-v2-s4": "4 stages"}
    step_over = {"try-v2-s2": "try-v2", "try-v2-s4": "try-v2"}
    run = fake_run(BENCH_SHAPE, latencies, titles=titles, step_over=step_over, kept={}, processes=2, rounds=10)
    return figure(run | {"after": "v2", "title": results.TRYIT_TITLE_PREFIX + "fewer or more stages"})


def typed(data: dict[str, Any] | None) -> model.Results | None:
    """A results file's dict as the site reads it: decoded into :mod:`matmul_data.model` (None stays None)."""
    return None if data is None else model.Results.from_json(data)
