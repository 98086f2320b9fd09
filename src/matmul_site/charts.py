"""The charts, drawn from the results file; each plot script in plots/ is one call of one function here.

One baseline per chart: the dashed cuBLAS line and every ratio are the cuBLAS of the same interleaved run. Every
chart of TFLOPS marks, for each bar or point, the tensor-core peak at the SM clock sampled while that row was timed
(:func:`matmul_data.results.row_peak_tflops`), none where the clock is suspect; ratios have no peak. Drawn for a
phone's width; what a chart shows is its caption's job (:mod:`.render`); with nothing to draw it says "not measured
yet" and shows no number. Nothing here imports torch, Tilus or CUDA.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator, NullLocator

from matmul_data import field, results, versions
from matmul_site import numfmt
from matmul_site.chartkit import (
    CUBLAS,
    EARLIER,
    HIGHLIGHT,
    INK,
    LATER,
    LINE_IN,
    MUTED,
    OTHER_SERIES,
    PAD_IN,
    PANEL,
    PEAK,
    RIGHT_IN,
    SERIES,
    TITLE_PT,
    VERDICT_COLOURS,
    WIDTH_IN,
    empty_panel,
    fit,
    legend_below,
    lines_in,
    new_figure,
    text_width_in,
    wrap,
)

NOT_MEASURED = numfmt.NOT_MEASURED
_USE_FILE = object()


def _data(data: Any) -> dict[str, Any] | None:
    return results.load_default() if data is _USE_FILE else data


TEXT_WIDTH_IN = WIDTH_IN - PAD_IN - RIGHT_IN  # the axes' width, where labels go
TITLE_LINE_IN = LINE_IN * TITLE_PT / 11.5
TICKS_IN = 0.32  # an x axis's tick labels, below the axes
_BEHIND_TEXT = {"facecolor": PANEL, "edgecolor": "none", "pad": 0.3}  # a line crossing a value does not hide it
BAR = 0.8  # a bar's thickness, in lines of text
HEADER = 1.3  # the line above the first row, where the cuBLAS line is named


def _title(ax: Any, text: str, left_in: float = PAD_IN) -> float:
    """A title over the axes, wrapped to their width; returns the height it takes above them."""
    wrapped = wrap(text, WIDTH_IN - left_in - RIGHT_IN, TITLE_PT)
    ax.set_title(wrapped, loc="left")
    return lines_in(wrapped) * TITLE_LINE_IN + 0.2


def _xlabel(ax: Any, text: str, left_in: float = PAD_IN) -> float:
    """An x-axis label, wrapped to the axes' width; returns the height of the ticks and the label below the axes."""
    wrapped = wrap(text, WIDTH_IN - left_in - RIGHT_IN)
    ax.set_xlabel(wrapped, loc="left")
    return TICKS_IN + lines_in(wrapped) * LINE_IN + 0.08


