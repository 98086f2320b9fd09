"""The tables of the method page, as rows of cells: where and how the numbers were measured, every set of runs,
cuBLAS's kernels, and the warm-up's measurement and proof."""

from __future__ import annotations

import gzip
import json
from collections.abc import Sequence
from typing import Any

from matmul_data import model, paths, results, stats, versions
from matmul_site import numfmt
from matmul_site.captions import Data, Dated, Table, dates, independent, unmeasured
from matmul_site.numfmt import NOT_MEASURED, NOT_RECORDED, TIMES, escape, unit_text


def method_text(text: str, method: model.Method) -> str:
    """The method's own words with the names of its fields ("method.verdicts.band") replaced by their values."""
    if verdicts := method.verdicts:
        text = text.replace("(method.verdicts)", f"({verdicts.count:,} of them)")
        text = text.replace("1 +/- method.verdicts.band", f"1 \u00b1 {100 * verdicts.band:.1f}%")
    return text


def provenance_table(data: Data) -> Table:
    """Where and how the numbers were measured: GPU, clocks and limits, software, problem, method, dates."""
    header = ["", "Recorded in the results file"]
    if data is None:
        return [header, ["Results", f"No results file is recorded yet: {NOT_MEASURED}."]]
    g, s, m, p = data.gpu, data.software, data.method, data.problem
    clocks = g.clocks_mhz
    peak = f"{g.published_dense_fp16_tflops:.1f} TFLOPS" if g.published_dense_fp16_tflops else NOT_RECORDED
    if g.published_source:
        peak += f" (`datasheet <{g.published_source}>`__)"
    runs = data.figures
    path = paths.results_file()
    return [header,
        ["GPU", f"{g.name}, {g.sm_count} SMs, compute capability {g.compute_capability}, "
                f"driver {g.driver}, {unit_text('gb', g.memory_gb)}"],
        ["Clock and power limits", f"SM up to {unit_text('mhz', clocks.sm_max)}, memory up to "
         f"{unit_text('mhz', clocks.mem_max)}, power limit {unit_text('watts', g.power_limit_w)}"],
        ["Datasheet dense FP16 peak", peak],
        ["Software", f"CUDA {s.cuda}, cuBLAS {s.cublas or NOT_RECORDED}, torch {s.torch}, "
                     f"Tilus {s.tilus}, Python {s.python}"],
        ["Problem", f"{numfmt.shape_text(p)}, {p.dtype} inputs, {p.accumulate} accumulation"],
        ["Timer", escape(f"{m.timer}; {m.repeats} timed calls per implementation and round; "
                         f"L2 flush: {m.l2_flush}")],
        ["Warm-up", escape(f"{m.warmup_s:g} s per implementation and round: {m.warmup}" if m.warmup_s is not None
                           else f"{m.warmup} calls per implementation and round")],  # older records: calls
        ["Order", escape(m.order)], ["Statistic", escape(f"{m.statistic}; {method_text(m.interval, m)}")],
        ["Clocks and power", escape(m.clocks)],
        *([f"Run {run_id} (earlier method)", escape(note)] for run_id, note in (m.earlier_runs or {}).items()),
        ["Dates", dates([*runs, *data.tryit]) if runs else NOT_MEASURED],
        ["Results file", f"``plots/results/{path.name}``" if path else NOT_MEASURED],
    ]  # fmt: skip


def proof_pairs(data: Data) -> list[tuple[str, model.Figure]]:
    """The warm-up's proof: (the neighbour, the run) for each recorded rotation, V6 and cuBLAS in each."""
    others = [(run, [i for i in run.rows if i not in ("v6", results.CUBLAS)]) for run in results.proof_runs(data)]
    return [(found[0], run) for run, found in others if "v6" in run.rows and len(found) == 1]


def proof_table(data: Data) -> Table:
    """V6 against cuBLAS in rotations with different neighbours: the same ratio is the warm-up's proof."""
    header = ["Beside", f"V6 {TIMES} cuBLAS [interval]", "V6", "cuBLAS", "The neighbour", "Runs"]
    rows = [[versions.label(other), numfmt.ratio_text(run.rows["v6"].ratio_to_cublas),
             unit_text("tflops", run.rows["v6"].tflops), unit_text("tflops", run.rows["cublas"].tflops),
             f"{numfmt.ratio_text(run.rows[other].ratio_to_cublas)} of cuBLAS", str(len(run.runs))]
            for other, run in proof_pairs(data)]  # fmt: skip
    return [header, *rows] if rows else unmeasured(header, "The proof is")


