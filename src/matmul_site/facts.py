"""The facts a page may state, by name: ``:fact:`v7.ratio``` prints V7's ratio to cuBLAS.

A name is ``subject.what``. Each ``what`` is defined once below, with the words the writers' page
(docs/writing.rst) prints, for one kind of subject:

- ``{row}``: a measured row. ``v3``, ``cublas`` or ``latest`` (the newest version the ladder measured) is
  that row of the ladder; any other name is a row of a steps run as the results file names it
  (``v6-rows-sw16``, ``try-v2-s4``), with ``@`` and the shape where runs at several shapes hold it
  (``v7@8192``, ``v7@16384x8192x1024``). Both kinds answer the same ``what`` (``.ratio``, ``.step``, ...);
- ``{build}``: a build of the sm_90a build record (a version, or an extra build such as ``v7-streamk``);
- ``{version}``: a version's configuration (its kernel file's ``TUNED``), for sizes computed from it;
- ``{edit}``: a chapter's try-it edit, ``{version}-{name}``; ``gpu``, ``method``, ``ladder``, ... the file.

A value the file does not hold prints "not measured yet". Tables and charts are placed by the ``fact``
directive (:mod:`matmul_site.sphinx.fact_blocks`). Torch-free and docutils-free.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from matmul_site import budget, numfmt, results, versions
from matmul_site.numfmt import NOT_MEASURED, unit_text

Data = dict[str, Any] | None
SHAPE = r"\d+(?:x\d+x\d+)?"  # 4096 for 4096³, or 16384x8192x1024
PLACEHOLDERS = {
    "row": rf"latest|cublas|(?:try-)?v\d+[\w-]*(?:@{SHAPE})?",
    "build": r"v\d+(?:-[a-z0-9][\w-]*)?",
    "version": r"v\d+",
    "edit": r"v\d+-[\w-]+",
    "shape": SHAPE,
    "instr": r"[a-z]+(?:_[a-z]+)?",
    "n": r"\d+",
}
USES = re.compile(r"(?<!``):fact:`([^`]+)`|^[ \t]*\.\. fact:: (\S+)", re.M)  # not an example in ``literal``
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()


class Missing(LookupError):
    """The file does not hold this value (yet): the page prints "not measured yet"."""


class UnknownFact(KeyError):
    """A name that no fact defines."""


@dataclass(frozen=True)
class Fact:
    """One fact, or a family of facts: its name (with placeholders), what it shows, and how it renders."""

    name: str
    doc: str
    render: Callable[..., Any]
    pattern: re.Pattern[str]


def define(name: str, doc: str, render: Callable[..., Any], into: list[Fact]) -> None:
    """Add the fact ``name`` ("{build}.registers") to ``into``: ``render(data, **placeholders)`` prints it."""
    parts = re.split(r"\{(\w+)\}", name)
    body = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>{PLACEHOLDERS[p]})" for i, p in enumerate(parts))
    into.append(Fact(name, " ".join(doc.split()), render, re.compile(body)))


def find(name: str, among: list[Fact] | None = None) -> tuple[Fact, dict[str, str]]:
    """The fact a name refers to, with its placeholders' values; UnknownFact when there is none."""
    for found in FACTS if among is None else among:
        match = found.pattern.fullmatch(name)
        if match:
            return found, match.groupdict()
    raise UnknownFact(f"no fact is called {name!r}; docs/writing.rst lists them")


def render(name: str, data: Data) -> str:
    """The text of ``:fact:`name```: the value as the site prints it, or "not measured yet"."""
    found, args = find(name)
    try:
        return found.render(need(data), **args)
    except Missing:
        return NOT_MEASURED


def names_in(text: str) -> list[str]:
    """The name of every ``:fact:`` role and ``fact`` directive in a piece of reStructuredText."""
    return [role or directive for role, directive in USES.findall(text)]


def need(value: Any) -> Any:
    if value is None:
        raise Missing
    return value


def latest_version(data: Data) -> str | None:
    """The newest version with a row in the recorded ladder ("v7"), or None when none is measured."""
    measured = [v for v in versions.names() if results.ladder_row(data, v) is not None]
    return measured[-1] if measured else None


def shape_of(token: str) -> tuple[int, int, int]:
    """A shape as facts name it: "4096" is 4096³, "16384x8192x1024" is itself."""
    sizes = tuple(int(s) for s in token.split("x"))
    return sizes * 3 if len(sizes) == 1 else sizes  # type: ignore[return-value]