def _labelled_rows(
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


class _Value(NamedTuple):
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


def _value(data: dict[str, Any], row: dict[str, Any], y: float, end: float | None = None) -> _Value:
    peak = results.row_peak_tflops(data, row)
    return _Value(y, row["tflops"] if end is None else end, row["tflops"], peak, bool(row.get("suspect")))


def _peaks_and_values(
    ax: Any,
    values: list[_Value],
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

    def anchor(value: _Value, width: float, per_in: float) -> float | None:
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


def _peak_key(values: list[_Value], handle: Any = None, label: str = PEAK_LABEL) -> tuple[list[Any], list[str]]:
    """The legend's entries for the peak marks (none where nothing is marked), and a line for suspect clocks."""
    handles, labels = [], []
    if any(v.peak is not None for v in values):
        handles.append(handle or Line2D([], [], color=PEAK, linewidth=1.5))
        labels.append(label)
    if any(v.suspect for v in values):
        handles.append(Line2D([], [], linestyle="none"))
        labels.append(SUSPECT_KEY)
    return handles, labels


def _step_name(over: str, impl: str) -> str:
    """A step by its two versions: "V4\u2192V5"."""
    return f"{versions.label(over)}\u2192{versions.label(impl)}"


def _cublas_line(ax: Any, tflops: float, label: str) -> None:
    """The cuBLAS of the same rounds as a dashed line through every row, named in the header line above them."""
    ax.axvline(tflops, color=CUBLAS, linestyle="--", linewidth=1.2)
    ax.text(tflops, HEADER / 2, f"{label} ", color=CUBLAS, ha="right", va="center")


def version_chart(version: str, data: Any = _USE_FILE, rerun_on: str | None = None) -> Figure:
    """Chapter chart: every version's TFLOPS, this one highlighted, earlier ones solid, later ones faint; drawn
    from the recorded ladder, or from a fresh run of this version and cuBLAS on the GPU named by ``rerun_on``."""
    versions.get(version)  # VersionError (a ValueError) names the known versions
    data = _data(data)
    fig, ax = new_figure()
    run = results.ladder(data)
    if run is None or version not in run["rows"]:
        return empty_panel(fig, ax, f"{versions.label(version)}: {NOT_MEASURED}")
    rows = run["rows"]
    order = list(versions.names())
    current = order.index(version)
    weights = ["bold" if n == version else "normal" for n in order]  # the highlighted label is bold, so wider
    labels = [
        wrap(f"{versions.label(n)}  {versions.title(n)}", TEXT_WIDTH_IN, weight=w)
        for n, w in zip(order, weights, strict=True)
    ]
    tops, centres, end = _labelled_rows(labels)
    values, styles = [], []
    for index, (name, label, top, centre) in enumerate(zip(order, labels, tops, centres, strict=True)):
        colour = HIGHLIGHT if index == current else EARLIER if index < current else LATER
        weight = "bold" if index == current else "normal"
        ink = INK if index <= current else MUTED
        ax.text(0, top, label, va="top", ha="left", color=ink, fontweight=weight, linespacing=1.1)
        if name not in rows:
            ax.text(0, centre, NOT_MEASURED if rerun_on is None else "not in this run", va="center", color=MUTED)
            continue
        ax.barh(centre, rows[name]["tflops"], color=colour, height=BAR)
        values.append(_value(data, rows[name], centre))
        styles.append({"color": ink, "fontweight": weight})
    _cublas_line(ax, rows["cublas"]["tflops"], f"cuBLAS {rows['cublas']['tflops']:.0f}")
    _peaks_and_values(ax, values, half=BAR / 2 + 0.15, width_in=TEXT_WIDTH_IN, floor=rows["cublas"]["tflops"],
                      styles=styles)  # fmt: skip
    _row_axes(ax, end)
    ratio = numfmt.ratio_text(rows[version]["ratio_to_cublas"])
    rerun_note = f" (rerun at build time on {rerun_on})" if rerun_on else ""
    top_in = _title(ax, f"{versions.label(version)}: {rows[version]['tflops']:.0f} TFLOPS, {ratio} cuBLAS{rerun_note}")
    key = _peak_key(values)
    legend_in = legend_below(fig, *key) if key[0] else 0.0
    bottom_in = _xlabel(ax, f"TFLOPS at {numfmt.shape_text(run['shape'])} (higher is better)") + legend_in
    fit(fig, [ax], [end * LINE_IN], top_in=top_in, bottom_in=bottom_in)
    return fig


def _ticks() -> Any:
    """Round ticks, five or so."""
    return MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10])


def _row_axes(ax: Any, end: float) -> None:
    """Axes of labelled rows down to ``end`` (lines of text): no y ticks or spine, round TFLOPS ticks."""
    ax.set_ylim(end, 0)
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_locator(_ticks())


