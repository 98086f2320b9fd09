"""The charts, drawn from the results file (schema 3); each plot script in plots/ is one call of one function here.

One baseline per chart: the dashed cuBLAS line and every ratio are the cuBLAS of the same
interleaved run. Every chart is drawn for a phone's width (:mod:`matmul_site.chartkit`):
labels sit above their bars or beside short row names, never squeezed under a column, and the
figure's height follows its rows. What a chart shows and which run it is from is its caption's
job (:mod:`matmul_site.captions`, under the chart on the page); how it was measured is the
method page's. No file, or no run to draw, gives a panel that says "not measured yet" and
no number. Nothing here imports torch, Tilus or CUDA; a chapter chart reruns its version on
a Hopper GPU only when asked (:mod:`matmul_site.rerun`).
"""

from __future__ import annotations

import math
from typing import Any

from matplotlib.figure import Figure
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from matmul_site import numfmt, rerun, results, versions
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
    save,
    text_width_in,
    wrap,
)

__all__ = [
    "NOT_MEASURED",
    "replication_chart",
    "save",
    "steps_chart",
    "summary_chart",
    "sweep_chart",
    "version_chart",
]

NOT_MEASURED = numfmt.NOT_MEASURED
_USE_FILE = object()


def _data(data: Any) -> dict[str, Any] | None:
    return results.load_default() if data is _USE_FILE else data


def _ladder_names() -> list[str]:
    """Every version (measured or not) in order, then cuBLAS."""
    return [*versions.names(), "cublas"]


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


def _cublas_line(ax: Any, tflops: float, label: str) -> None:
    """The same run's cuBLAS as a dashed line through every row, named in the header line above them."""
    ax.axvline(tflops, color=CUBLAS, linestyle="--", linewidth=1.2)
    ax.text(tflops, HEADER / 2, f"{label} ", color=CUBLAS, ha="right", va="center")


def version_chart(version: str, data: Any = _USE_FILE) -> Figure:
    """Chapter chart: every version's TFLOPS, this one highlighted, earlier ones solid, later ones faint.

    Each version's name and title sit above its bar, whole. Drawn from the recorded ladder; with
    ``HOPPER_MATMUL_RERUN_CHARTS=1`` on a Hopper GPU, from a fresh run of this version and cuBLAS.
    """
    versions.get(version)  # VersionError (a ValueError) names the known versions
    rerun_on = None
    if data is _USE_FILE:
        data, rerun_on = rerun.ladder_for(version, results.load_default())
    fig, ax = new_figure()
    run = results.ladder(data)
    if run is None or version not in run["rows"]:
        return empty_panel(fig, ax, f"{versions.label(version)}: {NOT_MEASURED}")
    rows = run["rows"]
    order = list(versions.names())
    current = order.index(version)
    labels = [wrap(f"{versions.label(n)}  {versions.title(n)}", TEXT_WIDTH_IN) for n in order]
    tops, centres, end = _labelled_rows(labels)
    for index, (name, label, top, centre) in enumerate(zip(order, labels, tops, centres, strict=True)):
        colour = HIGHLIGHT if index == current else EARLIER if index < current else LATER
        weight = "bold" if index == current else "normal"
        ink = INK if index <= current else MUTED
        ax.text(0, top, label, va="top", ha="left", color=ink, fontweight=weight, linespacing=1.1)
        if name not in rows:
            ax.text(0, centre, NOT_MEASURED if rerun_on is None else "not in this run", va="center", color=MUTED)
            continue
        t = rows[name]["tflops"]
        ax.barh(centre, t, color=colour, height=BAR)
        ax.text(t, centre, f" {t:.0f}", va="center", color=ink, fontweight=weight, bbox=_BEHIND_TEXT)
    _cublas_line(ax, rows["cublas"]["tflops"], f"cuBLAS {rows['cublas']['tflops']:.0f}")
    ax.set_xlim(0, max(r["tflops"] for r in rows.values()) * 1.18)
    ax.set_ylim(end, 0)
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_locator(_ticks())
    ratio = numfmt.ratio_text(rows[version]["ratio_to_cublas"])
    top_in = _title(ax, f"{versions.label(version)}: {rows[version]['tflops']:.0f} TFLOPS, {ratio} cuBLAS")
    bottom_in = _xlabel(ax, f"TFLOPS at {numfmt.shape_text(run['shape'])} (higher is better)")
    fit(fig, [ax], [end * LINE_IN], top_in=top_in, bottom_in=bottom_in)
    return fig


