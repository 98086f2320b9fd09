"""The tables of the chapters, as rows of cells: the ladder and its steps, a version's performance, build, budget
and "Try it" outcomes, a steps run's attempts, and V8's tile model at the shapes its chapter shows."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any

from matmul_data import budget, hopper, loader, model, results, versions
from matmul_data.builds import BuildFacts, BuildRecord
from matmul_data.decoding import Config
from matmul_site import numfmt
from matmul_site.captions import Data, Table, unmeasured
from matmul_site.numfmt import NOT_MEASURED, NOT_RECORDED, TIMES, escape, shape_of, unit_text
from matmul_site.phrases import (
    COUNTERS,
    chapter_link,
    clock_text,
    counter_text,
    outcome_text,
    per_clock,
    power_text,
    stall_text,
)

# The problems V8's tile model is shown at (the V8 chapter's table): 4096 is 4096³.
TILE_CHOICE_SHAPES = ["2048", "4096", "6144", "8192", "16384", "8192x28672x4096", "16384x8192x1024", "5120", "3072",
                      "3000x5000x4096", "5000x3000x4096", "3000x7000x5000"]  # fmt: skip


def ladder_table(data: Data) -> Table:
    header = ["Version", "TFLOPS", "Latency", f"{TIMES} cuBLAS [interval]", "Step over the previous version",
              "SM clock", "Power"]  # fmt: skip
    run = results.ladder(data)
    if run is None:
        return unmeasured(header, "The ladder is")
    rows = [header]
    for impl in [*versions.names(), results.CUBLAS]:
        row = run.rows.get(impl)
        if row is None:
            rows.append([chapter_link(impl), NOT_MEASURED, *[""] * 5])
            continue
        step = "first version" if impl == versions.names()[0] else "the baseline" if impl == results.CUBLAS else (
            numfmt.step_text(row.step) if row.step else NOT_MEASURED)  # fmt: skip
        rows.append([chapter_link(impl), f"{row.tflops:.0f}", unit_text("ms", row.latency_ms),
                     numfmt.ratio_text(row.ratio_to_cublas), step, clock_text(row),
                     power_text(row)])  # fmt: skip
    return rows


def ladder_steps_table(data: Data) -> Table:
    header = ["Version", "Over", "Step [interval]", "Verdict", "SM clock", "Step per clock"]
    steps = results.ladder_steps(data)
    if not steps:
        return unmeasured(header, "The ladder's steps are")
    return [header, *([chapter_link(impl), versions.label(s.over or ""), numfmt.ratio_text(s),
                       numfmt.verdict_word(s), *per_clock(data, impl, s)] for impl, s in steps)]  # fmt: skip


PERFORMANCE = [
    ("Throughput", "tflops"), ("Median latency", "ms"),
    (f"{TIMES} cuBLAS, paired in the same rounds [interval]", "ratio"), ("Step over the previous version", "step"),
    ("SM clock during timing", "sm_clock"), ("Power during timing", "power"),
    ("Tensor-core peak at that clock", "peak_at_clock"), ("Share of the peak at that clock", "peak_fraction"),
    ("Share of the datasheet peak ({})", "datasheet_fraction"), ("Configuration it ran", "config"),
]  # fmt: skip


def performance_table(version: str, data: Data, named: dict[str, str], record: BuildRecord | None = None) -> Table:
    """One version's numbers in the ladder: throughput, ratio, step, clock, peaks, configuration, counters, runs."""
    header = ["Quantity", versions.label(version)]
    row = results.ladder_row(data, version)
    if row is None:
        return [header, ["Throughput", NOT_MEASURED]]
    peak = named.get("gpu.peak", NOT_RECORDED)
    rows = [
        header,
        *([label.format(peak), named.get(f"{version}.{what}", NOT_MEASURED)] for label, what in PERFORMANCE),
    ]
    if version == versions.names()[0]:
        rows[4][1] = "first version"
    # Each counter's name links to the method page's account of it (what it measures, cuBLAS's for scale).
    labels = {key: f":ref:`{label} <counters>`" for key, label, _ in COUNTERS.values()}
    # in the order the file holds them (to_json keeps it); ncu_metrics, the raw map, is not a counter
    counters = {k: v for k, v in (row.counters.to_json() if row.counters else {}).items() if isinstance(v, int | float)}
    facts = record.versions.get(version) if record else None
    sass = facts.sass if facts else {}
    no_stores = bool(sass) and sass.get("STS", 0) + sass.get("STSM", 0) == 0  # TMA's writes are not st.shared
    shown = [[labels.get(k, k.replace("_", " ")), "n/a (no st.shared)" if no_stores and k.startswith("smem_store")
               else counter_text(k, v)] for k, v in counters.items()]  # fmt: skip
    rows += shown or [["Profiler counters", NOT_RECORDED]]
    if stalls := stall_text(row.counters):  # profiles from before the stall reasons have none
        rows.append([":ref:`Warp stalls per issued instruction, largest (ncu) <counters>`", stalls])
    return rows  # which runs: the caption; their commits and dates: the method page's provenance


