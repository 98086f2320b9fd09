"""The one way from the data to the pages: ``python -m matmul_site.render`` writes ``docs/_generated/``.

It reads the results file (:mod:`matmul_data.results`), the sm_90a build record (:mod:`matmul_data.budget`)
and V8's tile model (``examples/hopper_matmul/tile_model.py``), and writes plain files that are committed
and that stock Sphinx reads:

- ``values.rst``: one substitution per value a page names, ``.. |v7.tflops| replace:: 673 TFLOPS``
  (conf.py's ``rst_prolog`` includes it in every page). A value the data lacks reads "not measured yet";
- ``<table>.csv``: the tables, each read by a ``csv-table`` on its page;
- ``ptxas-<build>.txt``: what ptxas printed for a build, read by ``literalinclude``.

Every name is listed by :func:`values`, by subject: a row (``v7``, ``cublas``, ``latest``, a steps
variant such as ``v6-rows-sw16``, or ``v7:8192``, the row of the run at that shape), a build, a
version's sizes, a try-it edit, and the file as a whole; docs/writing.rst gives the list. A file whose
text is unchanged is not touched, so a rebuild with nothing new re-reads no page. ``--check`` writes
nothing and exits 1 when a committed file differs from what the data gives.
"""

from __future__ import annotations

import argparse
import csv
import functools
import gzip
import io
import json
import re
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

from matmul_data import budget, loader, paths, results, stats, versions
from matmul_site import numfmt
from matmul_site.numfmt import NOT_MEASURED, NOT_RECORDED, TIMES, unit_text

Data = dict[str, Any] | None
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
METHOD_LINK = ":doc:`How we measured </method>`."  # every caption ends with it
# An Nsight Compute counter a row may hold: name -> (its key in the row's "counters", label, unit kind).
COUNTERS = {
    "tensor_pipe": ("tensor_pipe_pct", "Tensor pipe utilisation (ncu)", "pct"),
    "gmma_instructions": ("gmma_instructions", "WGMMA instructions executed (ncu)", "count"),
    "dram_throughput": ("dram_throughput_pct", "DRAM throughput, share of peak (ncu)", "pct"),
    "dram_read": ("dram_read_bytes", "Bytes read from DRAM (ncu)", "mb"),
    "l2_hit": ("l2_hit_pct", "L2 hit rate (ncu)", "pct"),
    "smem_wavefronts": ("smem_store_wavefronts", "Shared-memory store wavefronts (ncu)", "count"),
    "smem_conflicts": ("smem_store_bank_conflicts", "Of those, from bank conflicts (ncu)", "count"),
}
# The problems V8's tile model is shown at (the V8 chapter's table): 4096 is 4096³.
TILE_CHOICE_SHAPES = ["2048", "4096", "6144", "8192", "16384", "8192x28672x4096", "16384x8192x1024", "5120", "3072",
                      "3000x5000x4096", "5000x3000x4096", "3000x7000x5000"]  # fmt: skip
VERDICTS = (results.PAYS, results.WITHIN, results.UNRESOLVED, results.COSTS)
USES = re.compile(r"(?<![\w|`])\|([A-Za-z0-9][\w.:+-]*)\|(?![\w|])")  # |v7.tflops| in a page


# ---------------------------------------------------------------------------- small texts


def number_word(n: int) -> str:
    """A small count as a word ("three"), a larger one in digits."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def escape(text: str) -> str:
    """Plain text made safe inside reStructuredText (no stray emphasis, literal or reference)."""
    return re.sub(r"([\\*`|])", r"\\\1", text).replace("_ ", "\\_ ")


def literal(text: str) -> str:
    return f"``{text}``"


def shape_name(shape: tuple[int, int, int]) -> str:
    """A shape as names spell it: "4096" for 4096³, else "16384x8192x1024"."""
    return str(shape[0]) if len(set(shape)) == 1 else "x".join(map(str, shape))


def shape_of(token: str) -> tuple[int, int, int]:
    sizes = tuple(int(s) for s in token.split("x"))
    return sizes * 3 if len(sizes) == 1 else sizes  # type: ignore[return-value]


def independent(figures: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The independent runs behind some figures: a replicated figure's own ``runs``, else the figure; by id."""
    found = {run["run_id"]: run for figure in figures for run in (figure.get("runs") or [figure])}
    return [found[run_id] for run_id in sorted(found)]


def dates(figures: list[dict[str, Any]]) -> str:
    found = sorted({r["date"] for r in independent(figures)})
    return "date not recorded" if not found else found[0] if len(found) == 1 else f"{found[0]} to {found[-1]}"


def runs_text(data: dict[str, Any], figures: list[dict[str, Any]]) -> str:
    """ "3 runs on NVIDIA H200, 2026-12-01: 6 rounds in 2 processes each" (how a caption names its runs)."""
    runs = independent(figures)

    def span(key: str) -> str:
        values = sorted({r[key] for r in runs})
        return str(values[0]) if len(values) == 1 else f"{values[0]}\u2013{values[-1]}"

    named = f"run {runs[0]['run_id']}" if len(runs) == 1 else f"{len(runs)} runs"
    earlier = (data.get("method") or {}).get("earlier_runs") or {}
    note = "; timed by an earlier method" if any(r["run_id"] in earlier for r in runs) else ""
    if not note and any(r.get("method", 0) < results.WARMUP_METHOD for r in runs):
        note = "; before the 1 s warm-up"
    each = " each" if len(runs) > 1 else ""
    processes = span("processes")
    return f"{named} on {data['gpu']['name']}, {dates(runs)}, {span('rounds')} rounds in {processes} " \
           f"process{'' if processes == '1' else 'es'}{each}{note}"  # fmt: skip


def caption(text: str) -> str:
    return f"{text[0].upper()}{text[1:]} {METHOD_LINK}"


# ---------------------------------------------------------------------------- the subjects


def row_names(data: Data) -> dict[str, dict[str, Any]]:
    """Every measured row by name: the ladder's (and ``latest``), then the steps runs' (``name`` for the one
    :func:`matmul_data.results.steps_row` prefers, ``name:shape`` for the run at that shape, ``<run slug>.name``
    for the row of exactly that run)."""
    rows: dict[str, dict[str, Any]] = {}
    attempts = [run for run in (data or {}).get("steps", []) if not results.is_proof_run(run)]
    for run in attempts:
        for impl in run["rows"]:
            rows[impl] = results.steps_row(data, impl)[1]  # type: ignore[index]
    for run in attempts:
        for impl, row in run["rows"].items():
            shape = results.shape_of(run)
            rows[f"{impl}:{shape_name(shape)}"] = results.steps_row(data, impl, shape)[1]  # type: ignore[index]
            if not results.is_tryit_run(run):
                rows[f"{run_slug(run)}.{impl}"] = row  # the row of exactly that run
    ladder = results.ladder(data)
    for impl, row in (ladder or {}).get("rows", {}).items():
        rows[impl] = row
    measured = [v for v in versions.names() if v in (ladder or {}).get("rows", {})]
    if measured:
        rows["latest"] = ladder["rows"][measured[-1]]  # type: ignore[index]
    return rows


