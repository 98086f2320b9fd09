"""V9's chapter in numbers, for :mod:`.render`: the field set, what the tile model picks, and the sentences written
whole (the development check behind the model: :mod:`.v9_check`).

The field set (:mod:`matmul_data.field`) is recorded in the results file's ``field`` section: V9, V8, cuBLAS and the
peers at real models' shapes, each run against its own cuBLAS (``record --field``). Where a sentence rests on a
measurement the generator writes it whole, or a sentence that says it is not measured yet (:func:`sentences`). The
chart is :func:`matmul_site.charts.field_chart`.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Iterator

from matmul_data import field, loader, model, results, versions
from matmul_site import numfmt
from matmul_site.captions import Data, Table, caption, peers_text, runs_text
from matmul_site.numfmt import NOT_MEASURED, TIMES, number_word, shape_name

SHARED = {"none": "", "b": ", B shared", "a": ", A shared"}
# Shapes whose model picks the V9 page names (v9-model:8192.pick): the ladder's, and a ragged K with its aligned twin.
MODEL_SHAPES = ((8192, 8192, 8192), (4096, 4096, 5000), (4096, 4096, 5056))


def tile_text(block_m: int, block_n: int, share: str = "none", compact: bool = False) -> str:
    """A tile and the operand its pair shares, as prose says it ("128 × 256 in pairs sharing B", "192 × 192") or,
    ``compact``, as a table does (a page's tables count as its words): "128×256, B shared"."""
    if compact:
        return f"{block_m}{TIMES}{block_n}{SHARED[share]}"
    return f"{block_m} {TIMES} {block_n}" + (f" in pairs sharing {share.upper()}" if share != "none" else "")


def model_picks(shape: tuple[int, int, int], compact: bool = False) -> tuple[str, str]:
    """What V8's rule and V9's pick at a shape (tile_model.choose and choose_shared, on an H100/H200's 132 SMs)."""
    model = loader.load("tile_model")
    v8, v9 = model.choose(*shape), model.choose_shared(*shape)
    return tile_text(v8.block_m, v8.block_n, compact=compact), \
        tile_text(v9.tile.block_m, v9.tile.block_n, v9.share, compact)  # fmt: skip


def ordered_runs(data: Data) -> list[model.Figure]:
    """The field's runs, the fitted half first (as the set lists them within each half)."""
    return results.field_runs(data, field.FITTED) + results.field_runs(data, field.HELD_OUT)


def ours(runs: list[model.Figure]) -> list[str]:
    """The versions the runs time, newest first."""
    found = {impl for run in runs for impl in run.rows}
    return [v for v in reversed(versions.names()) if v in found]


def of_kind(runs: list[model.Figure], kind: str, keep: bool = True) -> list[model.Figure]:
    """The runs at field shapes of that kind (keep=False: of every other kind)."""
    kinds = field.by_shape()
    return [r for r in runs if (kinds[r.shape.mnk].kind == kind) == keep]


def even_n(runs: list[model.Figure]) -> list[model.Figure]:
    """The runs at shapes with N a multiple of 8: the odd-N heads measure cuBLAS's cliff (told apart, below)."""
    return of_kind(runs, field.ODD_N, keep=False)


def cublas_exact(runs: Iterable[model.Figure]) -> bool:
    """Whether cuBLAS passed its float64 check in every one of the runs."""
    return all(results.inexact_baseline(run) is None for run in runs)


def spread(runs: list[model.Figure], impl: str) -> tuple[float, float, float] | None:
    """The lowest and highest median ratio to cuBLAS of impl over the runs, and their geometric mean."""
    found = [r.rows[impl].ratio_to_cublas.median for r in runs if impl in r.rows]
    return (min(found), max(found), statistics.geometric_mean(found)) if found else None


def range_text(low: float, high: float) -> str:
    """ "0.98 to 1.01", or "0.98" where both round alike."""
    return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f} to {high:.2f}"