def _ticks() -> Any:
    from matplotlib.ticker import MaxNLocator

    return MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10])


def summary_chart(data: Any = _USE_FILE) -> Figure:
    """Index chart: the ladder's TFLOPS, cuBLAS's line, and two peaks: at each row's measured clock, and published."""
    data = _data(data)
    fig, ax = new_figure()
    run = results.ladder(data)
    first, last = versions.label(versions.names()[0]), versions.label(versions.names()[-1])
    if run is None:
        return empty_panel(fig, ax, f"{first}\u2013{last}: {NOT_MEASURED}")
    names = _ladder_names()
    rows = run["rows"]
    top = 1.0
    for y, name in enumerate(names):
        row = rows.get(name)
        if row is None:
            ax.text(5, y, NOT_MEASURED, va="center", color=MUTED)
            continue
        ax.barh(y, row["tflops"], color=CUBLAS if name == "cublas" else HIGHLIGHT, height=0.7)
        ax.text(row["tflops"], y, f" {row['tflops']:.0f}", va="center", bbox=_BEHIND_TEXT)
        top = max(top, row["tflops"])
        if row.get("sm_clock_mhz") is not None:
            peak = results.peak_tflops_at(data, row["sm_clock_mhz"])
            ax.vlines(peak, y - 0.38, y + 0.38, color=PEAK, linewidth=1.5)
            top = max(top, peak)
    handles: list[Any] = [Line2D([], [], color=PEAK, linewidth=1.5)]
    labels = ["peak at the SM clock each ran at"]
    cublas = rows["cublas"]["tflops"]
    handles.append(ax.axvline(cublas, color=CUBLAS, linestyle="--", linewidth=1.1))
    labels.append(f"cuBLAS, same run ({cublas:.0f})")
    published = data["gpu"].get("published_dense_fp16_tflops")
    if published:
        handles.append(ax.axvline(published, color=PEAK, linestyle=":", linewidth=1.4))
        labels.append(f"datasheet dense FP16 peak ({published:g})")
        top = max(top, published)
    tick_labels = [versions.label(n) for n in names]
    ax.set_yticks(range(len(names)), tick_labels)
    ax.set_ylim(len(names) - 0.5, -0.5)
    ax.set_xlim(0, top * 1.08)
    ax.xaxis.set_major_locator(_ticks())
    ax.grid(axis="y", visible=False)
    left_in = PAD_IN + max(text_width_in(t) for t in tick_labels) + 0.12
    top_in = _title(ax, f"From {first} to {last} on {data['gpu']['name']}", left_in)
    legend_in = legend_below(fig, handles, labels)
    bottom_in = _xlabel(ax, f"TFLOPS at {numfmt.shape_text(run['shape'])}", left_in) + legend_in
    fit(fig, [ax], [len(names) * LINE_IN * 1.35], top_in=top_in, bottom_in=bottom_in, left_in=left_in)
    return fig


