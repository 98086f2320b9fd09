"""What every chart shares: style, colours, a figure with deterministic SVG output, the "not measured" panel.

Nothing here imports torch, Tilus or CUDA. The charts themselves are in :mod:`matmul_site.charts`.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never a window, never a GPU: charts are files

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

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
# The rule's three verdicts (matmul_site.stats): a step that pays, one that costs, one at parity.
VERDICT_COLOURS: dict[str, str] = {"pays": "#2d7a32", "costs": "#b3261e", "parity": "#9a9a9a"}
# Sweep lines: our versions in blues and greens, cuBLAS red as everywhere, peers in the remaining hues.
SERIES: dict[str, str] = {"v4": "#7f9fbf", "v5": "#2d7a32", "v6": HIGHLIGHT, "cublas": CUBLAS}
OTHER_SERIES = ("#6a3d9a", "#a8520a", "#5f5f5f", "#b08a00")

STYLE: dict[str, Any] = {
    "svg.hashsalt": "hopper-matmul",  # fixed element ids: the same bytes on every draw
    "svg.fonttype": "path",  # glyphs as paths: the chart looks the same whatever fonts the reader has
    "font.family": "DejaVu Sans",
    "font.size": 9.5,
    "figure.facecolor": PANEL,
    "axes.facecolor": PANEL,
    "savefig.facecolor": PANEL,
    "text.color": INK,
    "axes.labelcolor": INK,
    "axes.edgecolor": MUTED,
    "xtick.color": INK,
    "ytick.color": INK,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.color": GRID,
    "axes.axisbelow": True,
}


class DeterministicFigure(Figure):
    """A figure whose SVG carries no date, so two draws of the same data give the same bytes."""

    def savefig(self, fname: Any, *args: Any, **kwargs: Any) -> None:
        fmt = kwargs.get("format") or Path(str(fname)).suffix.lstrip(".") or "svg"
        if fmt == "svg":
            kwargs["metadata"] = {**(kwargs.get("metadata") or {}), "Date": None}
        super().savefig(fname, *args, **kwargs)


def new_figure(width: float = 7.0, height: float = 3.6, rows: int = 1) -> tuple[Figure, Any]:
    """A figure in the shared style with one axes (or a column of ``rows`` axes sharing x)."""
    plt.rcParams.update(STYLE)  # the plot directive resets rcParams before each script; set them again
    fig = plt.figure(FigureClass=DeterministicFigure, figsize=(width, height))
    if rows == 1:
        return fig, fig.add_subplot(1, 1, 1)
    first = fig.add_subplot(rows, 1, 1)
    return fig, [first] + [fig.add_subplot(rows, 1, i + 1, sharex=first) for i in range(1, rows)]


def footer(fig: Figure, text: str) -> None:
    """The caption, small, at the bottom of the figure (charts saved outside the site keep their provenance)."""
    fig.text(0.01, 0.01, text, fontsize=6.5, color=MUTED, ha="left", va="bottom", wrap=True)


def empty_panel(fig: Figure, ax: Any, message: str, text: str) -> Figure:
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=13, color=MUTED, transform=ax.transAxes)
    footer(fig, text)
    return fig


def save(fig: Figure, path: Path) -> Path:
    """Write an SVG atomically (temp file + rename); the bytes depend only on the data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="svg")
    os.replace(tmp, path)
    plt.close(fig)
    return path
