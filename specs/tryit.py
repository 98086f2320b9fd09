"""The "Try it" changes at the end of each chapter: what a reader can change in that chapter's file.

Plain data, torch-free, read by path (like specs/steps.py). Three kinds:

- Timed changes (VARIANTS, RUNS): a pinned configuration of the chapter's own class, timed by the
  benchmark's steps mode against the chapter's tuned configuration (its kernel file's TUNED) and cuBLAS::

      python -m matmul_bench record --steps all --steps-file specs/tryit.py

  Every run is after its chapter's version and titled "Try it: ..."; that prefix keeps these runs out
  of the ladder's "What each step bought" (``results-steps`` leaves them out unless asked).
- Recorded changes (RECORDED): a try-it that a steps run after V6 already answers; the chapter points
  at that record instead of timing it again.
- Edits (EDITS): a text substitution in the chapter's kernel file, or a configuration the autotune
  lists do not offer, whose outcome is the NaN-poisoned float64 check (exact, wrong, hangs, does not
  build), run several times because a race may pass once::

      python -m matmul_bench tryit --out plots/results/nvidia-h200.json

  Each edit's ``old`` text must occur exactly once in the kernel file (a test holds it), so a change
  to a kernel that breaks a try-it fails CI.
"""

from __future__ import annotations

from typing import Any

TITLE_PREFIX = "Try it: "  # matmul_data.results.TRYIT_TITLE_PREFIX: the run titles the site sorts out


def cfg(bm: int, bn: int, bk: int, stages: int | None = None, swizzle: int | None = None) -> dict[str, Any]:
    config: dict[str, Any] = dict(block_m=bm, block_n=bn, block_k=bk)
    if stages is not None:
        config["num_stages"] = stages
    if swizzle is not None:
        config["swizzle_size"] = swizzle
    return config


# V9's tile at 8192^3 (its TUNED less the sharing and the raster groups that go with it).
V9_TILE: dict[str, Any] = {"block_m": 128, "block_n": 256, "consumers": 2, "num_stages": 3, "block_k": 64}

# name: (kernel file, class, pinned config, what changed from the chapter's tuned configuration)
# Each run's baseline ("try-vN") is the chapter's configuration, its kernel file's TUNED (a test holds it).
VARIANTS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "try-v1": ("matmul_v1.py", "MatmulV1", cfg(128, 128, 64), "V1 as tuned: a 128 x 128 tile"),
    "try-v1-64x128": ("matmul_v1.py", "MatmulV1", cfg(64, 128, 64), "a 64 x 128 tile: half the area per block"),
    "try-v2": ("matmul_v2.py", "MatmulV2", cfg(128, 128, 64, 3), "V2 as tuned: 3 stages"),
    "try-v2-s2": ("matmul_v2.py", "MatmulV2", cfg(128, 128, 64, 2), "2 stages: one K-tile loads ahead"),
    "try-v2-s4": ("matmul_v2.py", "MatmulV2", cfg(128, 128, 64, 4), "4 stages: three K-tiles load ahead"),
    "try-v3": ("matmul_v3.py", "MatmulV3", cfg(128, 128, 64, 3), "V3 as tuned: 3 stages"),
    "try-v3-s2": ("matmul_v3.py", "MatmulV3", cfg(128, 128, 64, 2), "2 stages: one K-tile loads under each MMA"),
    "try-v4": ("matmul_v4.py", "MatmulV4", cfg(128, 256, 64, 3, 1), "V4 as tuned: row-major tile order"),
    "try-v4-sw8": ("matmul_v4.py", "MatmulV4", cfg(128, 256, 64, 3, 8), "raster groups of 8 tile rows"),
    "try-v4-sw16": ("matmul_v4.py", "MatmulV4", cfg(128, 256, 64, 3, 16), "raster groups of 16 tile rows"),
    "try-v5": ("matmul_v5.py", "MatmulV5", cfg(128, 256, 64, 3, 1), "V5 as tuned: 3 stages"),
    "try-v5-s4": ("matmul_v5.py", "MatmulV5", cfg(128, 256, 64, 4, 1), "4 stages: 192 KB of ring"),
    "try-v9": ("matmul_v9.py", "MatmulV9", {**V9_TILE, "swizzle_size": 16, "share": "none"},
               "V9 as tuned at 8192^3: 128 x 256, no cluster"),
    "try-v9-b": ("matmul_v9.py", "MatmulV9", {**V9_TILE, "swizzle_size": 8, "share": "b"},
                 "pairs of blocks along M share B by TMA multicast"),
}  # fmt: skip


