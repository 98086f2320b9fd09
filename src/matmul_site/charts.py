"""The charts, drawn from the results file; each plot script in plots/ is one call of one function here.

One baseline per chart: the dashed cuBLAS line and every ratio are the cuBLAS of the same interleaved run. Every
chart of TFLOPS marks, for each bar or point, the tensor-core peak at the SM clock sampled while that row was timed
(:func:`matmul_data.results.row_peak_tflops`), none where the clock is suspect; ratios have no peak. Drawn for a
phone's width; what a chart shows is its caption's job (:mod:`.render`); with nothing to draw it says "not measured
yet" and shows no number. Nothing here imports torch, Tilus or CUDA.
"""

from __future__ import annotations

import math
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from matmul_data import field, model, results, versions
from matmul_site import numfmt
from matmul_site.chart_parts import (
    BAR,
    PEAK_GID,
    PEAK_TICK,
    TEXT_WIDTH_IN,
    LabelledValue,
    chart_title,
    cublas_line,
    draw_peaks_and_values,
    labelled_rows,
    labelled_value,
    peak_key,
    ratio_ticks,
    round_ticks,
    row_axes,
    step_name,
    x_label,
)
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
    VERDICT_COLOURS,
    WIDTH_IN,
    empty_panel,
    fit,
    legend_below,
    new_figure,
    text_width_in,
    wrap,
)

NOT_MEASURED = numfmt.NOT_MEASURED
_USE_FILE = object()


def _data(data: Any) -> model.Results | None:
    return results.read_default() if data is _USE_FILE else data


def version_chart(version: str, data: Any = _USE_FILE, rerun_on: str | None = None) -> Figure:
    """Chapter chart: every version's TFLOPS, this one highlighted, earlier ones solid, later ones faint; drawn
    from the recorded ladder, or from a fresh run of this version and cuBLAS on the GPU named by ``rerun_on``."""
    versions.get(version)  # VersionError (a ValueError) names the known versions
    data = _data(data)
    fig, ax = new_figure()
    run = results.ladder(data)
    if data is None or run is None or version not in run.rows:
        return empty_panel(fig, ax, f"{versions.label(version)}: {NOT_MEASURED}")
    rows = run.rows
    order = list(versions.names())
    current = order.index(version)
    weights = ["bold" if n == version else "normal" for n in order]  # the highlighted label is bold, so wider
    labels = [
        wrap(f"{versions.label(n)}  {versions.title(n)}", TEXT_WIDTH_IN, weight=w)
        for n, w in zip(order, weights, strict=True)
    ]
    tops, centres, end = labelled_rows(labels)
    values, styles = [], []
    for index, (name, label, top, centre) in enumerate(zip(order, labels, tops, centres, strict=True)):
        colour = HIGHLIGHT if index == current else EARLIER if index < current else LATER
        weight = "bold" if index == current else "normal"
        ink = INK if index <= current else MUTED
        ax.text(0, top, label, va="top", ha="left", color=ink, fontweight=weight, linespacing=1.1)
        if name not in rows:
            ax.text(0, centre, NOT_MEASURED if rerun_on is None else "not in this run", va="center", color=MUTED)
            continue
        ax.barh(centre, rows[name].tflops, color=colour, height=BAR)
        values.append(labelled_value(data, rows[name], centre))
        styles.append({"color": ink, "fontweight": weight})
    cublas_line(ax, rows["cublas"].tflops, f"cuBLAS {rows['cublas'].tflops:.0f}")
    draw_peaks_and_values(ax, values, half=BAR / 2 + 0.15, width_in=TEXT_WIDTH_IN, floor=rows["cublas"].tflops,
                      styles=styles)  # fmt: skip
    row_axes(ax, end)
    ratio = numfmt.ratio_text(rows[version].ratio_to_cublas)
    rerun_note = f" (rerun at build time on {rerun_on})" if rerun_on else ""
    heading = f"{versions.label(version)}: {rows[version].tflops:.0f} TFLOPS, {ratio} cuBLAS{rerun_note}"
    top_in = chart_title(ax, heading)
    key = peak_key(values)
    legend_in = legend_below(fig, *key) if key[0] else 0.0
    bottom_in = x_label(ax, f"TFLOPS at {numfmt.shape_text(run.shape)} (higher is better)") + legend_in
    fit(fig, [ax], [end * LINE_IN], top_in=top_in, bottom_in=bottom_in)
    return fig


