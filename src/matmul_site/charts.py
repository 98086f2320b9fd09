"""The charts, drawn from the results file (schema 2); each plot script in plots/ is one call of one function here.

One baseline per chart: the dashed cuBLAS line and every ratio are the cuBLAS of the same
interleaved run. No file, or no run to draw, gives a panel that says "not measured yet" and
no number. Nothing here imports torch, Tilus or CUDA; a chapter chart reruns its version on
a Hopper GPU only when asked (:mod:`matmul_site.rerun`).
"""

from __future__ import annotations

import math
import textwrap
from typing import Any

from matplotlib.figure import Figure

from matmul_site import captions, numfmt, rerun, results, versions
from matmul_site.chartkit import (
    CUBLAS,
    EARLIER,
    HIGHLIGHT,
    INK,
    LATER,
    MUTED,
    OTHER_SERIES,
    PEAK,
    SERIES,
    VERDICT_COLOURS,
    empty_panel,
    footer,
    new_figure,
    save,
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


def version_chart(version: str, data: Any = _USE_FILE) -> Figure:
    """Chapter chart: every version's TFLOPS, this one highlighted, earlier ones solid, later ones faint.

    Drawn from the recorded ladder; with ``HOPPER_MATMUL_RERUN_CHARTS=1`` on a Hopper GPU, from a
    fresh run of this version and cuBLAS (the caption says so).
    """
    versions.get(version)  # VersionError (a ValueError) names the known versions
    rerun_on = None
    if data is _USE_FILE:
        data, rerun_on = rerun.ladder_for(version, results.load_default())
    text = captions.ladder_caption(data, rerun_on=rerun_on)
    fig, ax = new_figure()
    run = results.ladder(data)
    if run is None or version not in run["rows"]:
        return empty_panel(fig, ax, f"{versions.label(version)}: {NOT_MEASURED}", text)
    rows = run["rows"]
    order = list(versions.names())
    current = order.index(version)
    ys = list(range(len(order)))[::-1]
    for y, name in zip(ys, order, strict=True):
        index = order.index(name)
        colour = HIGHLIGHT if index == current else EARLIER if index < current else LATER
        if name not in rows:
            ax.text(2, y, NOT_MEASURED if rerun_on is None else "not in this run", va="center", fontsize=8, color=MUTED)
            continue
        t = rows[name]["tflops"]
        ax.barh(y, t, color=colour, height=0.7)
        weight = "bold" if index == current else "normal"
        ax.text(t, y, f" {t:.0f}", va="center", fontsize=8, color=INK if index <= current else MUTED, fontweight=weight)
    cublas = rows["cublas"]["tflops"]
    ax.axvline(cublas, color=CUBLAS, linestyle="--", linewidth=1.2)
    ax.text(cublas, len(order) - 0.35, f"cuBLAS {cublas:.0f} ", color=CUBLAS, ha="right", va="bottom", fontsize=8)
    names = [f"{versions.label(n)}  {textwrap.shorten(versions.title(n), 26, placeholder='...')}" for n in order]
    ax.set_yticks(ys, names, fontsize=8)
    ax.set_ylim(-0.6, len(order) - 0.1)
    ax.set_xlim(0, max(r["tflops"] for r in rows.values()) * 1.15)
    ax.set_xlabel(f"TFLOPS at {numfmt.shape_text(run['shape'])} (higher is better)")
    ax.grid(axis="y", visible=False)
    ratio = numfmt.ratio_text(rows[version]["ratio_to_cublas"])
    ax.set_title(f"{versions.label(version)}: {rows[version]['tflops']:.0f} TFLOPS, {ratio} cuBLAS", loc="left")
    fig.subplots_adjust(left=0.36, right=0.97, top=0.88, bottom=0.27)
    footer(fig, text)
    return fig


def summary_chart(data: Any = _USE_FILE) -> Figure:
    """Index chart: the ladder's TFLOPS, cuBLAS's line, and two peaks: at each row's measured clock, and published."""
    data = _data(data)
    fig, ax = new_figure(7.0, 4.0)
    run = results.ladder(data)
    text = captions.ladder_caption(data)
    if run is None:
        return empty_panel(fig, ax, f"V0\u2013V6: {NOT_MEASURED}", text)
    names = _ladder_names()
    rows = run["rows"]
    top = 1.0
    for x, name in enumerate(names):
        row = rows.get(name)
        if row is None:
            ax.text(x, 5, NOT_MEASURED, rotation=90, ha="center", va="bottom", fontsize=7.5, color=MUTED)
            continue
        ax.bar(x, row["tflops"], color=CUBLAS if name == "cublas" else HIGHLIGHT, width=0.7)
        ax.text(x, row["tflops"], f"{row['tflops']:.0f}", ha="center", va="bottom", fontsize=8)
        top = max(top, row["tflops"])
        if row.get("sm_clock_mhz") is not None:
            peak = results.peak_tflops_at(data, row["sm_clock_mhz"])
            ax.hlines(peak, x - 0.38, x + 0.38, color=PEAK, linewidth=1.3)
            top = max(top, peak)
    ax.plot([], [], color=PEAK, linewidth=1.3, label="tensor-core peak at the SM clock each ran at")
    cublas = rows["cublas"]["tflops"]
    ax.axhline(cublas, color=CUBLAS, linestyle="--", linewidth=1.1, label=f"cuBLAS, same run ({cublas:.0f})")
    published = data["gpu"].get("published_dense_fp16_tflops")
    if published:
        ax.axhline(published, color=PEAK, linestyle=":", linewidth=1.3, label=f"datasheet dense FP16 ({published:g})")
        top = max(top, published)
    ax.set_xticks(range(len(names)), [versions.label(n) for n in names])
    ax.set_ylim(0, top * 1.3)
    ax.set_ylabel(f"TFLOPS at {numfmt.shape_text(run['shape'])}")
    ax.grid(axis="x", visible=False)
    ax.legend(loc="upper left", fontsize=7.5, frameon=False, ncol=2)
    ax.set_title(f"From V0 to V6 on {data['gpu']['name']}", loc="left")
    fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.25)
    footer(fig, text)
    return fig


