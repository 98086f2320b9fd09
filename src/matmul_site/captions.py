"""Chart and table captions: what a chart shows and which run it comes from, every word from the results file
(no matplotlib).

How the runs were timed is said once, on the method page (docs/method.rst, whose provenance table prints the
file's ``method``); a caption names its run and links there. The link itself is the Sphinx side's
(:mod:`matmul_site.sphinx.results_nodes`): a caption here is plain text, and with the link's words
(:data:`METHOD_LINK`) it stays under :data:`MAX_WORDS`.
"""

from __future__ import annotations

from typing import Any

from matmul_site import numbers, versions

NOT_MEASURED = numbers.NOT_MEASURED
MAX_WORDS = 40
METHOD_LINK = "How we measured"  # the words that link every caption to the method page (then a full stop)


def dates(runs: list[dict[str, Any]]) -> str:
    found = sorted({r["date"] for r in runs})
    if not found:
        return "date not recorded"
    return found[0] if len(found) == 1 else f"{found[0]} to {found[-1]}"


def _counts(runs: list[dict[str, Any]], each: bool = False) -> str:
    """ "10 rounds in 3 processes", or the range over several runs: "8-10 rounds in 2-3 processes each"."""

    def span(key: str) -> str:
        values = sorted({r[key] for r in runs})
        return str(values[0]) if len(values) == 1 else f"{values[0]}\u2013{values[-1]}"

    return f"{span('rounds')} rounds in {span('processes')} processes{' each' if each else ''}"


def _earlier(data: dict[str, Any], runs: list[dict[str, Any]]) -> str:
    """A note when a run predates the method (the method page's provenance table says how it was measured)."""
    earlier = (data.get("method") or {}).get("earlier_runs") or {}
    return "; timed by an earlier method" if any(r["run_id"] in earlier for r in runs) else ""


def run_caption(data: dict[str, Any] | None, run: dict[str, Any] | None, *, rerun_on: str | None = None) -> str:
    """Which run a ladder table or chart comes from: its id (or the GPU it was rerun on), GPU, date, shape, size."""
    if data is None:
        return f"No results recorded: {NOT_MEASURED}."
    if run is None:
        return f"{data['gpu']['name']}: the ladder is {NOT_MEASURED}."
    where = f"Rerun at build time on {rerun_on}" if rerun_on else f"Run {run['run_id']} on {data['gpu']['name']}"
    timed = [versions.label(v) for v in versions.names() if v in run["rows"]]
    which = "every version" if len(timed) == len(versions.names()) else ", ".join(timed)
    return (
        f"{where}, {run['date']}: {which} and cuBLAS at {numbers.shape_text(run['shape'])}, "
        f"{_counts([run])}{_earlier(data, [run])}."
    )


def ladder_caption(data: dict[str, Any] | None, *, rerun_on: str | None = None) -> str:
    return run_caption(data, numbers.ladder(data), rerun_on=rerun_on)


def sweep_caption(data: dict[str, Any] | None) -> str:
    runs = [] if data is None else data.get("sweep", [])
    if not runs:
        return f"Shape sweep: {NOT_MEASURED}."
    ids = sorted({r["run_id"] for r in runs})
    named = f"run {ids[0]}" if len(ids) == 1 else f"{len(ids)} runs"
    return (
        f"Sweep {named} on {data['gpu']['name']}, {dates(runs)}: {len(runs)} shapes, each with its own cuBLAS, "
        f"{_counts(runs, each=len(runs) > 1)}{_earlier(data, runs)}."
    )


def steps_caption(data: dict[str, Any] | None, runs: list[dict[str, Any]]) -> str:
    """Which steps runs a table's rows come from (each row names its run)."""
    if data is None or not runs:
        return f"Steps: {NOT_MEASURED}."
    ids = sorted({r["run_id"] for r in runs})
    shapes = ", ".join(sorted({numbers.shape_text(r["shape"]) for r in runs}))
    named = f"Run {ids[0]}" if len(ids) == 1 else f"{len(ids)} runs"
    return (
        f"{named} on {data['gpu']['name']}, {dates(runs)}, at {shapes}, each variant with its run's cuBLAS: "
        f"{_counts(runs, each=len(ids) > 1)}{_earlier(data, runs)}."
    )


def chart_caption(script: str, data: dict[str, Any] | None, *, rerun_on: str | None = None) -> str:
    """What the chart that ``plots/<script>`` draws shows, then the run it comes from."""
    stem = script.removesuffix(".py").removeprefix("plot_")
    if stem == "sweep":
        return f"Each implementation against cuBLAS, shape by shape, then its TFLOPS. {sweep_caption(data)}"
    if stem == "summary":
        shows = "Every version's TFLOPS beside cuBLAS's and the tensor-core peaks."
    elif stem == "steps":
        shows = "What each step bought: the paired ratio over the version before, coloured by its verdict."
    elif versions.is_version_name(stem):
        shows = f"Every version's TFLOPS, {versions.label(stem)} highlighted."
    else:
        raise ValueError(f"no caption for plots/{script}: a chart script is plot_<vN|summary|steps|sweep>.py")
    return f"{shows} {ladder_caption(data, rerun_on=rerun_on)}"
