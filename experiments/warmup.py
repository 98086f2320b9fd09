"""How long a kernel's time takes to settle after what ran before it: the measurement behind the benchmark's warm-up.

    python experiments/warmup.py [--block-s 2.0] [--reps 2]

At 8192^3, cuBLAS and V6 each run the benchmark's timed loop (512 MiB L2 flush, then the call; common.timed_calls) for
``--block-s`` seconds at their settled rate, every call timed with its own CUDA events, after each of two predecessors:
2 s of idle, and 1 s of V0's loop (a slow neighbour, about half of cuBLAS's speed, though it too draws about the power
cap). Writes every call's start and time to plots/results/warmup/<gpu>.json.gz (atomically); ``python -m
matmul_site.render`` puts each block's slices of time against its last second (matmul_data.stats.warmup_slices) on the
method page.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import time
from typing import Any

import torch

from matmul_bench import kernels, machine
from matmul_data import paths, results, stats

SHAPE = (8192, 8192, 8192)
common = kernels.load("common")


def timed_block(call: Any, timer: Any, seconds: float, period_ms: float) -> list[list[float]]:
    """[start in ms from the block's first call, duration in ms] of every call of about ``seconds`` of the timed loop
    (common.timed_calls, the benchmark's loop with no warm-up: the settling is what is measured)."""
    timed = common.timed_calls(call, max(1, math.ceil(seconds * 1e3 / period_ms)), timer)
    return [[round(at, 2), round(ms, 4)] for at, ms in zip(timed.starts, timed.times, strict=True)]


def period_ms(call: Any, timer: Any) -> float:
    """One turn of the timed loop (flush, call) in ms, from a short settled run of it."""
    timed = common.time_loop(call, 0.5, 50, timer)
    return (timed.starts[-1] + timed.times[-1]) / len(timed.times)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-s", type=float, default=2.0, help="seconds each block runs (default 2)")
    parser.add_argument("--reps", type=int, default=2, help="times each (kernel, predecessor) pair runs (default 2)")
    args = parser.parse_args()
    device = machine.device()
    m, n, k = SHAPE
    a, b = common.random_operands(m, n, k)
    c = torch.empty(m, n, dtype=torch.float16, device="cuda")
    timer = common.CudaTimer()
    v0 = kernels.make_kernel(str(paths.KERNEL_DIR / "matmul_v0.py"), "MatmulV0", None)
    v6 = kernels.make_kernel(str(paths.KERNEL_DIR / "matmul_v6.py"), "MatmulV6", None)
    impls = {"cublas": lambda: torch.matmul(a, b.T, out=c), "v6": lambda: v6(m, n, k, a, b, c)}
    slow = lambda: v0(m, n, k, a, b, c)  # noqa: E731
    periods = {name: period_ms(call, timer) for name, call in impls.items()}  # built, loaded and measured first
    common.warm_up(slow, 0.0, timer)
    blocks = []
    for rep in range(args.reps):
        for name, call in impls.items():
            for after in ("idle", "v0"):
                if after == "idle":
                    time.sleep(2.0)
                else:
                    common.warm_up(slow, 1.0, timer)  # the benchmark's loop, untimed
                calls = timed_block(call, timer, args.block_s, periods[name])
                blocks.append({"impl": name, "after": after, "rep": rep, "calls": calls})
                slices = " ".join(f"{x:.3f}" for x in stats.warmup_slices(calls) if x is not None)
                print(f"{name:>7} after {after:<5}: each slice's time over the end's: {slices}", flush=True)
    out = paths.RESULTS_DIR / "warmup" / f"{results.slug(device['name'])}.json.gz"
    now = machine.utc_now()
    record = {"gpu": device["name"], "date": now.strftime("%Y-%m-%d"), "git_commit": machine.git_commit(),
              "shape": list(SHAPE), "block_s": args.block_s, "blocks": blocks}  # fmt: skip
    results.write_bytes_atomic(out, gzip.compress(json.dumps(record).encode("utf-8"), mtime=0))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
