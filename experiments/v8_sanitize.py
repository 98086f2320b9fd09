"""V8's menu under compute-sanitizer: every tile, pinned, checked at three ragged shapes.

    compute-sanitizer --tool racecheck python experiments/v8_sanitize.py
    compute-sanitizer --tool memcheck python experiments/v8_sanitize.py

The shapes' (N, K) are those of tests/test_kernels_gpu.py's MENU_SHAPES, so the builds come from Tilus's cache
when the GPU suite ran first. Exit status 1 if a check fails; the sanitizer prints its own summary.
"""

from __future__ import annotations

import sys

from matmul_bench.kernels import load

matmul_v8, common, tile_model = load("matmul_v8"), load("common"), load("tile_model")
TUNED, MatmulV8 = matmul_v8.TUNED, matmul_v8.MatmulV8

# Ragged M, N and K; a tiny M with N % 8 = 1 (C copied out by the consumers); the copy-out path again with 17 K-tiles.
SHAPES = ((1000, 3000, 520), (129, 257, 64), (200, 1001, 1032))


def main() -> int:
    failed = 0
    for tile in tile_model.CANDIDATES:
        kernel = common.pinned(MatmulV8, {**TUNED, **tile.config})()
        for shape in SHAPES:
            result = common.check(kernel, *shape, seed=0)
            failed += not result.ok
            print(f"{tile.name:>8} {shape}: max |err| {result.max_abs_err:.2e}, {result.bad} bad", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
