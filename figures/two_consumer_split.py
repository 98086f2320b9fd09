"""V4 tile split: two consumer warp groups own the top and bottom halves of a block_m x block_n output tile."""

from __future__ import annotations

from matplotlib.figure import Figure

import style

NAME = "two_consumer_split"

BLOCK_M, BLOCK_N, BLOCK_K = 128, 256, 64  # the tuned V4-V6 tile; the split works for any block_m of 64 per group
GROUPS = 2
THREADS_PER_GROUP = 128
SCALE = 6.0  # matrix elements per drawing unit

WIDTH, HEIGHT = 106.0, 46.0


def accumulator_registers_per_thread() -> int:
    """fp32 accumulators each consumer thread holds for its slab of the output tile."""
    return (BLOCK_M // GROUPS) * BLOCK_N // THREADS_PER_GROUP


def wgmmas_per_k16() -> int:
    """m64nNk16 instructions each consumer warp group issues per 16-wide step of K (64 rows each)."""
    return BLOCK_M // GROUPS // 64


def stage_bytes() -> int:
    """Shared memory of one pipeline stage: the whole A tile plus the B tile, fp16."""
    return (BLOCK_M + BLOCK_N) * BLOCK_K * 2


def draw() -> Figure:
    fig, ax = style.new_figure(WIDTH, HEIGHT)
    ax.text(
        1.5,
        HEIGHT - 2.0,
        f"Two consumer warp groups share a {BLOCK_M} × {BLOCK_N} output tile",
        fontsize=style.TITLE,
        fontweight="bold",
        va="center",
    )

    a_w, b_h = BLOCK_K / SCALE, BLOCK_K / SCALE
    c_w, c_h = BLOCK_N / SCALE, BLOCK_M / SCALE
    cx, cy = 15.0, 6.0
    ax_x = cx - 2.0 - a_w
    slab = c_h / GROUPS
    colours = (style.GROUP_COLOURS[2], ("#b5dfb7", "#2d7a32"))
    for g in range(GROUPS):
        y = cy + c_h - (g + 1) * slab
        rows = f"rows {g * BLOCK_M // GROUPS}–{(g + 1) * BLOCK_M // GROUPS - 1}"
        style.rect(ax, cx, y, c_w, slab, colours=colours[g], linewidth=1.2)
        ax.text(cx + c_w / 2, y + slab / 2 + 1.2, f"group {g}", ha="center", va="center", fontweight="bold", zorder=3)
        style.note(ax, cx + c_w / 2, y + slab / 2 - 1.0, rows, ha="center", color=style.INK, zorder=3)
        style.rect(ax, ax_x, y, a_w, slab, role="shared", linewidth=1.2)
        ax.text(
            ax_x + a_w / 2,
            y + slab / 2,
            f"A slab {g}\n{BLOCK_M // GROUPS} × {BLOCK_K}",
            ha="center",
            va="center",
            fontsize=style.SMALL,
            zorder=3,
            rotation=90,
        )
        # what each group does, beside its half
        tx = cx + c_w + 3.0
        ty = y + slab / 2
        ax.text(
            tx,
            ty + 3.4,
            f"consumer warp group {g} (warps {4 * g}–{4 * g + 3})",
            ha="left",
            va="center",
            fontweight="bold",
        )
        lines = [
            f"reads A slab {g} and the whole B tile from shared memory",
            f"accumulates C rows {g * BLOCK_M // GROUPS}–{(g + 1) * BLOCK_M // GROUPS - 1}: "
            f"{BLOCK_M // GROUPS} × {BLOCK_N} fp32 = {accumulator_registers_per_thread()} registers per thread",
            f"per k16 step: {wgmmas_per_k16()} × WGMMA m64n{BLOCK_N}k16",
        ]
        for i, line in enumerate(lines):
            style.note(ax, tx, ty + 1.0 - 2.2 * i, line, color=style.INK if i == 1 else style.MUTED)
    ax.plot(
        [cx - 0.6, cx + c_w + 0.6],
        [cy + slab, cy + slab],
        color=style.INK,
        linewidth=1.6,
        linestyle=(0, (3, 2)),
        zorder=4,
    )

    # the B tile sits above C: its rows are C's columns (C = A · B^T), so it is drawn transposed
    by = cy + c_h + 2.0
    style.rect(ax, cx, by, c_w, b_h, role="shared", linewidth=1.2)
    ax.text(
        cx + c_w / 2,
        by + b_h / 2,
        f"B tile, drawn transposed\n{BLOCK_N} × {BLOCK_K}",
        ha="center",
        va="center",
        fontsize=style.SMALL,
        zorder=3,
    )
    style.note(ax, cx + c_w + 3.0, by + b_h / 2 + 1.2, "one B tile per stage, read by both groups", color=style.INK)
    style.note(ax, ax_x + a_w / 2, by + b_h / 2, f"A tile\n{BLOCK_M} × {BLOCK_K}", ha="center", color=style.INK)
    style.note(
        ax,
        cx + c_w + 3.0,
        by + b_h / 2 - 1.2,
        f"one stage: A {BLOCK_M} × {BLOCK_K} + B {BLOCK_N} × {BLOCK_K} fp16 = {stage_bytes() // 1024} KB",
    )
    style.note(ax, cx + c_w / 2, cy - 2.2, "C tile (fp32 in registers)", ha="center", color=style.INK)
    return fig


if __name__ == "__main__":
    style.main_for(draw, NAME)
