"""Which cuBLAS kernel the baseline runs at each sweep and field shape, by the torch profiler (``baseline``)."""

from __future__ import annotations

import argparse
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from matmul_bench import machine
from matmul_bench.plan import SWEEP_SHAPES
from matmul_data import model, results
from matmul_data.field import FIELD

NVJET = re.compile(r"nvjet_sm90_\w+?_(\d+)x(\d+)_(\d+)x(\d+)_(\d+)x(\d+)")


def decode(name: str) -> dict[str, Any] | None:
    """The tile, K-tile, stages and cluster an nvjet kernel's name encodes; None for another naming."""
    found = NVJET.search(name)
    if found is None:
        return None
    tile_m, tile_n, block_k, stages, cluster_m, cluster_n = map(int, found.groups())
    return {"tile": [tile_m, tile_n], "block_k": block_k, "stages": stages, "cluster": [cluster_m, cluster_n]}


def busiest_kernel(call: Callable[[], Any], warmup: int = 3, calls: int = 5) -> str:
    """The CUDA kernel that takes the most GPU time over ``calls`` calls of ``call`` (torch profiler)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    for _ in range(warmup):
        call()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            call()
        torch.cuda.synchronize()
    events = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
    return max(events, key=lambda e: e.device_time_total).key


def record(results_path: Path, found: dict[str, dict[str, Any]]) -> int:
    """Each sweep and field figure of the file gains ``cublas_kernel`` for its shape (written atomically); how many
    did."""
    data = results.read(results_path, fresh=True)
    count = 0
    for section in (s for s in ("sweep", "field") if data.has(s)):
        figures = []
        for figure in getattr(data, section):
            key = "x".join(map(str, figure.shape.mnk))
            if key in found:
                decoded = decode(found[key]["kernel"])
                kernel = model.CublasKernel.of(name=found[key]["kernel"],
                                               decoded=decoded and model.DecodedKernel.from_json(decoded))  # fmt: skip
                figure, count = figure.put(cublas_kernel=kernel), count + 1
            figures.append(figure)
        data = data.put(**{section: tuple(figures)})
    results.write_atomic(results_path, data)
    return count


def main(argv: list[str]) -> int:
    """Print cuBLAS's kernel at every sweep and field shape; with ``--into RESULTS``, record them in that file."""
    parser = argparse.ArgumentParser(prog="python -m matmul_bench baseline", description=__doc__)
    parser.add_argument("--into", type=Path, metavar="RESULTS", help="record the names in this results file")
    args = parser.parse_args(argv)
    if args.into is not None and not args.into.is_file():
        parser.error(f"--into {args.into}: no such results file")
    # Everything that can refuse comes before the first launch, the file first (it needs no GPU): else a broken or
    # another GPU's file is found only by record(), after every shape is profiled.
    try:
        into = results.read(args.into, fresh=True) if args.into is not None else None
    except results.ResultsError as exc:
        print(f"{parser.prog}: error: --into: {exc}", file=sys.stderr)
        return 2
    try:
        machine.require_hopper_for(into, f"--into {args.into}", "nothing was profiled")
    except machine.NoHopperGPU as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1
    import torch

    found = {}
    for m, n, k in (*SWEEP_SHAPES, *(f.shape for f in FIELD)):  # torch.matmul(A, B.T)'s busiest kernel, fp16/fp32
        a, b = (torch.randn(rows, k, dtype=torch.float16, device="cuda") for rows in (m, n))
        name = busiest_kernel(functools.partial(torch.matmul, a, b.T))
        found[f"{m}x{n}x{k}"] = {"kernel": name, "decoded": decode(name)}
        print(f"{f'{m}x{n}x{k}':>18}  {name}", flush=True)
    if args.into:
        try:
            print(f"recorded on {record(args.into, found)} sweep and field figures in {args.into}")
        except results.ResultsError as exc:  # changed while this ran: the names above are all there is
            print(f"{parser.prog}: {exc}", file=sys.stderr)
            return 1
    return 0