def half_sentence(data: Data, half: str, with_earlier: bool, first: bool = True) -> str | None:
    """ "V9 ran at 0.98 to 1.01 of cuBLAS's speed (geometric mean 0.99)" over one half's shapes with N a multiple
    of 8, with the version before it ("V8 at ... (0.97)"); "V9 ran at 0.98 to 1.01 (0.99)" where it is not the
    first said. None where the half has no run."""
    runs = even_n(results.field_runs(data, half))
    names = ours(runs)
    if not names:
        return None
    low, high, mean = spread(runs, names[0]) or (0.0, 0.0, 0.0)
    of = f" of cuBLAS's speed (geometric mean {mean:.2f})" if first else f" ({mean:.2f})"
    said = f"{versions.label(names[0])} ran at {range_text(low, high)}{of}"
    if with_earlier and len(names) > 1 and (earlier := spread(runs, names[1])):
        said += f", {versions.label(names[1])} at {range_text(*earlier[:2])} ({earlier[2]:.2f})"
    return said


def ragged_sentence(data: Data) -> str:
    """The shapes whose K is not a multiple of 16, where V9's pairs are on: the newest two versions' ranges."""
    runs = of_kind(results.field_runs(data), field.RAGGED_K)
    names = ours(runs)
    if not names:
        return f"At the field shapes whose :math:`K` is not a multiple of 16 it is {NOT_MEASURED}."
    parts = [f"{versions.label(n)} at {range_text(*found[:2])}" for n in names[:2] if (found := spread(runs, n))]
    head = parts[0].replace(" at ", " ran at ", 1)
    return (f"At the {number_word(len(runs))} field shapes whose :math:`K` is not a multiple of 16, {head} of "
            f"cuBLAS's speed{''.join(', ' + p for p in parts[1:])}.")  # fmt: skip


def slowest_sentence(data: Data) -> str:
    """The newest version's lowest ratio to cuBLAS at a field shape with N a multiple of 8, by name."""
    runs = even_n(ordered_runs(data))
    names = ours(runs)
    if not names:
        return f"Its lowest ratio to cuBLAS on the field set is {NOT_MEASURED}."
    worst = min((r for r in runs if names[0] in r.rows), key=lambda r: r.rows[names[0]].ratio_to_cublas.median)
    named = field.by_shape()[worst.shape.mnk]
    return (
        f"{versions.label(names[0])}'s lowest ratio to cuBLAS is at {named.name}, "
        f"{numfmt.shape_text(named.shape)}: {worst.rows[names[0]].ratio_to_cublas.median:.2f}."
    )


def field_values(data: Data) -> Iterator[tuple[str, str]]:
    """The field set's size, and the sentences and captions its record gives (or that say it is not measured)."""
    yield "field.count", str(len(field.FIELD))
    yield "field.fitted_count", number_word(len(field.half(field.FITTED)))
    yield "field.held_out_count", number_word(len(field.half(field.HELD_OUT)))
    fitted = half_sentence(data, field.FITTED, with_earlier=True)
    held_out = half_sentence(data, field.HELD_OUT, with_earlier=True, first=fitted is None)
    if fitted or held_out:
        parts = [f"on the {name} half {said}" if said else f"the {name} half is {NOT_MEASURED}"
                 for name, said in (("fitted", fitted), ("held-out", held_out))]  # fmt: skip
        yield "field.summary", f"With :math:`N` a multiple of 8, {parts[0]}; {parts[1]}."
    else:
        yield "field.summary", f"The field set is {NOT_MEASURED}: neither half has a record yet."
    alone = half_sentence(data, field.HELD_OUT, with_earlier=False)
    count = number_word(len(even_n(results.field_runs(data, field.HELD_OUT))))
    yield "field.held_out", (f"On the held-out half, which the model was not fitted to, at its {count} shapes with "
                             f":math:`N` a multiple of 8, {alone}." if alone
                             else f"{versions.label(versions.names()[-1])}'s record on the field set's held-out "
                                  f"half is {NOT_MEASURED}.")  # fmt: skip
    yield "field.ragged", ragged_sentence(data)
    yield "field.slowest", slowest_sentence(data)
    runs = ordered_runs(data)
    halves = f"The first {number_word(len(field.half(field.FITTED)))} rows are the fitted half, the rest held out."
    yield "field.status", status_sentence(data, len(runs))
    yield "field.odd_n", odd_n_sentence(data)
    if data is not None and runs:
        told = runs_text(data, runs)
        passed = " cuBLAS passed its float64 check at every shape." if cublas_exact(runs) else ""
        yield "field.caption", caption(f"{halves} V9's tile (the model's); each version against its run's "
                                       f"cuBLAS.{passed}")  # fmt: skip
        yield "field.chart_caption", caption(f"Each implementation against its run's cuBLAS, by half: {told}."
                                             f"{peers_text(data, 'field')}")  # fmt: skip
    else:
        yield "field.caption", caption(f"The field set is {NOT_MEASURED}: each shape, and the model's tiles. "
                                       f"{halves}")  # fmt: skip
        yield "field.chart_caption", caption(f"The field set is {NOT_MEASURED}.")
    for shape in MODEL_SHAPES:
        v8, v9 = model_picks(shape)
        yield f"v9-model:{shape_name(shape)}.v8_pick", v8
        yield f"v9-model:{shape_name(shape)}.pick", v9
        yield f"v9-model:{shape_name(shape)}.pair_margin", pair_margin(shape)
    yield "v9-model.pair_saving", f"{pair_saving():.3f}"


