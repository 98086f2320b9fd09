"""Chart and table captions: GPU, shape, method and date, every word from the results file (no matplotlib)."""

from __future__ import annotations

from typing import Any

from matmul_site import numfmt, results

NOT_MEASURED = numfmt.NOT_MEASURED


def method_text(data: dict[str, Any], run: dict[str, Any]) -> str:
    """How one run was timed: "CUDA events, L2 flushed (...); 30 rounds in 3 processes, interleaved...; ..."."""
    m = data["method"]
    return (
        f"{m['timer']}, L2 flush: {m['l2_flush']}; {run['rounds']} rounds in {run['processes']} processes, "
        f"{m['order']}; {m['statistic']}, {m['interval']}"
    )


def run_caption(data: dict[str, Any] | None, run: dict[str, Any] | None, *, rerun_on: str | None = None) -> str:
    """Provenance of a chart drawn from one run; ``rerun_on`` names the GPU when it was rerun at build time."""
    if data is None:
        return f"No results recorded: {NOT_MEASURED}."
    if run is None:
        return f"{data['gpu']['name']}: the ladder is {NOT_MEASURED}."
    p = data["problem"]
    where = f"Rerun at build time on {rerun_on}" if rerun_on else f"{data['gpu']['name']}"
    return (
        f"{where}, C = A\u00b7B\u1d40 at {numfmt.shape_text(run['shape'])}, {p['dtype']} inputs, "
        f"{p['accumulate']} accumulation. {method_text(data, run)}. Measured {run['date']}."
    )


def ladder_caption(data: dict[str, Any] | None, *, rerun_on: str | None = None) -> str:
    return run_caption(data, results.ladder(data), rerun_on=rerun_on)


def dates(runs: list[dict[str, Any]]) -> str:
    found = sorted({r["date"] for r in runs})
    if not found:
        return "date not recorded"
    return found[0] if len(found) == 1 else f"{found[0]} to {found[-1]}"


def sweep_caption(data: dict[str, Any] | None) -> str:
    runs = [] if data is None else data.get("sweep", [])
    if not runs:
        return f"Shape sweep: {NOT_MEASURED}."
    p = data["problem"]
    counts = sorted({(r["rounds"], r["processes"]) for r in runs})
    rounds = "; ".join(f"{r} rounds in {n} processes" for r, n in counts)
    m = data["method"]
    return (
        f"{data['gpu']['name']}, {p['dtype']} inputs, {p['accumulate']} accumulation, each shape M\u00d7N\u00d7K "
        f"its own run with cuBLAS. {m['timer']}, L2 flush: {m['l2_flush']}; {rounds}, {m['order']}; "
        f"{m['statistic']}, {m['interval']}. Measured {dates(runs)}."
    )


def steps_caption(data: dict[str, Any] | None, runs: list[dict[str, Any]]) -> str:
    if data is None or not runs:
        return f"Steps: {NOT_MEASURED}."
    m = data["method"]
    shapes = ", ".join(sorted({numfmt.shape_text(r["shape"]) for r in runs}))
    earlier = m.get("earlier_runs") or {}
    counts = "; ".join(
        f"{r['run_id']}: {r['rounds']} rounds in {r['processes']} processes"
        + (f" ({earlier[r['run_id']]})" if r["run_id"] in earlier else "")
        for r in runs
    )
    return (
        f"{data['gpu']['name']} at {shapes}. {m['timer']}, L2 flush: {m['l2_flush']}; {counts}; {m['order']}; "
        f"{m['statistic']}, {m['interval']}. Measured {dates(runs)}."
    )