def summary_chart(data: Any = _USE_FILE) -> Figure:
    """Index chart: the ladder's TFLOPS, cuBLAS's line, and two peaks: at each row's measured clock (none for a
    suspect clock), with each bar's share of it, and the datasheet's."""
    data = _data(data)
    fig, ax = new_figure()
    run = results.ladder(data)
    first, last = versions.label(versions.names()[0]), versions.label(versions.names()[-1])
    if data is None or run is None:
        return empty_panel(fig, ax, f"{first}\u2013{last}: {NOT_MEASURED}")
    names = [*versions.names(), "cublas"]
    rows = run.rows
    values = []
    for y, name in enumerate(names):
        row = rows.get(name)
        if row is None:
            ax.text(5, y, NOT_MEASURED, va="center", color=MUTED)
            continue
        ax.barh(y, row.tflops, color=CUBLAS if name == "cublas" else HIGHLIGHT, height=0.7)
        values.append(labelled_value(data, row, y))
    handles, labels = peak_key(values)
    cublas = rows["cublas"].tflops
    handles.append(ax.axvline(cublas, color=CUBLAS, linestyle="--", linewidth=1.1))
    labels.append(f"cuBLAS, same rounds ({cublas:.0f})")
    published = data.gpu.published_dense_fp16_tflops
    if published:
        handles.append(ax.axvline(published, color=PEAK, linestyle=":", linewidth=1.4))
        labels.append(f"datasheet dense FP16 peak ({published:g})")
    tick_labels = [versions.label(n) for n in names]
    left_in = PAD_IN + max(text_width_in(t) for t in tick_labels) + 0.12
    draw_peaks_and_values(
        ax, values, half=0.38, width_in=WIDTH_IN - left_in - RIGHT_IN, floor=published or 0.0, inside={"color": PANEL}
    )  # fmt: skip  (inside its bar: the datasheet's line runs clear)
    ax.set_yticks(range(len(names)), tick_labels)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.xaxis.set_major_locator(round_ticks())
    ax.grid(axis="y", visible=False)
    top_in = chart_title(ax, f"From {first} to {last} on {data.gpu.name}", left_in)
    legend_in = legend_below(fig, handles, labels)
    bottom_in = x_label(ax, f"TFLOPS at {numfmt.shape_text(run.shape)}", left_in) + legend_in
    fit(fig, [ax], [len(names) * LINE_IN * 1.35], top_in=top_in, bottom_in=bottom_in, left_in=left_in)
    return fig


