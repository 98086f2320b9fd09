"""Raster order (V6): which A row-panels and B column-panels the first wave of blocks touches."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

from matplotlib.axes import Axes
from matplotlib.figure import Figure

import style
from matmul_data import loader


def _raster_model() -> ModuleType:
    """The kernels' own raster model, so that the figure draws exactly the order V4 launches; with Tilus hidden,
    raster.py skips its in-kernel class: no Tilus, no torch, and a kernel's `raster` module is left untouched."""
    return loader.load_file(loader.KERNEL_DIR / "raster.py", "_raster_model_for_figures", without=("tilus",))


tile_of = _raster_model().tile_of

NAME = "raster_order"

TILE_ROWS, TILE_COLS = 32, 32  # V4's 128 x 256 tiles on M = 4096, N = 8192; the first wave is the same at 8192³
WAVE = 132  # blocks running at once: one per SM on an H100 SXM or H200
GROUP = 16  # tile-rows per raster group: V6's
BLOCK_M, BLOCK_N, K_SIZE = 128, 256, 8192  # V4's tile and K: an A row-panel is 2 MiB, a B column-panel 4 MiB

WIDTH, HEIGHT = 90.0, 54.0
CELL = 0.9
GRID = TILE_ROWS * CELL

WAVE_COLOURS = ("#9cc3e6", "#1f5f99")
TOUCHED = ("#f6b98a", "#a8520a")
UNTOUCHED = ("#f2f2f2", "#b0b0b0")


def row_major(pid: int) -> tuple[int, int]:
    """Launch index -> (tile row, tile column), one tile-row after another (swizzle_size 1 in V4)."""
    return tile_of(pid, TILE_ROWS, TILE_COLS, 1)


def grouped(pid: int) -> tuple[int, int]:
    """Launch index -> (tile row, tile column): bands of GROUP tile-rows, each walked column by column."""
    return tile_of(pid, TILE_ROWS, TILE_COLS, GROUP)


def panels_touched(order: Callable[[int], tuple[int, int]]) -> tuple[set[int], set[int]]:
    """Distinct A row-panels and B column-panels read by the first WAVE blocks."""
    tiles = [order(pid) for pid in range(WAVE)]
    return {r for r, _ in tiles}, {c for _, c in tiles}


def panel_mib(rows: int = 1, cols: int = 0) -> float:
    """MiB of `rows` A row-panels and `cols` B column-panels of fp16: the panels differ in size, so count bytes."""
    return (rows * BLOCK_M + cols * BLOCK_N) * K_SIZE * 2 / 2**20


def _grid(ax: Axes, x0: float, title: str, order) -> None:
    top = 8.0 + GRID
    rows, cols = panels_touched(order)
    ax.text(x0 + GRID / 2, top + 6.2, title, ha="center", va="center", fontweight="bold")
    # matrix edges: A row-panel r feeds tile-row r, B column-panel c feeds tile-column c
    for r in range(TILE_ROWS):
        style.rect(
            ax, x0 - 2.2, top - (r + 1) * CELL, 1.2, CELL, colours=TOUCHED if r in rows else UNTOUCHED, linewidth=0.4
        )
    for c in range(TILE_COLS):
        style.rect(ax, x0 + c * CELL, top + 1.0, CELL, 1.2, colours=TOUCHED if c in cols else UNTOUCHED, linewidth=0.4)
    style.note(ax, x0 - 2.8, top + 1.6, "B", ha="right", color=style.INK, fontweight="bold")
    style.note(ax, x0 - 1.6, top + 3.4, "A", ha="center", color=style.INK, fontweight="bold")
    style.rect(ax, x0, top - GRID, GRID, GRID, colours=UNTOUCHED, linewidth=0.6, zorder=1)
    for pid in range(WAVE):
        r, c = order(pid)
        style.rect(ax, x0 + c * CELL, top - (r + 1) * CELL, CELL, CELL, colours=WAVE_COLOURS, linewidth=0.3)
    # the walk of the first blocks in launch order
    path = [order(pid) for pid in range(min(WAVE, 3 * GROUP + 4))]
    xs = [x0 + (c + 0.5) * CELL for _, c in path]
    ys = [top - (r + 0.5) * CELL for r, _ in path]
    ax.plot(xs, ys, color=style.INK, linewidth=0.9, zorder=5)
    ax.plot(xs[:1], ys[:1], marker="o", markersize=3.5, color=style.INK, zorder=5)
    style.arrow(ax, (xs[-2], ys[-2]), (xs[-1], ys[-1]), linewidth=0.9, zorder=5)
    total = len(rows) + len(cols)
    ax.text(
        x0 + GRID / 2,
        5.2,
        f"{len(rows)} A row-panels + {len(cols)} B column-panels = {total}",
        ha="center",
        va="center",
        fontsize=style.FONT_SIZE,
        fontweight="bold",
    )
    style.note(
        ax,
        x0 + GRID / 2,
        2.8,
        f"{panel_mib(len(rows), len(cols)):.0f} MiB at K = {K_SIZE}: "
        f"A panel {panel_mib(1, 0):.0f} MiB, B panel {panel_mib(0, 1):.0f} MiB",
        ha="center",
    )


def draw() -> Figure:
    fig, ax = style.new_figure(WIDTH, HEIGHT)
    ax.text(
        1.5,
        HEIGHT - 2.0,
        f"First wave of {WAVE} blocks on a {TILE_ROWS} × {TILE_COLS} grid of output tiles",
        fontsize=style.TITLE,
        fontweight="bold",
        va="center",
    )
    _grid(ax, 9.0, "row-major launch order", row_major)
    _grid(ax, 55.0, f"groups of {GROUP} tile-rows, column by column", grouped)
    style.legend_row(
        ax,
        9.0,
        HEIGHT - 5.5,
        [
            (WAVE_COLOURS, f"tiles of the first {WAVE} blocks"),
            (TOUCHED, "panel read by the wave"),
            (UNTOUCHED, "not yet read"),
        ],
        gap=3.0,
    )
    return fig


if __name__ == "__main__":
    style.main_for(draw, NAME)