def _run(version: str, title: str, changes: list[str]) -> dict[str, Any]:
    base = f"try-{version}"
    return {"after": version, "title": TITLE_PREFIX + title, "baseline": base, "variants": [base, *changes],
            "kept": []}  # fmt: skip


# V0 has no timed try-it: its other tile (128 x 64) has the same area, and 128 x 128 does not build (EDITS).
RUNS: dict[str, dict[str, Any]] = {
    "try v1": _run("v1", "a smaller tile", ["try-v1-64x128"]),
    "try v2": _run("v2", "fewer or more stages", ["try-v2-s2", "try-v2-s4"]),
    "try v3": _run("v3", "a shallower ring for the producer", ["try-v3-s2"]),
    "try v4": _run("v4", "raster groups instead of row-major order", ["try-v4-sw8", "try-v4-sw16"]),
    "try v5": _run("v5", "a deeper ring", ["try-v5-s4"]),
    # Where L2 binds: K % 16 = 8 puts every other operand row off the 32-byte sectors (at 8192^3 the model says parity).
    "try v9 ragged K": {**_run("v9", "a cluster sharing B with rows off the sectors", ["try-v9-b"]),
                        "shape": [4096, 4096, 5000]},
}  # fmt: skip

# Try-its that recorded steps runs already answer: version -> [(steps run title, variant, what the reader changes)].
# The variant's step is over its run's baseline (v6-rows: V6 with plain rows and row-major order).
RECORDED: dict[str, list[tuple[str, str, str]]] = {
    "v6": [
        ("tile order at swizzle 16 and beyond, and clusters with TMA multicast", "v6-rows-sw16",
         "swizzle_size 1 instead of 16: the step that groups of 16 bought, given back"),
        ("the epilogue, stages, tile shape and tile order", "v6-chunks-sw8", "raster groups of 8 tile rows"),
        ("the epilogue, stages, tile shape and tile order", "v6-regs-s4",
         "store C from registers and spend the staging buffer's 64 KB on a fourth stage"),
    ],
    "v7": [
        ("swizzled chunks and stream-K at a short K (31.03 waves of tiles)", "v7",
         "V6's plain rows against V7's chunks, where the epilogue weighs most (V6 is the run's baseline)"),
        ("swizzled chunks and stream-K at 4096^3 (3.9 waves of tiles)", "v7-streamk",
         "experiments/v7_streamk.py: stream-K for the last wave on top of V7"),
    ],
    "v8": [
        ("a tile chosen per problem, at 5120^3 (6.06 waves of V7's tiles)", "v8",
         "make config_for return TUNED (V7's tile) at every shape: the model's choice, given back"),
        ("a tile chosen per problem, at 3072^3 (2.18 waves of V7's tiles)", "v8",
         "the same at 3072^3, where V7's tiles fill only 73% of the SMs' tile slots"),
    ],
}  # fmt: skip

# The checks every edit gets: fresh random inputs, C poisoned with NaN, every element against float64. All at
# N = K = 8192, so that Tilus builds once per edit; M = 1000 leaves a ragged last tile row. 8192^3 three times:
# a race may pass once.
CHECKS: tuple[tuple[int, int, int], ...] = (
    (8192, 8192, 8192),
    (8192, 8192, 8192),
    (8192, 8192, 8192),
    (1000, 8192, 8192),
    (1000, 8192, 8192),
)


def edit(title: str, *subs: tuple[str, str], config: dict[str, Any] | None = None) -> dict[str, Any]:
    """One edit: ``subs`` are (old text, new text), each old text exactly once in the file; ``config``
    overrides the tuned configuration."""
    return {"title": title, "edits": [list(s) for s in subs], "config": dict(config or {})}