def summary_chart(data: Any = _USE_FILE) -> Figure:
    """Index chart: the ladder's TFLOPS, cuBLAS's line, and two peaks: at each row's measured clock (none for a
    suspect clock), with each bar's share of it, and the datasheet's."""
    data = _data(data)
    fig, ax = new_figure()
    run = results.ladder(data)
    first, last = versions.label(versions.names()[0]), versions.label(versions.names()[-1])
    if run is None:
        return empty_panel(fig, ax, f"{first}\u2013{last}: {NOT_MEASURED}")
    names = [*versions.names(), "cublas"]
    rows = run["rows"]
    values = []
    for y, name in enumerate(names):
        row = rows.get(name)
        if row is None:
            ax.text(5, y, NOT_MEASURED, va="center", color=MUTED)
            continue
        ax.barh(y, row["tflops"], color=CUBLAS if name == "cublas" else HIGHLIGHT, height=0.7)
        values.append(_value(data, row, y))
    handles, labels = _peak_key(values)
    cublas = rows["cublas"]["tflops"]
    handles.append(ax.axvline(cublas, color=CUBLAS, linestyle="--", linewidth=1.1))
    labels.append(f"cuBLAS, same rounds ({cublas:.0f})")
    published = data["gpu"].get("published_dense_fp16_tflops")
    if published:
        handles.append(ax.axvline(published, color=PEAK, linestyle=":", linewidth=1.4))
        labels.append(f"datasheet dense FP16 peak ({published:g})")
    tick_labels = [versions.label(n) for n in names]
    left_in = PAD_IN + max(text_width_in(t) for t in tick_labels) + 0.12
    _peaks_and_values(
        ax, values, half=0.38, width_in=WIDTH_IN - left_in - RIGHT_IN, floor=published or 0.0, inside={"color": PANEL}
    )  # fmt: skip  (inside its bar: the datasheet's line runs clear)
    ax.set_yticks(range(len(names)), tick_labels)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.xaxis.set_major_locator(_ticks())
    ax.grid(axis="y", visible=False)
    top_in = _title(ax, f"From {first} to {last} on {data['gpu']['name']}", left_in)
    legend_in = legend_below(fig, handles, labels)
    bottom_in = _xlabel(ax, f"TFLOPS at {numfmt.shape_text(run['shape'])}", left_in) + legend_in
    fit(fig, [ax], [len(names) * LINE_IN * 1.35], top_in=top_in, bottom_in=bottom_in, left_in=left_in)
    return fig


def sweep_chart(data: Any = _USE_FILE) -> Figure:
    """Per shape (a row each, its name above): each implementation as a ratio to that run's cuBLAS with its
    interval; TFLOPS below, each point with a mark at the peak at its clock (points sit too close for labels)."""
    data = _data(data)
    runs = sorted((data or {}).get("sweep", []), key=lambda r: (math.prod(r["shape"].values()), results.shape_of(r)))
    fig, top = new_figure()
    if not runs:
        return empty_panel(fig, top, f"Shape sweep: {NOT_MEASURED}")
    bottom = fig.add_subplot(2, 1, 2, sharey=top)
    impls = sorted({i for r in runs for i in r["rows"]}, key=lambda n: (not versions.is_version_name(n), n))
    others = iter(OTHER_SERIES * 4)
    colours = {impl: SERIES.get(impl) or next(others) for impl in impls}
    markers = {impl: "o" if versions.is_version_name(impl) else "D" for impl in impls}
    ours = [i for i in impls if i != "cublas"]
    step = 0.2  # lines of text between two implementations' markers in a row
    band = max(BAR, step * len(impls))
    shapes = [numfmt.shape_text(r["shape"]) for r in runs]
    tops, centres, end = _labelled_rows(shapes, band, header=0.2, gap=0.3)
    points: list[_Value] = []  # every point of the TFLOPS panel
    reach: list[float] = []  # where that panel's points and peak marks are
    for j, impl in enumerate(impls):
        offset = step * (j - (len(impls) - 1) / 2)
        found = [(c + offset, r["rows"][impl]) for c, r in zip(centres, runs, strict=True) if impl in r["rows"]]
        look = {"color": colours[impl], "label": versions.label(impl)}
        if impl != "cublas":
            ratios = [row["ratio_to_cublas"] for _, row in found]
            errors = [[iv["median"] - iv["low"] for iv in ratios], [iv["high"] - iv["median"] for iv in ratios]]
            medians, ys = [iv["median"] for iv in ratios], [y for y, _ in found]
            top.errorbar(medians, ys, xerr=errors, fmt=markers[impl], markersize=4, capsize=2.5, **look)
        shown = [_value(data, row, y) for y, row in found]
        dots = {"linestyle": "none", "marker": markers[impl], "markersize": 4.5}
        bottom.plot([v.tflops for v in shown], [v.y for v in shown], **dots, **look)
        marked = [v for v in shown if v.peak is not None]
        bottom.plot([v.peak for v in marked], [v.y for v in marked], color=colours[impl], gid=PEAK_GID, **PEAK_TICK)
        points += shown
        reach += [v.tflops for v in shown] + [v.peak for v in marked]
    top.axvline(1.0, color=CUBLAS, linestyle="--", linewidth=1.1)
    top.margins(x=0.08)
    bottom.set_xlim(0, max(reach) * 1.08)
    for ax in (top, bottom):
        for y, shape in zip(tops, shapes, strict=True):
            ax.text(0, y, shape, va="top", ha="left", transform=ax.get_yaxis_transform())
        _row_axes(ax, end)
    # A ratio tick at the very edge of the panel would hang half its label outside the figure: keep them inside.
    lo, hi = top.get_xlim()
    top.set_xticks([t for t in top.get_xticks() if lo + 0.05 * (hi - lo) <= t <= hi - 0.05 * (hi - lo)])
    title_in = _title(top, f"Against cuBLAS, shape by shape, on {data['gpu']['name']}")
    gap_in = _xlabel(top, "\u00d7 cuBLAS, same rounds (interval)") + 0.15
    handles = [Line2D([], [], linestyle="none", marker=markers[i], color=colours[i]) for i in ours]
    handles.append(Line2D([], [], color=CUBLAS, linestyle="--", marker=markers.get("cublas")))
    labels = [versions.label(i) for i in ours] + ["cuBLAS, same rounds"]
    key = _peak_key(points, Line2D([], [], color=INK, **PEAK_TICK), "peak at each point's SM clock")
    # The key sits over the first panel: on a phone the ratios are read a screen above the TFLOPS panel's foot.
    legend_in = legend_below(fig, handles + key[0], labels + key[1], at_top=True)
    bottom_in = _xlabel(bottom, "TFLOPS")
    fit(fig, [top, bottom], [end * LINE_IN] * 2, top_in=title_in + legend_in, bottom_in=bottom_in, gap_in=gap_in)
    return fig