def _sweep_order(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    runs = sorted(runs, key=lambda r: (math.prod(r["shape"].values()), results.shape_of(r)))
    impls = sorted({i for r in runs for i in r["rows"]}, key=lambda n: (not versions.is_version_name(n), n))
    return runs, impls


def sweep_chart(data: Any = _USE_FILE) -> Figure:
    """Per shape (a row each, its name above): each implementation as a ratio to that run's cuBLAS with its 95%
    interval; TFLOPS below."""
    data = _data(data)
    runs = [] if data is None else list(data.get("sweep", []))
    if not runs:
        fig, ax = new_figure()
        return empty_panel(fig, ax, f"Shape sweep: {NOT_MEASURED}")
    fig, (top, bottom) = new_figure(rows=2)
    runs, impls = _sweep_order(runs)
    others = iter(OTHER_SERIES * 4)
    colours = {impl: SERIES.get(impl) or next(others) for impl in impls}
    markers = {impl: "o" if versions.is_version_name(impl) else "D" for impl in impls}
    ours = [i for i in impls if i != "cublas"]
    step = 0.2  # lines of text between two implementations' markers in a row
    band = max(BAR, step * len(impls))
    shapes = [numfmt.shape_text(r["shape"]) for r in runs]
    tops, centres, end = _labelled_rows(shapes, band, header=0.2, gap=0.3)
    offset = {impl: step * (j - (len(impls) - 1) / 2) for j, impl in enumerate(impls)}
    for impl in ours:
        ys, med, err = [], [], [[], []]
        for centre, r in zip(centres, runs, strict=True):
            if impl in r["rows"]:
                iv = r["rows"][impl]["ratio_to_cublas"]
                ys.append(centre + offset[impl])
                med.append(iv["median"])
                err[0].append(iv["median"] - iv["low"])
                err[1].append(iv["high"] - iv["median"])
        top.errorbar(
            med,
            ys,
            xerr=err,
            fmt=markers[impl],
            markersize=4,
            capsize=2.5,
            color=colours[impl],
            label=versions.label(impl),
        )
    top.axvline(1.0, color=CUBLAS, linestyle="--", linewidth=1.1)
    top.margins(x=0.08)
    for impl in impls:
        points = [
            (c + offset[impl], r["rows"][impl]["tflops"])
            for c, r in zip(centres, runs, strict=True)
            if impl in r["rows"]
        ]
        bottom.plot(
            [p[1] for p in points],
            [p[0] for p in points],
            linestyle="none",
            marker=markers[impl],
            markersize=4.5,
            color=colours[impl],
            label=versions.label(impl),
        )
    bottom.set_xlim(0, max(r["rows"][i]["tflops"] for r in runs for i in r["rows"]) * 1.08)
    for ax in (top, bottom):
        for y, shape in zip(tops, shapes, strict=True):
            ax.text(0, y, shape, va="top", ha="left", transform=ax.get_yaxis_transform())
        ax.set_ylim(end, 0)
        ax.set_yticks([])
        ax.spines["left"].set_visible(False)
        ax.grid(axis="y", visible=False)
        ax.xaxis.set_major_locator(_ticks())
    title_in = _title(top, f"Against cuBLAS, shape by shape, on {data['gpu']['name']}")
    gap_in = _xlabel(top, "\u00d7 cuBLAS, same run (95% interval)") + 0.15
    handles = [Line2D([], [], linestyle="none", marker=markers[i], color=colours[i]) for i in ours]
    handles.append(Line2D([], [], color=CUBLAS, linestyle="--", marker=markers.get("cublas")))
    labels = [versions.label(i) for i in ours] + ["cuBLAS, same run"]
    legend_in = legend_below(fig, handles, labels)
    bottom_in = _xlabel(bottom, "TFLOPS") + legend_in
    fit(fig, [top, bottom], [end * LINE_IN] * 2, top_in=title_in, bottom_in=bottom_in, gap_in=gap_in)
    return fig


def steps_chart(data: Any = _USE_FILE) -> Figure:
    """Waterfall of the ladder: each step a floating bar from the previous version's TFLOPS to its own.

    The bar's colour is the step's verdict; the error bar is the step's 95% interval applied to the
    previous version's TFLOPS, and the label above the bar the paired step ratio with its interval.
    """
    data = _data(data)
    fig, ax = new_figure()
    steps = results.ladder_steps(data)
    first, last = versions.label(versions.names()[0]), versions.label(versions.names()[-1])
    if not steps:
        return empty_panel(fig, ax, f"Steps {first}\u2013{last}: {NOT_MEASURED}")
    rows = results.ladder(data)["rows"]
    labels = [
        wrap(
            f"{versions.label(step['over'])}\u2192{versions.label(impl)}  {numfmt.ratio_text(step)}",
            TEXT_WIDTH_IN,
        )
        for impl, step in steps
    ]
    tops, centres, end = _labelled_rows(labels)
    top = 1.0
    for i, ((impl, step), label) in enumerate(zip(steps, labels, strict=True)):
        base = rows[step["over"]]["tflops"]
        after = rows[impl]["tflops"]
        ax.text(0, tops[i], label, va="top", ha="left", linespacing=1.1)
        ax.barh(centres[i], after - base, left=base, color=VERDICT_COLOURS[results.verdict(step)], height=BAR)
        low, high, mid = base * step["low"], base * step["high"], base * step["median"]
        ax.errorbar([mid], [centres[i]], xerr=[[mid - low], [high - mid]], fmt="none", ecolor=INK, capsize=3, lw=1)
        if i + 1 < len(steps):
            ax.vlines(after, centres[i] + BAR / 2, centres[i + 1] - BAR / 2, color=MUTED, linewidth=0.8)
        top = max(top, high, after)
    cublas = rows["cublas"]["tflops"]
    _cublas_line(ax, cublas, f"cuBLAS, same run ({cublas:.0f})")
    ax.set_xlim(0, max(top, cublas) * 1.08)
    ax.set_ylim(end, 0)
    ax.set_yticks([])
    ax.spines["left"].set_visible(False)
    ax.grid(axis="y", visible=False)
    ax.xaxis.set_major_locator(_ticks())
    handles = [Patch(color=colour) for colour in VERDICT_COLOURS.values()]
    legend_in = legend_below(fig, handles, list(VERDICT_COLOURS), title="verdict (95% interval against 1.0)")
    top_in = _title(ax, "What each step bought")
    bottom_in = _xlabel(ax, f"TFLOPS at {numfmt.shape_text(results.ladder(data)['shape'])}") + legend_in
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
    ax.xaxis.set_minor_locator(_no_ticks())


def _no_ticks() -> Any:
    from matplotlib.ticker import NullLocator

    return NullLocator()


def replication_chart(data: Any = _USE_FILE) -> Figure:
    """The replicated ladder, per step (over the previous version) and per version (against cuBLAS): each run's
    median as a dot, the merged interval as a bar coloured by its verdict, and the parity band around 1.

    A row a line high per implementation, its name on the left; ratios on a log axis, so that a 1.75x step and a
    1% one read on one scale. With fewer than two runs there is nothing to compare, and the panel says so.
    """
    data = _data(data)
    fig, top = new_figure()
    ladder = results.ladder(data)
    if ladder is None or len(ladder.get("runs", [])) < 2:
        return empty_panel(fig, top, f"Replicated ladder: {NOT_MEASURED}")
    bottom = fig.add_subplot(2, 1, 2)
    band = data["method"]["verdicts"]["parity_band"]
    runs = ladder["runs"]
    impls = [i for i in ladder["rows"] if i != results.CUBLAS]
    panels = (
        (top, "step", "Step over the previous version", lambda i: f"{versions.label(ladder['rows'][i]['step']['over'])}"
         f"\u2192{versions.label(i)}"),
        (bottom, "ratio_to_cublas", "Against cuBLAS, same runs", versions.label),
    )  # fmt: skip
    labels = {key: [name(i) for i in impls if ladder["rows"][i].get(key)] for _, key, _, name in panels}
    left_in = PAD_IN + max(text_width_in(t) for names in labels.values() for t in names) + 0.12
    heights, below = [], []
    for ax, key, what, _ in panels:
        shown = [i for i in impls if ladder["rows"][i].get(key)]
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
    names = ["one run's median", *(f"merged: {rule}" for rule in VERDICT_COLOURS), f"parity band, \u00b1{band:.1%}"]
    legend_in = legend_below(fig, handles, names)
    fit(fig, [top, bottom], heights, top_in=title_in, bottom_in=below[1] + legend_in, left_in=left_in,
        gap_in=below[0] + 0.15)  # fmt: skip
    return fig
