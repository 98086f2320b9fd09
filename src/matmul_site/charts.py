"""What every chart shares: finding and loading the results file, formatting, style, captions, SVG output.

The plot scripts next to this module are one line each; Sphinx's ``plot`` directive
runs them at build time, and ``draw_all.py`` runs them for ``nox -s plots``. Nothing
here imports torch, Tilus or CUDA: the charts draw from the recorded results only.

Which results file: ``$HOPPER_MATMUL_RESULTS`` when set (a path; a path that does
not exist means "no results"), else the single ``plots/results/*.json``. No file
means every chart and every number on the site says "not measured yet"; a file that
exists but is corrupt raises ``results.ResultsError`` naming the file.
"""

from __future__ import annotations

import math
import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")  # never a window, never a GPU: charts are files

import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from matmul_site import paths, results, versions  # noqa: E402

ENV_RESULTS = "HOPPER_MATMUL_RESULTS"
NOT_MEASURED = "not measured yet"
VERSIONS = tuple(f"v{i}" for i in range(7))

# What each version adds; the chapter titles say the same. Used where the file has no entry yet.
TECHNIQUES: dict[str, str] = {
    "v0": "TMA + mma.sync",
    "v1": "WGMMA from shared memory",
    "v2": "multi-stage software pipeline",
    "v3": "warp specialization",
    "v4": "two consumer warp groups + raster order",
    "v5": "WGMMA kept in flight",
    "v6": "persistent kernel, overlapped epilogue",
    "cublas": "cuBLAS via torch.matmul",
}
# The same, short enough for a chart's axis.
SHORT: dict[str, str] = {
    "v0": "mma.sync",
    "v1": "WGMMA",
    "v2": "pipelined",
    "v3": "warp-specialized",
    "v4": "2 consumers + raster",
    "v5": "WGMMA in flight",
    "v6": "persistent",
    "cublas": "cuBLAS",
}
# Sweep implementations that are not ours: how the legend names them.
PEER_LABELS: dict[str, str] = {
    "cublas": "cuBLAS",
    "torch-compile-max-autotune": "torch.compile (max-autotune)",
}

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


# ---------------------------------------------------------------------------- the results file


def results_path() -> Path | None:
    """The results file the site shows, or None when there is none yet."""
    override = os.environ.get(ENV_RESULTS)
    if override:
        path = Path(override)
        return path if path.exists() else None
    files = sorted(results.results_dir().glob("*.json"))
    if not files:
        return None
    if len(files) > 1:
        names = ", ".join(f.name for f in files)
        raise results.ResultsError(
            f"{results.results_dir()}: several results files ({names}); set {ENV_RESULTS} to the one to show"
        )
    return files[0]


def load() -> dict[str, Any] | None:
    """The validated results, or None when no file exists (a corrupt file raises ResultsError)."""
    path = results_path()
    return None if path is None else results.load(path)


def entry(data: dict[str, Any] | None, name: str) -> dict[str, Any] | None:
    """One entry ("v0".."v6", "cublas") or None when it is not measured."""
    if data is None:
        return None
    return data.get("entries", {}).get(name)


def measured_versions(data: dict[str, Any] | None) -> list[str]:
    return [] if data is None else list(results.versions(data))


def label(name: str) -> str:
    """How a chart or table names an implementation: "V3", "cuBLAS"."""
    if name in VERSIONS:
        return name.upper()
    return PEER_LABELS.get(name, name)


def problem_text(data: dict[str, Any]) -> str:
    p = data["problem"]
    return f"{p['m']}\u00d7{p['n']}\u00d7{p['k']}"


def dates(data: dict[str, Any], names: Iterable[str] | None = None) -> str:
    """The measurement date, or the range of dates, of the named entries (all when None)."""
    entries = data.get("entries", {})
    chosen = entries.keys() if names is None else [n for n in names if n in entries]
    found = sorted({str(entries[n]["date"]) for n in chosen if entries[n].get("date")})
    if not found:
        return "date not recorded"
    return found[0] if len(found) == 1 else f"{found[0]} to {found[-1]}"


def caption(data: dict[str, Any] | None, names: Iterable[str] | None = None) -> str:
    """Provenance line for a chart: GPU, problem size, dtype, method and date, all from the file."""
    if data is None:
        return f"No results recorded: {NOT_MEASURED}."
    gpu, p, m = data["gpu"], data["problem"], data["method"]
    return (
        f"{gpu['name']}, C = A\u00b7B\u1d40 at {problem_text(data)}, {p['dtype']} inputs, "
        f"{p['accumulate']} accumulation. {m['timer']}, {m['statistic']}. Measured {dates(data, names)}."
    )


