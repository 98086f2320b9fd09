"""V0 vs V1 operand paths: mma.sync stages A and B through registers, WGMMA reads them from shared memory."""

from __future__ import annotations

from matplotlib.axes import Axes
from matplotlib.figure import Figure

import style

NAME = "mma_sync_vs_wgmma"

WIDTH, HEIGHT = 88.0, 35.0
BOX_H = 7.5
# (x, width) of the five columns: global memory, shared memory, operand registers, tensor cores, accumulators
COLS = ((1.5, 10.0), (17.5, 11.0), (37.0, 12.0), (54.0, 15.0), (74.0, 12.5))


def _header(ax: Axes, y: float, title: str, subtitle: str) -> None:
    size = style.FONT_SIZE + 0.5
    ax.text(1.5, y, title, fontsize=size, fontweight="bold", va="center")
    style.note(ax, 1.5 + style.text_width(title, size, bold=True) + 1.5, y, subtitle)


def _box(ax: Axes, col: int, y: float, label: str, detail: str, role: str, **kw) -> tuple[float, float, float]:
    """Draw column `col` of a row; return its left edge, right edge and vertical centre."""
    x, w = COLS[col]
    style.box(ax, x, y, w, BOX_H, label, detail=detail, role=role, **kw)
    return x, x + w, y + BOX_H / 2


def draw() -> Figure:
    fig, ax = style.new_figure(WIDTH, HEIGHT)

    # V0: each warp copies its own A and B fragments from shared memory into registers, then mma.sync.
    y0 = 19.5
    _header(ax, y0 + BOX_H + 2.5, "V0  mma.sync", "synchronous, issued per warp; A and B must first be in registers")
    g = _box(ax, 0, y0, "global", "A, B (fp16)", "global")
    s = _box(ax, 1, y0, "shared", "A tile, B tile", "shared")
    r = _box(ax, 2, y0, "registers", "A, B fragments\nof each thread", "register")
    t = _box(ax, 3, y0, "tensor cores", "mma.sync.m16n8k16\n1 warp = 32 threads", "tensor")
    c = _box(ax, 4, y0, "registers", "fp32 accumulators\nD ← A·B + D", "register")
    style.arrow(ax, (g[1], g[2]), (s[0], s[2]), "TMA", label_offset=(0, 0.9))
    style.arrow(ax, (s[1], s[2]), (r[0], r[2]), "ldmatrix /\nload_shared", label_offset=(0, 2.0))
    style.arrow(ax, (r[1], r[2]), (t[0], t[2]), "A, B", label_offset=(0, 0.9))
    style.arrow(ax, (t[1], t[2]), (c[0], c[2]), both=True)

    # V1: the warp group hands the tensor cores two shared-memory descriptors; A and B never enter registers.
    y1 = 3.0
    _header(
        ax, y1 + BOX_H + 2.5, "V1  WGMMA", "asynchronous, issued by a warp group: fence, mma, commit_group, wait_group"
    )
    g = _box(ax, 0, y1, "global", "A, B (fp16)", "global")
    s = _box(ax, 1, y1, "shared", "A tile, B tile\n(swizzled)", "shared")
    t = _box(ax, 3, y1, "tensor cores", "wgmma m64nNk16\n4 warps = 128 threads", "tensor")
    c = _box(ax, 4, y1, "registers", "fp32 accumulators\nD ← A·B + D", "register")
    blue = style.ROLES["shared"][1]
    style.arrow(ax, (g[1], g[2]), (s[0], s[2]), "TMA", label_offset=(0, 0.9))
    style.arrow(ax, (s[1], s[2]), (t[0], t[2]), colour=blue, linewidth=1.8)
    mid = (s[1] + t[0]) / 2
    ax.text(mid, s[2] + 1.0, "A and B read by descriptor", ha="center", va="bottom", fontsize=style.SMALL, color=blue)
    style.note(ax, mid, s[2] - 1.0, "no register copy of operands", ha="center", va="top")
    style.arrow(ax, (t[1], t[2]), (c[0], c[2]), both=True)
    return fig


if __name__ == "__main__":
    style.main_for(draw, NAME)
