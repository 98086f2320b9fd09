"""What every chart shares: style, colours, a figure with deterministic SVG output, the "not measured" panel,
and the measured text layout that keeps every label readable on a phone (the charts: :mod:`matmul_site.charts`).

The one kit of the charts and the diagrams (figures/style.py draws the diagrams' boxes and arrows on it): one font,
one way to measure text in it, one dateless SVG and one atomic write of it."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never a window, never a GPU: charts are files

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.font_manager import FontProperties  # noqa: E402
from matplotlib.textpath import TextPath, TextToPath  # noqa: E402

from matmul_data import files  # noqa: E402

FONT = "DejaVu Sans"  # ships with matplotlib: the same glyphs, so the same layout, on every machine

# Colours: dark ink on a white rounded panel reads the same on light and dark page themes.
INK = "#1b1b1b"
MUTED = "#5f5f5f"
GRID = "#e3e3e3"
PANEL = "#ffffff"
HIGHLIGHT = "#1f6fb2"  # the version a chapter is about
EARLIER = "#7f9fbf"  # versions the reader has already seen
LATER = "#c9d6e3"  # a faint preview of what comes next
CUBLAS = "#b3261e"
PEAK = "#6a3d9a"
# The rule's verdicts (matmul_data.stats): a step that pays, one that costs, one within the band, one unresolved.
VERDICT_COLOURS: dict[str, str] = {"pays": "#2d7a32", "costs": "#b3261e", "within": "#5b7fa6", "unresolved": "#b0b0b0"}
# Sweep lines: our versions in blues and greens, cuBLAS red as everywhere, peers in the remaining hues.
SERIES: dict[str, str] = {"v4": "#7f9fbf", "v5": "#2d7a32", "v6": HIGHLIGHT, "cublas": CUBLAS}
OTHER_SERIES = ("#6a3d9a", "#a8520a", "#5f5f5f", "#b08a00")

# The width, in CSS px, at which a 390 px phone shows a chart (the figure's box there, inside its panel's
# padding); the browser check at phone width holds it. Text must read at 9 pt or more at that width.
PHONE_CHART_PX = 344
# Every chart is this wide: an SVG of W inches is W * 96 CSS px, so a phone shows it at 344 / 432 of its size,
# and text of TEXT_PT reads there at 9.2 pt. The charts are drawn for that width (labels above bars, rows
# rather than columns); on a desktop they show at their natural size.
WIDTH_IN = 4.5
TEXT_PT = 11.5
TITLE_PT = 12.5
LINE_IN = TEXT_PT * 1.3 / 72  # one line of text, with its spacing
PAD_IN = 0.12
RIGHT_IN = 0.25  # room for half of the last tick label on the x axis

STYLE: dict[str, Any] = {
    "svg.hashsalt": "hopper-matmul",  # fixed element ids: the same bytes on every draw
    "svg.fonttype": "path",  # glyphs as paths: the chart looks the same whatever fonts the reader has
    "font.family": FONT,
    "font.size": TEXT_PT,  # labels, ticks and legends are "medium": this size
    "axes.titlesize": TITLE_PT,
    "figure.facecolor": PANEL, "axes.facecolor": PANEL, "savefig.facecolor": PANEL,
    "text.color": INK, "axes.labelcolor": INK, "axes.edgecolor": MUTED, "xtick.color": INK, "ytick.color": INK,
    "axes.spines.top": False, "axes.spines.right": False,
    "axes.grid": True, "grid.color": GRID, "axes.axisbelow": True,
}  # fmt: skip


LEGEND = dict(frameon=False, alignment="left", handlelength=1.6, columnspacing=0.9, borderaxespad=0.3)
DATELESS = {"Date": None}  # matplotlib stamps an SVG with the time it was saved: left out, a redraw is the same bytes
_TEXT_PATHS = TextToPath()


class DeterministicFigure(Figure):
    """A figure whose SVG carries no date, so two draws of the same data give the same bytes."""

    def savefig(self, fname: Any, *args: Any, **kwargs: Any) -> None:
        fmt = kwargs.get("format") or Path(str(fname)).suffix.lstrip(".") or "svg"
        if fmt == "svg":
            kwargs["metadata"] = {**(kwargs.get("metadata") or {}), **DATELESS}
        super().savefig(fname, *args, **kwargs)


def new_figure() -> tuple[Figure, Any]:
    """A figure in the shared style, WIDTH_IN wide, with one axes; charts size it to their rows (:func:`fit`)."""
    plt.rcParams.update(STYLE)  # the plot directive resets rcParams before each script; set them again
    fig = plt.figure(FigureClass=DeterministicFigure, figsize=(WIDTH_IN, 3.6))
    return fig, fig.add_subplot(1, 1, 1)


def text_width_in(text: str, size: float = TEXT_PT, weight: str = "normal", *, ink: bool = False) -> float:
    """How wide a line of text is drawn in FONT, in inches (the widest line of a multi-line text): the advance that
    lays out what follows it, or with ``ink`` the extent of the glyphs' outlines."""
    font = FontProperties(family=FONT, size=size, weight=weight)
    if ink:
        widths = [TextPath((0, 0), line, size=size, prop=font).get_extents().width for line in text.splitlines()]
    else:
        widths = [_TEXT_PATHS.get_text_width_height_descent(line, font, ismath=False)[0] for line in text.splitlines()]
    return max(widths, default=0.0) / 72


