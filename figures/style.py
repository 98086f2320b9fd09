"""Shared look of the tutorial's diagrams: palette, sizes, drawing helpers (boxes, cells, arrows, notes, legends).

Every diagram is drawn on one full-figure axes whose data units are tenths of an inch (a 70 x 30
figure is 7 in x 3 in), on a white rounded panel with dark text, so it reads the same on furo's
light and dark backgrounds. The font, the text measuring and the dateless, atomically written SVG are the
charts' kit (matmul_site.chartkit): `render` writes an SVG that is byte-for-byte the same on every run.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import matplotlib
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Rectangle

from matmul_site.chartkit import FONT, INK, PANEL, text_width_in, write_svg

UNIT_IN = 0.1  # one data unit is a tenth of an inch

# Text colours (INK and the white PANEL are the charts'): both have a contrast ratio far above 4.5:1 on the panel
# and on every fill below.
MUTED = "#4a4a4a"
PANEL_EDGE = "#c8c8c8"

# One role, one colour, in every figure: (fill, edge). Fills are light so dark text stays legible.
ROLES: dict[str, tuple[str, str]] = {
    "global": ("#e6e6e6", "#5f5f5f"),  # global memory (HBM)
    "shared": ("#d4e5f7", "#2866a0"),  # shared memory tiles, TMA traffic
    "register": ("#fde2c4", "#b25a0c"),  # register files, fragments, epilogue
    "tensor": ("#d3eed3", "#2d7a32"),  # tensor cores, WGMMA / mma.sync work
    "barrier": ("#e8dbf3", "#6a3d9a"),  # mbarriers, waits
    "idle": ("#f7f7f7", "#9a9a9a"),  # idle time, unused slots
    "alert": ("#fbd9d7", "#b3261e"),  # a stall or hazard the reader should notice
    "note": ("#fffbe6", "#a08a2c"),  # side notes
}

# Two CTAs or two warp groups side by side need two extra distinct hues (colour-blind safe pair).
GROUP_COLOURS: tuple[tuple[str, str], ...] = (
    ("#cfe3f6", "#1f5f99"),
    ("#fbdcc0", "#a8520a"),
    ("#d5efd6", "#2b7a30"),
    ("#ead9f2", "#6b3a8f"),
)

FONT_SIZE = 10.0  # body text in points; at the site's content width it renders near 13 px
SMALL = 8.5  # the smallest size any diagram uses
TITLE = 11.5

RC: dict[str, Any] = {
    "svg.fonttype": "none",  # keep text as text: selectable, searchable, small files
    "svg.hashsalt": "hopper-matmul-figures",  # fixed clip-path/marker ids instead of random ones
    "svg.id": None,
    "font.family": "sans-serif",
    "font.sans-serif": [FONT],  # ships with matplotlib, so layout is the same on every machine
    "font.size": FONT_SIZE,
    "text.color": INK,
    "text.usetex": False,
    "axes.unicode_minus": True,
    "path.simplify": False,
    "figure.dpi": 100,
    "savefig.dpi": 100,
}

SVG_METADATA = {"Creator": None, "Format": None, "Type": None}  # no tool or version (the kit drops the date)


@contextmanager
def figure_context() -> Iterator[None]:
    """Matplotlib defaults plus our RC: a user's matplotlibrc cannot change the output."""
    with matplotlib.rc_context():
        matplotlib.rcdefaults()
        matplotlib.rcParams.update(RC)
        yield


def new_figure(width: float, height: float, title: str | None = None) -> tuple[Figure, Axes]:
    """A figure of width x height units with the white rounded panel drawn; (0, 0) is bottom left."""
    fig = Figure(figsize=(width * UNIT_IN, height * UNIT_IN))
    fig.patch.set_alpha(0.0)  # outside the rounded panel the page shows through
    ax = fig.add_axes((0.0, 0.0, 1.0, 1.0))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_axis_off()
    ax.patch.set_alpha(0.0)
    inset = 0.15
    ax.add_patch(
        FancyBboxPatch(
            (inset, inset),
            width - 2 * inset,
            height - 2 * inset,
            boxstyle="round,pad=0,rounding_size=1.2",
            facecolor=PANEL,
            edgecolor=PANEL_EDGE,
            linewidth=0.8,
            zorder=0,
        )
    )
    if title:
        ax.text(1.5, height - 1.6, title, fontsize=TITLE, fontweight="bold", va="center", ha="left")
    return fig, ax