def pair_saving() -> float:
    """What a 128 x 256 pair sharing B saves per FLOP at V8's c: the L2 bytes of half a B tile, 1/256 per FLOP."""
    model = loader.load("tile_model")
    alone, pair = (model.estimate(model.REFERENCE, 8192, 8192, 8192, share=share) for share in ("none", "b"))
    return model.OPERAND_BYTE_COST * (alone.l2_bytes_per_flop - pair.l2_bytes_per_flop)


def pair_margin(shape: tuple[int, int, int]) -> str:
    """How the model rates its best pair against its best tile alone at a shape: "0.4% behind", "3.1% ahead" or
    "level"."""
    found = loader.load("tile_model").estimates_shared(*shape)
    alone = min(e.time for e in found if e.share == "none")
    pair = min(e.time for e in found if e.share != "none")
    margin = 100 * (pair / alone - 1)
    return "level" if round(margin, 1) == 0 else f"{abs(margin):.1f}% {'behind' if margin > 0 else 'ahead'}"


def field_table(data: Data) -> Table:
    """Each shape of the field set with the model's tiles; once recorded, V8 and V9 against cuBLAS (the peers are in
    the chart: the table stays short)."""
    runs = {run.shape.mnk: run for run in ordered_runs(data)}
    names = ours(list(runs.values()))[::-1]
    header = ["Shape", "Kind", *(["V9's tile"] if runs else ["V8's tile", "V9's tile"])]  # the caption: the halves
    # cuBLAS's check gets a column only where it missed somewhere; otherwise the caption says it passed everywhere.
    inexact = not cublas_exact(runs.values())
    header += [f"{versions.label(impl)} {TIMES} cuBLAS" for impl in names] + (["cuBLAS's check"] if inexact else [])
    rows = [header]
    for shape in [*field.half(field.FITTED), *field.half(field.HELD_OUT)]:
        v8, v9 = model_picks(shape.shape, compact=True)
        row = [f"{shape.name}, {numfmt.shape_text(shape.shape)}", shape.kind]
        if not runs:
            rows.append([*row, v8, v9])
            continue
        run = runs.get(shape.shape)
        found = run.rows if run else {}
        row += [v9, *(numfmt.ratio_text(found[i].ratio_to_cublas) if i in found else NOT_MEASURED for i in names)]
        wrong = results.inexact_baseline(run) if run else None
        if inexact:
            row.append("" if wrong is None else f"inexact: {wrong:,} elements wrong")
        rows.append(row)
    return rows


def odd_n_heads(data: Data) -> list[tuple[field.FieldShape, model.Figure | None, model.Figure | None]]:
    """Each odd-N head of the field set with its padded twin: (the head, its run, the twin's run), runs or None."""
    runs = {run.shape.mnk: run for run in ordered_runs(data)}
    return [(head, runs.get(head.shape), runs.get(twin.shape)) for head in field.FIELD
            if (twin := field.padded_twin(head)) is not None]  # fmt: skip


