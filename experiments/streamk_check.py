"""GPU check of V7's stream-K tail on the shapes that exercise it.

    python experiments/streamk_check.py

The version suite (tests/test_kernels_gpu.py) checks every version on the common shapes; this adds the
shapes where the stream-K split is (or is not) taken, for each reason: tile counts with and without a partial
last wave, one K-tile per tile, a ragged last K-tile, N % 8 != 0 (C from registers), a split in every tile.
Each shape runs twice on fresh random inputs into NaN-poisoned C (a moving error is a race). Exit status 1
on any wrong element.
"""

import sys

from matmul_bench.kernels import load

NUM_SMS = load("matmul_v7").NUM_SMS
MatmulV7StreamK = load("v7_streamk").MatmulV7StreamK
common, streamk = load("common"), load("streamk")

# (M, N, K): with 128 x 256 tiles and 132 SMs, the split tiles (stream_k_tiles) are noted per shape.
SHAPES = (
    (8192, 8192, 8192),  # 2048 tiles: 200 split
    (4096, 4096, 4096),  # 512: 248 split
    (16384, 8192, 1024),  # 4096: 136 split, 16 K-tiles each
    (2304, 2048, 128),  # 144: all 144 split, 2 K-tiles each
    (4100, 4100, 64),  # 561: 165 split, one K-tile per tile (whole tiles only)
    (4100, 4100, 200),  # ragged M, N and last K-tile
    (8192, 4100, 1000),  # N % 8 != 0: C leaves from registers
    (1000, 3000, 520),  # 96 tiles: no split
)


def main() -> int:
    config = {**load("matmul_v7").TUNED, "stream_k": True}  # V7's tile and order, with the tail split
    kernel = common.pinned(MatmulV7StreamK, config)()
    failed = 0
    for m, n, k in SHAPES:
        tiles = -(-m // config["block_m"]) * -(-n // config["block_n"])
        split = streamk.stream_k_tiles(tiles, NUM_SMS)
        for seed in (1, 2):
            result = common.check(kernel, m, n, k, seed=seed)
            failed += not result.ok
            status = "ok" if result.ok else f"FAILED ({result.bad} bad elements)"
            print(f"{m}x{n}x{k} seed {seed}: {tiles} tiles, {split} split; max |err| {result.max_abs_err:.2e} {status}",
                  flush=True)  # fmt: skip
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
