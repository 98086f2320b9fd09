"""Chart and table captions: what a chart shows and which runs it comes from, every word from the results file
(no matplotlib).

How the runs were timed and merged is said once, on the method page (docs/method.rst, whose provenance table
prints the file's ``method``); a caption names its runs and links there. The link itself is the Sphinx side's
(:mod:`matmul_site.sphinx.fact_blocks`): a caption here is plain text, and with the link's words
(:data:`METHOD_LINK`) it stays under :data:`MAX_WORDS`.
"""

from __future__ import annotations

from typing import Any

from matmul_data import results, versions
from matmul_site import numfmt

NOT_MEASURED = numfmt.NOT_MEASURED
MAX_WORDS = 40
METHOD_LINK = "How we measured"  # the words that link every caption to the method page (then a full stop)


def independent(figures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The independent runs behind some figures (ladder, sweep shapes, steps tables): a replicated figure's own
    ``runs``, else the figure itself; each run once, by its id."""
    found = {run["run_id"]: run for figure in figures for run in (figure.get("runs") or [figure])}
    return [found[run_id] for run_id in sorted(found)]


def _named(figures: list[dict[str, Any]], *, capital: bool = True) -> str:
    """ "Run 2026-12-01T230059Z" for figures from one run, "3 runs" for figures merged from several."""
    runs = independent(figures)
    if len(runs) == 1:
        return f"{'Run' if capital else 'run'} {runs[0]['run_id']}"
    return f"{len(runs)} runs"


def dates(figures: list[dict[str, Any]]) -> str:
    """The day the runs behind some figures were taken, or the first and last day."""
    found = sorted({r["date"] for r in independent(figures)})
    if not found:
        return "date not recorded"
    return found[0] if len(found) == 1 else f"{found[0]} to {found[-1]}"


def _counts(figures: list[dict[str, Any]]) -> str:
    """ "10 rounds in 3 processes" for one run; over several: "6 rounds in 2 processes each" (or "5-6 rounds")."""
    runs = independent(figures)

    def span(key: str) -> str:
        values = sorted({r[key] for r in runs})
        return str(values[0]) if len(values) == 1 else f"{values[0]}\u2013{values[-1]}"

    return f"{span('rounds')} rounds in {span('processes')} processes{' each' if len(runs) > 1 else ''}"


def _earlier(data: dict[str, Any], figures: list[dict[str, Any]]) -> str:
    """A note when a run predates the method (the method page's provenance table says how it was measured)."""
    earlier = (data.get("method") or {}).get("earlier_runs") or {}
    return "; timed by an earlier method" if any(r["run_id"] in earlier for r in independent(figures)) else ""


def _spans(labels: list[str], positions: list[int]) -> str:
    """Labels at consecutive positions as one span: "V0\u2013V7", "V0\u2013V2, V5", "V3, V4"."""
    groups: list[list[str]] = []
    for index, (label, at) in enumerate(zip(labels, positions, strict=True)):
        if groups and at == positions[index - 1] + 1:
            groups[-1].append(label)
        else:
            groups.append([label])
    dash = "\u2013"
    return ", ".join(g[0] if len(g) == 1 else f"{g[0]}{dash if len(g) > 2 else ', '}{g[-1]}" for g in groups)


def run_caption(data: dict[str, Any] | None, run: dict[str, Any] | None, *, rerun_on: str | None = None) -> str:
    """Which runs a ladder table or chart comes from (or the GPU it was rerun on): GPU, date, what, shape, size."""
    if data is None:
        return f"No results recorded: {NOT_MEASURED}."
    if run is None:
        return f"{data['gpu']['name']}: the ladder is {NOT_MEASURED}."
    where = f"Rerun at build time on {rerun_on}" if rerun_on else f"{_named([run])} on {data['gpu']['name']}"
    names = versions.names()
    timed = [i for i, v in enumerate(names) if v in run["rows"]]
    which = "every version" if len(timed) == len(names) else _spans([versions.label(names[i]) for i in timed], timed)
    return (
        f"{where}, {dates([run])}: {which} and cuBLAS at {numfmt.shape_text(run['shape'])}, "
        f"{_counts([run])}{_earlier(data, [run])}."
    )


def ladder_caption(data: dict[str, Any] | None, *, rerun_on: str | None = None) -> str:
    return run_caption(data, results.ladder(data), rerun_on=rerun_on)


def sweep_caption(data: dict[str, Any] | None) -> str:
    runs = results.sweep_runs(data)
    if data is None or not runs:
        return f"Shape sweep: {NOT_MEASURED}."
    return (
        f"Shape sweep from {_named(runs, capital=False)} on {data['gpu']['name']}, {dates(runs)}: {len(runs)} shapes, "
        f"each with its own cuBLAS, {_counts(runs)}{_earlier(data, runs)}."
    )


def steps_caption(data: dict[str, Any] | None, runs: list[dict[str, Any]]) -> str:
    """Which runs a steps table's rows come from (each row names its table)."""
    if data is None or not runs:
        return f"Steps: {NOT_MEASURED}."
    shapes = ", ".join(sorted({numfmt.shape_text(r["shape"]) for r in runs}))
    return (
        f"{_named(runs)} on {data['gpu']['name']}, {dates(runs)}, at {shapes}, each variant with its run's cuBLAS: "
        f"{_counts(runs)}{_earlier(data, runs)}."
    )


def chart_caption(script: str, data: dict[str, Any] | None, *, rerun_on: str | None = None) -> str:
    """What the chart that ``plots/<script>`` draws shows, then the runs it comes from."""
    stem = script.removesuffix(".py").removeprefix("plot_")
    if stem == "sweep":
        return f"Each implementation against cuBLAS, shape by shape, then its TFLOPS. {sweep_caption(data)}"
    if stem == "summary":
        shows = "Every version's TFLOPS beside cuBLAS's and the tensor-core peaks."
    elif stem == "steps":
        shows = "What each step bought: the paired ratio over the version before, coloured by its verdict."
    elif stem == "replication":
        shows = "Each step and each version against cuBLAS: every run's median as a dot, the merged interval a bar."
    elif versions.is_version_name(stem):
        shows = f"Every version's TFLOPS against the tensor-core peak at its clock, {versions.label(stem)} highlighted."
    else:
        raise ValueError(
            f"no caption for plots/{script}: a chart script is plot_<vN|summary|steps|sweep|replication>.py"
        )
    return f"{shows} {ladder_caption(data, rerun_on=rerun_on)}"