def odd_n_table(data: Data) -> Table:
    """At each odd-N head, every implementation's TFLOPS there and at its padded twin, and the quotient: what an odd
    N costs it (two runs, so the quotient is not paired). A head is named on its first row only."""
    header = ["Head", "Implementation", "TFLOPS, odd N", "padded N", "Odd ÷ padded"]
    rows = [header]
    for head, odd, padded in odd_n_heads(data):
        if odd is None or padded is None:
            rows.append([f"{head.name}, {numfmt.shape_text(head.shape)}", NOT_MEASURED, "", "", ""])
            continue
        named = len(rows)
        for impl in [*ours([odd])[::-1], results.CUBLAS]:
            if impl not in odd.rows or impl not in padded.rows:
                continue
            a, b = odd.rows[impl].tflops, padded.rows[impl].tflops
            label = versions.label(impl) if impl != results.CUBLAS else "cuBLAS"
            wrong = results.inexact_baseline(odd) if impl == results.CUBLAS else None
            label += "" if wrong is None else f" (inexact: {wrong:,} wrong)"
            name = f"{head.name}, {numfmt.shape_text(head.shape)}" if len(rows) == named else ""
            rows.append([name, label, f"{a:.0f}", f"{b:.0f}", f"{a / b:.2f}"])
    return rows


def odd_n_sentence(data: Data) -> str:
    """What a user gets at odd N, as a number and a word per implementation, or that it is not measured yet."""
    found = [(odd, padded) for _, odd, padded in odd_n_heads(data) if odd is not None and padded is not None]
    if not found:
        return f"What an odd :math:`N` costs is {NOT_MEASURED}: the field set's heads have no record yet."
    newest = ours([odd for odd, _ in found])[0]

    def kept(impl: str) -> str:
        quotients = [odd.rows[impl].tflops / padded.rows[impl].tflops for odd, padded in found
                     if impl in odd.rows and impl in padded.rows]  # fmt: skip
        return range_text(min(quotients), max(quotients))

    wrong = [w for odd, _ in found if (w := results.inexact_baseline(odd)) is not None]
    inexact = (f", and misses its float64 check on up to {max(wrong):,} elements there" if wrong
               else ", and passes its float64 check there")  # fmt: skip
    return (
        f"At the odd-:math:`N` heads {versions.label(newest)} keeps {kept(newest)} of its speed at the padded "
        f"twin, cuBLAS {kept(results.CUBLAS)}{inexact}."
    )


# ---------------------------------------------------------------------------- sentences written whole


STEP_PHRASES = {results.PAYS: "a step that pays", results.COSTS: "a step that costs",
                results.WITHIN: "level with it, within {band}",
                results.UNRESOLVED: "a step its runs do not resolve"}  # fmt: skip


def status_sentence(data: Data, field_runs: int) -> str:
    """Where the newest version's evidence stands: which of its records exist, and what the rest rests on."""
    version = versions.names()[-1]
    label = versions.label(version)
    have = {"the ladder": results.ladder_row(data, version) is not None,
            "the sweep": any(version in run.rows for run in results.sweep_runs(data)),
            "the field set": field_runs > 0, "the Try it": bool(results.tryit_entries(data, version))}  # fmt: skip
    missing = [name for name, present in have.items() if not present]
    if not missing:
        return f"{label}'s ladder, sweep, field set and Try it come from the replicated record (:doc:`/method`)."
    told = ", ".join(missing[:-1]) + (" and " if len(missing) > 1 else "") + missing[-1]
    if len(missing) == len(have):
        return (f"No replicated record of {label} exists yet ({told}): every number of {label}'s own here comes "
                "from one development process, the check under How the model chooses.")  # fmt: skip
    return (f"{label}'s record still lacks {told}; what it has is replicated (:doc:`/method`), except the "
            "development check, which is one process.")  # fmt: skip


def sentences(data: Data) -> Iterator[tuple[str, str]]:
    """Sentences that rest on a measured value, written whole, as a number and a word (the interval and the verdict
    live in the tables); where the data lacks the value, a sentence that says it is not measured yet. Each version's
    place in the ladder: ``v9.ladder_sentence``."""
    names = versions.names()
    for before, version in zip(names, names[1:], strict=False):
        label, row = versions.label(version), results.ladder_row(data, version)
        if data is None or row is None or row.step is None:
            yield f"{version}.ladder_sentence", (f"The ladder has not timed {label} yet: its step over "
                                                 f"{versions.label(before)} is {NOT_MEASURED}.")  # fmt: skip
            continue
        step = row.step
        phrase = STEP_PHRASES[results.verdict(step)].format(band=numfmt.band_text(step))
        yield f"{version}.ladder_sentence", (
            f"In the ladder at {numfmt.shape_text(data.problem)}, {label} runs at "
            f"{row.ratio_to_cublas.median:.2f} of cuBLAS's speed and {step.median:.2f} times "
            f"{versions.label(step.over or '')}'s: {phrase}.")  # fmt: skip
