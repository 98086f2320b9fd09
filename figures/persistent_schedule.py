"""V6 persistent kernel: one block per SM walks tiles t, t + #SMs, ...; the store of C overlaps the next main loop."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

import style

NAME = "persistent_schedule"

NUM_SMS = 4  # drawn with 4 for readability; an H100 SXM or H200 has 132
TILE_ROWS, TILE_COLS = 4, 6
TILES_SHOWN = 3  # tiles of block 0 on the timeline
MAIN, EPI, STORE, LEAD = 18.0, 3.0, 7.0, 2.5  # schematic durations, not measured

WIDTH, HEIGHT = 90.0, 52.0
BLOCK_COLOURS = style.GROUP_COLOURS


def tiles_of(block: int, num_tiles: int = TILE_ROWS * TILE_COLS) -> list[int]:
    """The tiles a persistent block computes, in order: block, block + #SMs, block + 2 #SMs, ..."""
    return list(range(block, num_tiles, NUM_SMS))


def _grid(ax: Axes, x0: float, top: float) -> None:
    cw, ch = 5.0, 3.6
    for t in range(TILE_ROWS * TILE_COLS):
        r, c = divmod(t, TILE_COLS)
        block = t % NUM_SMS
        x, y = x0 + c * cw, top - (r + 1) * ch
        style.rect(ax, x, y, cw, ch, colours=BLOCK_COLOURS[block], linewidth=0.9 if block else 1.6)
        ax.text(
            x + cw / 2,
            y + ch / 2,
            str(t),
            ha="center",
            va="center",
            fontsize=style.SMALL + 0.5,
            fontweight="bold" if block == 0 else "normal",
            zorder=3,
        )
    style.note(ax, x0 + TILE_COLS * cw / 2, top - TILE_ROWS * ch - 1.6, "output tiles in raster order", ha="center")
    lx = x0 + TILE_COLS * cw + 3.0
    ax.text(
        lx,
        top - 0.8,
        f"grid = number of SMs ({NUM_SMS} drawn; 132 on an H100 SXM or H200)",
        ha="left",
        va="center",
        fontweight="bold",
    )
    for b in range(NUM_SMS):
        y = top - 4.0 - 2.6 * b
        style.rect(ax, lx, y - 0.8, 2.4, 1.6, colours=BLOCK_COLOURS[b], linewidth=1.6 if b == 0 else 0.9)
        tiles = ", ".join(str(t) for t in tiles_of(b)[:4])
        ax.text(lx + 3.2, y, f"block {b}: tiles {tiles}, ...", ha="left", va="center", fontsize=style.SMALL + 0.5)
    style.note(
        ax,
        lx,
        top - 4.0 - 2.6 * NUM_SMS - 0.4,
        "block b computes tiles b, b + #SMs, b + 2·#SMs, ... and never exits in between:\n"
        "no block launch per tile, and the pipeline keeps running across tile boundaries",
        va="top",
    )


def draw() -> Figure:
    fig, ax = style.new_figure(WIDTH, HEIGHT)
    ax.text(
        1.5,
        HEIGHT - 2.0,
        "Persistent kernel: each block walks its tiles; the store of C overlaps the next tile",
        fontsize=style.TITLE,
        fontweight="bold",
        va="center",
    )
    _grid(ax, 3.0, HEIGHT - 5.0)

    # timeline of block 0
    t0, scale, lane_h = 21.0, 0.92, 4.0
    lanes = {"producer": 19.0, "consumer": 12.5, "store": 6.0}
    names = {
        "producer": ("producer warp", "TMA loads of A, B"),
        "consumer": ("consumer groups", "WGMMA, then epilogue"),
        "store": ("TMA store", "shared → global C"),
    }
    end = LEAD + TILES_SHOWN * (MAIN + EPI) + STORE
    for key, y in lanes.items():
        name, detail = names[key]
        ax.text(
            t0 - 1.2, y + lane_h / 2 + 0.8, name, ha="right", va="center", fontsize=style.SMALL + 0.5, fontweight="bold"
        )
        style.note(ax, t0 - 1.2, y + lane_h / 2 - 1.0, detail, ha="right")
        style.rect(ax, t0, y, end * scale, lane_h, role="idle", linewidth=0.5, zorder=1)
    ax.text(1.5, lanes["producer"] + lane_h + 3.2, "block 0 over time", ha="left", va="center", fontweight="bold")
    for j, tile in enumerate(tiles_of(0)[:TILES_SHOWN]):
        start = LEAD + j * (MAIN + EPI)
        load_start = 0.0 if j == 0 else start - EPI - LEAD
        load_end = start + MAIN - LEAD
        style.rect(
            ax, t0 + load_start * scale, lanes["producer"], (load_end - load_start) * scale, lane_h, role="shared"
        )
        ax.text(
            t0 + (load_start + load_end) / 2 * scale,
            lanes["producer"] + lane_h / 2,
            f"k-tiles of tile {tile}",
            ha="center",
            va="center",
            fontsize=style.SMALL,
            zorder=3,
        )
        style.rect(ax, t0 + start * scale, lanes["consumer"], MAIN * scale, lane_h, role="tensor")
        ax.text(
            t0 + (start + MAIN / 2) * scale,
            lanes["consumer"] + lane_h / 2,
            f"main loop, tile {tile}",
            ha="center",
            va="center",
            fontsize=style.SMALL,
            zorder=3,
        )
        epi = start + MAIN
        style.rect(ax, t0 + epi * scale, lanes["consumer"], EPI * scale, lane_h, role="register")
        ax.text(
            t0 + (epi + EPI / 2) * scale,
            lanes["consumer"] - 1.0,
            "C→smem",
            ha="center",
            va="center",
            fontsize=style.SMALL - 0.5,
            color=style.ROLES["register"][1],
            zorder=3,
        )
        style.rect(ax, t0 + (epi + EPI) * scale, lanes["store"], STORE * scale, lane_h, role="register")
        ax.text(
            t0 + (epi + EPI + STORE / 2) * scale,
            lanes["store"] + lane_h / 2,
            f"store C {tile}",
            ha="center",
            va="center",
            fontsize=style.SMALL,
            zorder=3,
        )
        if j + 1 < TILES_SHOWN:  # the asynchronous store runs under the next tile's main loop
            style.note(
                ax,
                t0 + (epi + EPI + STORE + 0.8) * scale,
                lanes["store"] + lane_h / 2,
                f"← overlaps tile {tiles_of(0)[j + 1]}",
                color=style.ROLES["register"][1],
                zorder=3,
            )
    style.note(
        ax,
        3.0,
        2.6,
        "before the next C goes into shared memory, the consumers wait until the previous "
        "store has read it out; durations schematic, not measured",
    )
    return fig


if __name__ == "__main__":
    style.main_for(draw, NAME)