def warmup_record(data: Data) -> dict[str, Any] | None:
    """``check warmup``'s record for the results file's GPU (every call of its blocks), or None."""
    if data is None:
        return None
    path = paths.RESULTS_DIR / "warmup" / f"{results.slug(data.gpu.name)}.json.gz"
    return json.loads(gzip.decompress(path.read_bytes())) if path.is_file() else None


def warmup_table(data: Data) -> Table:
    """Each warm-up block's slices of time, as its calls' median over the median of its last second."""
    spans = [f"{low / 1e3:g}-{high / 1e3:g} s" for low, high in stats.WARMUP_SLICES_MS]
    header = ["Kernel", "After", "Block", *spans]
    found = warmup_record(data)
    if found is None:
        return unmeasured(header, "The warm-up is")
    after = {"idle": "2 s idle", "v0": "1 s of V0"}
    return [header, *([versions.label(b["impl"]), after.get(b["after"], b["after"]), str(b["rep"] + 1),
                       *(f"{x:.3f}" if x is not None else "" for x in stats.warmup_slices(b["calls"]))]
                      for b in found["blocks"])]  # fmt: skip


COMMIT_CHARS = 7  # a commit id, as every table prints it


def runs_table(data: Data) -> Table:
    """Every set of independent runs, once: the figures it measured (counted by kind), its run ids, dates and the
    commits of this project it was measured at."""
    header = ["Figures", "Runs", "Dates", "Commits"]
    if data is None:
        return unmeasured(header, "Runs:")
    kinds: list[tuple[str, str, Sequence[Dated | None]]] = [
        ("the ladder", "", [data.ladder]),
        *(("the sweep", "shape", [r]) for r in results.sweep_runs(data)),
        *(("Try it", "table", [r]) if results.is_tryit_run(r) else ("steps", "table", [r]) for r in data.steps),
        *(("the field set", "shape", [r]) for r in results.field_runs(data)),
        *(
            (f"{name}, with the peers", "shape", [r])
            for section, name in (("sweep", "the sweep"), ("field", "the field set"))
            for r in results.peer_runs(data, section)
        ),  # fmt: skip
        ("the Try it edits", "", data.tryit),
    ]
    sets: dict[tuple[str, ...], tuple[list[Dated], dict[str, tuple[str, int]]]] = {}
    for kind, unit, figures in kinds:
        runs = independent([figure for figure in figures if figure])
        if runs:
            found = sets.setdefault(tuple(r.run_id for r in runs), (runs, {}))[1]
            found[kind] = (unit, found.get(kind, (unit, 0))[1] + 1)
    rows = [header]
    for ids, (runs, found) in sets.items():
        named = [kind if not unit else f"{kind} ({n} {unit}{'s' * (n != 1)})" for kind, (unit, n) in found.items()]
        text = escape("; ".join(named))
        rows.append([text[:1].upper() + text[1:], ", ".join(ids), dates(runs),
                     ", ".join(sorted({f"``{r.git_commit[:COMMIT_CHARS]}``" for r in runs}))])  # fmt: skip
    return rows


def baseline_kernels_table(data: Data) -> Table:
    """cuBLAS's kernel at each sweep shape (the torch profiler's name) and what its nvjet name encodes."""
    header = ["Shape", "cuBLAS kernel (torch profiler)", "Tile", "Stages", "Cluster"]
    kernels = [(run, run.cublas_kernel) for run in results.sweep_runs(data) if run.cublas_kernel]
    if not kernels:
        return unmeasured(header, "cuBLAS's kernels are")
    rows = [header]
    for run, kernel in kernels:
        c = kernel.decoded
        rows.append([numfmt.shape_text(run.shape), f"``{kernel.name}``",
                     f"{c.tile[0]} {TIMES} {c.tile[1]}" if c else NOT_RECORDED,
                     f"{c.stages} of K {c.block_k}" if c else NOT_RECORDED,
                     f"{c.cluster[0]} {TIMES} {c.cluster[1]}" if c else NOT_RECORDED])  # fmt: skip
    return rows
