"""The first page's sentences that rest on a measurement, each written whole: where the newest version stands
against cuBLAS, and how close it comes to the tensor-core peak. A number and a plain word, never an interval or
the rule's verdict string (those live in the ladder's table); without a measurement, a sentence that says so."""

from __future__ import annotations

from collections.abc import Iterator

from matmul_data import model, results, versions
from matmul_site import numfmt

# The rule's verdict against cuBLAS in plain words, for a sentence on the first page.
# The first screen's words for the verdict: no jargon before the reader meets the rule (linked after them).
PLAIN = {results.PAYS: "ahead of cuBLAS", results.COSTS: "behind cuBLAS", results.WITHIN: "level with cuBLAS",
         results.UNRESOLVED: "a difference from cuBLAS that the runs cannot resolve"}  # fmt: skip


def latest(data: results.Data) -> tuple[str, model.Row] | None:
    """The newest version the ladder has timed, and its row; None when the ladder has timed none."""
    run = results.ladder(data)
    rows = {} if run is None else run.rows
    measured = [v for v in versions.names() if v in rows]
    return (measured[-1], rows[measured[-1]]) if measured else None


def same_tile_as(data: results.Data, version: str, row: model.Row) -> str | None:
    """The version before ``version`` in the ladder when ``row`` ran that version's configuration (V8's model keeps
    V7's tile at 8192³, so the ladder times one kernel under two names); None otherwise."""
    run = results.ladder(data)
    if run is None or not row.config:
        return None
    names = versions.names()
    before = [v for v in names[: names.index(version)] if v in run.rows]
    earlier = run.rows[before[-1]].config if before else None
    return before[-1] if earlier and all(row.config.get(k) == v for k, v in earlier.items()) else None


def headline_values(data: results.Data, named: dict[str, str]) -> Iterator[tuple[str, str]]:
    """``latest.headline`` and ``latest.peak_sentence``, from the ladder's row of the newest version."""
    found = latest(data)
    if data is None or found is None:
        yield "latest.headline", f"No version has been timed yet, so the headline figure is {numfmt.NOT_MEASURED}."
        yield "latest.peak_sentence", f"The newest version's share of the tensor-core peak is {numfmt.NOT_MEASURED}."
        return
    version, row = found
    ratio = row.ratio_to_cublas
    same = same_tile_as(data, version, row)
    kernel = f" (here with {versions.label(same)}'s tile: the same kernel)" if same else ""
    yield "latest.headline", (
        f"The newest measured version, {versions.label(version)}{kernel}, reaches "
        f"{numfmt.unit_text('tflops', row.tflops)} at {numfmt.shape_text(data.problem)}, "
        f"{ratio.median:.2f} times the speed of cuBLAS timed in the same rounds: "
        f"{PLAIN[results.verdict(ratio)]} (:ref:`the rule <the-rule>`).")  # fmt: skip
    if "latest.peak_fraction" in named and "latest.sm_clock" in named:
        yield "latest.peak_sentence", (
            f"{versions.label(version)} runs at {named['latest.peak_fraction']} of the tensor-core peak at the "
            "clock it ran at "
            f"({named['latest.sm_clock']}) and {named.get('latest.datasheet_fraction', numfmt.NOT_RECORDED)} of "
            "the datasheet figure.")  # fmt: skip
    else:
        yield "latest.peak_sentence", (f"{versions.label(version)}'s clock was not recorded, so its share of the "
                                       "tensor-core peak is not given.")  # fmt: skip