def field_chart(data: Any = _USE_FILE) -> Figure:
    """The field set (V9's chapter): a row per shape, its name and size above it and a heading over each half, each
    implementation as a ratio to its run's cuBLAS with its interval; a shape where cuBLAS failed its check says so."""
    data = _data(data)
    halves = [(half, results.field_runs(data, half)) for half in (field.FITTED, field.HELD_OUT)]
    runs = [run for _, found in halves for run in found]
    fig, ax = new_figure()
    if not runs:
        return empty_panel(fig, ax, f"Field set: {NOT_MEASURED}")
    timed = {impl for run in runs for impl in run["rows"]}
    mine = [v for v in versions.names() if v in timed]
    impls = [*mine, *(p for p in versions.PEERS if p in timed and p != results.CUBLAS)]
    others = iter(OTHER_SERIES * 4)
    colours = {impl: HIGHLIGHT if impl == mine[-1] else EARLIER if impl in mine else next(others) for impl in impls}
    markers = {impl: "o" if impl in mine else "D" for impl in impls}
    headings, labels = [], []
    for half, found in halves:
        for index, run in enumerate(found):
            inexact = " (cuBLAS inexact)" if results.inexact_baseline(run) is not None else ""
            label = wrap(f"{run['field']['name']}  {numfmt.shape_text(run['shape'])}{inexact}", TEXT_WIDTH_IN)
            headings.append(f"{half[0].upper()}{half[1:]} half" if index == 0 else "")
            labels.append(label)
    step = 0.2  # lines of text between two implementations' markers in a row
    band = max(BAR, step * len(impls))
    tops, centres, end = _labelled_rows([f"{h}\n{t}" if h else t for h, t in zip(headings, labels, strict=True)],
                                        band, header=0.2, gap=0.3)  # fmt: skip
    for j, impl in enumerate(impls):
        offset = step * (j - (len(impls) - 1) / 2)
        found = [(c + offset, r["rows"][impl]["ratio_to_cublas"]) for c, r in zip(centres, runs, strict=True)
                 if impl in r["rows"]]  # fmt: skip
        errors = [[iv["median"] - iv["low"] for _, iv in found], [iv["high"] - iv["median"] for _, iv in found]]
        ax.errorbar([iv["median"] for _, iv in found], [y for y, _ in found], xerr=errors, fmt=markers[impl],
                    markersize=4, capsize=2.5, color=colours[impl], label=versions.label(impl))  # fmt: skip
    ax.axvline(1.0, color=CUBLAS, linestyle="--", linewidth=1.1)
    ax.margins(x=0.08)
    for top, heading, label in zip(tops, headings, labels, strict=True):
        if heading:
            ax.text(0, top, heading, va="top", ha="left", fontweight="bold", transform=ax.get_yaxis_transform())
        ax.text(0, top + (1 if heading else 0), label, va="top", ha="left", linespacing=1.1,
                transform=ax.get_yaxis_transform())  # fmt: skip
    _row_axes(ax, end)
    lo, hi = ax.get_xlim()  # a tick at the very edge would hang half its label outside the figure
    ax.set_xticks([t for t in ax.get_xticks() if lo + 0.05 * (hi - lo) <= t <= hi - 0.05 * (hi - lo)])
    title_in = _title(ax, f"The field set against cuBLAS on {data['gpu']['name']}")
    handles = [Line2D([], [], linestyle="none", marker=markers[i], color=colours[i]) for i in impls]
    handles.append(Line2D([], [], color=CUBLAS, linestyle="--"))
    legend_in = legend_below(fig, handles, [versions.label(i) for i in impls] + ["cuBLAS, same rounds"])
    bottom_in = _xlabel(ax, "\u00d7 cuBLAS, same rounds (interval)") + legend_in
    fit(fig, [ax], [end * LINE_IN], top_in=title_in, bottom_in=bottom_in)
    return fig


