"""GPU check of the V9 draft (experiments/v9_cluster.py): every tile checked, V9 timed next to V8 and cuBLAS.

    python experiments/v9_check.py [--rounds 8] [--extra NAME ...] [--check NAME ...] [--shapes MxNxK ...]
    compute-sanitizer --tool racecheck python experiments/v9_check.py --sanitize

1. build and check, each (implementation, shape) in its own process, many at once: the pinned drafts named by
   --check (default: every --extra draft) at common.CHECK_SHAPES, and every timed implementation at every timed
   shape;
2. time, shape by shape: rounds in alternating order of V8, the draft (its config_for), the --extra
   configurations and cuBLAS, each a CUDA-event median with L2 flushed before every call; ratios pair the calls
   of one round.

A development check, one process and no warm-up: the replicated verdicts come from `record --steps "v9 draft,..."`.
With --sanitize: the 128 x 256 draft (or the first --extra) at two small ragged shapes in this process (no builds
in children), for a sanitizer. Exit status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import torch

from matmul_bench import jobs, kernels

common, tile_model = kernels.load("common"), kernels.load("tile_model")
DRAFT = str(kernels.EXPERIMENTS_DIR / "v9_cluster.py")
V8 = str(kernels.KERNEL_DIR / "matmul_v8.py")
SWEEP = ((2048, 2048, 2048), (4096, 4096, 4096), (6144, 6144, 6144), (8192, 8192, 8192), (16384, 16384, 16384),
         (8192, 28672, 4096), (16384, 8192, 1024), (5120, 5120, 5120), (3000, 5000, 4096))  # fmt: skip
SANITIZE_SHAPES = ((129, 257, 64), (1000, 3000, 520))


def tile_config(tile: Any) -> dict[str, int]:
    return {**tile.config, "block_k": tile_model.BLOCK_K, "swizzle_size": 8}


def extras() -> dict[str, tuple[str, str, dict[str, int]]]:
    """Pinned configurations to time beside V8 and the draft (--extra NAME ...)."""
    tiles = {t.name: t for t in tile_model.CANDIDATES}
    wide = tiles["128x256"]
    found = {f"v9-{t.name}": (DRAFT, "MatmulV9Cluster", tile_config(t)) for t in tile_model.CANDIDATES}
    # V8's 128 x 192 (4 stages): whether the draft's lead with it at some shapes is the tile's or the cluster's.
    v8_config = {**tiles["128x192"].config, "block_k": tile_model.BLOCK_K, "swizzle_size": 16}
    found["v8-128x192"] = (V8, "MatmulV8", v8_config)
    # Clusters of four (B in quarters): 30 fit at once (plots/results/logs/cluster-occupancy-2026-12-02.txt).
    found["v9-c4"] = (DRAFT, "MatmulV9Cluster", {**tile_config(wide), "cluster": 4, "grid_blocks": 120})
    # Two accumulators per group and C staged half at a time: 3 stages (the split's cost), 4 (the stage it frees).
    found["v9-h2s3"] = (DRAFT, "MatmulV9Cluster", {**tile_config(wide), "halves": 2})
    found["v9-h2s4"] = (DRAFT, "MatmulV9Cluster", {**tile_config(wide), "halves": 2, "num_stages": 4})
    return found


def implementations(extra: list[str]) -> dict[str, tuple[str, str, dict[str, int] | None]]:
    """name -> (file, class, pinned config or None for the file's config_for)."""
    known = extras()
    return {"V8": (V8, "MatmulV8", None), "V9": (DRAFT, "MatmulV9Cluster", None), **{e: known[e] for e in extra}}


def sanitize(extra: list[str]) -> int:
    tile = next(t for t in tile_model.CANDIDATES if t.name == "128x256")
    config = extras()[extra[0]][2] if extra else tile_config(tile)
    kernel = kernels.make_kernel(DRAFT, "MatmulV9Cluster", config)
    failed = 0
    for shape in SANITIZE_SHAPES:
        result = common.check(kernel, *shape, seed=0)
        failed += not result.ok
        print(f"{shape}: {result.describe()}", flush=True)
    return 1 if failed else 0


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


def time_shape(shape: tuple[int, ...], impls: dict[str, Any], args: argparse.Namespace) -> dict[str, Any]:
    """V8_check's rounds in alternating order at one shape; prints each implementation's ratio to cuBLAS and to V8."""
    m, n, k = shape
    built = {name: kernels.make_kernel(file, cls, config) for name, (file, cls, config) in impls.items()}
    ms = kernels.load("v8_check").time_shape(shape, built, args)
    cublas = statistics.median(ms["cuBLAS"])
    print(f"\n{m}x{n}x{k}: cuBLAS {cublas:.3f} ms ({common.tflops(m, n, k, cublas):.0f} TFLOPS)", flush=True)
    for name, kernel in built.items():
        tile = common.tuned_config(kernel)
        tile_name = f"{tile.get('block_m')}x{tile.get('block_n')}/{tile.get('num_stages')}"
        to_cublas = [cub / ours for cub, ours in zip(ms["cuBLAS"], ms[name], strict=True)]
        to_v8 = [v8 / ours for v8, ours in zip(ms["V8"], ms[name], strict=True)]
        print(f"  {name:>12} {tile_name:>11} x cuBLAS {spread(to_cublas)}  x V8 {spread(to_v8)}", flush=True)
    return {"shape": list(shape), "ms": ms}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=10, help="timed calls per implementation and round")
    parser.add_argument("--jobs", type=int, default=14)
    parser.add_argument("--extra", nargs="*", default=[], help=f"also time these: {', '.join(extras())}")
    parser.add_argument("--shapes", nargs="*", help="timed shapes MxNxK ... (default: the sweep and two more)")
    parser.add_argument("--check", nargs="*", help="pinned drafts to check at CHECK_SHAPES (default: all)")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--sanitize", action="store_true", help="only the in-process check for a sanitizer")
    args = parser.parse_args()
    common.require_hopper()
    if args.sanitize:
        return sanitize(args.extra)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes] if args.shapes else list(SWEEP)
    impls = implementations(args.extra)
    t0 = time.perf_counter()

    checked = args.check if args.check is not None else [name for name in impls if name.startswith("v9-")]
    pinned = [extras()[name][2] for name in checked]
    specs = [{"file": DRAFT, "cls": "MatmulV9Cluster", "config": cfg, "shapes": [list(s)], "check": True}
             for cfg in pinned for s in common.CHECK_SHAPES]  # fmt: skip
    specs += [{"file": f, "cls": c, "config": cfg, "shapes": [list(s)], "check": True}
              for f, c, cfg in impls.values() for s in shapes]  # fmt: skip
    failed = 0
    checks = []
    for spec, answer in zip(specs, jobs.build_all(specs, jobs=args.jobs), strict=True):
        label = f"{Path(spec['file']).stem} {spec['config'] or 'config_for'}"
        if answer.get("error"):
            print(f"{label} {spec['shapes'][0]}: {answer['error'][-600:]}", flush=True)
        for check in answer["checks"]:
            print(f"{label}: {check['report']}", flush=True)
            checks.append({"label": label, **check})
        failed += not answer["ok"]
    print(f"{len(specs)} builds and checks in {time.perf_counter() - t0:.0f} s, {failed} failed", flush=True)

    records = [time_shape(shape, impls, args) for shape in shapes]
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({"gpu": torch.cuda.get_device_name(), "checks": checks, "timings": records}))
    print(f"done in {time.perf_counter() - t0:.0f} s; {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