def impl_of(data: Data, row: str) -> str:
    return need(latest_version(data)) if row == "latest" else row


def row_of(data: Data, row: str) -> dict[str, Any]:
    """A ladder row (a version, cuBLAS, latest) or a row of a steps run (``name`` or ``name@shape``)."""
    name, _, shape = impl_of(data, row).partition("@")
    if not shape and re.fullmatch(r"v\d+|cublas", name):
        return need(results.ladder_row(data, name))
    return need(results.steps_row(data, name, shape_of(shape) if shape else None))[1]


def number_word(n: int) -> str:
    """A small count as a word ("three"), a larger one in digits."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def runs_each(figures: list[dict[str, Any]]) -> str:
    """How many independent runs each of some figures rests on, as a word: "three", or "two to three"."""
    words = need([number_word(n) for n in sorted({len(f.get("runs") or [f]) for f in figures})] or None)
    return words[0] if len(words) == 1 else f"{words[0]} to {words[-1]}"


def counter_text(name: str, value: float | None) -> str:
    """An Nsight Compute counter of a row with its unit; a percentage when the name is not one of COUNTERS."""
    kind = next((kind for key, _, kind in COUNTERS.values() if key == name), "pct")
    return unit_text(kind, None if value is None else value / 1e6 if kind == "mb" else int(value) if kind == "count"
                     else value)  # fmt: skip


def clock_text(row: dict[str, Any]) -> str:
    """The row's clock, or, where its implied efficiency is implausible, the clock marked as a suspect reading."""
    text = unit_text("mhz", row.get("sm_clock_mhz"))
    if row.get("suspect"):
        return f"{text} (suspect: it would put the row at {100 * row['efficiency']:.0f}% of the peak at that clock)"
    return text


def reversed_step(row: dict[str, Any]) -> str:
    """The step read the other way, its baseline over this row: the ratio and its bounds inverted, pays <-> costs."""
    step = need(row.get("step"))
    swap = {results.PAYS: results.COSTS, results.COSTS: results.PAYS, results.PARITY: results.PARITY}
    inverse = {"median": 1 / step["median"], "low": 1 / step["high"], "high": 1 / step["low"],
               "verdict": swap[results.verdict(step)]}  # fmt: skip
    return numfmt.step_text(inverse)


def attempt(row: dict[str, Any]) -> str:
    step = need(row.get("step"))
    words, _, ratio = numfmt.step_text(step).partition(": ")
    return f"{words} over {versions.label(step['over'])}: {ratio}; {'kept' if row.get('kept') else 'not kept'}"


def outcome_text(entry: dict[str, Any]) -> str:
    """What an edit did: "exact in all 5 checks (...)", "wrong in 2 of 5 checks (...): ...", "hangs: ..."."""
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
    return (
        f"wrong in {len(wrong)} of {len(checks)} checks ({where}): up to {worst['bad']:,} of "
        f"{worst['shape']['m'] * worst['shape']['n']:,} elements outside tolerance{still}{largest}"
    )


def build_entry(build: str) -> dict[str, Any]:
    """One build of the sm_90a build record: a version's, or an extra build's."""
    record = budget.load_builds_cached()
    return need(record["versions"].get(build) or record.get("extras", {}).get(build))


def sass_count(build: str, instr: str) -> str:
    counts = build_entry(build).get("sass") or {}
    family = {name.lower().replace(".", "_"): name for name in counts}.get(instr)
    if family is None:
        raise UnknownFact(f"{instr!r} is no SASS family of the build record (known: {', '.join(counts)})")
    return f"{counts[family]:,}"


def spills_text(entry: dict[str, Any]) -> str:
    stores, loads = entry["spill_stores"], entry["spill_loads"]
    return "no spills" if stores == loads == 0 else f"{stores:,} bytes of spill stores and {loads:,} of spill loads"


def blocks_per_sm(e: dict[str, Any]) -> int:
    """How many of a build's blocks fit on one SM (as the budget box counts them)."""
    return budget.blocks_per_sm(budget.Build(e["threads"], e["registers"], e["shared_bytes"],
                                             e.get("persistent_blocks")))[0]  # fmt: skip


def sizes(version: str) -> dict[str, int]:
    """A version's configuration (its kernel file's TUNED) and the shared-memory sizes computed from it."""
    c = versions.get(version).tuned if version in versions.names() else need(None)
    stage = (c["block_m"] + c["block_n"]) * c["block_k"] * 2  # a block_m x block_k tile of A, block_n x block_k of B
    return {**c, "stage": stage, "c_tile": c["block_m"] * c["block_n"] * 2}