def _sweep_order(runs: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], list[str]]:
    runs = sorted(runs, key=lambda r: (math.prod(r["shape"].values()), results.shape_of(r)))
    impls = sorted({i for r in runs for i in r["rows"]}, key=lambda n: (not versions.is_version_name(n), n))
    return runs, impls


def sweep_chart(data: Any = _USE_FILE) -> Figure:
    """Per shape: each implementation as a ratio to that run's cuBLAS with its 95% interval; TFLOPS below."""
    data = _data(data)
    runs = [] if data is None else list(data.get("sweep", []))
    text = captions.sweep_caption(data)
    if not runs:
        fig, ax = new_figure(7.0, 3.6)
        return empty_panel(fig, ax, f"Shape sweep: {NOT_MEASURED}", text)
    fig, (top, bottom) = new_figure(7.0, 6.2, rows=2)
    runs, impls = _sweep_order(runs)
    others = iter(OTHER_SERIES * 4)
    colours = {impl: SERIES.get(impl) or next(others) for impl in impls}
    ours = [i for i in impls if i != "cublas"]
    width = 0.7 / max(len(ours), 1)
    for j, impl in enumerate(ours):
        xs, med, err = [], [], [[], []]
        for x, r in enumerate(runs):
            if impl in r["rows"]:
                iv = r["rows"][impl]["ratio_to_cublas"]
                xs.append(x - 0.35 + width * (j + 0.5))
                med.append(iv["median"])
                err[0].append(iv["median"] - iv["low"])
                err[1].append(iv["high"] - iv["median"])
        top.errorbar(
            xs, med, yerr=err, fmt="o", markersize=3.5, capsize=2.5, color=colours[impl], label=versions.label(impl)
        )
    top.axhline(1.0, color=CUBLAS, linestyle="--", linewidth=1.1, label="cuBLAS (same run)")
    top.set_ylabel("\u00d7 cuBLAS (95% interval)")
    top.margins(y=0.15)
    top.set_title(f"Against cuBLAS, shape by shape, on {data['gpu']['name']}", loc="left")
    for impl in impls:
        points = [(x, r["rows"][impl]["tflops"]) for x, r in enumerate(runs) if impl in r["rows"]]
        style = "-" if versions.is_version_name(impl) else "--"
        bottom.plot(
            [p[0] for p in points],
            [p[1] for p in points],
            style,
            marker="o",
            markersize=3,
            color=colours[impl],
            label=versions.label(impl),
            linewidth=1.3,
        )
    bottom.set_ylim(0, max(r["rows"][i]["tflops"] for r in runs for i in r["rows"]) * 1.1)
    bottom.legend(loc="lower right", fontsize=7.5, frameon=True, ncol=3)
    bottom.set_ylabel("TFLOPS")
    bottom.set_xticks(
        range(len(runs)), [numfmt.shape_text(r["shape"]) for r in runs], rotation=30, ha="right", fontsize=7.5
    )
    top.tick_params(labelbottom=False)
    fig.subplots_adjust(left=0.11, right=0.98, top=0.94, bottom=0.24, hspace=0.12)
    footer(fig, text)
    return fig


