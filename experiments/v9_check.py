"""GPU check of V9 (matmul_v9.py): every (tile, sharing) of its menu checked, timed next to V8 and cuBLAS.

    python experiments/v9_check.py [--rounds 8] [--extra NAME ... | --menu] [--check NAME ...] [--shapes MxNxK ...]
    python experiments/v9_check.py --fitted --menu --json out.json     # the data the model's CLUSTER_COST is fitted to
    compute-sanitizer --tool racecheck python experiments/v9_check.py --sanitize --extra v9-128x192-b v9-256x128-a

1. build and check, each (implementation, shape) in its own process, many at once: the pinned configurations named
   by --check (default: every --extra) at common.CHECK_SHAPES, and every timed implementation at every timed shape;
2. time, shape by shape: rounds in alternating order of V8 and V9 (each its config_for), the --extra configurations
   and cuBLAS, each --warmup-s seconds of its loop, then a CUDA-event median with L2 flushed before every call
   (common.interleaved, the benchmark's loop); ratios pair the calls of one round.

A development check, one process: the replicated numbers come from `record --field`. With
--sanitize: each --extra (default 128 x 256 sharing B) at two small ragged shapes in this process (no builds in
children), for a sanitizer. Exit status 1 if any check fails.
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
from matmul_data import field

common, tile_model = kernels.load("common"), kernels.load("tile_model")
V9 = str(kernels.KERNEL_DIR / "matmul_v9.py")
V8 = str(kernels.KERNEL_DIR / "matmul_v8.py")
SWEEP = ((2048, 2048, 2048), (4096, 4096, 4096), (6144, 6144, 6144), (8192, 8192, 8192), (16384, 16384, 16384),
         (8192, 28672, 4096), (16384, 8192, 1024), (5120, 5120, 5120), (3000, 5000, 4096))  # fmt: skip
SANITIZE_SHAPES = ((129, 257, 64), (1000, 3000, 520))


def extras() -> dict[str, tuple[str, str, dict[str, Any]]]:
    """Every (tile, sharing) of V9's menu, pinned: "v9-128x192-b" is 128 x 192 in pairs along M sharing B."""
    swizzle = kernels.load("matmul_v9").SWIZZLE
    return {f"v9-{e.tile.name}-{e.share}": (V9, "MatmulV9", {**e.tile.config, "block_k": tile_model.BLOCK_K,
                                                              "swizzle_size": swizzle[e.share], "share": e.share})
            for e in tile_model.estimates_shared(4096, 4096, 4096)}  # fmt: skip


def implementations(extra: list[str]) -> dict[str, tuple[str, str, dict[str, Any] | None]]:
    """name -> (file, class, pinned config or None for the file's config_for)."""
    known = extras()
    unknown = [e for e in extra if e not in known]
    if unknown:
        raise SystemExit(f"unknown --extra {', '.join(unknown)}; known: {', '.join(known)}")
    return {"V8": (V8, "MatmulV8", None), "V9": (V9, "MatmulV9", None), **{e: known[e] for e in extra}}


def sanitize(extra: list[str]) -> int:
    failed = 0
    for name in extra or ["v9-128x256-b"]:
        kernel = kernels.make_kernel(*extras()[name])
        for shape in SANITIZE_SHAPES:
            result = common.check(kernel, *shape, seed=0)
            failed += not result.ok
            print(f"{name} {shape}: {result.describe()}", flush=True)
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
        tile_name = f"{tile.get('block_m')}x{tile.get('block_n')}/{tile.get('num_stages')}/{tile.get('share', '-')}"
        to_cublas = [cub / ours for cub, ours in zip(ms["cuBLAS"], ms[name], strict=True)]
        to_v8 = [v8 / ours for v8, ours in zip(ms["V8"], ms[name], strict=True)]
        print(f"  {name:>12} {tile_name:>11} x cuBLAS {spread(to_cublas)}  x V8 {spread(to_v8)}", flush=True)
    return {"shape": list(shape), "ms": ms, "configs": {name: common.tuned_config(k) for name, k in built.items()}}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=10, help="timed calls per implementation and round")
    parser.add_argument("--warmup-s", type=float, default=common.MAIN_WARMUP_S,
                        help="seconds of each one's loop before its timed calls (default %(default)g)")  # fmt: skip
    parser.add_argument("--jobs", type=int, default=14)
    parser.add_argument("--extra", nargs="*", default=[], help="also time these pinned configurations (v9-TILE-SHARE)")
    parser.add_argument("--menu", action="store_true", help="--extra every (tile, sharing) of V9's menu")
    parser.add_argument("--shapes", nargs="*", help="timed shapes MxNxK ... (default: the sweep and two more)")
    parser.add_argument("--fitted", action="store_true", help="time the field set's fitted half")
    parser.add_argument("--build-timeout", type=float, default=300, help="seconds per build and check (a hang ends)")
    parser.add_argument("--tiles", nargs="*", help="with --menu: only these tiles (e.g. 128x256 128x192)")
    parser.add_argument("--check", nargs="*", help="pinned configs to check at CHECK_SHAPES (default: every --extra)")
    parser.add_argument("--json", type=Path, help="write every measurement here")
    parser.add_argument("--sanitize", action="store_true", help="only the in-process check for a sanitizer")
    args = parser.parse_args()
    common.require_hopper()
    if args.sanitize:
        return sanitize(args.extra)
    shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes] if args.shapes else list(SWEEP)
    if args.fitted:
        shapes = [f.shape for f in field.half(field.FITTED)] if not args.shapes else shapes
    menu = [e for e in extras() if not args.tiles or e.split("-")[1] in args.tiles]
    impls = implementations(menu if args.menu else args.extra)
    t0 = time.perf_counter()

    checked = args.check if args.check is not None else [name for name in impls if name.startswith("v9-")]
    pinned = [extras()[name][2] for name in checked]
    specs = [{"file": V9, "cls": "MatmulV9", "config": cfg, "shapes": [list(s)], "check": True}
             for cfg in pinned for s in common.CHECK_SHAPES]  # fmt: skip
    specs += [{"file": f, "cls": c, "config": cfg, "shapes": [list(s)], "check": True}
              for f, c, cfg in impls.values() for s in shapes]  # fmt: skip
    failed = 0
    checks = []
    for spec, answer in zip(specs, jobs.build_all(specs, jobs=args.jobs, timeout_s=args.build_timeout), strict=True):
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