def sweep_chart(data: Any = _USE_FILE) -> Figure:
    """Per shape (a row each, its name above): each implementation as a ratio to that run's cuBLAS with its
    interval; TFLOPS below, each point with a mark at the peak at its clock (points sit too close for labels)."""
    data = _data(data)
    runs = sorted(results.sweep_runs(data), key=lambda r: (math.prod(r.shape.mnk), r.shape.mnk))
    fig, top = new_figure()
    if data is None or not runs:
        return empty_panel(fig, top, f"Shape sweep: {NOT_MEASURED}")
    bottom = fig.add_subplot(2, 1, 2, sharey=top)
    shown_rows = [{**r.rows, **results.peer_rows(data, "sweep", r.shape)} for r in runs]  # peers: their own runs
    impls = sorted({i for rows in shown_rows for i in rows}, key=lambda n: (not versions.is_version_name(n), n))
    others = iter(OTHER_SERIES * 4)
    colours = {impl: SERIES.get(impl) or next(others) for impl in impls}
    markers = {impl: "o" if versions.is_version_name(impl) else "D" for impl in impls}
    ours = [i for i in impls if i != "cublas"]
    step = 0.2  # lines of text between two implementations' markers in a row
    band = max(BAR, step * len(impls))
    shapes = [numfmt.shape_text(r.shape) for r in runs]
    tops, centres, end = labelled_rows(shapes, band, header=0.2, gap=0.3)
    points: list[LabelledValue] = []  # every point of the TFLOPS panel
    reach: list[float] = []  # where that panel's points and peak marks are
    for j, impl in enumerate(impls):
        offset = step * (j - (len(impls) - 1) / 2)
        found = [(c + offset, rows[impl]) for c, rows in zip(centres, shown_rows, strict=True) if impl in rows]
        look = {"color": colours[impl], "label": versions.label(impl)}
        if impl != "cublas":
            ratios = [row.ratio_to_cublas for _, row in found]
            errors = [[iv.median - iv.low for iv in ratios], [iv.high - iv.median for iv in ratios]]
            medians, ys = [iv.median for iv in ratios], [y for y, _ in found]
            top.errorbar(medians, ys, xerr=errors, fmt=markers[impl], markersize=4, capsize=2.5, **look)
        shown = [labelled_value(data, row, y) for y, row in found]
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
        row_axes(ax, end)
    # A ratio tick at the very edge of the panel would hang half its label outside the figure: keep them inside.
    lo, hi = top.get_xlim()
    top.set_xticks([t for t in top.get_xticks() if lo + 0.05 * (hi - lo) <= t <= hi - 0.05 * (hi - lo)])
    title_in = chart_title(top, f"Against cuBLAS, shape by shape, on {data.gpu.name}")
    gap_in = x_label(top, "\u00d7 cuBLAS, same rounds (interval)") + 0.15
    handles = [Line2D([], [], linestyle="none", marker=markers[i], color=colours[i]) for i in ours]
    handles.append(Line2D([], [], color=CUBLAS, linestyle="--", marker=markers.get("cublas")))
    labels = [versions.label(i) for i in ours] + ["cuBLAS, same rounds"]
    key = peak_key(points, Line2D([], [], color=INK, **PEAK_TICK), "peak at each point's SM clock")
    # The key sits over the first panel: on a phone the ratios are read a screen above the TFLOPS panel's foot.
    legend_in = legend_below(fig, handles + key[0], labels + key[1], at_top=True)
    bottom_in = x_label(bottom, "TFLOPS")
    fit(fig, [top, bottom], [end * LINE_IN] * 2, top_in=title_in + legend_in, bottom_in=bottom_in, gap_in=gap_in)
    return fig