def steps_chart(data: Any = _USE_FILE) -> Figure:
    """Waterfall of the ladder: each step a floating bar from the previous version's TFLOPS to its own.

    The bar's colour is the step's verdict; the error bar is the step's 95% interval applied to the
    previous version's TFLOPS, and the label the paired step ratio with its interval.
    """
    data = _data(data)
    text = captions.ladder_caption(data)
    fig, ax = new_figure(7.0, 4.0)
    steps = results.ladder_steps(data)
    if not steps:
        return empty_panel(fig, ax, f"Steps V0\u2013V6: {NOT_MEASURED}", text)
    rows = results.ladder(data)["rows"]
    labels, top = [], 1.0
    for x, (impl, step) in enumerate(steps):
        base = rows[step["over"]]["tflops"]
        height = rows[impl]["tflops"] - base
        rule = results.verdict(step)
        ax.bar(x, height, bottom=base, color=VERDICT_COLOURS[rule], width=0.6)
        low, high = base * step["low"], base * step["high"]
        mid = base * step["median"]
        ax.errorbar([x], [mid], yerr=[[mid - low], [high - mid]], fmt="none", ecolor=INK, capsize=3, linewidth=1)
        median, _, interval = numfmt.ratio_text(step).partition(" ")
        ax.text(
            x,
            max(base, rows[impl]["tflops"], high) + 8,
            f"{median}\n{interval}",
            ha="center",
            va="bottom",
            fontsize=7,
            linespacing=1.1,
            bbox={"facecolor": "white", "edgecolor": "none", "pad": 0.5},
        )
        if x + 1 < len(steps):
            ax.hlines(rows[impl]["tflops"], x + 0.3, x + 0.7, color=MUTED, linewidth=0.8)
        labels.append(f"{versions.label(step['over'])}\u2192{versions.label(impl)}")
        top = max(top, high, rows[impl]["tflops"])
    cublas = rows["cublas"]["tflops"]
    ax.axhline(cublas, color=CUBLAS, linestyle="--", linewidth=1.1)
    ax.text(-0.45, cublas, f"cuBLAS, same run ({cublas:.0f})", color=CUBLAS, ha="left", va="bottom", fontsize=8)
    for rule, colour in VERDICT_COLOURS.items():
        ax.bar([0], [0], color=colour, label=rule)
    ax.legend(loc="lower right", fontsize=7.5, frameon=True, title="verdict (95% interval vs 1.0)", title_fontsize=7.5)
    ax.set_xticks(range(len(steps)), labels)
    ax.set_ylim(0, max(top, cublas) * 1.2)
    ax.set_ylabel(f"TFLOPS at {numfmt.shape_text(results.ladder(data)['shape'])}")
    ax.grid(axis="x", visible=False)
    ax.set_title("What each step bought", loc="left")
    fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.25)
    footer(fig, text)
    return fig


def replication_chart(data: Any = _USE_FILE) -> Figure:
    """Each ladder step and each version against cuBLAS: every run's median as a dot, the merged interval as a bar.

    The grey band is the parity band: a bar inside it, or crossing it, is parity, whatever its dots say.
    """
    data = _data(data)
    fig, axes = new_figure(7.0, 5.2, rows=2)
    ladder = results.ladder(data) if data else None
    if not ladder or len(ladder.get("runs", [])) < 2:
        return empty_panel(fig, axes[0], f"Replicated ladder: {NOT_MEASURED}", "")
    band = data["method"]["verdicts"]["parity_band"]
    panels = (("step", "step over the previous version"), ("ratio_to_cublas", "version against cuBLAS"))
    impls = [i for i in ladder["rows"] if i != "cublas"]
    for ax, (key, what) in zip(axes, panels, strict=True):
        for x, impl in enumerate(impls):
            merged = ladder["rows"][impl].get(key)
            if merged is None:
                continue
            colour = VERDICT_COLOURS[results.verdict(merged)]
            ax.vlines(x, merged["low"], merged["high"], color=colour, linewidth=6, alpha=0.45)
            medians = [run["rows"][impl][key]["median"] for run in ladder["runs"]]
            offsets = [(i - (len(medians) - 1) / 2) * 0.12 for i in range(len(medians))]
            ax.plot([x + o for o in offsets], medians, "o", color=INK, markersize=3.5)
        ax.axhspan(1 - band, 1 + band, color=MUTED, alpha=0.25, linewidth=0)
        ax.axhline(1.0, color=MUTED, linewidth=0.8)
        ax.set_ylabel(what, fontsize=9)
        ax.set_yscale("log")  # a 1.75x step and a 1% one on one axis
        low, high = ax.get_ylim()
        ax.set_yticks([t for t in (0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.25, 1.5, 1.75) if low <= t <= high])
        ax.yaxis.set_major_formatter("{x:.2f}")
        ax.yaxis.set_minor_formatter("")
        ax.grid(axis="x", visible=False)
    axes[0].set_title(
        f"{len(ladder['runs'])} runs at {numfmt.shape_text(ladder['shape'])}: dots are runs, bars the merged interval",
        loc="left",
        fontsize=10,
    )
    axes[-1].set_xticks(range(len(impls)), [versions.label(i) for i in impls])
    fig.subplots_adjust(left=0.12, right=0.98, top=0.93, bottom=0.07, hspace=0.25)
    return fig