def stmatrix_x4(data: dict[str, Any], version: str) -> int:
    """stmatrix.x4 (four 8 x 8 fp16 fragments, 512 bytes) that write every output tile of the ladder's problem."""
    c, p = sizes(version), data["problem"]
    return -(-p["m"] // c["block_m"]) * -(-p["n"] // c["block_n"]) * c["c_tile"] // 512


def sweep_counts(data: dict[str, Any], impl: str) -> str:
    found = [results.verdict(r["rows"][impl]["ratio_to_cublas"]) for r in results.sweep_runs(data) if impl in r["rows"]]
    n = {rule: need(found or None).count(rule) for rule in (results.COSTS, results.PARITY, results.PAYS)}
    return (f"behind cuBLAS at {n[results.COSTS]} of {len(found)} shapes, at parity at {n[results.PARITY]}, ahead at "
            f"{n[results.PAYS]}")  # fmt: skip


def sweep_versions(data: dict[str, Any]) -> str:
    timed = {impl for run in results.sweep_runs(data) for impl in run["rows"]}
    labels = need([versions.label(name) for name in versions.names() if name in timed] or None)
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


# ---------------------------------------------------------------------------- the vocabulary
# An Nsight Compute counter a row may hold: fact -> (its key in the row's "counters", label, unit kind).
COUNTERS = {
    "tensor_pipe": ("tensor_pipe_pct", "Tensor pipe utilisation (ncu)", "pct"),
    "dram_throughput": ("dram_throughput_pct", "DRAM throughput, share of peak (ncu)", "pct"),
    "dram_read": ("dram_read_bytes", "Bytes read from DRAM (ncu)", "mb"),
    "l2_hit": ("l2_hit_pct", "L2 hit rate (ncu)", "pct"),
    "smem_wavefronts": ("smem_store_wavefronts", "Shared-memory store wavefronts (ncu)", "count"),
    "smem_conflicts": ("smem_store_bank_conflicts", "Of those, from bank conflicts (ncu)", "count"),
}
FACTS: list[Fact] = []
Row = dict[str, Any]
# fmt: off
ROW: dict[str, tuple[str, Callable[[dict[str, Any], Row], str]]] = {
    "tflops": ("Its throughput: TFLOPS from the median latency.", lambda d, r: unit_text("tflops", r["tflops"])),
    "ms": ("Its median latency.", lambda d, r: unit_text("ms", r["latency_ms"])),
    "ratio": ("Its speed over the cuBLAS of the same rounds, with the merged interval.",
              lambda d, r: numfmt.ratio_text(r["ratio_to_cublas"])),
    "vs_cublas": ('That ratio by the rule: "is ahead of", "behind" or "at parity with cuBLAS", then the ratio.',
                  lambda d, r: numfmt.vs_cublas_text(r["ratio_to_cublas"])),
    "step": ('Its step over the previous version (a ladder row) or its run\'s baseline (a steps row): "pays", '
             '"costs" or "is at parity", then the ratio.', lambda d, r: numfmt.step_text(need(r.get("step")))),
    "reversed": ("Its step read the other way, its baseline over it: the ratio inverted, pays and costs swapped.",
                 lambda d, r: reversed_step(r)),
    "attempt": ('The step as a tried change: "pays over v6-rows: " and the ratio, then "kept" or "not kept".',
                lambda d, r: attempt(r)),
    "sm_clock": ("The median SM clock inside its timed kernels (marked suspect where implausible).",
                 lambda d, r: clock_text(r)),
    "power": ("The median board power in its timed windows.", lambda d, r: unit_text("watts", r.get("power_w"))),
    "peak_at_clock": ("The tensor cores' peak at that clock: SMs × 4096 FLOP per clock × the clock.",
                      lambda d, r: unit_text("tflops", need(results.row_peak_tflops(d, r)))),
    "peak_fraction": ("Its throughput as a share of the peak at its clock.",
                      lambda d, r: unit_text("pct", 100 * r["tflops"] / need(results.row_peak_tflops(d, r)))),
    "datasheet_fraction": ("Its throughput as a share of the datasheet's peak.", lambda d, r: unit_text(
        "pct", 100 * r["tflops"] / need(d["gpu"].get("published_dense_fp16_tflops")))),
    "config": ('The tuned configuration it ran, as "block_m=..., block_n=..., ...".',
               lambda d, r: numfmt.config_text(r["config"])),
    **{what: (f"Nsight Compute: {label.removesuffix(' (ncu)')}.",
              lambda d, r, key=key: counter_text(key, (r.get("counters") or {}).get(key)))
       for what, (key, label, _) in COUNTERS.items()},
}
for _what, (_doc, _value) in ROW.items():
    define(f"{{row}}.{_what}", _doc, lambda d, row, value=_value: value(d, row_of(d, row)), FACTS)
define("{row}.label", 'How tables and prose name it: "V7".', lambda d, row: versions.label(impl_of(d, row)), FACTS)
define("{row}.sweep", "At how many of the sweep's shapes it is behind, at parity with, ahead of cuBLAS.",
       lambda d, row: sweep_counts(d, impl_of(d, row)), FACTS)
define("{row}.sweep_{shape}", "Its ratio to cuBLAS in the sweep's run at that shape, by the rule.", lambda d, row,
       shape: numfmt.vs_cublas_text(need(results.sweep_row(d, impl_of(d, row), shape_of(shape)))["ratio_to_cublas"]),
       FACTS)

BUILD: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    "registers": ("Registers per thread, from ptxas.", lambda e: str(e["registers"])),
    "spills": ('Bytes of spill stores and loads, from ptxas: "no spills" or both counts.', spills_text),
    "stack_frame": ("The stack frame per thread, from ptxas.", lambda e: f"{e['stack_bytes']:,} bytes"),
    "shared_memory": ("Shared memory per block (the launch's dynamic shared memory).",
                      lambda e: numfmt.kb_text(e["shared_bytes"])),
    "advisories": ('The codes of the numbered messages ptxas printed ("C7517, C7518"), or "none".',
                   lambda e: ", ".join(e["advisories"]) or "none"),
    "hgmma_shapes": ('The shapes of its HGMMA instructions, "64×256×16" (SASS), or "none".',
                     lambda e: ", ".join(s.split(".")[0].replace("x", "\u00d7") for s in e["hgmma"]) or "none"),
    "blocks_per_sm": ('How many of its blocks fit on one SM, as a word ("three"): the budget box\'s count.',
                      lambda e: number_word(blocks_per_sm(e))),
}
for _what, (_doc, _entry_value) in BUILD.items():
    define(f"{{build}}.{_what}", _doc, lambda d, build, value=_entry_value: value(build_entry(build)), FACTS)