def field_chart(data: Any = _USE_FILE) -> Figure:
    """The field set (V9's chapter): a row per shape, its name and size above it and a heading over each half, each
    implementation as a ratio to its run's cuBLAS with its interval; a shape where cuBLAS failed its check says so."""
    data = _data(data)
    halves = [(half, results.field_runs(data, half)) for half in (field.FITTED, field.HELD_OUT)]
    runs = [run for _, found in halves for run in found]
    fig, ax = new_figure()
    if data is None or not runs:
        return empty_panel(fig, ax, f"Field set: {NOT_MEASURED}")
    shown_rows = [{**run.rows, **results.peer_rows(data, "field", run.shape)} for run in runs]  # peers: own runs
    timed = {impl for rows in shown_rows for impl in rows}
    mine = [v for v in versions.names() if v in timed]
    impls = [*mine, *(p for p in versions.PEERS if p in timed and p != results.CUBLAS)]
    others = iter(OTHER_SERIES * 4)
    colours = {impl: HIGHLIGHT if impl == mine[-1] else EARLIER if impl in mine else next(others) for impl in impls}
    markers = {impl: "o" if impl in mine else "D" for impl in impls}
    headings, labels = [], []
    for half, found in halves:
        for index, run in enumerate(found):
            inexact = " (cuBLAS inexact)" if results.inexact_baseline(run) is not None else ""
            name = run.field.name if run.field else ""
            label = wrap(f"{name}  {numfmt.shape_text(run.shape)}{inexact}", TEXT_WIDTH_IN)
            headings.append(f"{half[0].upper()}{half[1:]} half" if index == 0 else "")
            labels.append(label)
    step = 0.2  # lines of text between two implementations' markers in a row
    band = max(BAR, step * len(impls))
    tops, centres, end = labelled_rows([f"{h}\n{t}" if h else t for h, t in zip(headings, labels, strict=True)],
                                        band, header=0.2, gap=0.3)  # fmt: skip
    for j, impl in enumerate(impls):
        offset = step * (j - (len(impls) - 1) / 2)
        found = [(c + offset, rows[impl].ratio_to_cublas) for c, rows in zip(centres, shown_rows, strict=True)
                 if impl in rows]  # fmt: skip
        errors = [[iv.median - iv.low for _, iv in found], [iv.high - iv.median for _, iv in found]]
        ax.errorbar([iv.median for _, iv in found], [y for y, _ in found], xerr=errors, fmt=markers[impl],
                    markersize=4, capsize=2.5, color=colours[impl], label=versions.label(impl))  # fmt: skip
    ax.axvline(1.0, color=CUBLAS, linestyle="--", linewidth=1.1)
    ax.margins(x=0.08)
    for top, heading, label in zip(tops, headings, labels, strict=True):
        if heading:
            ax.text(0, top, heading, va="top", ha="left", fontweight="bold", transform=ax.get_yaxis_transform())
        ax.text(0, top + (1 if heading else 0), label, va="top", ha="left", linespacing=1.1,
                transform=ax.get_yaxis_transform())  # fmt: skip
    row_axes(ax, end)
    lo, hi = ax.get_xlim()  # a tick at the very edge would hang half its label outside the figure
    ax.set_xticks([t for t in ax.get_xticks() if lo + 0.05 * (hi - lo) <= t <= hi - 0.05 * (hi - lo)])
    title_in = chart_title(ax, f"The field set against cuBLAS on {data.gpu.name}")
    handles = [Line2D([], [], linestyle="none", marker=markers[i], color=colours[i]) for i in impls]
    handles.append(Line2D([], [], color=CUBLAS, linestyle="--"))
    legend_in = legend_below(fig, handles, [versions.label(i) for i in impls] + ["cuBLAS, same rounds"])
    bottom_in = x_label(ax, "\u00d7 cuBLAS, same rounds (interval)") + legend_in
    fit(fig, [ax], [end * LINE_IN], top_in=title_in, bottom_in=bottom_in)
    return fig


def steps_chart(data: Any = _USE_FILE) -> Figure:
    """Waterfall of the ladder: each step a bar from the previous version's TFLOPS to its own, coloured by its
    verdict, with the step's interval applied to the previous version's TFLOPS as its error bar."""
    data = _data(data)
    fig, ax = new_figure()
    steps = results.ladder_steps(data)
    first, last = versions.label(versions.names()[0]), versions.label(versions.names()[-1])
    ladder = results.ladder(data)
    if data is None or ladder is None or not steps:
        return empty_panel(fig, ax, f"Steps {first}\u2013{last}: {NOT_MEASURED}")
    rows = ladder.rows
    labels = [
        wrap(f"{step_name(step.over or '', impl)}  {numfmt.ratio_text(step)}", TEXT_WIDTH_IN) for impl, step in steps
    ]
    tops, centres, end = labelled_rows(labels)
    values = []
    for i, ((impl, step), label) in enumerate(zip(steps, labels, strict=True)):
        base = rows[step.over or ""].tflops
        after = rows[impl].tflops
        ax.text(0, tops[i], label, va="top", ha="left", linespacing=1.1)
        ax.barh(centres[i], after - base, left=base, color=VERDICT_COLOURS[results.verdict(step)], height=BAR)
        low, high, mid = base * step.low, base * step.high, base * step.median
        ax.errorbar([mid], [centres[i]], xerr=[[mid - low], [high - mid]], fmt="none", ecolor=INK, capsize=3, lw=1)
        if i + 1 < len(steps):
            ax.vlines(after, centres[i] + BAR / 2, centres[i + 1] - BAR / 2, color=MUTED, linewidth=0.8)
        # The label starts past the error bar.
        values.append(labelled_value(data, rows[impl], centres[i], end=max(after, high)))
    cublas = rows["cublas"].tflops
    cublas_line(ax, cublas, f"cuBLAS, same rounds ({cublas:.0f})")
    draw_peaks_and_values(ax, values, half=BAR / 2 + 0.15, width_in=TEXT_WIDTH_IN, floor=cublas)
    row_axes(ax, end)
    handles = [Patch(color=colour) for colour in VERDICT_COLOURS.values()]
    band = data.method.verdicts.band if data.method.verdicts else 0.0
    title = f"verdict (replicated interval against 1 \u00b1 {100 * band:.1f}%)"
    legend_in = legend_below(fig, handles, list(VERDICT_COLOURS), title=title)
    key = peak_key(values)
    if key[0]:
        legend_in += legend_below(fig, *key, above_in=legend_in) - 0.15
    top_in = chart_title(ax, "What each step bought")
    bottom_in = x_label(ax, f"TFLOPS at {numfmt.shape_text(ladder.shape)}") + legend_in
    fit(fig, [ax], [end * LINE_IN], top_in=top_in, bottom_in=bottom_in)
    return fig