def steps_chart(data: Any = _USE_FILE) -> Figure:
    """Waterfall of the ladder: each step a bar from the previous version's TFLOPS to its own, coloured by its
    verdict, with the step's interval applied to the previous version's TFLOPS as its error bar."""
    data = _data(data)
    fig, ax = new_figure()
    steps = results.ladder_steps(data)
    first, last = versions.label(versions.names()[0]), versions.label(versions.names()[-1])
    if not steps:
        return empty_panel(fig, ax, f"Steps {first}\u2013{last}: {NOT_MEASURED}")
    ladder = results.ladder(data)
    rows = ladder["rows"]
    labels = [
        wrap(f"{_step_name(step['over'], impl)}  {numfmt.ratio_text(step)}", TEXT_WIDTH_IN) for impl, step in steps
    ]
    tops, centres, end = _labelled_rows(labels)
    values = []
    for i, ((impl, step), label) in enumerate(zip(steps, labels, strict=True)):
        base = rows[step["over"]]["tflops"]
        after = rows[impl]["tflops"]
        ax.text(0, tops[i], label, va="top", ha="left", linespacing=1.1)
        ax.barh(centres[i], after - base, left=base, color=VERDICT_COLOURS[results.verdict(step)], height=BAR)
        low, high, mid = base * step["low"], base * step["high"], base * step["median"]
        ax.errorbar([mid], [centres[i]], xerr=[[mid - low], [high - mid]], fmt="none", ecolor=INK, capsize=3, lw=1)
        if i + 1 < len(steps):
            ax.vlines(after, centres[i] + BAR / 2, centres[i + 1] - BAR / 2, color=MUTED, linewidth=0.8)
        values.append(_value(data, rows[impl], centres[i], end=max(after, high)))  # the label clears the error bar
    cublas = rows["cublas"]["tflops"]
    _cublas_line(ax, cublas, f"cuBLAS, same rounds ({cublas:.0f})")
    _peaks_and_values(ax, values, half=BAR / 2 + 0.15, width_in=TEXT_WIDTH_IN, floor=cublas)
    _row_axes(ax, end)
    handles = [Patch(color=colour) for colour in VERDICT_COLOURS.values()]
    band = data["method"].get("verdicts", {}).get("band", 0.0)
    title = f"verdict (replicated interval against 1 \u00b1 {100 * band:.1f}%)"
    legend_in = legend_below(fig, handles, list(VERDICT_COLOURS), title=title)
    key = _peak_key(values)
    if key[0]:
        legend_in += legend_below(fig, *key, above_in=legend_in) - 0.15
    top_in = _title(ax, "What each step bought")
    bottom_in = _xlabel(ax, f"TFLOPS at {numfmt.shape_text(ladder['shape'])}") + legend_in
    fit(fig, [ax], [end * LINE_IN], top_in=top_in, bottom_in=bottom_in)
    return fig