def sweep_caption(data: dict[str, Any] | None) -> str:
    if data is None or not data.get("sweep"):
        return f"Shape sweep: {NOT_MEASURED}."
    gpu, p, m = data["gpu"], data["problem"], data["method"]
    found = sorted({str(row["date"]) for row in data["sweep"] if row.get("date")})
    when = found[0] if len(found) == 1 else f"{found[0]} to {found[-1]}" if found else "date not recorded"
    # The sweep is timed differently from the ladder (one process per implementation, not three).
    statistic = m.get("sweep_statistic") or "statistic not recorded"
    return (
        f"{gpu['name']}, {p['dtype']} inputs, {p['accumulate']} accumulation, each shape M\u00d7N\u00d7K. "
        f"{m['timer']}, {statistic}. Measured {when}."
    )


# ---------------------------------------------------------------------------- drawing


class DeterministicFigure(Figure):
    """A figure whose SVG carries no date, so two draws of the same data give the same bytes."""

    def savefig(self, fname: Any, *args: Any, **kwargs: Any) -> None:
        fmt = kwargs.get("format") or Path(str(fname)).suffix.lstrip(".") or "svg"
        if fmt == "svg":
            kwargs["metadata"] = {**(kwargs.get("metadata") or {}), "Date": None}
        super().savefig(fname, *args, **kwargs)


def new_figure(width: float = 7.0, height: float = 3.6) -> tuple[Figure, Any]:
    """A figure in the shared style with one axes."""
    plt.rcParams.update(STYLE)  # the plot directive resets rcParams before each script; set them again
    fig = plt.figure(FigureClass=DeterministicFigure, figsize=(width, height))
    ax = fig.add_subplot(1, 1, 1)
    return fig, ax


def _footer(fig: Figure, text: str) -> None:
    fig.text(0.01, 0.01, text, fontsize=7, color=MUTED, ha="left", va="bottom", wrap=True)


def _empty_panel(fig: Figure, ax: Any, message: str, footer: str) -> Figure:
    ax.set_axis_off()
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=13, color=MUTED, transform=ax.transAxes)
    _footer(fig, footer)
    return fig


def version_chart(version: str, data: dict[str, Any] | None = None, *, use_file: bool = True) -> Figure:
    """Chapter chart: every version's TFLOPS, this one highlighted, earlier ones solid, later ones faint."""
    if version not in VERSIONS:
        raise ValueError(f"unknown version {version!r}; expected one of {', '.join(VERSIONS)}")
    data = load() if data is None and use_file else data
    fig, ax = new_figure()
    if entry(data, version) is None:
        return _empty_panel(fig, ax, f"{label(version)}: {NOT_MEASURED}", caption(data))
    assert data is not None
    current = VERSIONS.index(version)
    ys = list(range(len(VERSIONS)))[::-1]
    for y, name in zip(ys, VERSIONS, strict=True):
        e = entry(data, name)
        index = VERSIONS.index(name)
        colour = HIGHLIGHT if index == current else EARLIER if index < current else LATER
        if e is None:
            ax.text(2, y, NOT_MEASURED, va="center", fontsize=8, color=MUTED)
            continue
        ax.barh(y, e["tflops"], color=colour, height=0.7)
        weight = "bold" if index == current else "normal"
        tone = INK if index <= current else MUTED
        ax.text(e["tflops"], y, f" {e['tflops']:.0f}", va="center", fontsize=8, color=tone, fontweight=weight)
    cublas = entry(data, "cublas")
    if cublas is not None:
        ax.axvline(cublas["tflops"], color=CUBLAS, linestyle="--", linewidth=1.2)
        ax.text(cublas["tflops"], len(VERSIONS) - 0.35, f"cuBLAS {cublas['tflops']:.0f} ", color=CUBLAS,
                ha="right", va="bottom", fontsize=8)  # fmt: skip
    ax.set_yticks(ys, [f"{label(n)}  {SHORT[n]}" for n in VERSIONS])
    ax.set_ylim(-0.6, len(VERSIONS) - 0.1)
    top = max([e["tflops"] for e in data["entries"].values()] + [1.0])
    ax.set_xlim(0, top * 1.15)
    ax.set_xlabel(f"TFLOPS at {problem_text(data)} (higher is better)")
    ax.grid(axis="y", visible=False)
    e = entry(data, version)
    ax.set_title(f"{label(version)}: {e['tflops']:.0f} TFLOPS, {e['fraction_of_cublas']:.0%} of cuBLAS", loc="left")
    fig.subplots_adjust(left=0.3, right=0.97, top=0.88, bottom=0.2)
    _footer(fig, caption(data))
    return fig