def box(
    ax: Axes,
    x: float,
    y: float,
    w: float,
    h: float,
    label: str | None = None,
    *,
    role: str = "shared",
    detail: str | None = None,
    colours: tuple[str, str] | None = None,
    fontsize: float = FONT_SIZE,
    bold: bool = True,
    dashed: bool = False,
    rounding: float = 0.5,
    linewidth: float = 1.1,
    zorder: float = 2,
) -> FancyBboxPatch:
    """A rounded box with (x, y) its bottom-left corner, a bold label and an optional smaller detail line."""
    fill, edge = colours if colours is not None else ROLES[role]
    patch = FancyBboxPatch(
        (x, y),
        w,
        h,
        boxstyle=f"round,pad=0,rounding_size={min(rounding, w / 2, h / 2)}",
        facecolor=fill,
        edgecolor=edge,
        linewidth=linewidth,
        linestyle=(0, (4, 2.5)) if dashed else "-",
        zorder=zorder,
    )
    ax.add_patch(patch)
    cx, cy = x + w / 2, y + h / 2
    weight = "bold" if bold else "normal"
    if label and detail:
        ax.text(cx, cy + 0.1, label, ha="center", va="bottom", fontsize=fontsize, fontweight=weight, zorder=zorder + 1)
        ax.text(cx, cy - 0.1, detail, ha="center", va="top", fontsize=SMALL, color=MUTED, zorder=zorder + 1)
    elif label:
        ax.text(cx, cy, label, ha="center", va="center", fontsize=fontsize, fontweight=weight, zorder=zorder + 1)
    return patch


def rect(
    ax: Axes,
    x: float,
    y: float,
    w: float,
    h: float,
    *,
    role: str = "shared",
    colours: tuple[str, str] | None = None,
    linewidth: float = 0.8,
    zorder: float = 2,
    hatch: str | None = None,
) -> Rectangle:
    """A square-cornered cell (tiles, matrix panels, timeline bars)."""
    fill, edge = colours if colours is not None else ROLES[role]
    patch = Rectangle((x, y), w, h, facecolor=fill, edgecolor=edge, linewidth=linewidth, zorder=zorder, hatch=hatch)
    ax.add_patch(patch)
    return patch


def arrow(
    ax: Axes,
    start: tuple[float, float],
    end: tuple[float, float],
    label: str | None = None,
    *,
    colour: str = INK,
    label_offset: tuple[float, float] = (0.0, 0.6),
    fontsize: float = SMALL,
    dashed: bool = False,
    bend: float = 0.0,
    both: bool = False,
    linewidth: float = 1.3,
    label_ha: str = "center",
    zorder: float = 4,
) -> FancyArrowPatch:
    """A filled-head arrow from start to end, with an optional label near its midpoint."""
    patch = FancyArrowPatch(
        start,
        end,
        arrowstyle="<|-|>" if both else "-|>",
        mutation_scale=11,
        color=colour,
        linewidth=linewidth,
        linestyle=(0, (4, 2.5)) if dashed else "-",
        connectionstyle=f"arc3,rad={bend}",
        shrinkA=1.5,
        shrinkB=1.5,
        zorder=zorder,
    )
    ax.add_patch(patch)
    if label:
        mx = (start[0] + end[0]) / 2 + label_offset[0]
        my = (start[1] + end[1]) / 2 + label_offset[1]
        ax.text(mx, my, label, ha=label_ha, va="center", fontsize=fontsize, color=colour, zorder=zorder + 1)
    return patch


def note(ax: Axes, x: float, y: float, s: str, *, fontsize: float = SMALL, ha: str = "left", **kw: Any) -> None:
    """Muted explanatory text."""
    ax.text(x, y, s, ha=ha, va=kw.pop("va", "center"), fontsize=fontsize, color=kw.pop("color", MUTED), **kw)


def text_width(s: str, fontsize: float = FONT_SIZE, bold: bool = False) -> float:
    """Width in data units of one line of text, as its glyphs' outlines reach (the kit's font and measure)."""
    return text_width_in(s, fontsize, "bold" if bold else "normal", ink=True) / UNIT_IN


def legend_row(ax: Axes, x: float, y: float, items: list[tuple[tuple[str, str], str]], *, gap: float = 2.0) -> float:
    """A one-line legend of ((fill, edge), text) swatches starting at (x, y); returns the x where it ends."""
    for (fill, edge), text in items:
        ax.add_patch(Rectangle((x, y - 0.5), 1.6, 1.0, facecolor=fill, edgecolor=edge, linewidth=0.8, zorder=3))
        ax.text(x + 2.1, y, text, ha="left", va="center", fontsize=SMALL, zorder=3)
        x += 2.1 + text_width(text, SMALL) + gap
    return x - gap


def render(draw: Callable[[], Figure], out: Path, png: Path | None = None) -> Path:
    """Draw with our RC active and write the SVG atomically (plus a PNG preview when asked)."""
    with figure_context():
        fig = draw()
        write_svg(fig, out, metadata=SVG_METADATA, facecolor="none")
        if png is not None:
            fig.savefig(png, format="png", dpi=150, facecolor="#131416")  # preview on furo's dark background
    return out


def main_for(draw: Callable[[], Figure], name: str, argv: list[str] | None = None) -> None:
    """`python figures/<name>.py [--out DIR] [--png DIR]`: what each figure script runs as __main__."""
    parser = argparse.ArgumentParser(description=f"Draw figures/{name}.svg")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent, help="folder for the SVG")
    parser.add_argument("--png", type=Path, default=None, help="also write a PNG preview into this folder")
    args = parser.parse_args(argv)
    png = None
    if args.png is not None:
        args.png.mkdir(parents=True, exist_ok=True)
        png = args.png / f"{name}.png"
    print(render(draw, args.out / f"{name}.svg", png))
