"""GPU check of V8's tile model: every tile of the menu, forced, checked and timed next to cuBLAS.

    python experiments/v8_check.py [--rounds 8] [--warmup-s 1] [--json PATH]

For each shape and each tile of tile_model.CANDIDATES (and V7 as it is, at 8192^3 only, to show whether V8's
128 x 256 runs as fast as V7):

1. build and check, each (implementation, shape) in its own worker process, many at once (the benchmark's
   jobs.build_all; Tilus caches the builds on disk): fresh random inputs into a NaN-poisoned C, every element
   against float64 (common.check), at every timed shape and at two small ragged ones (CHECK_ONLY);
2. time: rounds in alternating order (forward, then reversed) of every implementation and cuBLAS
   (torch.matmul), each --warmup-s seconds of its loop, then a CUDA-event median with L2 flushed before every
   call (common.interleaved, the benchmark's loop); the ratio to cuBLAS pairs the calls of one round.

It prints, per shape, each tile's median ratio to cuBLAS [min-max over rounds], which tile the model picks
and which one measured fastest, and the per-FLOP cost of each tile relative to 128 x 256 once the model's
wave arithmetic is taken out (the model predicts tile_model.Tile.cost_per_flop for it). Exit status 1 if
any check fails.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import tilus
import torch

from matmul_bench import jobs, kernels

common, tile_model = kernels.load("common"), kernels.load("tile_model")

SHAPES = (
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (6144, 6144, 6144),
    (8192, 8192, 8192),
    (16384, 8192, 1024),  # 4096 tiles of 128 x 256: 31.03 waves
    (5120, 5120, 5120),  # 800 tiles of 128 x 256: 6.06 waves
    (3000, 5000, 4096),  # M and N multiples of no tile
)
# Checked, not timed: a tiny M with N % 8 != 0 (C leaves from registers), and ragged M, N and last K-tile.
CHECK_ONLY = ((129, 257, 64), (1000, 3000, 520))
V7_SHAPE = (8192, 8192, 8192)


def tile_config(tile: tile_model.Tile) -> dict[str, int]:
    return {**tile.config, "block_k": tile_model.BLOCK_K, "swizzle_size": 16}


def implementations() -> dict[str, tuple[str, str, dict[str, Any] | None]]:
    """name -> (kernel file, script class, pinned config or None for the file's TUNED: V7's one configuration)."""
    v8, v7 = str(kernels.KERNEL_DIR / "matmul_v8.py"), str(kernels.KERNEL_DIR / "matmul_v7.py")
    found: dict[str, tuple[str, str, dict[str, Any] | None]] = {
        tile.name: (v8, "MatmulV8", tile_config(tile)) for tile in tile_model.CANDIDATES
    }
    found["V7"] = (v7, "MatmulV7", None)
    return found


def shapes_of(name: str, shapes: tuple[tuple[int, int, int], ...]) -> list[tuple[int, int, int]]:
    """The shapes an implementation runs: V7 only at 8192^3, next to V8's 128 x 256."""
    if name != "V7":
        return list(shapes)
    return [V7_SHAPE] if V7_SHAPE in shapes else []


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=10, help="timed calls per implementation and round")
    parser.add_argument("--warmup-s", type=float, default=common.MAIN_WARMUP_S,
                        help="seconds of each one's loop before its timed calls (default %(default)g)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=min(12, max(1, (os.cpu_count() or 2) - 2)))
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--shapes", nargs="*", help="MxNxK ... (default: the built-in list)")
    args = parser.parse_args()
    shapes = tuple(tuple(int(x) for x in s.split("x")) for s in args.shapes) if args.shapes else SHAPES
    checked = shapes + tuple(s for s in CHECK_ONLY if s not in shapes)

    NUM_SMS = kernels.load("matmul_v8").NUM_SMS  # noqa: N806

    common.require_hopper()
    t0 = time.perf_counter()
    impls = implementations()
    print(f"{torch.cuda.get_device_name()} ({NUM_SMS} SMs), torch {torch.__version__}, tilus {tilus.__version__}; "
          f"{args.rounds} rounds x ({args.warmup_s:g} s warm-up, {args.repeats} calls), L2 flushed",
          flush=True)  # fmt: skip

    # 1: build and check each (implementation, shape) in a fresh worker process, the benchmark's, many at once.
    specs = [{"file": file, "cls": cls, "config": config, "shapes": [list(shape)], "check": True, "name": name}
             for name, (file, cls, config) in impls.items() for shape in shapes_of(name, checked)]  # fmt: skip
    ok: dict[tuple[str, tuple[int, int, int]], bool] = {}
    checks: list[dict[str, Any]] = []
    failed = 0
    for spec, answer in zip(specs, jobs.build_all(specs, jobs=args.jobs), strict=True):
        name, shape = spec["name"], tuple(spec["shapes"][0])
        label = f"{name:>8} {'x'.join(map(str, shape)):>16}"
        if not answer["checks"]:  # the build failed (or hung): no check ran
            print(f"  build {label}: FAILED: {(answer.get('error') or '')[-800:]}", flush=True)
            checks.append({"impl": name, "shape": list(shape), "ok": False, "error": answer.get("error")})
        for check in answer["checks"]:
            status = "ok" if check["ok"] else f"FAILED ({check['bad']} bad elements)"
            print(f"  check {label}: max |err| {check['max_abs_err']:.2e} {status}", flush=True)
            checks.append({"impl": name, "shape": list(shape), "ok": check["ok"], "bad": check["bad"],
                           "max_abs_err": check["max_abs_err"]})  # fmt: skip
        ok[name, shape] = answer["ok"] and bool(answer["checks"])
        failed += not ok[name, shape]
    print(f"built and checked in {time.perf_counter() - t0:.0f} s", flush=True)

    # 2: time, shape by shape, in alternating order; each kernel made here once, its builds from Tilus's cache.
    records, made = [], {}
    for shape in shapes:
        for name in (n for n in impls if ok.get((n, shape)) and n not in made):
            made[name] = kernels.make_kernel(*impls[name])
        ms = time_shape(shape, {name: made[name] for name in impls if ok.get((name, shape))}, args)
        records.append({"shape": list(shape), "ms": ms})
        report(shape, ms, NUM_SMS)

    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "num_sms": NUM_SMS,
                                         "tilus": tilus.__version__, "torch": torch.__version__,
                                         "operand_byte_cost": tile_model.OPERAND_BYTE_COST,
                                         "checks": checks, "timings": records}, indent=1))  # fmt: skip
    print(f"done in {time.perf_counter() - t0:.0f} s; {failed} failed check(s)")
    return 1 if failed else 0


