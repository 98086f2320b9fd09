"""The pieces the charts (:mod:`.charts`) are built of: a title and an x label wrapped to the width, rows of a label
above a band, each bar's value label and its mark at the tensor-core peak, the cuBLAS line, and round ticks."""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from matplotlib.lines import Line2D
from matplotlib.ticker import MaxNLocator, NullLocator

from matmul_data import model, results, versions
from matmul_site.chartkit import (
    CUBLAS,
    LINE_IN,
    PAD_IN,
    PANEL,
    PEAK,
    RIGHT_IN,
    TITLE_PT,
    WIDTH_IN,
    lines_in,
    text_width_in,
    wrap,
)

TEXT_WIDTH_IN = WIDTH_IN - PAD_IN - RIGHT_IN  # the axes' width, where labels go
TITLE_LINE_IN = LINE_IN * TITLE_PT / 11.5
TICKS_IN = 0.32  # an x axis's tick labels, below the axes
_BEHIND_TEXT = {"facecolor": PANEL, "edgecolor": "none", "pad": 0.3}  # a line crossing a value does not hide it
BAR = 0.8  # a bar's thickness, in lines of text
HEADER = 1.3  # the line above the first row, where the cuBLAS line is named


def chart_title(ax: Any, text: str, left_in: float = PAD_IN) -> float:
    """A title over the axes, wrapped to their width; returns the height it takes above them."""
    wrapped = wrap(text, WIDTH_IN - left_in - RIGHT_IN, TITLE_PT)
    ax.set_title(wrapped, loc="left")
    return lines_in(wrapped) * TITLE_LINE_IN + 0.2


def x_label(ax: Any, text: str, left_in: float = PAD_IN) -> float:
    """An x-axis label, wrapped to the axes' width; returns the height of the ticks and the label below the axes."""
    wrapped = wrap(text, WIDTH_IN - left_in - RIGHT_IN)
    ax.set_xlabel(wrapped, loc="left")
    return TICKS_IN + lines_in(wrapped) * LINE_IN + 0.08


def labelled_rows(
    labels: list[str], band: float = BAR, header: float = HEADER, gap: float = 0.45
) -> tuple[list[float], list[float], float]:
    """Rows of a label above a band (a bar, or markers), top-down in lines of text: each label's top, each band's
    centre, and where the last row ends."""
    tops, centres, y = [], [], header
    for label in labels:
        tops.append(y)
        centres.append(y + lines_in(label) + band / 2 + 0.1)
        y = centres[-1] + band / 2 + gap
    return tops, centres, y


PEAK_GID = "peak-marks"  # every peak mark a chart draws carries this gid
PEAK_TICK = {"linestyle": "none", "marker": "|", "markersize": 7, "markeredgewidth": 1.5}  # a point's peak mark
PEAK_LABEL = "tensor-core peak at its SM clock (%: share of it)"
SUSPECT_CLOCK = "clock suspect"  # a suspect row's label, after its TFLOPS
SUSPECT_KEY = "no peak where the clock is suspect"  # the legend's line under the peak's, where a row is suspect
SLACK_IN = 0.2  # how far a value label may reach into the margin right of the axes
GAP_IN = 0.08  # the least room between a label's end and the peak mark it stops before
CLEAR_IN = 0.03  # from a peak mark to the label after it, so that the label's box leaves the mark whole


class LabelledValue(NamedTuple):
    """One bar's value label and peak mark: its band's centre, where the bar (with its error bar) ends, its TFLOPS,
    the peak at its clock (None: no clock, or a suspect one) and whether that clock is suspect."""

    y: float
    end: float
    tflops: float
    peak: float | None
    suspect: bool

    @property
    def text(self) -> str:
        if self.suspect:
            return f" {self.tflops:.0f} ({SUSPECT_CLOCK})"
        if self.peak is None:
            return f" {self.tflops:.0f}"
        return f" {self.tflops:.0f} ({100 * self.tflops / self.peak:.0f}%)"


def labelled_value(data: model.Results, row: model.Row, y: float, end: float | None = None) -> LabelledValue:
    peak = results.row_peak_tflops(data, row)
    return LabelledValue(y, row.tflops if end is None else end, row.tflops, peak, bool(row.suspect))