def summary_chart(data: dict[str, Any] | None = None, *, use_file: bool = True) -> Figure:
    """Index chart: every version next to cuBLAS, with cuBLAS and the published dense FP16 peak as lines."""
    data = load() if data is None and use_file else data
    fig, ax = new_figure(7.0, 3.8)
    names = [n for n in (*VERSIONS, "cublas") if entry(data, n) is not None]
    if data is None or not names:
        return _empty_panel(fig, ax, f"V0\u2013V6: {NOT_MEASURED}", caption(data))
    xs = list(range(len(VERSIONS) + 1))
    for x, name in zip(xs, (*VERSIONS, "cublas"), strict=True):
        e = entry(data, name)
        if e is None:
            ax.text(x, 5, NOT_MEASURED, rotation=90, ha="center", va="bottom", fontsize=7.5, color=MUTED)
            continue
        ax.bar(x, e["tflops"], color=CUBLAS if name == "cublas" else HIGHLIGHT, width=0.7)
        ax.text(x, e["tflops"], f"{e['tflops']:.0f}", ha="center", va="bottom", fontsize=8)
    top = max(entry(data, n)["tflops"] for n in names)
    peak = data["gpu"].get("published_dense_fp16_tflops")
    cublas = entry(data, "cublas")
    if cublas is not None:
        ax.axhline(cublas["tflops"], color=CUBLAS, linestyle="--", linewidth=1.1)
        ax.text(-0.45, cublas["tflops"], f"cuBLAS {cublas['tflops']:.0f}", color=CUBLAS, va="bottom", fontsize=8)
    if peak:
        ax.axhline(peak, color=PEAK, linestyle=":", linewidth=1.3)
        ax.text(-0.45, peak, f"published dense FP16 peak {peak:.0f}", color=PEAK, va="bottom", fontsize=8)
        top = max(top, peak)
    ax.set_xticks(xs, [label(n) for n in (*VERSIONS, "cublas")])
    ax.set_ylim(0, top * 1.12)
    ax.set_ylabel(f"TFLOPS at {problem_text(data)}")
    ax.grid(axis="x", visible=False)
    ax.set_title(f"From V0 to V6 on {data['gpu']['name']}", loc="left")
    fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.2)
    _footer(fig, caption(data))
    return fig


def _flops(row: dict[str, Any]) -> float:
    return 2.0 * row["m"] * row["n"] * row["k"]


def sweep_chart(data: dict[str, Any] | None = None, *, use_file: bool = True) -> Figure:
    """TFLOPS against problem shape for V4-V6, cuBLAS and the torch.compile peer."""
    data = load() if data is None and use_file else data
    fig, ax = new_figure(7.0, 3.8)
    rows = [] if data is None else list(data.get("sweep", []))
    if not rows:
        return _empty_panel(fig, ax, f"Shape sweep: {NOT_MEASURED}", sweep_caption(data))
    shapes = sorted({(r["m"], r["n"], r["k"]) for r in rows}, key=lambda s: (math.prod(s), s))
    position = {s: i for i, s in enumerate(shapes)}
    impls = sorted({r["impl"] for r in rows}, key=lambda n: (n not in VERSIONS, n))
    others = iter(OTHER_SERIES * 4)
    for impl in impls:
        colour = SERIES.get(impl) or next(others)
        points = sorted((position[(r["m"], r["n"], r["k"])], r["tflops"]) for r in rows if r["impl"] == impl)
        style = "-" if impl in VERSIONS else "--"  # ours solid, the references dashed
        ax.plot([p[0] for p in points], [p[1] for p in points], style, marker="o", markersize=3.5, color=colour,
                label=label(impl), linewidth=1.4)  # fmt: skip
    ax.set_xticks(range(len(shapes)), [f"{m}\u00d7{n}\u00d7{k}" for m, n, k in shapes], rotation=35, ha="right",
                  fontsize=7.5)  # fmt: skip
    ax.set_ylim(bottom=0)
    ax.set_ylabel("TFLOPS")
    ax.legend(loc="lower right", fontsize=8, frameon=True)
    ax.set_title(f"TFLOPS by shape on {data['gpu']['name']} (ordered by FLOPs)", loc="left")
    fig.subplots_adjust(left=0.1, right=0.98, top=0.9, bottom=0.36)
    _footer(fig, sweep_caption(data))
    return fig


def save(fig: Figure, path: Path) -> Path:
    """Write an SVG atomically (temp file + rename); the bytes depend only on the data."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    fig.savefig(tmp, format="svg")
    os.replace(tmp, path)
    plt.close(fig)
    return path