def time_shape(shape: tuple[int, int, int], built: dict[str, Any], args: argparse.Namespace) -> dict[str, list]:
    """Per-round median latency (ms) of every kernel and cuBLAS: common.interleaved, the benchmark's timing loop."""
    m, n, k = shape
    a, b = common.random_operands(m, n, k, seed=1)
    c = torch.empty(m, n, dtype=torch.float16, device="cuda")
    calls = {name: (lambda kern=kernel: kern(m, n, k, a, b, c)) for name, kernel in built.items()}
    calls["cuBLAS"] = lambda: torch.matmul(a, b.T, out=c)
    return common.interleaved(calls, args.rounds, args.warmup_s, args.repeats)


def report(shape: tuple[int, int, int], ms: dict[str, list[float]], num_sms: int) -> None:
    """One shape's table: ratio to cuBLAS per tile, the model's numbers, the measured per-FLOP cost."""
    m, n, k = shape
    ratios = {name: [cub / ours for cub, ours in zip(ms["cuBLAS"], ms[name], strict=True)]
              for name in ms if name != "cuBLAS"}  # fmt: skip
    pick = tile_model.choose(m, n, k, num_sms)
    tiles = {e.tile.name: e for e in tile_model.estimates(m, n, k, num_sms)}
    measured = {name: statistics.median(ratio) for name, ratio in ratios.items() if name in tiles}
    best = max(measured, key=measured.__getitem__) if measured else None
    cublas = statistics.median(ms["cuBLAS"])
    print(f"\n{m}x{n}x{k}: cuBLAS {cublas:.3f} ms ({common.tflops(m, n, k, cublas):.0f} TFLOPS); "
          f"model picks {pick.name}, fastest measured {best}")  # fmt: skip
    print(f"  {'tile':>8} {'ratio':>6} {'[min-max]':>13} {'TFLOPS':>7} {'tiles':>6} {'waves':>6} {'eff':>5} "
          f"{'model t':>8} {'cost/FLOP measured':>19} {'model':>6}")  # fmt: skip
    reference = tiles[tile_model.REFERENCE.name]
    ref_ms = statistics.median(ms[reference.tile.name]) if reference.tile.name in ms else None
    for name, ratio in ratios.items():
        line = (f"  {name:>8} {statistics.median(ratio):6.3f} [{min(ratio):.3f}-{max(ratio):.3f}] "
                f"{common.tflops(m, n, k, statistics.median(ms[name])):7.0f}")  # fmt: skip
        if name in tiles:
            est = tiles[name]
            line += f" {est.tiles:6d} {est.waves:6.2f} {est.wave_efficiency:5.2f} {est.time:8.3f}"
            if ref_ms is not None:
                # Measured time over the time the wave arithmetic alone predicts, relative to 128 x 256.
                quantization = (est.rounds * est.tile.block_m * est.tile.block_n) / (
                    reference.rounds * reference.tile.block_m * reference.tile.block_n
                )
                cost = statistics.median(ms[name]) / ref_ms / quantization
                line += f" {cost:19.3f} {est.tile.cost_per_flop / reference.tile.cost_per_flop:6.3f}"
            line += "  <- model" if name == pick.name else ""
        print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
