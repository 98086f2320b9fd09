"""How long a kernel's time takes to settle after what ran before it: the measurement behind the benchmark's warm-up.

    python experiments/warmup.py [--block-s 2.0] [--reps 2]

At 8192^3, cuBLAS and V6 each run the benchmark's timed loop (512 MiB L2 flush, then the call) for ``--block-s``
seconds, every call timed with its own CUDA events, after each of two predecessors: 2 s of idle, and 1 s of V0's loop
(a slow neighbour, about half of cuBLAS's speed, that leaves the GPU below its power cap). A block *settles* at the
first call after which every 25-call rolling median stays within 1% of the median of the block's last 0.5 s. Writes
plots/results/warmup/<gpu>.json (atomically); ``python -m matmul_site.render`` puts it on the method page.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import torch

from matmul_bench import kernels, machine
from matmul_data import paths, results

SHAPE = (8192, 8192, 8192)
WINDOW_CALLS = 25  # the rolling median's width
TOLERANCE = 0.01  # settled: every rolling median within 1% of the block's end
TAIL_S = 0.5  # the block's end: its last half second


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


def settle(calls: list[tuple[float, float]]) -> dict[str, Any]:
    """When a block's rolling median stays within TOLERANCE of its end, and how its first calls compare."""
    end_at = calls[-1][0] - TAIL_S * 1e3
    final = statistics.median(ms for at, ms in calls if at >= end_at)
    medians = [statistics.median(ms for _, ms in calls[i : i + WINDOW_CALLS]) for i in range(len(calls) - WINDOW_CALLS)]
    outside = [i for i, m in enumerate(medians) if abs(m / final - 1.0) > TOLERANCE]
    index = (outside[-1] + 1) if outside else 0
    settled = index < len(medians) and calls[index][0] < end_at  # settling inside the tail itself is not settling
    first = statistics.median(ms for _, ms in calls[:WINDOW_CALLS])
    return {"settle_s": round(calls[index][0] / 1e3, 3) if settled else None, "calls": len(calls),
            "first_ms": round(first, 4), "final_ms": round(final, 4),
            "ms": [[round(at, 2), round(ms, 4)] for at, ms in calls]}  # fmt: skip


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
                found = settle(timed_loop(call, flush, args.block_s))
                blocks.append({"impl": name, "after": after, "rep": rep, **found})
                print(f"{name:>7} after {after:<5} settles at {found['settle_s']} s (first calls "
                      f"{found['first_ms']:.3f} ms, end {found['final_ms']:.3f} ms)", flush=True)  # fmt: skip
    out = paths.RESULTS_DIR / "warmup" / f"{results.slug(device['name'])}.json"
    now = machine.utc_now()
    record = {"gpu": device["name"], "date": now.strftime("%Y-%m-%d"), "git_commit": machine.git_commit(),
              "shape": list(SHAPE), "block_s": args.block_s, "window_calls": WINDOW_CALLS, "tolerance": TOLERANCE,
              "tail_s": TAIL_S, "blocks": blocks}  # fmt: skip
    results.write_bytes_atomic(out, (json.dumps(record, indent=1) + "\n").encode("utf-8"))
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
