"""How a chart's text lands when drawn: every line of text, its size and its box, and what a reader would find
wrong with them on a phone (used by test_chart_layout.py and by the browser check at phone width).

The figure is drawn once with the renderer's text calls recorded, so what is checked is what was actually
drawn: tick labels, legends and multi-line text included, ticks out of view excluded.
"""

from __future__ import annotations

import itertools
from typing import Any, NamedTuple

import matplotlib.pyplot as plt
from matplotlib.figure import Figure
from matplotlib.text import Text
from matplotlib.transforms import Affine2D, Bbox

from matmul_site import chart_parts, chartkit

SMALLEST_PT_ON_A_PHONE = 9.0
CSS_PX_PER_INCH = 96  # an SVG of W inches (72 W pt) is W * 96 CSS px wide where the browser shows it unscaled
TOLERANCE_PX = 0.5
TRUNCATION_MARKS = ("...", "\u2026")


class Line(NamedTuple):
    """One line of text as the renderer drew it: its words, size, box in display pixels, and the Text it is from."""

    words: str
    size_pt: float
    box: Bbox
    owner: int


def drawn_lines(fig: Figure) -> list[Line]:
    """Every line of text the figure draws (tick labels, legends and wrapped text included), where it lands."""
    renderer = fig.canvas.get_renderer()
    height = fig.bbox.height
    drawing: list[Text] = []
    lines: list[Line] = []
    text_draw, draw_text = Text.draw, renderer.draw_text

    def record_text(self: Text, renderer: Any) -> None:
        drawing.append(self)
        try:
            text_draw(self, renderer)
        finally:
            drawing.pop()

    def record_line(
        gc: Any, x: float, y: float, s: str, prop: Any, angle: float, ismath: Any = False, **kw: Any
    ) -> Any:
        if s.strip() and drawing:
            width, tall, descent = renderer.get_text_width_height_descent(s, prop, ismath)
            base = height - y if renderer.flipy() else y
            turn = Affine2D().rotate_deg(angle).translate(x, base)
            corners = turn.transform([(0, -descent), (width, -descent), (width, tall - descent), (0, tall - descent)])
            lines.append(
                Line(s, prop.get_size_in_points(), Bbox.null().union([Bbox([c, c]) for c in corners]), id(drawing[-1]))
            )
        return draw_text(gc, x, y, s, prop, angle, ismath, **kw)

    Text.draw = record_text  # type: ignore[method-assign]
    renderer.draw_text = record_line
    try:
        fig.draw(renderer)
    finally:
        Text.draw = text_draw  # type: ignore[method-assign]
        del renderer.draw_text
    return lines


def natural_width_px(fig: Figure) -> float:
    """The chart's width in CSS px where a browser shows its SVG unscaled."""
    return fig.get_figwidth() * CSS_PX_PER_INCH


def phone_scale(fig: Figure) -> float:
    """How much a 390 px phone shrinks the chart: its width there over its natural width (never enlarged)."""
    return min(1.0, chartkit.PHONE_CHART_PX / natural_width_px(fig))


def peak_marks(fig: Figure) -> list[Bbox]:
    """Where each peak mark (``chart_parts.PEAK_GID``) lands, in display pixels: a line across a bar, or a point's
    marker."""
    boxes = []
    for ax in fig.axes:
        for artist in [*ax.collections, *ax.lines]:
            if artist.get_gid() != chart_parts.PEAK_GID:
                continue
            if hasattr(artist, "get_segments"):
                segments = [ax.transData.transform(segment) for segment in artist.get_segments()]
            else:
                half = artist.get_markersize() / 2 * fig.dpi / 72
                points = ax.transData.transform(artist.get_xydata()) if len(artist.get_xdata()) else []
                segments = [[(x, y - half), (x, y + half)] for x, y in points]
            boxes += [Bbox([segment[0], segment[1]]) for segment in segments]
    return boxes


def layout_problems(fig: Figure, scale: float | None = None) -> list[str]:
    """What a reader would see wrong at phone width (or shown at ``scale``): small, overlapping, clipped or
    truncated text, and text over a peak mark."""
    lines = drawn_lines(fig)
    canvas = fig.bbox
    scale = phone_scale(fig) if scale is None else scale
    problems = []
    for line in lines:
        shown = line.size_pt * scale
        words = repr(line.words[:60])
        if shown < SMALLEST_PT_ON_A_PHONE - 1e-6:
            problems.append(f"{words} is {line.size_pt:g} pt, {shown:.1f} pt on a phone")
        box = line.box
        if (
            box.x0 < canvas.x0 - TOLERANCE_PX
            or box.y0 < canvas.y0 - TOLERANCE_PX
            or box.x1 > canvas.x1 + TOLERANCE_PX
            or box.y1 > canvas.y1 + TOLERANCE_PX
        ):
            inside = ", ".join(f"{v:.0f}" for v in canvas.extents)
            problems.append(
                f"{words} leaves the figure: ({', '.join(f'{v:.0f}' for v in box.extents)}) not in ({inside})"
            )
        if any(mark in line.words for mark in TRUNCATION_MARKS):
            problems.append(f"{words} is cut short")
    for a, b in itertools.combinations(lines, 2):
        width = min(a.box.x1, b.box.x1) - max(a.box.x0, b.box.x0)
        height = min(a.box.y1, b.box.y1) - max(a.box.y0, b.box.y0)
        if a.owner != b.owner and width > TOLERANCE_PX and height > TOLERANCE_PX:
            problems.append(f"{a.words[:40]!r} overlaps {b.words[:40]!r} ({width:.0f}x{height:.0f} px)")
    for mark, line in itertools.product(peak_marks(fig), lines):
        box = line.box
        across = box.x0 + TOLERANCE_PX < mark.x0 < box.x1 - TOLERANCE_PX
        if across and min(box.y1, mark.ymax) - max(box.y0, mark.ymin) > TOLERANCE_PX:
            problems.append(f"{line.words[:40]!r} lies over a peak mark at x = {mark.x0:.0f} px")
    return problems


def draw(chart: str) -> Figure:
    """Run a chart's code (``plot_sweep``: plots/plot_sweep.py; ``plot_v3``: the version's chart, by convention) as
    the plot directive does; its one figure."""
    import draw_all

    plt.close("all")
    exec(compile(draw_all.scripts()[chart], chart, "exec"), {"__name__": chart})  # noqa: S102  (our chart code)
    figures = [plt.figure(num) for num in plt.get_fignums()]
    assert len(figures) == 1, f"{chart} drew {len(figures)} figures"
    return figures[0]