def attempts_table(run: model.Run) -> Table:
    """A steps run's variants: what changed, TFLOPS, ratio to cuBLAS, step over its reference, kept."""
    header = ["Variant", "What changed", "TFLOPS", f"{TIMES} cuBLAS [interval]", "Step [interval]", "Kept in a version"]

    def step(row: model.Row) -> str:
        s = row.step
        return f"{numfmt.step_text(s)} over {versions.label(s.over or '')}" if s else "reference"

    # What changed as specs/steps.py words it now (a description reworded after its run); the record's otherwise.
    variants = steps_spec().VARIANTS
    rows = [[f"``{impl}``", escape(variants[impl][3] if impl in variants else row.title), f"{row.tflops:.0f}",
             numfmt.ratio_text(row.ratio_to_cublas), step(row),
             "kept" if row.kept else "no" if row.step else "n/a (the reference)"]
            for impl, row in run.rows.items() if impl != results.CUBLAS]  # fmt: skip
    return [header, *rows] if rows else unmeasured(header, "These attempts are")


@functools.cache
def steps_spec() -> ModuleType:
    """specs/steps.py: the steps runs' variants, with what each changes (plain data)."""
    return loader.import_spec(loader.SPECS_DIR / "steps.py", "steps")


@functools.cache
def tryit_spec() -> ModuleType:
    """specs/tryit.py: which recorded steps rows a chapter's Try it table adds (plain data)."""
    return loader.import_spec(loader.SPECS_DIR / "tryit.py", "try-it")


def recorded(data: Data, version: str) -> list[tuple[str, str, model.Figure | None]]:
    """The recorded steps rows a chapter's Try it table adds: (run title, variant, the newest run holding it)."""
    runs = results.steps_runs(data)
    return [(title, name, next((r for r in reversed(runs) if r.title == title and name in r.rows), None))
            for title, name, _ in tryit_spec().RECORDED.get(version, [])]  # fmt: skip


def tryit_table(version: str, data: Data) -> Table:
    """A chapter's "Try it" outcomes: its timed changes, the recorded steps it points to, its checked edits."""

    def timed(impl: str, row: model.Row, kind: str) -> list[str]:
        step = row.step
        seen = f"{numfmt.step_text(step)} over ``{step.over}``" if step else \
            "the baseline the other rows are paired with"  # fmt: skip
        # The change as specs/tryit.py words it now (a title reworded after its run); the record's otherwise.
        title = variants[impl][3] if impl in variants else row.title
        return [f"{escape(title)} ``{impl}``", kind,
                f"{row.tflops:.0f} TFLOPS{'; ' if step else ': '}{seen}"]  # fmt: skip

    spec = tryit_spec()
    variants = spec.VARIANTS
    timed_runs = results.steps_runs(data, version, tryit=True)
    rows = [["Change", "Kind", "What it did on the GPU"]]
    rows += [timed(impl, row, "timed") for run in timed_runs for impl, row in run.rows.items()
             if impl != results.CUBLAS]  # fmt: skip
    for title, name, run in recorded(data, version):
        kind = f"recorded ({escape(title)})"
        rows.append(timed(name, run.rows[name], kind) if run else [f"``{name}``", kind, NOT_MEASURED])
    # What specs/tryit.py asks for and no run has recorded yet: the change named, its outcome not measured yet.
    timed_names = {impl for run in timed_runs for impl in run.rows}
    rows += [[f"{escape(variants[name][3])} ``{name}``", "timed", NOT_MEASURED]
             for run in spec.RUNS.values() if run["after"] == version
             for name in run["variants"][1:] if name not in timed_names]  # fmt: skip
    entries = results.tryit_entries(data, version)
    for entry in entries:
        rows.append([edit_cell(entry.title, entry.edits, entry.config), "edit, checked",
                     escape(outcome_text(entry))])  # fmt: skip
    done = {entry.name for entry in entries}
    tuned = versions.get(version).tuned  # a planned edit runs at the kernel file's TUNED with its overrides
    rows += [[edit_cell(edit["title"], edit["edits"], {**tuned, **edit["config"]}), "edit, checked", NOT_MEASURED]
             for name, edit in spec.EDITS.get(version, {}).items() if name not in done]  # fmt: skip
    return rows if len(rows) > 1 else unmeasured(rows[0], f"The try-its of {versions.label(version)} are")


def edit_cell(title: str, edits: Sequence[Sequence[str]], config: Config) -> str:
    """A checked edit as the table shows it: its title, its diff, and the configuration it runs with."""
    diff = [f"- {line}" for old, _ in edits for line in old.splitlines()] + \
           [f"+ {line}" for _, new in edits for line in new.splitlines()]  # fmt: skip
    block = "\n\n.. code-block:: diff\n\n" + "\n".join(f"   {line}" for line in diff) if diff else ""
    shown = ", ".join(f"{k}={v}" for k, v in config.items())
    return f"{escape(title)}{block}\n\nwith ``{shown}``"