define("{build}.sass_{instr}", "How many instructions of that SASS family its code holds (counted in the code, not "
       "executed): hmma, hgmma, warpgroup_arrive, warpgroup_depbar, ldsm, stsm, lds, sts, ldg, stg, ldl, stl, "
       "utmaldg, utmastg, syncs, bar, usetmaxreg.", lambda d, build, instr: sass_count(build, instr), FACTS)
define("{build}.depbar_{n}", "How many of its WARPGROUP.DEPBAR waits leave at most n HGMMA groups pending "
       "(wait_group(n)).", lambda d, build, n: str(build_entry(build)["depbar"].get(n, 0)), FACTS)

for _what, _doc, _bytes in (
    ("stage", "One stage of its ring: (block_m + block_n) × block_k fp16 values.", lambda c: c["stage"]),
    ("ring", "Its whole ring: num_stages stages.", lambda c: c["num_stages"] * c["stage"]),
    ("c_tile", "Its output tile in fp16, block_m × block_n × 2 bytes (a staging buffer for C).",
     lambda c: c["c_tile"]),
    ("ring_plus_one_and_c", "One stage more than its ring, plus the fp16 output tile.",
     lambda c: (c["num_stages"] + 1) * c["stage"] + c["c_tile"]),
):
    define(f"{{version}}.{_what}", _doc, lambda d, version, size=_bytes: numfmt.kb_text(size(sizes(version))), FACTS)
define("{version}.stmatrix_x4_{n}", "The stmatrix.x4 (512 bytes of fp16 each) that write its output tiles at the "
       "ladder's problem size, times n: n = 1 counts them; 4 and 32 are their wavefronts without bank conflicts "
       "and with eight-way ones.", lambda d, version, n: f"{stmatrix_x4(d, version) * int(n):,}", FACTS)


def tryit_entry(data: dict[str, Any], edit: str) -> dict[str, Any]:
    version, _, name = edit.partition("-")
    return need(next((e for e in results.tryit_entries(data, version) if e["name"] == name), None))


