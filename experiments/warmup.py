"""How long a kernel's time takes to settle after what ran before it: the measurement behind the benchmark's warm-up.

    python experiments/warmup.py [--block-s 2.0] [--reps 2]

At 8192^3, cuBLAS and V6 each run the benchmark's timed loop (512 MiB L2 flush, then the call) for ``--block-s``
seconds, every call timed with its own CUDA events, after each of two predecessors: 2 s of idle, and 1 s of V0's loop
(a slow neighbour, about half of cuBLAS's speed, though it too draws about the power cap). Writes every call's start
and time to plots/results/warmup/<gpu>.json.gz (atomically); ``python -m matmul_site.render`` puts each block's
slices of time against its last second (matmul_data.stats.warmup_slices) on the method page.
"""

from __future__ import annotations

import argparse
import gzip
import json
import time
from typing import Any

import torch

from matmul_bench import kernels, machine
from matmul_data import paths, results, stats

SHAPE = (8192, 8192, 8192)


def timed_loop(call: Any, flush: torch.Tensor, seconds: float) -> list[tuple[float, float]]:
    """(start in ms from the block's first call, duration in ms) of every call of ``seconds`` of the timed loop."""
    events: list[tuple[torch.cuda.Event, torch.cuda.Event]] = []
    began = time.perf_counter()
    while time.perf_counter() - began < seconds:
        for _ in range(8):  # a few calls per host check; the GPU runs behind, the sync below waits for it
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            flush.zero_()
            start.record()
            call()
            end.record()
            events.append((start, end))
        events[-1][1].synchronize()
    torch.cuda.synchronize()
    first = events[0][0]
    return [(first.elapsed_time(s), s.elapsed_time(e)) for s, e in events]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-s", type=float, default=2.0, help="seconds each block runs (default 2)")
    parser.add_argument("--reps", type=int, default=2, help="times each (kernel, predecessor) pair runs (default 2)")
    args = parser.parse_args()
    device = machine.device()
    common = kernels.load("common")
    m, n, k = SHAPE
    a, b = common.random_operands(m, n, k)
    c = torch.empty(m, n, dtype=torch.float16, device="cuda")
    flush = torch.empty(512 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
    v0 = kernels.make_kernel(str(paths.KERNEL_DIR / "matmul_v0.py"), "MatmulV0", None)
    v6 = kernels.make_kernel(str(paths.KERNEL_DIR / "matmul_v6.py"), "MatmulV6", None)
    impls = {"cublas": lambda: torch.matmul(a, b.T, out=c), "v6": lambda: v6(m, n, k, a, b, c)}
    slow = lambda: v0(m, n, k, a, b, c)  # noqa: E731
    for call in (*impls.values(), slow):  # built and loaded before any block
        call()
    torch.cuda.synchronize()
    blocks = []
    for rep in range(args.reps):
        for name, call in impls.items():
            for after in ("idle", "v0"):
                if after == "idle":
                    time.sleep(2.0)
                else:
                    timed_loop(slow, flush, 1.0)
                calls = [[round(at, 2), round(ms, 4)] for at, ms in timed_loop(call, flush, args.block_s)]
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
