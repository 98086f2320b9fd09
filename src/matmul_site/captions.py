"""How a caption names the runs behind a table or chart, and what a table the data cannot fill yet says; shared by the
captions (:mod:`.table_captions`), the tables (:mod:`.chapter_tables`, :mod:`.method_tables`) and the field set's
pages (:mod:`.field_pages`)."""

from __future__ import annotations

from collections.abc import Sequence

from matmul_data import model, results
from matmul_site.numfmt import NOT_MEASURED

METHOD_LINK = ":doc:`How we measured </method>`."  # every caption ends with it
Table = list[list[str]]
Data = results.Data  # the results file, or None where there is none yet
Dated = model.Run | model.TryIt  # what a caption dates: a run, a figure (its runs) or a try-it edit's check


def independent(figures: Sequence[Dated]) -> list[Dated]:
    """The independent runs behind some figures: a replicated figure's own ``runs``, else the figure; by id."""
    found = {run.run_id: run for figure in figures
             for run in (figure.runs if isinstance(figure, model.Figure) else [figure])}  # fmt: skip
    return [found[run_id] for run_id in sorted(found)]


def dates(figures: Sequence[Dated]) -> str:
    found = sorted({r.date for r in independent(figures)})
    return "date not recorded" if not found else found[0] if len(found) == 1 else f"{found[0]} to {found[-1]}"


def runs_text(data: model.Results, figures: Sequence[model.Run]) -> str:
    """ "3 runs on NVIDIA H200, 2026-12-01: 6 rounds in 2 processes each" (how a caption names its runs)."""
    runs = independent(figures)

    def span(values: set[int]) -> str:
        found = sorted(values)
        return str(found[0]) if len(found) == 1 else f"{found[0]}\u2013{found[-1]}"

    named = f"run {runs[0].run_id}" if len(runs) == 1 else f"{len(runs)} runs"
    earlier = data.method.earlier_runs or {}
    note = "; timed by an earlier method" if any(r.run_id in earlier for r in runs) else ""
    if not note and any((r.method or 0) < results.WARMUP_METHOD for r in runs):
        note = "; before the 1 s warm-up"
    each = " each" if len(runs) > 1 else ""
    processes = span({r.processes for r in runs})
    return f"{named} on {data.gpu.name}, {dates(runs)}, {span({r.rounds for r in runs})} rounds in {processes} " \
           f"process{'' if processes == '1' else 'es'}{each}{note}"  # fmt: skip


def peers_text(data: Data, section: str) -> str:
    """What a chart's caption adds for the runs of a section that timed the peers beside its figures: " The peers:
    N runs of their own, dates, each against its own cuBLAS.", or "" where there are none."""
    runs = independent(results.peer_runs(data, section))
    told = f"{len(runs)} run{'s' * (len(runs) != 1)} of their own, {dates(runs)}, each against its own cuBLAS"
    return f" The peers: {told}." if runs else ""


def caption(text: str) -> str:
    return f"{text[0].upper()}{text[1:]} {METHOD_LINK}"


def unmeasured(header: list[str], what: str) -> Table:
    """A table the data cannot fill yet: its header and one row, "<what> not measured yet."."""
    return [header, [f"{what} {NOT_MEASURED}.", *[""] * (len(header) - 1)]]
