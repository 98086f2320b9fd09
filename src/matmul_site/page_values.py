"""Every value a page may name, by name: the text of its substitution (``.. |v7.tflops| replace:: 673 TFLOPS``), from
the results file, the build record and the tile model; "not measured yet" where the data lacks it (the writer:
:mod:`.render`; the names, by subject: docs/writing.rst)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from matmul_data import budget, hopper, loader, model, results, stats, versions
from matmul_data.builds import BuildRecord
from matmul_site import field_pages, headline, numfmt, panels, v9_check, whole
from matmul_site.captions import Data
from matmul_site.chapter_tables import build_table
from matmul_site.doc_pages import pages
from matmul_site.method_tables import proof_pairs, warmup_record
from matmul_site.numfmt import NOT_MEASURED, NOT_RECORDED, TIMES, escape, number_word, shape_name, unit_text
from matmul_site.phrases import (
    COUNTERS,
    clock_text,
    counter_text,
    outcome_text,
    outcome_word,
    per_clock,
    power_text,
    reversed_interval,
    reversed_step,
    run_slug,
    stall_text,
)
from matmul_site.table_captions import caption_values

VERDICTS = (results.PAYS, results.WITHIN, results.UNRESOLVED, results.COSTS)


def row_names(data: Data) -> dict[str, model.Row]:
    """Every measured row by name: the ladder's (and ``latest``), then the steps runs' (``name`` for the one
    ``results.steps_row`` prefers, ``name:shape`` for the run at that shape, ``<run slug>.name`` for that run's)."""
    rows: dict[str, model.Row] = {}
    for run in () if data is None else data.steps:
        if results.is_proof_run(run):
            continue
        shape = run.shape.mnk
        for impl, row in run.rows.items():
            rows[impl] = results.steps_row(data, impl)[1]  # type: ignore[index]
            rows[f"{impl}:{shape_name(shape)}"] = results.steps_row(data, impl, shape)[1]  # type: ignore[index]
            if not results.is_tryit_run(run):
                rows[f"{run_slug(run)}.{impl}"] = row  # the row of exactly that run
    run = results.ladder(data)
    ladder = {} if run is None else run.rows
    rows.update(ladder)
    measured = [v for v in versions.names() if v in ladder]
    if measured:
        rows["latest"] = ladder[measured[-1]]
    return rows


def row_values(name: str, row: model.Row, data: model.Results) -> Iterator[tuple[str, str]]:
    """What a page may say of one measured row."""
    yield f"{name}.tflops", unit_text("tflops", row.tflops)
    yield f"{name}.ms", unit_text("ms", row.latency_ms)
    ratio_to_cublas = row.ratio_to_cublas
    yield f"{name}.ratio", numfmt.ratio_text(ratio_to_cublas)
    yield f"{name}.vs_cublas", numfmt.vs_cublas_text(ratio_to_cublas)
    # For a sentence: the plain median ("0.95×") and the rule's word ("behind", "within ±1.5% of"); the interval
    # stays in the table.
    yield f"{name}.cublas_ratio", f"{ratio_to_cublas.median:.2f}{TIMES}"
    yield f"{name}.cublas_verdict", numfmt.prose_word(numfmt.PROSE_RATIO_WORDS, ratio_to_cublas)
    if step := row.step:
        yield f"{name}.step", numfmt.step_text(step)
        yield f"{name}.step_ratio", f"{step.median:.2f}{TIMES}"
        yield f"{name}.verdict", numfmt.prose_word(numfmt.PROSE_STEP_WORDS, step)
        yield f"{name}.reversed_ratio", f"{1 / step.median:.2f}{TIMES}"
        yield f"{name}.reversed_verdict", numfmt.prose_word(numfmt.PROSE_STEP_WORDS, reversed_interval(step))
        # The step per SM clock cycle (at the medians), against its reference row in the same run.
        tables = [run.rows for run in [results.ladder(data), *data.steps] if run is not None]
        over = next((rows[step.over] for rows in tables if step.over in rows
                     and any(r is row for r in rows.values())), None)  # fmt: skip
        if over is not None and not (row.suspect or over.suspect):
            if row.sm_clock_mhz and over.sm_clock_mhz:
                yield f"{name}.over_clock", unit_text("mhz", over.sm_clock_mhz)
                per_clock = step.median * over.sm_clock_mhz / row.sm_clock_mhz
                yield f"{name}.per_clock", f"{per_clock:.2f}{TIMES}"
                yield f"{name}.reversed_per_clock", f"{1 / per_clock:.2f}{TIMES}"
        yield f"{name}.reversed", reversed_step(step)
        words, _, ratio = numfmt.step_text(step).partition(": ")
        kept = "kept" if row.kept else "not kept"
        yield f"{name}.attempt", f"{words} over {versions.label(step.over or '')}: {ratio}; {kept}"
    yield f"{name}.sm_clock", clock_text(row)
    yield f"{name}.power", power_text(row)
    peak = results.row_peak_tflops(data, row)
    if peak is not None:
        yield f"{name}.peak_at_clock", unit_text("tflops", peak)
        yield f"{name}.peak_fraction", unit_text("pct", 100 * row.tflops / peak)
    if published := data.gpu.published_dense_fp16_tflops:
        yield f"{name}.datasheet_fraction", unit_text("pct", 100 * row.tflops / published)
    yield f"{name}.config", f"``{numfmt.config_text(row.config)}``"
    for what, (key, _, _) in COUNTERS.items():
        yield f"{name}.{what}", counter_text(key, None if row.counters is None else getattr(row.counters, key))
    yield f"{name}.stalls", stall_text(row.counters) or NOT_RECORDED


def impl_values(data: model.Results) -> Iterator[tuple[str, str]]:
    """Each version's (and cuBLAS's) place in the sweep."""
    runs = results.sweep_runs(data)
    named = {impl: impl for impl in [*versions.names(), results.CUBLAS]}
    measured = [v for v in versions.names() if results.ladder_row(data, v) is not None]
    if measured:
        named["latest"] = measured[-1]
    for name, impl in named.items():
        yield f"{name}.label", versions.label(impl)
        timed = [r for r in runs if impl in r.rows] if impl != results.CUBLAS else []
        found = [r.rows[impl].ratio_to_cublas for r in timed]
        if found:
            n = {rule: [results.verdict(f) for f in found].count(rule) for rule in VERDICTS}
            yield f"{name}.sweep", (f"behind cuBLAS at {n[results.COSTS]} of {len(found)} shapes, at parity "
                                    f"(within {numfmt.band_text(found[0])}) at {n[results.WITHIN]}, not resolved "
                                    f"at {n[results.UNRESOLVED]}, ahead at {n[results.PAYS]}")  # fmt: skip
        for run, ratio in zip(timed, found, strict=True):
            yield f"{name}.sweep_{shape_name(run.shape.mnk)}", numfmt.vs_cublas_text(ratio)


def build_values(record: BuildRecord) -> Iterator[tuple[str, str]]:
    """What ptxas and the SASS say of each build in the build record."""
    for name, e in record.builds.items():
        spills = (e.spill_stores, e.spill_loads)
        yield f"{name}.registers", str(e.registers)
        yield f"{name}.spills", "no spills" if spills == (0, 0) else \
            f"{spills[0]:,} bytes of spill stores and {spills[1]:,} of spill loads"  # fmt: skip
        yield f"{name}.stack_frame", f"{e.stack_bytes:,} bytes"
        yield f"{name}.shared_memory", numfmt.kb_text(e.shared_bytes)
        yield f"{name}.advisories", ", ".join(e.advisories) or "none"
        yield f"{name}.hgmma_shapes", ", ".join(s.split(".")[0].replace("x", TIMES) for s in e.hgmma) or "none"
        yield f"{name}.blocks_per_sm", number_word(budget.blocks_per_sm(budget.Build.of(e))[0])
        for family, count in e.sass.items():
            yield f"{name}.sass_{family.lower().replace('.', '_')}", f"{count:,}"
        for pending in {"0", "1", "2", *e.depbar}:
            yield f"{name}.depbar_{pending}", str(e.depbar.get(pending, 0))


def size_values(data: Data) -> Iterator[tuple[str, str]]:
    """Sizes computed from each version's configuration (its TUNED) at the ladder's problem."""
    rows, columns = (data.problem.m, data.problem.n) if data else (8192, 8192)  # C's, the ladder's problem
    for version in versions.names():
        c = versions.get(version).tuned
        if not {"block_m", "block_n", "block_k", "num_stages"} <= c.keys():
            continue
        stage, c_tile = (c["block_m"] + c["block_n"]) * c["block_k"] * 2, c["block_m"] * c["block_n"] * 2
        tiles = -(-rows // c["block_m"]) * -(-columns // c["block_n"])
        yield f"{version}.stage", numfmt.kb_text(stage)
        yield f"{version}.ring", numfmt.kb_text(c["num_stages"] * stage)
        yield f"{version}.c_tile", numfmt.kb_text(c_tile)
        yield f"{version}.ring_plus_one_and_c", numfmt.kb_text((c["num_stages"] + 1) * stage + c_tile)
        for n in (1, 4, 32):  # stmatrix.x4 (512 B) per output tile; its wavefronts without and with 8-way conflicts
            yield f"{version}.stmatrix_x4_{n}", f"{tiles * c_tile // 512 * n:,}"


def edit_values(data: Data) -> Iterator[tuple[str, str]]:
    for version in versions.names():
        for e in results.tryit_entries(data, version):
            name = f"{version}-{e.name}"
            yield f"{name}.outcome", escape(outcome_text(e))
            yield f"{name}.result", outcome_word(e.outcome)
            yield f"{name}.wrong_checks", f"{sum(1 for c in e.checks if c.bad)} of {len(e.checks)}"


def runs_each(figures: Sequence[model.Figure]) -> str:
    words = [number_word(n) for n in sorted({len(f.runs) for f in figures})]
    return NOT_MEASURED if not words else words[0] if len(words) == 1 else f"{words[0]} to {words[-1]}"


def file_values(data: model.Results) -> Iterator[tuple[str, str]]:
    """What a page may say of the results file as a whole."""
    g, verdicts = data.gpu, data.method.verdicts
    yield "gpu.sm_count", str(g.sm_count)
    if g.published_dense_fp16_tflops:
        yield "gpu.peak", f"{g.published_dense_fp16_tflops:.1f} TFLOPS"
    yield "gpu.power_limit", unit_text("watts", g.power_limit_w)
    yield "problem.shape", numfmt.shape_text(data.problem)
    if verdicts:
        yield "method.verdict_count", f"{verdicts.count:,}"
        yield "method.confidence_each", f"{100 * verdicts.confidence_each:.2f}%"
        yield "method.family_confidence", f"{100 * verdicts.family_confidence:.0f}%"
        yield "method.band_floor", f"{100 * verdicts.band_floor:.0f}%"
        yield "method.band", f"±{100 * verdicts.band:.1f}%"
    if ladder := results.ladder(data):
        runs = ladder.runs
        yield "ladder.runs", f"{len(runs)} runs ({', '.join(r.run_id for r in runs)})"
        yield "ladder.run_count", number_word(len(runs))
        yield "ladder.rounds", str(ladder.rounds)
        yield "ladder.processes", str(ladder.processes)
        steps = results.ladder_steps(data)
        for rule in VERDICTS:
            found = [versions.label(i) for i, s in steps if results.verdict(s) == rule]
            yield f"ladder.{rule}", ", ".join(found) or "none"
    yield "steps.runs_each", runs_each(data.steps)
    yield "sweep.runs_each", runs_each(results.sweep_runs(data))
    timed = {impl for run in results.sweep_runs(data) for impl in run.rows}
    labels = [versions.label(name) for name in versions.names() if name in timed]
    if labels:
        yield "sweep.versions", labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def proof_values(data: model.Results) -> Iterator[tuple[str, str]]:
    """How far apart V6's ratios to cuBLAS are in the proof's rotations, against the rule's band."""
    ratios = [run.rows["v6"].ratio_to_cublas.median for _, run in proof_pairs(data)]
    if len(ratios) >= 2:
        gap = max(ratios) / min(ratios) - 1.0
        band = data.method.verdicts.band if data.method.verdicts else 0.0
        yield "proof.gap", f"{100 * gap:.1f}%"
        yield "proof.verdict", "inside the band" if gap <= band else "outside the band"


def split_values(data: model.Results) -> Iterator[tuple[str, str]]:
    """V6's gain over V5 split in two by the steps run that times V5 (3 stages), V6's loop storing C from registers
    and V6 itself, each against V6: the staged store's share is that run's step of the register stores reversed
    (paired), the persistent loop's is the rest, ``v6.loop_share``: the quotient of two medians, not paired."""
    for run in data.steps:
        v5, regs = run.rows.get("v5-s3"), run.rows.get("v6-regs-s3")
        if v5 and regs and v5.step and regs.step and v5.step.over == regs.step.over:  # both over one row
            yield "v6.loop_share", f"{regs.step.median / v5.step.median:.2f}{TIMES}"
            return


def warmup_values(data: model.Results) -> Iterator[tuple[str, str]]:
    """The benchmark's warm-up, and the measurement behind it (``check warmup``) on the results file's GPU."""
    if data.method.warmup_s is not None:
        yield "method.warmup_s", f"{data.method.warmup_s:g} s"
    found = warmup_record(data)
    if found is None:
        return
    slices = [stats.warmup_slices(block["calls"]) for block in found["blocks"]]
    later = [abs(x - 1.0) for row in slices for x in row[3:] if x is not None]  # from half a second on
    yield "warmup.first_faster", f"{100 * max(1.0 - row[0] for row in slices if row[0] is not None):.0f}%"
    yield "warmup.later_within", f"{100 * max(later):.1f}%"
    yield "warmup.block_s", f"{found['block_s']:g} s"
    yield "warmup.date", found["date"]


def operand_byte_cost_refit(data: Data) -> float | None:
    """V8's c fitted again to the recorded pair that differs only in the tile (V6's chunks, 128 x 256 and 256 x 128):
    (1 + c q_256x128) / (1 + c q_128x256) = time(256 x 128) / time(128 x 256), as tile_model's docstring fits it."""
    rows = next((run.rows for run in (() if data is None else data.steps) if "v6-chunks-256x128" in run.rows), None)
    if rows is None or "v6-chunks" not in rows:
        return None
    model = loader.load("tile_model")
    by_name = {tile.name: tile for tile in model.CANDIDATES}
    q_fast, q_slow = (by_name[n].l2_bytes_per_flop + by_name[n].shared_bytes_per_flop for n in ("128x256", "256x128"))
    ratio = rows["v6-chunks"].ratio_to_cublas.median / rows["v6-chunks-256x128"].ratio_to_cublas.median
    return (ratio - 1) / (q_slow - ratio * q_fast)


def values(data: Data, record: BuildRecord | None) -> dict[str, str]:
    """Every value a page may name, by name: the text its substitution prints."""
    names = versions.names()
    out = {"versions.count": number_word(len(names)),
           "versions.span": f"{versions.label(names[0])} to {versions.label(names[-1])}"}  # fmt: skip
    out.update(size_values(data))
    shape = (data.problem.m, data.problem.n, data.problem.k) if data else record.shape if record else None
    if shape is not None:
        sm_count = data.gpu.sm_count if data else hopper.SM_COUNT
        out.update(panels.panel_values(record, shape, sm_count))  # type: ignore[arg-type]
    if record is not None:
        out.update(build_values(record))
    if data is not None:
        out.update(file_values(data))
        out.update(impl_values(data))
        for name, row in row_names(data).items():
            out.update(row_values(name, row, data))
        out.update(edit_values(data))
        out.update(proof_values(data))
        out.update(split_values(data))
        for impl, step in results.ladder_steps(data):
            out[f"{impl}.clock_change"], out[f"{impl}.step_per_clock"] = per_clock(data, impl, step)
        out.update(warmup_values(data))
    out["tile_model.operand_byte_cost"] = f"{loader.load('tile_model').OPERAND_BYTE_COST:g}"  # V8's fitted c
    out["tile_model.cluster_cost"] = f"{loader.load('tile_model').CLUSTER_COST:.2f}"  # V9's, per FLOP
    refit = operand_byte_cost_refit(data)
    out["tile_model.operand_byte_cost_refit"] = NOT_MEASURED if refit is None else f"{refit:.1f}"
    for version in versions.names():
        out[f"{version}.build_unchanged"] = build_table(version, record)[1] or "Every fact is listed above."
    out.update(caption_values(data, record))
    log = v9_check.check_log()
    out.update(field_pages.field_values(data))
    out.update(v9_check.check_values(log))
    out[f"{v9_check.CHECK_NAME}.caption"] = v9_check.check_caption(log)
    out.update(field_pages.sentences(data))
    out.update(headline.headline_values(data, out))
    out.update(whole.whole_values(pages(), out))  # files() writes them again for its own pages
    return out
