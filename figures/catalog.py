"""The tutorial's diagrams: name (figures/<name>.svg, drawn by figures/<name>.py), chapter, caption, alt text.

Pure data, no matplotlib import, so the docs build and its tests can list the figures cheaply.
"""

from __future__ import annotations

from typing import NamedTuple


class FigureInfo(NamedTuple):
    name: str
    chapter: str
    caption: str
    alt: str


FIGURES: tuple[FigureInfo, ...] = (
    FigureInfo(
        "mma_sync_vs_wgmma",
        "V0, V1",
        "Operand paths: mma.sync needs A and B copied from shared memory into each warp's registers; "
        "WGMMA reads both straight from shared memory through descriptors.",
        "Two rows of boxes. Top, V0: global memory, TMA into shared memory, ldmatrix or load_shared into "
        "registers, mma.sync m16n8k16 issued by one warp, fp32 accumulators in registers. Bottom, V1: global "
        "memory, TMA into shared memory, then WGMMA m64nNk16 issued by a warp group of four warps reads A and B "
        "from shared memory by descriptor, an arrow that skips the register column, labelled no register copy of "
        "operands; accumulators stay in registers.",
    ),
    FigureInfo(
        "stage_ring",
        "V2, V3",
        "Shared memory as a ring of stages: k-tile i lives in stage i mod num_stages; a full barrier says its "
        "bytes landed, an empty barrier says the consumer is done, and the phase bit flips on every wrap-around.",
        "Four stage buffers in a row, each holding an A tile and a B tile, with a full and an empty barrier "
        "under each. The producer (TMA) is loading a later k-tile into one stage while the consumer (WGMMA) "
        "reads an earlier one. A strip below maps k-tiles 0 to 11 to stages 0 to 3 and shows the phase bit "
        "alternating 0, 1, 0 per round.",
    ),
    FigureInfo(
        "warp_specialization",
        "V3, V4",
        "Warp specialization: one producer warp issues TMA loads, consumer warp groups issue WGMMA; they meet "
        "only at the full and empty barriers of the shared stages.",
        "Two timelines. The producer warp issues TMA loads for k-tiles into stages 0 to 3 and then waits on an "
        "empty barrier before reusing stage 0. The consumer warp group waits on each full barrier, runs WGMMA "
        "on that stage and arrives on its empty barrier. Below, the warp counts: V3 has 4 consumer warps plus "
        "1 producer warp, 5 warps; V4 has two consumer warp groups of 4 plus 1 producer, 9 warps.",
    ),
    FigureInfo(
        "two_consumer_split",
        "V4",
        "Two consumer warp groups share one output tile: each owns half of its rows and its own A slab, "
        "and both read the same B tile.",
        "An output tile of 128 by 256 split into a top half for consumer warp group 0 and a bottom half for "
        "consumer warp group 1. To its left, the A tile in shared memory split into two 64 by block_k slabs, "
        "one per group. Above, a single B tile that both groups read.",
    ),
    FigureInfo(
        "raster_order",
        "V6",
        "Raster order and the L2 working set: the first wave of blocks touches fewer A and B panels when "
        "tiles are walked in groups of 16 tile-rows, column by column, than in row-major order.",
        "Two grids of output tiles side by side. Left, row-major launch order: the first wave covers four full "
        "tile-rows and part of a fifth, touching 5 A row-panels and all 32 B column-panels. Right, grouped "
        "order: the first wave covers 16 tile-rows by eight and a quarter columns, touching 16 A row-panels and "
        "9 B column-panels. Touched panels are shaded on the matrix edges.",
    ),
    FigureInfo(
        "wgmma_in_flight",
        "V5",
        "WGMMA groups in flight: with wait_group(0) the tensor cores idle between groups, each waited for "
        "before the next is issued; with wait_group(1) the next group is issued first and a stage is released "
        "only after its group retired.",
        "Two timelines of the consumer warp group and the tensor cores. Top, wait_group(0): issue, wait, release, "
        "issue again, with idle gaps on the tensor cores. Bottom, wait_group(1): group k+1 is issued while "
        "group k still runs, the tensor cores stay busy, and the stage of group k-1 is released after wait_group(1) "
        "returns.",
    ),
    FigureInfo(
        "persistent_schedule",
        "V6",
        "Persistent kernel: one block per SM walks tiles t, t + #SMs, t + 2 #SMs, ...; the store of tile i's C "
        "overlaps the main loop of its next tile.",
        "Top, a grid of output tiles numbered in raster order and coloured by the block that computes them, with "
        "four blocks shown for readability, and each block's list of tiles. Below, a timeline for block 0: the "
        "producer keeps loading k-tiles across tile boundaries, the consumers run the main loop of tile i, "
        "write C to shared memory, and the TMA store of that C runs while the main loop of the next tile proceeds.",
    ),
)

FIGURE_NAMES: tuple[str, ...] = tuple(info.name for info in FIGURES)