# (label, value) of a build that a chapter's "what changed" compares; the SASS families follow.
BUILD_ROWS: list[tuple[str, Callable[[BuildFacts], str]]] = [
    ("Threads per block", lambda e: str(e.threads)),
    ("Registers per thread (ptxas)", lambda e: str(e.registers)),
    ("Spill stores, loads (ptxas)", lambda e: f"{e.spill_stores:,}, {e.spill_loads:,} bytes"),
    ("Stack frame (ptxas)", lambda e: f"{e.stack_bytes:,} bytes"),
    ("Shared memory per block", lambda e: numfmt.kb_text(e.shared_bytes)),
    ("Named barriers (ptxas)", lambda e: str(e.barriers)),
    ("ptxas advisories", lambda e: ", ".join(f"{c} ({n})" for c, n in e.advisories.items()) or "none"),
    ("HGMMA shapes", lambda e: ", ".join(s.split(".")[0].replace("x", f" {TIMES} ") for s in e.hgmma) or "none"),
    ("WARPGROUP.DEPBAR, by groups left pending",
     lambda e: ", ".join(f"{n} pending: {c}" for n, c in e.depbar.items()) or "none"),
    *((f"{family} ({ptx})", lambda e, family=family: f"{e.sass[family]:,}")
      for family, (ptx, _) in budget.SASS_FAMILIES.items()),
]  # fmt: skip


def build_table(version: str, record: BuildRecord | None) -> tuple[Table, str]:
    """What this version's sm_90a build changed against the previous one's; and the facts it left unchanged."""
    names = versions.names()
    index = names.index(version)
    have = record.versions if record else {}
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


def l2_cap_text(flop_per_byte: float) -> str:
    """The intensity's yardstick: the FLOP rate at which the fastest rate L2 was measured sending the SMs
    (budget.l2_rate, from V8's ncu logs) feeds it."""
    rate = budget.l2_rate()
    if rate is None:
        return f"L2's rate {NOT_MEASURED}"
    tflop = rate.bytes_per_second * flop_per_byte / 1e12
    return (f"{tflop:.0f} TFLOPS at L2's fastest measured feed, {rate.bytes_per_second / 1e12:.1f} TB/s (a yardstick, "
            "not a bound)")  # fmt: skip


def budget_table(version: str, record: BuildRecord | None, data: Data) -> Table:
    """One version's budget: the block, blocks per SM, intensity, waves and the speed of light at its clock."""
    if record is None or version not in record.versions:
        return [["Budget", f"{versions.label(version)} is not in the build record yet"]]
    build, config = budget.build_of(record, version)
    shape = (data.problem.m, data.problem.n, data.problem.k) if data else record.shape
    sm_count = data.gpu.sm_count if data else hopper.SM_COUNT
    b = budget.budget(build, config, shape, sm_count)
    bm, bn, bk = config["block_m"], config["block_n"], config["block_k"]
    allows = ", ".join(f"{name} {count}" for name, count in b.by_resource.items() if name != "the 32-block limit")
    grid = (f"{build.persistent_blocks} blocks, one per SM, each looping over tiles" if build.persistent_blocks else
            f"one block per tile, {b.resident_blocks} resident at a time ({b.blocks_per_sm} per SM {TIMES} "
            f"{sm_count} SMs)")  # fmt: skip
    rows = [
        ["Block", f"{build.threads} threads ({build.threads // 32} warps), {build.registers} registers per thread "
                  f"(ptxas, sm_90a), {build.shared_bytes / 1024:.1f} KB of shared memory"],
        ["Blocks per SM", f"{b.blocks_per_sm}, limited by {b.limited_by} (alone: {allows})"],
        ["Intensity", f"{(bm + bn) * bk * 2 / 1024:.0f} KB per {bm}{TIMES}{bn}{TIMES}{bk} K-step: "
                      f"{b.flop_per_byte:.0f} FLOP per byte, {l2_cap_text(b.flop_per_byte)}"],
        ["Waves", f"{b.tiles} tiles of {bm}{TIMES}{bn} at {numfmt.shape_text(shape)}; {grid}: {b.waves:.2f} waves, "
                  f"the last filling {round(b.last_wave_fraction * b.resident_blocks)} of the {b.resident_blocks} "
                  "slots"],
    ]  # fmt: skip
    row = results.ladder_row(data, version)
    peak = None if row is None or data is None else results.row_peak_tflops(data, row)
    if row is None or peak is None:
        rows.append(["Speed of light", f"at the measured clock: {NOT_MEASURED}"])
    else:
        rows.append(["Speed of light", f"at {clock_text(row)}, the SM clock while it was timed, the tensor cores "
                     f"peak at {unit_text('tflops', peak)} ({sm_count} SMs {TIMES} "
                     f"{hopper.DENSE_FP16_FLOP_PER_CLOCK_PER_SM} FLOP per clock); it ran at "
                     f"{unit_text('tflops', row.tflops)}, {unit_text('pct', 100 * row.tflops / peak)} "
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