for _what, _doc, _entry_value in (
    ("outcome", 'What the edit did on the GPU, checked against float64: "exact in all ... checks", "wrong in ...", '
     '"hangs: ...".', outcome_text),
    ("result", "That outcome in a word or two: exact, wrong, hangs, does not build, crashes.", lambda e: e["outcome"]),
    ("wrong_checks", 'In how many of its checks some element was outside tolerance: "2 of 5".',
     lambda e: f"{sum(1 for c in e['checks'] if c['bad'])} of {len(e['checks'])}"),
):
    define(f"{{edit}}.{_what}", _doc, lambda d, edit, value=_entry_value: value(tryit_entry(d, edit)), FACTS)


def verdicts(data: dict[str, Any], key: str) -> float:
    return need((data["method"].get("verdicts") or {}).get(key))


def ladder_verdicts(data: dict[str, Any], rule: str) -> str:
    need(results.ladder(data))
    chosen = [versions.label(i) for i, step in results.ladder_steps(data) if results.verdict(step) == rule]
    return ", ".join(chosen) or "none"


for _name, _doc, _value in (
    ("gpu.sm_count", "How many SMs the benchmark GPU has.", lambda d: str(d["gpu"]["sm_count"])),
    ("gpu.peak", "The datasheet's dense FP16 tensor-core peak.",
     lambda d: f"{need(d['gpu'].get('published_dense_fp16_tflops')):.1f} TFLOPS"),
    ("gpu.power_limit", "The board's power limit.", lambda d: unit_text("watts", d["gpu"].get("power_limit_w"))),
    ("problem.shape", "The ladder's problem size, M×N×K.", lambda d: numfmt.shape_text(d["problem"])),
    ("method.verdict_count", "How many verdicts the results file states (the Bonferroni family).",
     lambda d: f"{verdicts(d, 'count'):,}"),
    ("method.confidence_each", "The confidence level of each interval: 1 - 0.05 / the number of verdicts.",
     lambda d: f"{100 * verdicts(d, 'confidence_each'):.2f}%"),
    ("method.family_confidence", "The confidence with which all of the file's verdicts hold together.",
     lambda d: f"{100 * verdicts(d, 'family_confidence'):.0f}%"),
    ("method.band_floor", "The smallest parity band the method allows, whatever the runs' spread.",
     lambda d: f"{100 * verdicts(d, 'band_floor'):.0f}%"),
    ("method.parity_band", "The parity band: a step pays or costs only outside 1 ± this.",
     lambda d: f"±{100 * verdicts(d, 'parity_band'):.1f}%"),
    ("ladder.runs", "The independent runs the ladder rests on: how many, and their ids.", lambda d: (
        f"{len(need(d.get('ladder'))['runs'])} runs ({', '.join(r['run_id'] for r in d['ladder']['runs'])})")),
    ("ladder.run_count", 'How many independent runs the ladder merges, as a word ("three").',
     lambda d: number_word(len(need(d.get("ladder")).get("runs") or [d["ladder"]]))),
    ("ladder.rounds", "How many interleaved rounds the ladder's run timed.",
     lambda d: str(need(results.ladder(d))["rounds"])),
    ("ladder.processes", "In how many fresh processes those rounds ran.",
     lambda d: str(need(results.ladder(d))["processes"])),
    *((f"ladder.{rule}", f'The versions whose step {numfmt.STEP_WORDS[rule]}: "V1, V2" or "none".',
       lambda d, rule=rule: ladder_verdicts(d, rule)) for rule in (results.PAYS, results.PARITY, results.COSTS)),
    ("steps.runs_each", 'How many independent runs each steps table rests on, as a word ("three").',
     lambda d: runs_each(d.get("steps") or [])),
    ("sweep.runs_each", 'How many independent runs each shape of the sweep rests on, as a word ("three").',
     lambda d: runs_each(results.sweep_runs(d))),
    ("sweep.versions", 'The versions the sweep times, "V5, V6 and V7".', sweep_versions),
    ("versions.count", 'How many versions the site builds, one per kernel file, as a word ("eight").',
     lambda d: number_word(len(versions.names()))),
    ("versions.span", 'The first and the last version, "V0 to V7".',
     lambda d: f"{versions.label(versions.names()[0])} to {versions.label(versions.names()[-1])}"),
):
    define(_name, _doc, _value, FACTS)
# fmt: on