def replication_chart(data: Any = _USE_FILE) -> Figure:
    """The replicated ladder, per step and per version against cuBLAS: each run's median as a dot, the merged
    interval as a bar coloured by its verdict, and the band around 1, on a log axis (a 1.75x step and a 1% one)."""
    data = _data(data)
    fig, top = new_figure()
    ladder = results.ladder(data)
    if data is None or ladder is None or len(ladder.runs) < 2:
        return empty_panel(fig, top, f"Replicated ladder: {NOT_MEASURED}")
    bottom = fig.add_subplot(2, 1, 2)
    band = data.method.verdicts.band  # a replicated file states its verdicts
    runs = ladder.runs
    impls = [i for i in ladder.rows if i != results.CUBLAS]
    # Each panel: its axes, the interval it reads of a row, what that interval is, and a row's label.
    panels = (
        (top, lambda row: row.step, "Step over the previous version", lambda i: step_name(ladder.rows[i].step.over, i)),
        (bottom, lambda row: row.ratio_to_cublas, "Against cuBLAS, same rounds", versions.label),
    )
    rows = {key: [i for i in impls if key(ladder.rows[i])] for _, key, _, _ in panels}
    labels = {key: [name(i) for i in rows[key]] for _, key, _, name in panels}
    left_in = PAD_IN + max(text_width_in(t) for names in labels.values() for t in names) + 0.12
    heights, below = [], []
    for ax, key, what, _ in panels:
        shown = rows[key]
        merged = [key(ladder.rows[impl]) for impl in shown]
        colours = [VERDICT_COLOURS[results.verdict(m)] for m in merged]
        lows, highs = [m.low for m in merged], [m.high for m in merged]
        ax.hlines(range(len(shown)), lows, highs, colors=colours, linewidth=7, alpha=0.55)
        values = [1 - band, 1 + band, *lows, *highs]
        for y, impl in enumerate(shown):
            medians = [key(run.rows[impl]).median for run in runs if impl in run.rows]
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
        ratio_ticks(ax, WIDTH_IN - left_in - RIGHT_IN)
        heights.append(len(shown) * LINE_IN * 1.35)
        below.append(x_label(ax, f"{what} (log scale)", left_in))
    title_in = chart_title(top, f"The ladder's {len(runs)} runs at {numfmt.shape_text(ladder.shape)}", left_in)
    handles: list[Any] = [Line2D([], [], linestyle="none", marker="o", color=INK, markersize=4)]
    handles += [Patch(color=colour, alpha=0.55) for colour in VERDICT_COLOURS.values()]
    handles.append(Patch(color=MUTED, alpha=0.25))
    names = ["one run's median", *(f"merged: {rule}" for rule in VERDICT_COLOURS), f"band, \u00b1{band:.1%}"]
    legend_in = legend_below(fig, handles, names)
    fit(fig, [top, bottom], heights, top_in=title_in, bottom_in=below[1] + legend_in, left_in=left_in,
        gap_in=below[0] + 0.15)  # fmt: skip
    return fig