def reversed_step(step: dict[str, Any]) -> str:
    """A step read the other way, its baseline over the row: the ratio and its bounds inverted."""
    swap = {results.PAYS: results.COSTS, results.COSTS: results.PAYS, results.WITHIN: results.WITHIN,
            results.UNRESOLVED: results.UNRESOLVED}  # fmt: skip
    return numfmt.step_text({"median": 1 / step["median"], "low": 1 / step["high"], "high": 1 / step["low"],
                             "verdict": swap[results.verdict(step)], "band": step.get("band", 0.0)})  # fmt: skip


def clock_text(row: dict[str, Any]) -> str:
    """The row's clock; where its implied efficiency is implausible, marked as a suspect reading."""
    if row.get("suspect"):
        return f"not shown (the reading would put the row at {100 * row['efficiency']:.0f}% of the peak at that clock)"
    return unit_text("mhz", row.get("sm_clock_mhz"))


def power_text(row: dict[str, Any]) -> str:
    """The row's power; none where its clock reading is implausible (both come from the same window)."""
    return "not shown" if row.get("suspect") else unit_text("watts", row.get("power_w"))


def counter_text(key: str, value: float | None) -> str:
    kind = next((kind for k, _, kind in COUNTERS.values() if k == key), "pct")
    scaled = None if value is None else value / 1e6 if kind == "mb" else int(value) if kind == "count" else value
    return unit_text(kind, scaled)