# version -> name -> edit. The file is the chapter's kernel, matmul_<version>.py. The comment above each entry
# is our hypothesis, written before the run; the page shows only what the GPU recorded.
EDITS: dict[str, dict[str, dict[str, Any]]] = {
    "v0": {
        # Hypothesis: exact, or rarely wrong. Without the sync a warp may still copy the tiles into registers
        # while the next TMA overwrites them, but that load takes longer than the warps' skew.
        "no-sync": edit(
            "drop the self.sync() at the end of the K loop",
            ("            self.sync()\n", "            pass  # self.sync() removed\n"),
        ),
        # Hypothesis: does not build. A 128 x 128 fp32 accumulator over 4 warps is 128 registers per thread,
        # and mma.sync's operands must sit in registers too: Tilus refuses (register usage too high).
        "tile-128x128": edit("a 128 x 128 tile (block_m = block_n = 128)", config={"block_m": 128, "block_n": 128}),
    },
    "v1": {
        # Hypothesis: wrong. wait_group(1) lets the last K-tile's MMA still run when the epilogue reads acc, and
        # lets TMA overwrite a tile an MMA is still reading (single stage).
        "wait-group-1": edit(
            "wait_group(1) instead of wait_group(0)",
            ("self.wgmma.wait_group(0)  # and", "self.wgmma.wait_group(1)  # and"),
        ),
        # Hypothesis: exact. Each warp's wait_group(0) already waits for the warp group's MMA to have read the tiles.
        "no-sync": edit(
            "drop the self.sync() at the end of the K loop",
            ("            self.sync()\n", "            pass  # self.sync() removed\n"),
        ),
    },
    "v2": {
        # Hypothesis: wrong. On every second lap of the ring the wait asks for a phase that already completed,
        # returns at once, and the MMA reads a stage whose new bytes have not landed.
        "no-phase-flip": edit(
            "never flip the phase bit",
            ("            phase = phase ^ (stage == 0)\n", "            phase = phase  # never flips\n"),
        ),
        # Hypothesis: exact. The refill targets the stage read one iteration earlier, which wait_group(0) retired.
        "no-sync": edit(
            "drop the self.sync() after wait_group(0)",
            ("            self.sync()\n", "            pass  # self.sync() removed\n"),
        ),
    },
    "v3": {
        # Hypothesis: exact or rarely wrong: the stage goes back before the MMA has read it, but the refill
        # (an empty-barrier wake-up and a TMA load from L2 or HBM) takes longer than the MMA.
        "release-before-wait": edit(
            "hand the stage back before wait_group(0)",
            (
                "                self.wgmma.wait_group(0)  # and wait until it has finished reading shared memory\n"
                "                # Hand the stage back to the producer: no block-wide sync needed.\n"
                "                self.mbarrier.arrive(empty[stage])\n",
                "                self.mbarrier.arrive(empty[stage])  # handed back before the MMA has read it\n"
                "                self.wgmma.wait_group(0)\n",
            ),
        ),
        # Hypothesis: hangs. The producer waits for the empty barriers' first phase to complete, which needs the
        # consumers' arrivals, which need full tiles, which need the producer.
        "producer-phase-0": edit(
            "start the producer on phase 0 instead of 1",
            ("load_phase: uint32 = 1", "load_phase: uint32 = 0"),
        ),
    },
    "v4": {
        # Hypothesis: exact or rarely wrong (as in V3).
        "release-before-wait": edit(
            "hand the stage back before wait_group(0)",
            (
                "                self.wgmma.wait_group(0)  # the MMA has finished reading the stage...\n"
                "                pipe.consumer_release()  # ...so one elected thread of the group hands it back\n",
                "                pipe.consumer_release()  # handed back before the MMA has read it\n"
                "                self.wgmma.wait_group(0)\n",
            ),
        ),
        # Hypothesis: wrong or hangs. The full barrier completes once A's bytes land, before B's; B's late bytes
        # then count against the barrier's next phase.
        "expect-a-only": edit(
            "arm the full barrier with A's bytes only",
            ("transaction_bytes=sa[0].nbytes + sb[0].nbytes", "transaction_bytes=sa[0].nbytes"),
        ),
    },
    "v5": {
        # Hypothesis: exact or rarely wrong: K-tile k-1's stage goes back while its MMA may still run, but the
        # refill takes longer than the rest of that MMA.
        "release-before-wait": edit(
            "hand the previous stage back before wait_group(1)",
            (
                "                self.wgmma.wait_group(1)\n"
                "                if k_tile > 0:\n"
                "                    pipe.consumer_release()  # ...so its stage (the oldest held) goes back to the"
                " producer\n",
                "                if k_tile > 0:\n"
                "                    pipe.consumer_release()  # handed back before its MMA has retired\n"
                "                self.wgmma.wait_group(1)\n",
            ),
        ),
        # Hypothesis: exact: V4's wait with V5's lagging release is slower, never wrong.
        "wait-group-0": edit(
            "wait_group(0) instead of wait_group(1)",
            ("self.wgmma.wait_group(1)\n", "self.wgmma.wait_group(0)\n"),
        ),
        # Hypothesis: wrong: the epilogue reads acc while the last K-tile's MMA still writes it (unless ptxas
        # inserts the wait itself).
        "no-final-wait": edit(
            "drop the wait_group(0) before the epilogue",
            ("            self.wgmma.wait_group(0)\n", "            pass  # the final wait_group(0) removed\n"),
        ),
    },
    "v6": {
        # Hypothesis: exact: a missing proxy fence is a latent bug that this GPU and this schedule do not show.
        "no-proxy-fence": edit(
            "drop fence.proxy_async before the TMA store",
            (
                '                    self.fence.proxy_async(space="shared")  # make the generic-proxy writes visible'
                " to TMA\n",
                "",
            ),
        ),  # fmt: skip
        # Hypothesis: exact: the previous tile's store finished reading the buffer a whole main loop ago.
        "no-sync-before-store": edit(
            "drop the self.sync() before the staging buffer is overwritten",
            ("                    self.sync()  # ...before any thread of the group overwrites it\n", ""),
        ),
        # Hypothesis: wrong: one warp hands the buffer to TMA before the other three have written their rows.
        "no-sync-after-store": edit(
            "drop the self.sync() before the TMA store is issued",
            ("                    self.sync()  # every row is in the buffer\n", ""),
        ),
        # Hypothesis: does not build: 4 x 48 KB of stages + 64 KB of staging buffer exceed the 227 KB a block may use.
        "stages-4": edit("num_stages 4 with the staging buffer", config={"num_stages": 4}),
    },
    "v9": {
        # Hypothesis: wrong or hangs. Each block's full barrier would expect its own loads only, not the half of B
        # its peer multicasts into the stage: the barrier completes before that half has landed.
        "own-bytes-only": edit(
            "arm the full barrier with this block's own loads only (share B)",
            ("transaction_bytes=sa[0].nbytes + sb[0].nbytes)", "transaction_bytes=sa[0].nbytes + sb[0].nbytes // 2)"),
            config={"swizzle_size": 8, "share": "b"},
        ),
    },
    "v8": {
        # Hypothesis: exact. Without setmaxnreg every thread of the 16 warps keeps the launch's 128 registers; the
        # sm_90a build on the CPU (the build record's v8-no-setmaxnreg) fits in 122 with no spills, so nothing
        # the GPU computes changes: only how many registers a consumer could have used.
        "no-setmaxnreg": edit(
            "the 192 x 192 tile without setmaxnreg: no registers move from the producer to the consumers",
            ('setmaxnreg(tile_model.PRODUCER_REGISTERS, "dec")', "pass  # setmaxnreg removed"),
            ('setmaxnreg(self.tile.consumer_registers, "inc")', "pass  # setmaxnreg removed"),
            config={"block_m": 192, "block_n": 192, "consumers": 3, "num_stages": 3},
        ),
    },
}