def wrap(text: str, width_in: float, size: float = TEXT_PT, weight: str = "normal") -> str:
    """The text broken at spaces into lines that each fit ``width_in`` (a word longer than that stays whole)."""
    lines: list[str] = []
    for word in text.split(" "):
        if lines and text_width_in(f"{lines[-1]} {word}", size, weight) <= width_in:
            lines[-1] = f"{lines[-1]} {word}"
        else:
            lines.append(word)
    return "\n".join(lines)


def lines_in(text: str) -> int:
    return text.count("\n") + 1


def fit(
    fig: Figure,
    axes: list[Any],
    heights_in: list[float],
    *,
    top_in: float,
    bottom_in: float,
    left_in: float = PAD_IN,
    gap_in: float = 0.0,
) -> None:
    """Size the figure to its content: axes stacked top-down with the given heights, margins in inches."""
    height = top_in + sum(heights_in) + gap_in * (len(axes) - 1) + bottom_in
    fig.set_size_inches(WIDTH_IN, height)
    y = height - top_in
    for ax, tall in zip(axes, heights_in, strict=True):
        y -= tall
        ax.set_position((left_in / WIDTH_IN, y / height, (WIDTH_IN - left_in - RIGHT_IN) / WIDTH_IN, tall / height))
        y -= gap_in


def legend_below(
    fig: Figure,
    handles: list[Any],
    labels: list[str],
    *,
    title: str | None = None,
    above_in: float = 0.0,
    at_top: bool = False,
) -> float:
    """A legend at the bottom left of the figure (or ``above_in`` inches above it, over another legend; or, with
    ``at_top``, at its top left, over the first panel), in as many columns as fit its width; returns its height."""
    entry = [text_width_in(label) + 0.45 for label in labels]  # a handle, its gap and the label
    columns = 1
    for tried in range(len(labels), 1, -1):
        rows = -(-len(labels) // tried)
        widths = [max(entry[c * rows : (c + 1) * rows], default=0.0) for c in range(tried)]
        if sum(widths) + 0.2 * (tried - 1) <= WIDTH_IN - 2 * PAD_IN:
            columns = tried
            break
    rows = -(-len(labels) // columns) + (1 if title else 0)
    # At the top: the figure's own top; else inches from the bottom (the figure is sized to its rows afterwards).
    loc, anchor, frame = ("upper left", (0, 1), fig.transFigure) if at_top else \
        ("lower left", (0, above_in), fig.dpi_scale_trans)  # fmt: skip
    fig.legend(
        handles, labels, loc=loc, bbox_to_anchor=anchor, bbox_transform=frame, ncol=columns, title=title, **LEGEND
    )
    return rows * LINE_IN * 1.12 + 0.15


def empty_panel(fig: Figure, ax: Any, message: str) -> Figure:
    """What a chart shows when the results file has nothing for it: the words, and no number."""
    ax.set_axis_off()
    words = wrap(message, WIDTH_IN - 0.5, 13)
    ax.text(0.5, 0.5, words, ha="center", va="center", fontsize=13, color=MUTED, transform=ax.transAxes)
    fig.set_size_inches(WIDTH_IN, 1.6)
    return fig


def svg_bytes(fig: Figure, **options: Any) -> bytes:
    """The figure as SVG with no date in it (``options`` go to savefig): the bytes depend only on what was drawn."""
    out = io.BytesIO()
    fig.savefig(out, format="svg", **{**options, "metadata": {**(options.get("metadata") or {}), **DATELESS}})
    return out.getvalue()


def write_svg(fig: Figure, path: Path, **options: Any) -> Path:
    """Write the figure's dateless SVG atomically: a crash leaves the old file or the new one, never half of one."""
    files.write_atomic(path, svg_bytes(fig, **options))
    return path


def save(fig: Figure, path: Path) -> Path:
    """Write a chart's SVG atomically and close the chart."""
    write_svg(fig, path)
    plt.close(fig)
    return path