def row_values(name: str, row: dict[str, Any], data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """What a page may say of one measured row."""
    yield f"{name}.tflops", unit_text("tflops", row["tflops"])
    yield f"{name}.ms", unit_text("ms", row["latency_ms"])
    if row.get("ratio_to_cublas"):
        yield f"{name}.ratio", numfmt.ratio_text(row["ratio_to_cublas"])
        yield f"{name}.vs_cublas", numfmt.vs_cublas_text(row["ratio_to_cublas"])
    if step := row.get("step"):
        yield f"{name}.step", numfmt.step_text(step)
        yield f"{name}.reversed", reversed_step(step)
        words, _, ratio = numfmt.step_text(step).partition(": ")
        yield f"{name}.attempt", f"{words} over {versions.label(step['over'])}: {ratio}; " + (
            "kept" if row.get("kept") else "not kept")  # fmt: skip
    yield f"{name}.sm_clock", clock_text(row)
    yield f"{name}.power", power_text(row)
    peak = results.row_peak_tflops(data, row)
    if peak is not None:
        yield f"{name}.peak_at_clock", unit_text("tflops", peak)
        yield f"{name}.peak_fraction", unit_text("pct", 100 * row["tflops"] / peak)
    if published := data["gpu"].get("published_dense_fp16_tflops"):
        yield f"{name}.datasheet_fraction", unit_text("pct", 100 * row["tflops"] / published)
    if "config" in row:
        yield f"{name}.config", literal(numfmt.config_text(row["config"]))
    for what, (key, _, _) in COUNTERS.items():
        yield f"{name}.{what}", counter_text(key, (row.get("counters") or {}).get(key))


def impl_values(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """Each version's (and cuBLAS's) place in the sweep."""
    runs = results.sweep_runs(data)
    measured = [v for v in versions.names() if results.ladder_row(data, v) is not None]
    for impl in [*versions.names(), results.CUBLAS, *(["latest"] if measured else [])]:
        name, impl = impl, measured[-1] if impl == "latest" else impl
        yield f"{name}.label", versions.label(impl)
        found = [r["rows"][impl]["ratio_to_cublas"] for r in runs if impl in r["rows"]]
        if found and impl != results.CUBLAS:
            n = {rule: [results.verdict(f) for f in found].count(rule) for rule in VERDICTS}
            yield f"{name}.sweep", (f"behind cuBLAS at {n[results.COSTS]} of {len(found)} shapes, "
                                    f"within {numfmt.band_text(found[0])} at {n[results.WITHIN]}, unresolved at "
                                    f"{n[results.UNRESOLVED]}, ahead at {n[results.PAYS]}")  # fmt: skip
        for run in runs:
            if impl in run["rows"] and impl != results.CUBLAS:
                ratio = run["rows"][impl]["ratio_to_cublas"]
                yield f"{name}.sweep_{shape_name(results.shape_of(run))}", numfmt.vs_cublas_text(ratio)


def build_values(record: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """What ptxas and the SASS say of each build in the build record."""
    for name, e in [*record["versions"].items(), *record.get("extras", {}).items()]:
        spills = (e["spill_stores"], e["spill_loads"])
        yield f"{name}.registers", str(e["registers"])
        yield f"{name}.spills", "no spills" if spills == (0, 0) else \
            f"{spills[0]:,} bytes of spill stores and {spills[1]:,} of spill loads"  # fmt: skip
        yield f"{name}.stack_frame", f"{e['stack_bytes']:,} bytes"
        yield f"{name}.shared_memory", numfmt.kb_text(e["shared_bytes"])
        yield f"{name}.advisories", ", ".join(e["advisories"]) or "none"
        yield f"{name}.hgmma_shapes", ", ".join(s.split(".")[0].replace("x", TIMES) for s in e["hgmma"]) or "none"
        build = budget.Build(e["threads"], e["registers"], e["shared_bytes"], e.get("persistent_blocks"))
        yield f"{name}.blocks_per_sm", number_word(budget.blocks_per_sm(build)[0])
        for family, count in e["sass"].items():
            yield f"{name}.sass_{family.lower().replace('.', '_')}", f"{count:,}"
        for pending in {"0", "1", "2", *e["depbar"]}:
            yield f"{name}.depbar_{pending}", str(e["depbar"].get(pending, 0))


def size_values(data: Data) -> Iterator[tuple[str, str]]:
    """Sizes computed from each version's configuration (its TUNED) at the ladder's problem."""
    problem = (data or {}).get("problem") or {"m": 8192, "n": 8192, "k": 8192}
    for version in versions.names():
        c = versions.get(version).tuned
        if not {"block_m", "block_n", "block_k", "num_stages"} <= c.keys():
            continue
        stage, c_tile = (c["block_m"] + c["block_n"]) * c["block_k"] * 2, c["block_m"] * c["block_n"] * 2
        tiles = -(-problem["m"] // c["block_m"]) * -(-problem["n"] // c["block_n"])
        yield f"{version}.stage", numfmt.kb_text(stage)
        yield f"{version}.ring", numfmt.kb_text(c["num_stages"] * stage)
        yield f"{version}.c_tile", numfmt.kb_text(c_tile)
        yield f"{version}.ring_plus_one_and_c", numfmt.kb_text((c["num_stages"] + 1) * stage + c_tile)
        for n in (1, 4, 32):  # stmatrix.x4 (512 B) per output tile; its wavefronts without and with 8-way conflicts
            yield f"{version}.stmatrix_x4_{n}", f"{tiles * c_tile // 512 * n:,}"


def outcome_text(entry: dict[str, Any]) -> str:
    """What a try-it edit did: "exact in all 5 checks (...)", "wrong in 2 of 5 checks (...): ...", "hangs: ..."."""
    checks, outcome = entry["checks"], entry["outcome"]
    shapes = [numfmt.shape_text(check["shape"]) for check in checks]
    where = ", ".join(f"{shapes.count(shape)} at {shape}" for shape in dict.fromkeys(shapes))
    if outcome == "exact":
        return f"exact in all {len(checks)} checks ({where})"
    if outcome != "wrong":
        return f"{outcome}: {entry['error']}"
    wrong = [c for c in checks if c["bad"]]
    worst = max(wrong, key=lambda c: c["bad"])
    still = f", {worst['nonfinite']:,} of them still NaN or inf" if worst["nonfinite"] else ""
    errors = [c["max_abs_err"] for c in wrong if c["max_abs_err"] is not None]
    largest = f"; largest finite error {max(errors):.3g}" if errors else ""
    return (f"wrong in {len(wrong)} of {len(checks)} checks ({where}): up to {worst['bad']:,} of "
            f"{worst['shape']['m'] * worst['shape']['n']:,} elements outside tolerance{still}{largest}")  # fmt: skip


def edit_values(data: Data) -> Iterator[tuple[str, str]]:
    for version in versions.names():
        for e in results.tryit_entries(data, version):
            yield f"{version}-{e['name']}.outcome", escape(outcome_text(e))
            yield f"{version}-{e['name']}.result", e["outcome"]
            yield f"{version}-{e['name']}.wrong_checks", f"{sum(1 for c in e['checks'] if c['bad'])} of " \
                                                        f"{len(e['checks'])}"  # fmt: skip


def runs_each(figures: list[dict[str, Any]]) -> str:
    words = [number_word(n) for n in sorted({len(f.get("runs") or [f]) for f in figures})]
    return NOT_MEASURED if not words else words[0] if len(words) == 1 else f"{words[0]} to {words[-1]}"


def file_values(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """What a page may say of the results file as a whole."""
    g, verdicts = data["gpu"], (data["method"].get("verdicts") or {})
    yield "gpu.sm_count", str(g["sm_count"])
    if g.get("published_dense_fp16_tflops"):
        yield "gpu.peak", f"{g['published_dense_fp16_tflops']:.1f} TFLOPS"
    yield "gpu.power_limit", unit_text("watts", g.get("power_limit_w"))
    yield "problem.shape", numfmt.shape_text(data["problem"])
    if verdicts:
        yield "method.verdict_count", f"{verdicts['count']:,}"
        yield "method.confidence_each", f"{100 * verdicts['confidence_each']:.2f}%"
        yield "method.family_confidence", f"{100 * verdicts['family_confidence']:.0f}%"
        yield "method.band_floor", f"{100 * verdicts['band_floor']:.0f}%"
        yield "method.band", f"±{100 * verdicts['band']:.1f}%"
    if ladder := results.ladder(data):
        runs = ladder.get("runs") or [ladder]
        yield "ladder.runs", f"{len(runs)} runs ({', '.join(r['run_id'] for r in runs)})"
        yield "ladder.run_count", number_word(len(runs))
        yield "ladder.rounds", str(ladder["rounds"])
        yield "ladder.processes", str(ladder["processes"])
        steps = results.ladder_steps(data)
        for rule in VERDICTS:
            found = [versions.label(i) for i, s in steps if results.verdict(s) == rule]
            yield f"ladder.{rule}", ", ".join(found) or "none"
    yield "steps.runs_each", runs_each(data.get("steps") or [])
    yield "sweep.runs_each", runs_each(results.sweep_runs(data))
    timed = {impl for run in results.sweep_runs(data) for impl in run["rows"]}
    labels = [versions.label(name) for name in versions.names() if name in timed]
    if labels:
        yield "sweep.versions", labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def values(data: Data, record: dict[str, Any] | None) -> dict[str, str]:
    """Every value a page may name, by name: the text its substitution prints."""
    names = versions.names()
    out = {"versions.count": number_word(len(names)),
           "versions.span": f"{versions.label(names[0])} to {versions.label(names[-1])}"}  # fmt: skip
    out.update(size_values(data))
    if record is not None:
        out.update(build_values(record))
    if data is not None:
        out.update(file_values(data))
        out.update(impl_values(data))
        for name, row in row_names(data).items():
            out.update(row_values(name, row, data))
        out.update(edit_values(data))
        out.update(proof_values(data))
        for impl, step in results.ladder_steps(data):
            out[f"{impl}.clock_change"], out[f"{impl}.step_per_clock"] = per_clock(data, impl, step)
        out.update(warmup_values(data))
    for version in versions.names():
        out[f"{version}.build_unchanged"] = build_table(version, record)[1] or "Every fact is listed above."
    out.update(caption_values(data, record))
    return out


# ---------------------------------------------------------------------------- captions


def ladder_caption(data: Data) -> str:
    run = results.ladder(data)
    if data is None or run is None:
        return f"The ladder is {NOT_MEASURED}."
    names = versions.names()
    timed = [versions.label(v) for v in names if v in run["rows"]]
    which = "every version" if len(timed) == len(names) else ", ".join(timed)
    return f"{which[0].upper()}{which[1:]} and cuBLAS at {numfmt.shape_text(run['shape'])}: {runs_text(data, [run])}."


def sweep_caption(data: Data) -> str:
    runs = results.sweep_runs(data)
    if data is None or not runs:
        return f"The shape sweep is {NOT_MEASURED}."
    return f"{len(runs)} shapes, each with its own cuBLAS: {runs_text(data, runs)}."


def steps_caption(data: Data, runs: list[dict[str, Any]]) -> str:
    """The caption of a steps table: the runs its rows come from (each once)."""
    runs = list({id(r): r for r in runs}.values())
    if data is None or not runs:
        return f"These steps are {NOT_MEASURED}."
    shapes = ", ".join(sorted({numfmt.shape_text(r["shape"]) for r in runs}))
    return f"at {shapes}, paired within each run's rounds: {runs_text(data, runs)}."


def tryit_caption(data: Data, version: str) -> str:
    """A Try it table's caption: the runs that timed its rows, then the runs that checked its edits."""
    timed, edits = tryit_runs(data, version), results.tryit_entries(data, version)
    parts = [steps_caption(data, timed).rstrip(".")] if timed else []
    if data is not None and edits:
        runs = sorted({e["run_id"] for e in edits})
        parts.append(f"edits checked on the GPU, not timed, in run{'s' if len(runs) > 1 else ''} {', '.join(runs)} "
                     f"({dates(edits)})")  # fmt: skip
    return "; ".join(parts) + "." if parts else f"These changes are {NOT_MEASURED}."


def build_caption(record: dict[str, Any] | None) -> str:
    if record is None:
        return "The build record is not written yet (``python -m matmul_bench buildcheck --record``)."
    nvcc = re.search(r"cuda_(\d+\.\d+)", record["nvcc"])
    return (f"From the build record of ``python -m matmul_bench buildcheck --record``: the {record['arch']} build "
            f"at {numfmt.shape_text(tuple(record['shape']))} (Tilus {record['tilus']}, nvcc "
            f"{nvcc[1] if nvcc else record['nvcc']}); SASS counts are static, not executions.")  # fmt: skip


def caption_values(data: Data, record: dict[str, Any] | None) -> Iterator[tuple[str, str]]:
    """The captions under tables and charts: what they show, the runs they come from, the method link."""
    ladder = ladder_caption(data)
    yield "ladder.caption", caption(ladder)
    yield "ladder.chart_caption", caption(f"Every version's TFLOPS beside cuBLAS's and the tensor-core peaks. {ladder}")
    yield "steps.chart_caption", caption("What each step bought: the paired ratio over the version before, "
                                         f"coloured by its verdict. {ladder}")  # fmt: skip
    yield "sweep.caption", caption(sweep_caption(data))
    yield "sweep.chart_caption", caption(f"Each implementation against cuBLAS, shape by shape, then its TFLOPS. "
                                         f"{sweep_caption(data)}")  # fmt: skip
    yield "build.caption", build_caption(record)
    for version in versions.names():
        label = versions.label(version)
        yield f"{version}.chart_caption", caption(f"Every version's TFLOPS against the tensor-core peak at its "
                                                  f"clock, {label} highlighted. {ladder}")  # fmt: skip
        yield f"{version}.tryit_caption", caption(tryit_caption(data, version))
    for run in results.steps_runs(data):
        yield f"steps-{run_slug(run)}.caption", caption(steps_caption(data, [run]))


# ---------------------------------------------------------------------------- tables

Table = list[list[str]]


def chapter_link(impl: str) -> str:
    """An implementation's name; a version's links to its chapter."""
    if impl not in versions.names():
        return versions.label(impl)
    return f":doc:`{escape(versions.get(impl).heading)} </chapters/{impl}>`"


def ladder_table(data: Data) -> Table:
    header = ["Version", "TFLOPS", "Latency", f"{TIMES} cuBLAS [interval]", "Step over the previous version",
              "SM clock", "Power"]  # fmt: skip
    run = results.ladder(data)
    if data is None or run is None:
        return [header, [f"The ladder is {NOT_MEASURED}.", *[""] * 6]]
    rows = [header]
    for impl in [*versions.names(), results.CUBLAS]:
        row = run["rows"].get(impl)
        if row is None:
            rows.append([chapter_link(impl), NOT_MEASURED, *[""] * 5])
            continue
        step = "first version" if impl == versions.names()[0] else "the baseline" if impl == results.CUBLAS else (
            numfmt.step_text(row["step"]) if row.get("step") else NOT_MEASURED)  # fmt: skip
        rows.append([chapter_link(impl), f"{row['tflops']:.0f}", unit_text("ms", row["latency_ms"]),
                     numfmt.ratio_text(row["ratio_to_cublas"]), step, clock_text(row),
                     power_text(row)])  # fmt: skip
    return rows


def per_clock(data: dict[str, Any], impl: str, step: dict[str, Any]) -> tuple[str, str]:
    """A ladder step's SM clock change and the step with it divided out (the step per clock cycle, at the medians);
    "not recorded" where either clock is missing or suspect."""
    row, over = results.ladder_row(data, impl), results.ladder_row(data, step["over"])
    clocks = [r.get("sm_clock_mhz") if r and not r.get("suspect") else None for r in (over, row)]
    if None in clocks:
        return NOT_RECORDED, NOT_RECORDED
    before, after = clocks
    return f"{before:.0f} \u2192 {after:.0f} MHz", f"{step['median'] * before / after:.2f}{TIMES}"


def ladder_steps_table(data: Data) -> Table:
    header = ["Version", "Over", "Step [interval]", "Verdict", "SM clock", "Step per clock"]
    steps = results.ladder_steps(data)
    if not steps:
        return [header, [f"The ladder's steps are {NOT_MEASURED}.", *[""] * 5]]
    return [header, *([chapter_link(impl), versions.label(s["over"]), numfmt.ratio_text(s),
                       numfmt.verdict_word(s), *per_clock(data, impl, s)] for impl, s in steps)]  # fmt: skip


PERFORMANCE = [
    ("Throughput", "tflops"), ("Median latency", "ms"),
    (f"{TIMES} cuBLAS, paired in the same rounds [interval]", "ratio"), ("Step over the previous version", "step"),
    ("SM clock during timing", "sm_clock"), ("Power during timing", "power"),
    ("Tensor-core peak at that clock", "peak_at_clock"), ("Share of the peak at that clock", "peak_fraction"),
    ("Share of the datasheet peak ({})", "datasheet_fraction"), ("Configuration it ran", "config"),
]  # fmt: skip


def performance_table(version: str, data: Data, named: dict[str, str], record: dict[str, Any] | None = None) -> Table:
    """One version's numbers in the ladder: throughput, ratio, step, clock, peaks, configuration, counters, runs."""
    header = ["Quantity", versions.label(version)]
    row, run = results.ladder_row(data, version), results.ladder(data)
    if data is None or row is None or run is None:
        return [header, ["Throughput", NOT_MEASURED]]
    peak = named.get("gpu.peak", NOT_RECORDED)
    rows = [
        header,
        *([label.format(peak), named.get(f"{version}.{what}", NOT_MEASURED)] for label, what in PERFORMANCE),
    ]
    if version == versions.names()[0]:
        rows[4][1] = "first version"
    labels = {key: label for key, label, _ in COUNTERS.values()}
    counters = {k: v for k, v in (row.get("counters") or {}).items() if isinstance(v, int | float)}
    sass = ((record or {}).get("versions", {}).get(version) or {}).get("sass", {})
    no_stores = bool(sass) and sass.get("STS", 0) + sass.get("STSM", 0) == 0  # TMA's writes are not st.shared
    none = "n/a (no st.shared)"
    shown = [[labels.get(k, k.replace("_", " ")), none if no_stores and k.startswith("smem_store")
               else counter_text(k, v)] for k, v in counters.items()]  # fmt: skip
    rows += shown or [["Profiler counters", NOT_RECORDED]]
    return rows  # which runs: the caption; their commits and dates: the method page's provenance


def attempts_table(found: list[Any], *, with_run: bool = True) -> Table:
    """Rows of steps runs, (run, variant, row) each: what changed, TFLOPS, ratio to cuBLAS, step, kept; the run's
    title too where the rows come from several runs."""
    header = ["Variant", "What changed", "Run", "TFLOPS", f"{TIMES} cuBLAS [interval]", "Step [interval]",
              "Kept in a version"]  # fmt: skip

    def step(row: dict[str, Any]) -> str:
        s = row.get("step")
        return f"{numfmt.step_text(s)} over {versions.label(s['over'])}" if s else "reference"

    rows = [[literal(impl), escape(row["title"]), escape(run["title"]), f"{row['tflops']:.0f}",
             numfmt.ratio_text(row["ratio_to_cublas"]), step(row),
             "kept" if row.get("kept") else "no" if row.get("step") else "n/a (the reference)"]
            for run, impl, row in found] or [[f"These attempts are {NOT_MEASURED}.", *[""] * 6]]  # fmt: skip
    return [[cell for i, cell in enumerate(row) if with_run or i != 2] for row in [header, *rows]]


@functools.cache
def tryit_spec() -> ModuleType:
    """experiments/tryit.py: which recorded steps rows a chapter's Try it table adds (plain data)."""
    return loader.import_spec(loader.EXPERIMENTS_DIR / "tryit.py", "try-it")


def tryit_runs(data: Data, version: str) -> list[dict[str, Any]]:
    runs = results.steps_runs(data, version, tryit=True)
    for title, name, _ in tryit_spec().RECORDED.get(version, []):
        found = [run for run in results.steps_runs(data) if run["title"] == title and name in run["rows"]]
        runs += found[-1:]
    return runs


def tryit_table(version: str, data: Data) -> Table:
    """A chapter's "Try it" outcomes: its timed changes, the recorded steps it points to, its checked edits."""

    def timed(impl: str, row: dict[str, Any], kind: str) -> list[str]:
        step = row.get("step")
        seen = f"{numfmt.step_text(step)} over {literal(step['over'])}" if step else \
            "the baseline the other rows are paired with"  # fmt: skip
        return [f"{escape(row['title'])} {literal(impl)}", kind,
                f"{row['tflops']:.0f} TFLOPS{'; ' if step else ': '}{seen}"]  # fmt: skip

    rows = [["Change", "Kind", "What it did on the GPU"]]
    rows += [timed(impl, row, "timed") for run in results.steps_runs(data, version, tryit=True)
             for impl, row in run["rows"].items() if impl != results.CUBLAS]  # fmt: skip
    for title, name, _ in tryit_spec().RECORDED.get(version, []):
        found = [run for run in results.steps_runs(data) if run["title"] == title and name in run["rows"]]
        rows.append(timed(name, found[-1]["rows"][name], f"recorded ({escape(title)})") if found else
                    [literal(name), f"recorded ({escape(title)})", NOT_MEASURED])  # fmt: skip
    for entry in results.tryit_entries(data, version):
        diff = [f"- {line}" for old, _ in entry["edits"] for line in old.splitlines()] + \
               [f"+ {line}" for _, new in entry["edits"] for line in new.splitlines()]  # fmt: skip
        block = "\n\n.. code-block:: diff\n\n" + "\n".join(f"   {line}" for line in diff) if diff else ""
        config = ", ".join(f"{k}={v}" for k, v in entry["config"].items())
        rows.append([f"{escape(entry['title'])}{block}\n\nwith ``{config}``", "edit, checked",
                     escape(outcome_text(entry))])  # fmt: skip
    if len(rows) == 1:
        rows.append([f"The try-its of {versions.label(version)} are {NOT_MEASURED}.", "", ""])
    return rows


# (label, value) of a build that a chapter's "what changed" compares; the SASS families follow.
BUILD_ROWS: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
    ("Threads per block", lambda e: str(e["threads"])),
    ("Registers per thread (ptxas)", lambda e: str(e["registers"])),
    ("Spill stores, loads (ptxas)", lambda e: f"{e['spill_stores']:,}, {e['spill_loads']:,} bytes"),
    ("Stack frame (ptxas)", lambda e: f"{e['stack_bytes']:,} bytes"),
    ("Shared memory per block", lambda e: numfmt.kb_text(e["shared_bytes"])),
    ("Named barriers (ptxas)", lambda e: str(e["barriers"])),
    ("ptxas advisories", lambda e: ", ".join(f"{c} ({n})" for c, n in e["advisories"].items()) or "none"),
    ("HGMMA shapes", lambda e: ", ".join(s.split(".")[0].replace("x", f" {TIMES} ") for s in e["hgmma"]) or "none"),
    ("WARPGROUP.DEPBAR, by groups left pending",
     lambda e: ", ".join(f"{n} pending: {c}" for n, c in e["depbar"].items()) or "none"),
    *((f"{family} ({ptx})", lambda e, family=family: f"{e['sass'][family]:,}")
      for family, (ptx, _) in budget.SASS_FAMILIES.items()),
]  # fmt: skip


def build_table(version: str, record: dict[str, Any] | None) -> tuple[Table, str]:
    """What this version's sm_90a build changed against the previous one's; and the facts it left unchanged."""
    names = versions.names()
    index = names.index(version)
    have = (record or {}).get("versions", {})
    missing = [v for v in names[max(index - 1, 0) : index + 1] if v not in have]
    if missing:
        return [["Build fact", versions.label(version)], [f"Not in the build record yet: {', '.join(missing)}", ""]], ""
    entry = have[version]
    if index == 0:
        return [
            ["Build fact", versions.label(version)],
            *([label, value(entry)] for label, value in BUILD_ROWS if value(entry) not in ("0", "none")),
        ], ""
    before = have[names[index - 1]]
    changed = [[lab, val(before), val(entry)] for lab, val in BUILD_ROWS if val(before) != val(entry)]
    same = [f"{lab} {val(entry)}" for lab, val in BUILD_ROWS if val(before) == val(entry) not in ("0", "none")]
    header = ["Build fact", versions.label(names[index - 1]), versions.label(version)]
    return [header, *(changed or [["(none changed)", "", ""]])], escape(f"Unchanged: {'; '.join(same)}.")


def provenance_table(data: Data) -> Table:
    """Where and how the numbers were measured: GPU, clocks and limits, software, problem, method, dates."""
    header = ["", "Recorded in the results file"]
    if data is None:
        return [header, ["Results", f"No results file is recorded yet: {NOT_MEASURED}."]]
    g, s, m, p = data["gpu"], data["software"], data["method"], data["problem"]
    clocks = g["clocks_mhz"]
    peak = f"{g['published_dense_fp16_tflops']:.1f} TFLOPS" if g.get("published_dense_fp16_tflops") else NOT_RECORDED
    if g.get("published_source"):
        peak += f" (`datasheet <{g['published_source']}>`__)"
    runs = [r for r in (data.get("ladder"), *data.get("sweep", []), *data.get("steps", [])) if r]
    path = paths.results_file()
    return [header,
        ["GPU", f"{g['name']}, {g['sm_count']} SMs, compute capability {g['compute_capability']}, "
                f"driver {g['driver']}, {unit_text('gb', g.get('memory_gb'))}"],
        ["Clock and power limits", f"SM up to {unit_text('mhz', clocks.get('sm_max'))}, memory up to "
         f"{unit_text('mhz', clocks.get('mem_max'))}, power limit {unit_text('watts', g.get('power_limit_w'))}"],
        ["Datasheet dense FP16 peak", peak],
        ["Software", f"CUDA {s['cuda']}, cuBLAS {s.get('cublas', NOT_RECORDED)}, torch {s['torch']}, "
                     f"Tilus {s['tilus']}, Python {s['python']}"],
        ["Problem", f"{numfmt.shape_text(p)}, {p['dtype']} inputs, {p['accumulate']} accumulation"],
        ["Timer", escape(f"{m['timer']}; {m['repeats']} timed calls per implementation and round; "
                         f"L2 flush: {m['l2_flush']}")],
        ["Warm-up", escape(warmup_text(m))],
        ["Order", escape(m["order"])], ["Statistic", escape(f"{m['statistic']}; {m['interval']}")],
        ["Clocks and power", escape(m["clocks"])],
        *([f"Run {run_id} (earlier method)", escape(note)] for run_id, note in (m.get("earlier_runs") or {}).items()),
        ["Dates", dates([*runs, *data.get("tryit", [])]) if runs else NOT_MEASURED],
        ["Results file", literal(f"plots/results/{path.name}") if path else NOT_MEASURED],
    ]  # fmt: skip


def warmup_text(method: dict[str, Any]) -> str:
    """The method's warm-up in words: seconds of the timed loop (method 4), or a count of calls (older records)."""
    if "warmup_s" in method:
        return f"{method['warmup_s']:g} s per implementation and round: {method['warmup']}"
    return f"{method['warmup']} calls per implementation and round"


def proof_pairs(data: Data) -> list[tuple[str, dict[str, Any]]]:
    """The warm-up's proof: (the neighbour, the run) for each recorded rotation, V6 and cuBLAS in each."""
    pairs = []
    for run in results.proof_runs(data):
        others = [impl for impl in run["rows"] if impl not in ("v6", results.CUBLAS)]
        if "v6" in run["rows"] and len(others) == 1:
            pairs.append((others[0], run))
    return pairs


def proof_table(data: Data) -> Table:
    """V6 against cuBLAS in rotations with different neighbours: the same ratio is the warm-up's proof."""
    header = ["Beside", f"V6 {TIMES} cuBLAS [interval]", "V6", "cuBLAS", "The neighbour", "Runs"]
    rows = [[versions.label(other), numfmt.ratio_text(run["rows"]["v6"]["ratio_to_cublas"]),
             unit_text("tflops", run["rows"]["v6"]["tflops"]), unit_text("tflops", run["rows"]["cublas"]["tflops"]),
             f"{numfmt.ratio_text(run['rows'][other]['ratio_to_cublas'])} of cuBLAS", str(len(run.get("runs", [])))]
            for other, run in proof_pairs(data)]  # fmt: skip
    return [header, *rows] if rows else [header, [f"The proof is {NOT_MEASURED}.", *[""] * 5]]


def proof_values(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """How far apart V6's ratios to cuBLAS are in the proof's rotations, against the rule's band."""
    ratios = [run["rows"]["v6"]["ratio_to_cublas"]["median"] for _, run in proof_pairs(data)]
    if len(ratios) >= 2:
        gap = max(ratios) / min(ratios) - 1.0
        band = (data["method"].get("verdicts") or {}).get("band", 0.0)
        yield "proof.gap", f"{100 * gap:.1f}%"
        yield "proof.verdict", "inside the band" if gap <= band else "outside the band"


def warmup_record(data: Data) -> dict[str, Any] | None:
    """experiments/warmup.py's record for the results file's GPU (every call of its blocks), or None."""
    if data is None:
        return None
    path = paths.RESULTS_DIR / "warmup" / f"{results.slug(data['gpu']['name'])}.json.gz"
    return read_gzip_json(path, path.stat().st_mtime_ns) if path.is_file() else None


@functools.lru_cache(maxsize=2)
def read_gzip_json(path: Path, mtime_ns: int) -> dict[str, Any]:
    """A gzip-compressed JSON file, read once per version of it (the values and the table both ask)."""
    return json.loads(gzip.decompress(path.read_bytes()))


def warmup_values(data: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """The benchmark's warm-up, and the measurement behind it (experiments/warmup.py) on the results file's GPU."""
    if "warmup_s" in data["method"]:
        yield "method.warmup_s", f"{data['method']['warmup_s']:g} s"
    found = warmup_record(data)
    if found is None:
        return
    slices = [stats.warmup_slices(block["calls"]) for block in found["blocks"]]
    later = [abs(x - 1.0) for row in slices for x in row[3:] if x is not None]  # from half a second on
    yield "warmup.first_faster", f"{100 * max(1.0 - row[0] for row in slices if row[0] is not None):.0f}%"
    yield "warmup.later_within", f"{100 * max(later):.1f}%"
    yield "warmup.block_s", f"{found['block_s']:g} s"
    yield "warmup.date", found["date"]


def warmup_table(data: Data) -> Table:
    """Each warm-up block's slices of time, as its calls' median over the median of its last second."""
    spans = [f"{low / 1e3:g}-{high / 1e3:g} s" for low, high in stats.WARMUP_SLICES_MS]
    header = ["Kernel", "After", "Block", *spans]
    found = warmup_record(data)
    if found is None:
        return [header, [f"The warm-up is {NOT_MEASURED}.", *[""] * (len(header) - 1)]]
    after = {"idle": "2 s idle", "v0": "1 s of V0"}
    return [header, *([versions.label(b["impl"]), after.get(b["after"], b["after"]), str(b["rep"] + 1),
                       *(f"{x:.3f}" if x is not None else "" for x in stats.warmup_slices(b["calls"]))]
                      for b in found["blocks"])]  # fmt: skip


def runs_table(data: Data) -> Table:
    """Every figure's independent runs: their ids, dates and the commit of this project each was measured at."""
    header = ["Figure", "Runs", "Dates", "Commits"]
    if data is None:
        return [header, [f"Runs: {NOT_MEASURED}.", "", "", ""]]
    groups = [("The ladder", [data.get("ladder")])]
    groups += [(f"Sweep at {numfmt.shape_text(r['shape'])}", [r]) for r in results.sweep_runs(data)]
    groups += [(f"Steps: {r['title']}", [r]) for r in data.get("steps", [])]
    groups.append(("Try it edits", data.get("tryit", [])))  # by run id, each once
    rows = [header]
    for title, figures in groups:
        runs = independent([figure for figure in figures if figure])
        if runs:
            rows.append([escape(title), ", ".join(r["run_id"] for r in runs), dates(runs),
                         ", ".join(sorted({literal(r["git_commit"][:10]) for r in runs}))])  # fmt: skip
    return rows


def baseline_kernels_table(data: Data) -> Table:
    """cuBLAS's kernel at each sweep shape (the torch profiler's name) and what its nvjet name encodes."""
    header = ["Shape", "cuBLAS kernel (torch profiler)", "Tile", "Stages", "Cluster"]
    runs = [run for run in results.sweep_runs(data) if run.get("cublas_kernel")]
    if not runs:
        return [header, [f"cuBLAS's kernels are {NOT_MEASURED}.", "", "", "", ""]]
    rows = [header]
    for run in runs:
        c = run["cublas_kernel"].get("decoded")
        rows.append([numfmt.shape_text(run["shape"]), literal(run["cublas_kernel"]["name"]),
                     f"{c['tile'][0]} {TIMES} {c['tile'][1]}" if c else NOT_RECORDED,
                     f"{c['stages']} of K {c['block_k']}" if c else NOT_RECORDED,
                     f"{c['cluster'][0]} {TIMES} {c['cluster'][1]}" if c else NOT_RECORDED])  # fmt: skip
    return rows


def budget_table(version: str, record: dict[str, Any] | None, data: Data) -> Table:
    """One version's budget: the block, blocks per SM, intensity, waves and the speed of light at its clock."""
    if record is None or version not in record.get("versions", {}):
        return [["Budget", f"{versions.label(version)} is not in the build record yet"]]
    build, config = budget.build_of(record, version)
    shape = tuple(data["problem"][k] for k in ("m", "n", "k")) if data else tuple(record["shape"])
    sm_count = data["gpu"]["sm_count"] if data else 132
    b = budget.budget(build, config, shape, sm_count)
    bm, bn, bk = config["block_m"], config["block_n"], config["block_k"]
    allows = ", ".join(f"{name} {count}" for name, count in b.by_resource.items() if name != "the 32-block limit")
    grid = (f"{build.persistent_blocks} blocks, one per SM, each looping over tiles" if build.persistent_blocks else
            f"one block per tile, {b.resident_blocks} resident at a time ({b.blocks_per_sm} per SM {TIMES} "
            f"{sm_count} SMs)")  # fmt: skip
    rows = [
        ["Block", f"{build.threads} threads ({build.threads // 32} warps), {build.registers} registers per thread "
                  f"(ptxas, sm_90a), {build.shared_bytes / 1024:.1f} KB of shared memory"],
        ["Blocks per SM", f"{b.blocks_per_sm}, limited by {b.limited_by} (alone, each would allow: {allows})"],
        ["Intensity", f"each {bm}{TIMES}{bn}{TIMES}{bk} K-step loads {(bm + bn) * bk * 2 / 1024:.0f} KB by TMA for "
                      f"{2 * bm * bn * bk / 1e6:.1f} MFLOP: {b.flop_per_byte:.0f} FLOP per byte"],
        ["Waves", f"{b.tiles} tiles of {bm}{TIMES}{bn} at {numfmt.shape_text(shape)}; {grid}: {b.waves:.2f} waves, "
                  f"the last filling {round(b.last_wave_fraction * b.resident_blocks)} of the {b.resident_blocks} "
                  "slots"],
    ]  # fmt: skip
    row = results.ladder_row(data, version)
    peak = None if row is None else results.row_peak_tflops(data, row)  # type: ignore[arg-type]
    if row is None or peak is None:
        rows.append(["Speed of light", f"at the measured clock: {NOT_MEASURED}"])
    else:
        rows.append(["Speed of light", f"at {clock_text(row)}, the SM clock while it was timed, the tensor cores "
                     f"peak at {unit_text('tflops', peak)} ({sm_count} SMs {TIMES} "
                     f"{results.DENSE_FP16_FLOP_PER_CLOCK_PER_SM} FLOP per clock); it ran at "
                     f"{unit_text('tflops', row['tflops'])}, {unit_text('pct', 100 * row['tflops'] / peak)} "
                     "of that"])  # fmt: skip
    return rows


def tile_choices_table() -> Table:
    """V8's tile model at each of TILE_CHOICE_SHAPES: V7's one tile against the model's pick, and the gain."""
    model = loader.load("tile_model")

    def waves(e: Any) -> str:
        rounds = f"{e.rounds} round{'s' if e.rounds > 1 else ''}"
        edge = f"; last column {e.n % e.tile.block_n} of {e.tile.block_n} wide" if e.edge_empty else ""
        return f"{e.tiles} tiles, {e.waves:.2f} waves in {rounds}: {e.wave_efficiency:.2f} of the slots{edge}"

    rows = [["Shape", f"V7: 128 {TIMES} 256", "The model picks", "Its tiles", "Predicted time, V7 over V8"]]
    for m, n, k in map(shape_of, TILE_CHOICE_SHAPES):
        fixed = model.estimate(model.REFERENCE, m, n, k, model.H100_SMS)  # H100 SXM and H200: 132 SMs
        chosen = model.estimate(model.choose(m, n, k, model.H100_SMS), m, n, k, model.H100_SMS)
        rows.append([numfmt.shape_text((m, n, k)), waves(fixed), chosen.tile.name.replace("x", f" {TIMES} "),
                     waves(chosen), f"{fixed.time / chosen.time:.2f}"])  # fmt: skip
    return rows


# ---------------------------------------------------------------------------- the files


def csv_text(rows: Table) -> str:
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue()


def pages(docs: Path = paths.DOCS_DIR) -> dict[str, str]:
    """The text of every page (not the generated files, not the gallery sphinx-gallery writes), by its path."""
    found = sorted(p for p in docs.glob("**/*.rst") if not {"_generated", "gallery"} & set(p.relative_to(docs).parts))
    return {page.relative_to(docs).as_posix(): page.read_text(encoding="utf-8") for page in found}


def used_names(docs: Path = paths.DOCS_DIR, texts: dict[str, str] | None = None) -> dict[str, str]:
    """Every substitution name the pages use (their ``texts`` when already read), with the first page that uses it."""
    found: dict[str, str] = {}
    for page, text in (pages(docs) if texts is None else texts).items():
        for name in USES.findall(text):
            found.setdefault(name, page)
    return found


def run_slug(run: dict[str, Any]) -> str:
    """A steps run's file name: its title's first five words and its shape ("a-tile-chosen-per-problem-5120")."""
    words = re.findall(r"[a-z0-9]+", run["title"].lower().split(",")[0].split(" at ")[0])[:5]
    return "-".join([*words, shape_name(results.shape_of(run))])


def files(data: Data, record: dict[str, Any] | None, docs: Path = paths.DOCS_DIR) -> dict[str, str]:
    """Every generated file's name and text, for the pages in ``docs``."""
    named = values(data, record)
    texts = pages(docs)
    used = used_names(docs, texts)
    out: dict[str, str] = {}
    lines = [".. Generated by `python -m matmul_site.render` from the results file and the build record: do not edit.",
             ""]  # fmt: skip
    unknown = [f"{name} ({page})" for name, page in used.items() if name not in named]
    if data is not None and unknown:
        print(f"render: the data gives no value for {', '.join(unknown)}: they read '{NOT_MEASURED}'", file=sys.stderr)
    for name in sorted(used):
        text = named.get(name, NOT_MEASURED)
        lines.append(f".. |{name}| replace:: {text}")
    for version in versions.names():
        out[f"{version}-build.csv"] = csv_text(build_table(version, record)[0])
        out[f"{version}-performance.csv"] = csv_text(performance_table(version, data, named, record))
        out[f"{version}-tryit.csv"] = csv_text(tryit_table(version, data))
        out[f"{version}-budget.csv"] = csv_text(budget_table(version, record, data))
    out["values.rst"] = "\n".join(lines) + "\n"
    out["ladder.csv"] = csv_text(ladder_table(data))
    out["ladder-steps.csv"] = csv_text(ladder_steps_table(data))
    out["provenance.csv"] = csv_text(provenance_table(data))
    out["runs.csv"] = csv_text(runs_table(data))
    out["baseline-kernels.csv"] = csv_text(baseline_kernels_table(data))
    out["tile-choices.csv"] = csv_text(tile_choices_table())
    out["warmup-proof.csv"] = csv_text(proof_table(data))
    out["warmup-settle.csv"] = csv_text(warmup_table(data))
    for run in results.steps_runs(data):
        rows = [(run, impl, row) for impl, row in run["rows"].items() if impl != results.CUBLAS]
        out[f"steps-{run_slug(run)}.csv"] = csv_text(attempts_table(rows, with_run=False))
    builds = {**(record or {}).get("versions", {}), **(record or {}).get("extras", {})}
    for name, entry in builds.items():
        out[f"ptxas-{name}.txt"] = entry["ptxas"].rstrip("\n") + "\n"
        out[f"ptx-{name}.txt"] = "".join(f"{line}\n" for line in (entry.get("ptx") or {}).values())
    # Only the files some page reads, and the substitutions; a file the data cannot fill yet says so.
    read = set(re.findall(r"/_generated/([\w.-]+)", "\n".join(texts.values())))
    for name in read - out.keys():
        out[name] = csv_text([["Not measured"], [f"This table is {NOT_MEASURED}."]]) if name.endswith(".csv") else \
            f"{NOT_RECORDED}\n"  # fmt: skip
    return {name: text for name, text in out.items() if name == "values.rst" or name in read}


def render(docs: Path = paths.DOCS_DIR, *, check: bool = False) -> list[str]:
    """Write (or, with ``check``, compare) the generated files of the pages in ``docs``; the names of those that
    changed."""
    out_dir = docs / "_generated"
    path = paths.results_file()
    data = results.load(path) if path is not None else None
    record = budget.load_builds() if budget.BUILD_RECORD.is_file() else None
    wanted = files(data, record, docs)
    changed = [name for name, text in wanted.items()
               if not (out_dir / name).is_file() or (out_dir / name).read_text(encoding="utf-8") != text]  # fmt: skip
    present = sorted(out_dir.glob("*")) if out_dir.is_dir() else []
    stale = [p.name for p in present if p.is_file() and p.name not in wanted]
    if not check:
        for name in changed:
            results.write_bytes_atomic(out_dir / name, wanted[name].encode("utf-8"))
        for name in stale:
            (out_dir / name).unlink()
    return changed + stale


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m matmul_site.render", description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 when a file would change")
    parser.add_argument("--docs", type=Path, default=paths.DOCS_DIR, help="the pages' folder (default: docs/)")
    args = parser.parse_args(argv)
    if paths.results_file() is None:
        print(f"render: no results file in {paths.RESULTS_DIR} (run `nox -s bench` on a Hopper GPU): the pages "
              "will say 'not measured yet'", file=sys.stderr)  # fmt: skip
    try:
        changed = render(args.docs, check=args.check)
    except (results.ResultsError, budget.BudgetError, versions.VersionError, paths.ResultsFileError) as exc:
        print(f"render: {exc}", file=sys.stderr)
        return 1
    except SyntaxError as exc:
        print(f"render: {exc.filename}, line {exc.lineno}: {exc.msg}; fix that file and run again", file=sys.stderr)
        return 1
    if args.check and changed:
        print(f"render: docs/_generated/ is stale ({', '.join(changed)}): run `python -m matmul_site.render`",
              file=sys.stderr)  # fmt: skip
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