# Ratios a log axis may name, most wanted first (1 always); each is kept only where it clears its neighbours.
RATIO_TICKS = (1.0, 0.5, 1.5, 2.0, 0.75, 1.25, 0.8, 1.2, 0.9, 1.1, 1.75, 0.6, 0.7, 0.95, 1.05)


def _ratio_ticks(ax: Any, width_in: float) -> None:
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


def replication_chart(data: Any = _USE_FILE) -> Figure:
    """The replicated ladder, per step and per version against cuBLAS: each run's median as a dot, the merged
    interval as a bar coloured by its verdict, and the band around 1, on a log axis (a 1.75x step and a 1% one)."""
    data = _data(data)
    fig, top = new_figure()
    ladder = results.ladder(data)
    if ladder is None or len(ladder.get("runs", [])) < 2:
        return empty_panel(fig, top, f"Replicated ladder: {NOT_MEASURED}")
    bottom = fig.add_subplot(2, 1, 2)
    band = data["method"]["verdicts"]["band"]
    runs = ladder["runs"]
    impls = [i for i in ladder["rows"] if i != results.CUBLAS]
    panels = (
        (top, "step", "Step over the previous version", lambda i: _step_name(ladder["rows"][i]["step"]["over"], i)),
        (bottom, "ratio_to_cublas", "Against cuBLAS, same rounds", versions.label),
    )
    rows = {key: [i for i in impls if ladder["rows"][i].get(key)] for _, key, _, _ in panels}
    labels = {key: [name(i) for i in rows[key]] for _, key, _, name in panels}
    left_in = PAD_IN + max(text_width_in(t) for names in labels.values() for t in names) + 0.12
    heights, below = [], []
    for ax, key, what, _ in panels:
        shown = rows[key]
        merged = [ladder["rows"][impl][key] for impl in shown]
        colours = [VERDICT_COLOURS[results.verdict(m)] for m in merged]
        lows, highs = [m["low"] for m in merged], [m["high"] for m in merged]
        ax.hlines(range(len(shown)), lows, highs, colors=colours, linewidth=7, alpha=0.55)
        values = [1 - band, 1 + band, *lows, *highs]
        for y, impl in enumerate(shown):
            medians = [run["rows"][impl][key]["median"] for run in runs if impl in run["rows"]]
            offsets = [(j - (len(medians) - 1) / 2) * 0.18 for j in range(len(medians))]
            ax.plot(medians, [y + o for o in offsets], "o", color=INK, markersize=3.5)
            values += medians
        ax.axvspan(1 - band, 1 + band, color=MUTED, alpha=0.25, linewidth=0)
        ax.axvline(1.0, color=MUTED, linewidth=0.8)
        ax.set_xscale("log")
        ax.set_xlim(min(values) / 1.04, max(values) * 1.04)
        ax.set_yticks(range(len(shown)), labels[key])
        ax.set_ylim(len(shown) - 0.5, -0.5)
        ax.grid(axis="y", visible=False)
        _ratio_ticks(ax, WIDTH_IN - left_in - RIGHT_IN)
        heights.append(len(shown) * LINE_IN * 1.35)
        below.append(_xlabel(ax, f"{what} (log scale)", left_in))
    title_in = _title(top, f"The ladder's {len(runs)} runs at {numfmt.shape_text(ladder['shape'])}", left_in)
    handles: list[Any] = [Line2D([], [], linestyle="none", marker="o", color=INK, markersize=4)]
    handles += [Patch(color=colour, alpha=0.55) for colour in VERDICT_COLOURS.values()]
    handles.append(Patch(color=MUTED, alpha=0.25))
    names = ["one run's median", *(f"merged: {rule}" for rule in VERDICT_COLOURS), f"band, \u00b1{band:.1%}"]
    legend_in = legend_below(fig, handles, names)
    fit(fig, [top, bottom], heights, top_in=title_in, bottom_in=below[1] + legend_in, left_in=left_in,
        gap_in=below[0] + 0.15)  # fmt: skip
    return fig
