"""The attempts after V6, as runs for the benchmark: ``python -m matmul_bench record --steps all``.

Plain data, read by the benchmark (matmul_bench.plan) by file path. A variant is one pinned configuration of a
kernel class: a file of experiments/ or examples/hopper_matmul/, its class, the config, and what it changes. A run
times its variants and cuBLAS interleaved, in the benchmark's fresh processes, after checking each one
against a float64 reference at 8192^3 and at M = 1000 and 1100 (ragged, and an odd number of tile rows).
Each variant's step ratio is paired with the run's ``baseline`` round by round (or with the variant that
``over`` names for it); ``kept`` names the variants whose change went into a version of the site (V6 or V7:
the chapters say which); ``profile`` asks
``--ncu`` to profile the run's rows. The results file keys a steps run by (after, title, shape): rerunning
a run replaces its record.
"""

from __future__ import annotations

from typing import Any


def cfg(bm: int, bn: int, bk: int, stages: int, swizzle: int, **extra: object) -> dict[str, Any]:
    return dict(block_m=bm, block_n=bn, block_k=bk, num_stages=stages, swizzle_size=swizzle, **extra)


V = ("v6_variants.py", "MatmulV6Variants")
C = ("v6_cluster.py", "MatmulV6Cluster")
P = ("v7_variants.py", "MatmulV7Variants")
# name: (kernel file, class, pinned config or None for the file's config_for, what changed from the baseline)
VARIANTS: dict[str, tuple[str, str, dict[str, Any] | None, str]] = {
    "v4": ("matmul_v4.py", "MatmulV4", cfg(128, 256, 64, 3, 1), "V4 as recorded, for reference"),
    "v5-s3": ("matmul_v5.py", "MatmulV5", cfg(128, 256, 64, 3, 1), "V5 as recorded, 3 stages"),
    "v5-s4": ("matmul_v5.py", "MatmulV5", cfg(128, 256, 64, 4, 1), "V5 with 4 stages: more producer lead"),
    "v6-rows": (*V, cfg(128, 256, 64, 3, 1, epilogue="rows"), "V6 before its steps (row-major tile order)"),
    "v6-chunks": (*V, cfg(128, 256, 64, 3, 1, epilogue="chunks"), "swizzled 64-column chunks of C: no bank conflicts"),
    "v6-chunks-sw4": (*V, cfg(128, 256, 64, 3, 4, epilogue="chunks"), "chunks + raster groups of 4 tile rows"),
    "v6-chunks-sw8": (*V, cfg(128, 256, 64, 3, 8, epilogue="chunks"), "chunks + raster groups of 8"),
    "v6-chunks-sw16": (*V, cfg(128, 256, 64, 3, 16, epilogue="chunks"), "chunks + raster groups of 16"),
    "v6-regs-s3": (*V, cfg(128, 256, 64, 3, 1, epilogue="registers"), "C from registers, no staging buffer"),
    "v6-regs-s4": (*V, cfg(128, 256, 64, 4, 1, epilogue="registers"), "C from registers; its 64 KB buys a 4th stage"),
    "v6-chunks-256x128": (*V, cfg(256, 128, 64, 3, 1, epilogue="chunks"), "chunks at the 256 x 128 tile"),
    "v6-chunks-k32s6": (*V, cfg(128, 256, 32, 6, 1, epilogue="chunks"), "chunks, block_k 32 with 6 stages"),
    "v6-chunks-k32s6-sw8": (*V, cfg(128, 256, 32, 6, 8, epilogue="chunks"), "chunks, block_k 32, 6 stages, swizzle 8"),
    "v6-rows-sw16": (*V, cfg(128, 256, 64, 3, 16, epilogue="rows"), "raster groups of 16 tile rows: V6 now"),
    "v6-chunks-sw32": (*V, cfg(128, 256, 64, 3, 32, epilogue="chunks"), "chunks + raster groups of 32"),
    "v6-chunks-k32s6-sw16": (*V, cfg(128, 256, 32, 6, 16, epilogue="chunks"), "chunks, block_k 32, 6 stages, sw 16"),
    "v6c-chunks-sw1": (*C, cfg(128, 256, 64, 3, 1, epilogue="chunks"), "clusters of 2 + TMA multicast of B, chunks"),
    "v6c-chunks-sw4": (*C, cfg(128, 256, 64, 3, 4, epilogue="chunks"), "clusters of 2 + multicast, swizzle 4"),
    "v6c-chunks-sw8": (*C, cfg(128, 256, 64, 3, 8, epilogue="chunks"), "clusters of 2 + multicast, swizzle 8"),
    "v6c-chunks-k32s6-sw8": (*C, cfg(128, 256, 32, 6, 8, epilogue="chunks"), "clusters + multicast, block_k 32"),
    "v6c-chunks-sw8-cta": (
        *C,
        cfg(128, 256, 64, 3, 8, epilogue="chunks", arrive_scope="cta"),
        "clusters + multicast, swizzle 8, remote arrives at CTA scope: no fences in the K loop",
    ),
    "v6c-chunks-sw8-g128": (
        *C,
        cfg(128, 256, 64, 3, 8, epilogue="chunks", grid_blocks=128),
        "clusters + multicast, swizzle 8, a grid of 128 blocks (64 clusters)",
    ),
    "v6c-chunks-sw8-g120": (
        *C,
        cfg(128, 256, 64, 3, 8, epilogue="chunks", grid_blocks=120),
        "clusters + multicast, swizzle 8, a grid of 120 blocks (60 clusters)",
    ),
    # V6 as it is now: its kernel file's TUNED.
    "v6": ("matmul_v6.py", "MatmulV6", cfg(128, 256, 64, 3, 16), "V6 as it is now (128 x 256 tile split by rows)"),
    "v7-pp128": (*P, cfg(128, 128, 64, 5, 16, schedule="pingpong"), "ping-pong: a 128 x 128 tile per group, 5 stages"),
    "v7-pp128-sw8": (*P, cfg(128, 128, 64, 5, 8, schedule="pingpong"), "ping-pong 128 x 128, raster groups of 8"),
    "v7-pp64x256": (*P, cfg(64, 256, 64, 4, 32, schedule="pingpong"), "ping-pong: a 64 x 256 tile per group, 4 stages"),
    "v7": ("matmul_v7.py", "MatmulV7", cfg(128, 256, 64, 3, 16), "V7: C staged in swizzled 64-column chunks"),
    "v7-streamk": (
        "v7_streamk.py",
        "MatmulV7StreamK",
        cfg(128, 256, 64, 3, 16, stream_k=True),
        "V7 + stream-K: the last full wave and the partial one split along K",
    ),
    # No pinned config: the benchmark pins what V8's config_for picks at each shape (its tile model).
    "v8": ("matmul_v8.py", "MatmulV8", None, "V8: the tile its model picks for the problem"),
    "v0": ("matmul_v0.py", "MatmulV0", None, "V0, a slow neighbour"),
    # The menu's 128 x 192 tile pinned (two consumer groups, four stages), against the model's pick.
    "v8-128x192": (
        "matmul_v8.py",
        "MatmulV8",
        dict(cfg(128, 192, 64, 4, 16), consumers=2),
        "V8 pinned to 128 x 192 with four stages, whatever the model picks",
    ),
    # The V9 draft: V8's tile per problem, in clusters of two along M with B multicast (experiments/v9_cluster.py).
    "v9-cluster": ("v9_cluster.py", "MatmulV9Cluster", None, "V8 in clusters of two along M, B multicast"),
    # Two accumulators per consumer group, C staged half at a time: the 32 KB it frees holds a fourth stage.
    "v9-h2s4": (
        "v9_cluster.py",
        "MatmulV9Cluster",
        dict(cfg(128, 256, 64, 4, 8), consumers=2, halves=2),
        "the draft at 128 x 256, C staged in halves: a 4th stage",
    ),
    # What the model picked at 3000 x 7000 x 5000 before it learned the L2 bound of rows off the 32-byte sectors.
    "v8-256x128": (
        "matmul_v8.py",
        "MatmulV8",
        dict(cfg(256, 128, 64, 3, 16), consumers=2),
        "V8 pinned to 256 x 128, the model's pick before its L2 bound for K % 16 != 0",
    ),
}
RUNS: dict[str, dict[str, Any]] = {
    # The warm-up's proof (docs/method.rst, "Warm-up"): V6's ratio to cuBLAS must not depend on what runs beside it.
    "warm-up beside a slow kernel": {
        "after": "v6",
        "title": "the warm-up's proof: V6 and cuBLAS beside a slow kernel (V0)",
        "variants": ["v0", "v6"],
        "kept": [],
    },
    "warm-up beside a fast kernel": {
        "after": "v6",
        "title": "the warm-up's proof: V6 and cuBLAS beside a fast kernel (V8)",
        "variants": ["v8", "v6"],
        "kept": [],
    },
    "round 1": {
        "after": "v6",
        "title": "the epilogue, stages, tile shape and tile order",
        "baseline": "v6-rows",
        "variants": [
            "v4", "v5-s3", "v5-s4", "v6-rows", "v6-chunks", "v6-chunks-sw4", "v6-chunks-sw8", "v6-chunks-sw16",
            "v6-regs-s3", "v6-regs-s4", "v6-chunks-256x128", "v6-chunks-k32s6", "v6-chunks-k32s6-sw8",
        ],
        "kept": ["v6-chunks-sw16"],  # chunks with groups of 16: V7's design, kept after V7's own runs
    },
    "round 2": {
        "after": "v6",
        "title": "tile order at swizzle 16 and beyond, and clusters with TMA multicast",
        "baseline": "v6-rows",
        "variants": [
            "v6-rows", "v6-rows-sw16", "v6-chunks-sw16", "v6-chunks-sw32", "v6-chunks-k32s6-sw16",
            "v6c-chunks-sw1", "v6c-chunks-sw4", "v6c-chunks-sw8", "v6c-chunks-k32s6-sw8",
        ],
        "kept": ["v6-rows-sw16", "v6-chunks-sw16"],  # groups of 16: the V6 of the chapter; with chunks, V7's design
    },
    # Whether the cluster attempt was slow because not every cluster of a 132-block grid fits at once (see
    # python -m matmul_bench check clusters): the same variant with smaller grids.
    "clusters in smaller grids": {
        "after": "v6",
        "title": "clusters with TMA multicast in smaller persistent grids",
        "baseline": "v6-rows-sw16",
        "variants": ["v6-rows-sw16", "v6c-chunks-sw8", "v6c-chunks-sw8-g128", "v6c-chunks-sw8-g120"],
        "kept": [],
    },
    # Why the attempt lost (issue 30): its build puts MEMBAR.ALL.CTA and MEMBAR.ALL.GPU before each remote arrive of
    # the K loop (release semantics at cluster scope); at CTA scope they are gone.
    "clusters without fences": {
        "after": "v6",
        "title": "clusters with TMA multicast, the consumers' remote arrives at CTA scope (no fences)",
        "baseline": "v6-rows-sw16",
        "variants": ["v6-rows-sw16", "v6c-chunks-sw8", "v6c-chunks-sw8-cta"],
        "over": {"v6c-chunks-sw8-cta": "v6c-chunks-sw8"},
        "kept": [],
    },
    "v7 round 1": {
        "after": "v6",
        "title": "ping-pong consumers: each warp group owns its tiles, its epilogue under the other's MMAs",
        "baseline": "v6",
        "variants": ["v6", "v7-pp128", "v7-pp128-sw8", "v7-pp64x256"],
        "kept": [],
    },
    "v7 round 1 short K": {
        "after": "v6",
        "title": "ping-pong consumers at a short K, where the epilogue weighs most",
        "shape": (16384, 8192, 1024),
        "baseline": "v6",
        "variants": ["v6", "v7-pp128", "v7-pp64x256"],
        "kept": [],
    },
    "v7 round 2": {
        "after": "v6",
        "title": "swizzled chunks for C, then stream-K for the last wave",
        "baseline": "v6",
        "variants": ["v6", "v7", "v7-streamk"],
        "over": {"v7-streamk": "v7"},  # stream-K is tried on top of the chunks
        "kept": ["v7"],
    },
    "v7 round 2 at 4096^3": {
        "after": "v6",
        "title": "swizzled chunks and stream-K at 4096^3 (3.9 waves of tiles)",
        "shape": (4096, 4096, 4096),
        "baseline": "v6",
        "profile": True,  # with --ncu: DRAM bytes and L2 hit rate of each row (what stream-K does to L2 reuse)
        "variants": ["v6", "v7", "v7-streamk"],
        "over": {"v7-streamk": "v7"},  # stream-K is tried on top of the chunks
        "kept": ["v7"],
    },
    "v7 round 2 short K": {
        "after": "v6",
        "title": "swizzled chunks and stream-K at a short K (31.03 waves of tiles)",
        "shape": (16384, 8192, 1024),
        "baseline": "v6",
        "variants": ["v6", "v7", "v7-streamk"],
        "over": {"v7-streamk": "v7"},  # stream-K is tried on top of the chunks
        "kept": ["v7"],
    },
    # Shapes off the benchmark's sweep where V7's one tile leaves a wave nearly empty: V8's model picks another tile
    # at 5120^3, 3072^3 and 5000x3000x4096, and keeps V7's at 3000x5000x4096 (its edge term).
    "v8 round 1": {
        "after": "v7",
        "title": "a tile chosen per problem, at 5120^3 (6.06 waves of V7's tiles)",
        "shape": (5120, 5120, 5120),
        "baseline": "v7",
        "variants": ["v7", "v8"],
        "kept": ["v8"],
    },
    "v8 round 1 at 3072^3": {
        "after": "v7",
        "title": "a tile chosen per problem, at 3072^3 (2.18 waves of V7's tiles)",
        "shape": (3072, 3072, 3072),
        "baseline": "v7",
        "variants": ["v7", "v8"],
        "kept": ["v8"],
    },
    # The one GPU check of the menu (plots/results/logs/v8-check-2026-12-01.txt, not replicated) had 128 x 192
    # ahead of the model's 128 x 256 at three sweep shapes: whether the model's cost of that tile is too high.
    "v8 round 2": {
        "after": "v7",
        "title": "the 128 x 192 tile against the model's pick at 8192^3",
        "baseline": "v8",
        "variants": ["v8", "v8-128x192"],
        "kept": [],
    },
    "v8 round 2 short K": {
        "after": "v7",
        "title": "the 128 x 192 tile against the model's pick at a short K",
        "shape": (16384, 8192, 1024),
        "baseline": "v8",
        "variants": ["v8", "v8-128x192"],
        "kept": [],
    },
    "v8 round 1 ragged": {
        "after": "v7",
        "title": "a tile chosen per problem, at 3000x5000x4096 (M and N multiples of no tile)",
        "shape": (3000, 5000, 4096),
        "baseline": "v7",
        "variants": ["v7", "v8"],
        "kept": ["v8"],
    },
    # The same problem turned round: 128 x 192's last column is 120 of 192 wide, and the model picks it.
    "v8 round 1 ragged swapped": {
        "after": "v7",
        "title": "a tile chosen per problem, at 5000x3000x4096 (M and N swapped)",
        "shape": (5000, 3000, 4096),
        "baseline": "v7",
        "variants": ["v7", "v8"],
        "kept": ["v8"],
    },
    # K = 5000 puts every other row of A and B 16 bytes into an L2 sector: TMA's loads bind the kernel to L2 (the
    # tile model's fourth term), and the model now picks the tile that loads the fewest bytes.
    "v8 ragged K": {
        "after": "v7",
        "title": "a tile chosen per problem, at 3000x7000x5000 (operand rows off the 32-byte sectors)",
        "shape": (3000, 7000, 5000),
        "baseline": "v7",
        "variants": ["v7", "v8-256x128", "v8"],
        "kept": ["v8"],
    },
    # Issue 30: the V9 draft against V8, and its fourth stage over it, in one rotation per shape.
    "v9 draft": {
        "after": "v8",
        "title": "clusters of two with B multicast over V8 at 8192^3",
        "baseline": "v8",
        "variants": ["v8", "v9-cluster", "v9-h2s4"],
        "over": {"v9-h2s4": "v9-cluster"},
        "kept": [],
    },
    "v9 draft at 4096^3": {
        "after": "v8",
        "title": "clusters of two with B multicast over V8 at 4096^3",
        "shape": (4096, 4096, 4096),
        "baseline": "v8",
        "variants": ["v8", "v9-cluster", "v9-h2s4"],
        "over": {"v9-h2s4": "v9-cluster"},
        "kept": [],
    },
    "v9 draft short K": {
        "after": "v8",
        "title": "clusters of two with B multicast over V8 at a short K",
        "shape": (16384, 8192, 1024),
        "baseline": "v8",
        "variants": ["v8", "v9-cluster", "v9-h2s4"],
        "over": {"v9-h2s4": "v9-cluster"},
        "kept": [],
    },
    # N % 8 != 0: C's rows cannot be stored by TMA, so V7 and V8 copy them out with the consumers' own threads.
    "v8 odd N": {
        "after": "v7",
        "title": "an odd N, 4096x4095x4096: C's rows copied out by the consumers, not by TMA",
        "shape": (4096, 4095, 4096),
        "baseline": "v7",
        "variants": ["v7", "v8"],
        "kept": ["v8"],
    },
}  # fmt: skip