def draw_peaks_and_values(
    ax: Any,
    values: list[LabelledValue],
    *,
    half: float,
    width_in: float,
    floor: float = 0.0,
    styles: list[dict[str, Any]] | None = None,
    inside: dict[str, Any] | None = None,
) -> None:
    """Each bar's peak mark (a line ``half`` above and below its centre), its value label and the x range.

    A label sits inside its bar's end (in the ``inside`` style, where given and it fits), else right of the bar
    where it ends before the peak mark, else right of the mark; the x axis reaches far enough for every label.
    """
    marked = [v for v in values if v.peak is not None]
    if marked:
        ys = [v.y for v in marked]
        ax.vlines([v.peak for v in marked], [y - half for y in ys], [y + half for y in ys], color=PEAK,
                  linewidth=1.5, gid=PEAK_GID, zorder=2.6)  # fmt: skip
    styles = styles or [{}] * len(values)
    widths = [
        text_width_in(v.text, weight=style.get("fontweight", "normal")) for v, style in zip(values, styles, strict=True)
    ]
    right = max([floor, *(v.end for v in values), *(v.peak for v in marked)]) * 1.04

    def anchor(value: LabelledValue, width: float, per_in: float) -> float | None:
        """Where the label starts, in TFLOPS (None: inside its bar)."""
        if inside is not None and width + CLEAR_IN <= value.end / per_in:
            return None
        if value.peak is None or value.end + (width + GAP_IN) * per_in <= value.peak:
            return value.end
        return max(value.end, value.peak + CLEAR_IN * per_in)

    # A wider axis only moves labels outward (out of a bar, past a mark), which only asks for more: this settles.
    for _ in range(2 * len(values) + 2):
        anchors = [anchor(v, w, right / width_in) for v, w in zip(values, widths, strict=True)]
        outside = [(a, w) for a, w in zip(anchors, widths, strict=True) if a is not None]
        needed = max([a * width_in / (width_in + SLACK_IN - w) for a, w in outside], default=right)
        if needed <= right:
            break
        right = needed
    ax.set_xlim(0, right)
    for value, at, style in zip(values, anchors, styles, strict=True):
        if at is None:
            ax.text(value.end, value.y, f"{value.text.strip()} ", va="center", ha="right", **(inside or {}))
        else:
            ax.text(at, value.y, value.text, va="center", bbox=_BEHIND_TEXT, **style)


def peak_key(values: list[LabelledValue], handle: Any = None, label: str = PEAK_LABEL) -> tuple[list[Any], list[str]]:
    """The legend's entries for the peak marks (none where nothing is marked), and a line for suspect clocks."""
    handles, labels = [], []
    if any(v.peak is not None for v in values):
        handles.append(handle or Line2D([], [], color=PEAK, linewidth=1.5))
        labels.append(label)
    if any(v.suspect for v in values):
        handles.append(Line2D([], [], linestyle="none"))
        labels.append(SUSPECT_KEY)
    return handles, labels


def step_name(over: str, impl: str) -> str:
    """A step by its two versions: "V4\u2192V5"."""
    return f"{versions.label(over)}\u2192{versions.label(impl)}"


def cublas_line(ax: Any, tflops: float, label: str) -> None:
    """The cuBLAS of the same rounds as a dashed line through every row, named in the header line above them."""
    ax.axvline(tflops, color=CUBLAS, linestyle="--", linewidth=1.2)
    ax.text(tflops, HEADER / 2, f"{label} ", color=CUBLAS, ha="right", va="center")


def round_ticks() -> Any:
    """Round ticks, five or so."""
    return MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10])


def row_axes(ax: Any, end: float) -> None:
    """Axes of labelled rows down to ``end`` (lines of text): no y ticks or spine, round TFLOPS ticks."""
    ax.set_ylim(end, 0)
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_locator(round_ticks())


# Ratios a log axis may name, most wanted first (1 always); each is kept only where it clears its neighbours.
RATIO_TICKS = (1.0, 0.5, 1.5, 2.0, 0.75, 1.25, 0.8, 1.2, 0.9, 1.1, 1.75, 0.6, 0.7, 0.95, 1.05)


def ratio_ticks(ax: Any, width_in: float) -> None:
    """Label a log ratio axis with round ratios ("1.25×") spaced so that no two labels touch at this width."""
    low, high = ax.get_xlim()
    span = math.log(high / low)
    chosen: list[float] = []
    for tick in RATIO_TICKS:
        if not low <= tick <= high:
            continue
        at = math.log(tick / low) / span * width_in
        room = text_width_in(f"{tick:g}\u00d7") + 0.15
        if all(abs(at - math.log(c / low) / span * width_in) >= room for c in chosen):
            chosen.append(tick)
    ax.set_xticks(sorted(chosen), [f"{t:g}\u00d7" for t in sorted(chosen)])
    ax.xaxis.set_minor_locator(NullLocator())
