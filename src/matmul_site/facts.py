"""The facts a page may state, by name: ``:fact:`v7.ratio``` prints V7's ratio to cuBLAS.

A name is ``subject.what``; each is defined once in VOCABULARY below, with the words that the writers' page
(docs/writing.rst) prints. The subject is one of:

- ``{row}``: a measured row. ``v3``, ``cublas`` or ``latest`` (the newest version the ladder measured) is that
  row of the ladder; any other name is a row of a steps run as the results file names it (``v6-rows-sw16``,
  ``try-v2-s4``), with ``@`` and the shape where runs at several shapes hold it (``v7@8192``,
  ``v7@16384x8192x1024``). Both kinds answer the same questions (``.ratio``, ``.step``, ...);
  ``{impl}`` is the same name where the fact needs only the name (``.label``, ``.sweep``);
- ``{build}``: a build of the sm_90a build record (a version, or an extra build such as ``v7-streamk``);
- ``{version}``: a version's configuration (its kernel file's ``TUNED``), for sizes computed from it;
- ``{edit}``: a chapter's try-it edit, ``{version}-{name}``; else ``gpu``, ``method``, ``ladder``, ...: the file.

A value the file does not hold prints "not measured yet". Tables and charts are placed by the ``fact``
directive (:mod:`matmul_site.sphinx.fact_blocks`). Torch-free and docutils-free.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from matmul_data import budget, results, versions
from matmul_site import numfmt
from matmul_site.numfmt import NOT_MEASURED, unit_text

Data = dict[str, Any] | None
SHAPE = r"\d+(?:x\d+x\d+)?"  # 4096 for 4096³, or 16384x8192x1024
SASS = {family.lower().replace(".", "_"): family for family in budget.SASS_FAMILIES}  # "ldsm": "LDSM", ...
PLACEHOLDERS = {
    "row": rf"latest|cublas|(?:try-)?v\d+[\w-]*(?:@{SHAPE})?",
    "impl": r"latest|cublas|v\d+[\w-]*",
    "build": r"v\d+(?:-[a-z0-9][\w-]*)?",
    "version": r"v\d+",
    "edit": r"v\d+-[\w-]+",
    "shape": SHAPE,
    "instr": "|".join(SASS),
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
        subject = [SUBJECTS[k](need(data), v) for k, v in args.items() if k in SUBJECTS]
        return found.render(need(data), *subject, **{k: v for k, v in args.items() if k not in SUBJECTS})
    except Missing:
        return NOT_MEASURED


def names_in(text: str) -> list[str]:
    """The name of every ``:fact:`` role and ``fact`` directive in a piece of reStructuredText."""
    return [role or directive for role, directive in USES.findall(text)]


def need(value: Any) -> Any:
    if value is None:
        raise Missing
    return value


def shape_of(token: str) -> tuple[int, int, int]:
    """A shape as facts name it: "4096" is 4096³, "16384x8192x1024" is itself."""
    sizes = tuple(int(s) for s in token.split("x"))
    return sizes * 3 if len(sizes) == 1 else sizes  # type: ignore[return-value]


def impl_of(data: Data, impl: str) -> str:
    """A name with ``latest`` read as the newest version with a row in the recorded ladder ("v7")."""
    measured = [v for v in versions.names() if results.ladder_row(data, v) is not None]
    return need(measured[-1] if measured else None) if impl == "latest" else impl


def row_of(data: Data, row: str) -> dict[str, Any]:
    """A ladder row (a version, cuBLAS, latest) or a row of a steps run (``name`` or ``name@shape``)."""
    name, _, shape = impl_of(data, row).partition("@")
    if not shape and re.fullmatch(r"v\d+|cublas", name):
        return need(results.ladder_row(data, name))
    return need(results.steps_row(data, name, shape_of(shape) if shape else None))[1]


def build_entry(data: Data, build: str) -> dict[str, Any]:
    """One build of the sm_90a build record: a version's, or an extra build's."""
    record = budget.load_builds_cached()
    return need(record["versions"].get(build) or record.get("extras", {}).get(build))


def sizes(data: Data, version: str) -> dict[str, int]:
    """A version's configuration (its kernel file's TUNED) and sizes computed from it: a stage of the ring (a
    block_m x block_k tile of A and a block_n x block_k one of B), the output tile, and the stmatrix.x4 (512 bytes)
    that write every output tile of the ladder's problem once."""
    c, p = versions.get(version).tuned if version in versions.names() else need(None), need(data)["problem"]
    c_tile, tiles = c["block_m"] * c["block_n"] * 2, -(-p["m"] // c["block_m"]) * -(-p["n"] // c["block_n"])
    stage = (c["block_m"] + c["block_n"]) * c["block_k"] * 2
    return {**c, "stage": stage, "c_tile": c_tile, "stmatrix_x4": tiles * c_tile // 512}


def tryit_entry(data: Data, edit: str) -> dict[str, Any]:
    version, _, name = edit.partition("-")
    return need(next((e for e in results.tryit_entries(data, version) if e["name"] == name), None))


SUBJECTS: dict[str, Callable[[Data, str], Any]] = {
    "row": row_of, "impl": impl_of, "build": build_entry, "version": sizes, "edit": tryit_entry,
}  # fmt: skip


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


def spills_text(entry: dict[str, Any]) -> str:
    stores, loads = entry["spill_stores"], entry["spill_loads"]
    return "no spills" if stores == loads == 0 else f"{stores:,} bytes of spill stores and {loads:,} of spill loads"


def sweep_counts(data: dict[str, Any], impl: str) -> str:
    found = [results.verdict(r["rows"][impl]["ratio_to_cublas"]) for r in results.sweep_runs(data) if impl in r["rows"]]
    n = {rule: need(found or None).count(rule) for rule in (results.COSTS, results.PARITY, results.PAYS)}
    return (f"behind cuBLAS at {n[results.COSTS]} of {len(found)} shapes, at parity at {n[results.PARITY]}, ahead at "
            f"{n[results.PAYS]}")  # fmt: skip


def sweep_versions(data: dict[str, Any]) -> str:
    timed = {impl for run in results.sweep_runs(data) for impl in run["rows"]}
    labels = need([versions.label(name) for name in versions.names() if name in timed] or None)
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def ladder_verdicts(data: dict[str, Any], rule: str) -> str:
    need(results.ladder(data))
    return ", ".join(versions.label(i) for i, s in results.ladder_steps(data) if results.verdict(s) == rule) or "none"


def method(data: dict[str, Any], key: str) -> float:
    return need((data["method"].get("verdicts") or {}).get(key))


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
# (name, what it shows, value): value(data, subject, **the other placeholders), where the subject is what the
# name's first placeholder stands for (SUBJECTS: a row, a build entry, a configuration, an edit, a name).
# fmt: off
VOCABULARY: list[tuple[str, str, Callable[..., str]]] = [
    ("{row}.tflops", "Its throughput: TFLOPS from the median latency.", lambda d, r: unit_text("tflops", r["tflops"])),
    ("{row}.ms", "Its median latency.", lambda d, r: unit_text("ms", r["latency_ms"])),
    ("{row}.ratio", "Its speed over the cuBLAS of the same rounds, with the merged interval.",
     lambda d, r: numfmt.ratio_text(r["ratio_to_cublas"])),
    ("{row}.vs_cublas", 'That ratio by the rule: "is ahead of", "behind" or "at parity with cuBLAS", then the ratio.',
     lambda d, r: numfmt.vs_cublas_text(r["ratio_to_cublas"])),
    ("{row}.step", 'Its step over the previous version (a ladder row) or over its run\'s baseline (a steps row): '
     '"pays", "costs" or "is at parity", then the ratio.', lambda d, r: numfmt.step_text(need(r.get("step")))),
    ("{row}.reversed", "Its step read the other way, its baseline over it: the ratio inverted, pays and costs "
     "swapped.", lambda d, r: reversed_step(r)),
    ("{row}.attempt", 'The step as a tried change: "pays over v6-rows: " and the ratio, then "kept" or "not kept".',
     lambda d, r: attempt(r)),
    ("{row}.sm_clock", "The median SM clock inside its timed kernels (marked suspect where implausible).",
     lambda d, r: clock_text(r)),
    ("{row}.power", "The median board power in its timed windows.", lambda d, r: unit_text("watts", r.get("power_w"))),
    ("{row}.peak_at_clock", "The tensor cores' peak at that clock: SMs × 4096 FLOP per clock × the clock.",
     lambda d, r: unit_text("tflops", need(results.row_peak_tflops(d, r)))),
    ("{row}.peak_fraction", "Its throughput as a share of the peak at its clock.",
     lambda d, r: unit_text("pct", 100 * r["tflops"] / need(results.row_peak_tflops(d, r)))),
    ("{row}.datasheet_fraction", "Its throughput as a share of the datasheet's peak.",
     lambda d, r: unit_text("pct", 100 * r["tflops"] / need(d["gpu"].get("published_dense_fp16_tflops")))),
    ("{row}.config", 'The tuned configuration it ran, as "block_m=..., block_n=..., ...".',
     lambda d, r: numfmt.config_text(r["config"])),
    *((f"{{row}}.{what}", f"Nsight Compute: {label.removesuffix(' (ncu)')}.",
       lambda d, r, key=key: counter_text(key, (r.get("counters") or {}).get(key)))
      for what, (key, label, _) in COUNTERS.items()),
    ("{impl}.label", 'How tables and prose name it: "V7".', lambda d, impl: versions.label(impl)),
    ("{impl}.sweep", "At how many of the sweep's shapes it is behind, at parity with, ahead of cuBLAS.", sweep_counts),
    ("{impl}.sweep_{shape}", "Its ratio to cuBLAS in the sweep's run at that shape, by the rule.", lambda d, impl,
     shape: numfmt.vs_cublas_text(need(results.sweep_row(d, impl, shape_of(shape)))["ratio_to_cublas"])),
    # A build (sm_90a, at the ladder's shape and configuration; the build record).
    ("{build}.registers", "Registers per thread, from ptxas.", lambda d, e: str(e["registers"])),
    ("{build}.spills", 'Bytes of spill stores and loads, from ptxas: "no spills" or both counts.',
     lambda d, e: spills_text(e)),
    ("{build}.stack_frame", "The stack frame per thread, from ptxas.", lambda d, e: f"{e['stack_bytes']:,} bytes"),
    ("{build}.shared_memory", "Shared memory per block (the launch's dynamic shared memory).",
     lambda d, e: numfmt.kb_text(e["shared_bytes"])),
    ("{build}.advisories", 'The codes of the numbered messages ptxas printed ("C7517, C7518"), or "none".',
     lambda d, e: ", ".join(e["advisories"]) or "none"),
    ("{build}.hgmma_shapes", 'The shapes of its HGMMA instructions, "64×256×16" (SASS), or "none".',
     lambda d, e: ", ".join(s.split(".")[0].replace("x", "\u00d7") for s in e["hgmma"]) or "none"),
    ("{build}.blocks_per_sm", 'How many of its blocks fit on one SM, as a word ("three"): the budget box\'s count.',
     lambda d, e: number_word(budget.blocks_per_sm(budget.Build(e["threads"], e["registers"], e["shared_bytes"],
                                                                e.get("persistent_blocks")))[0])),
    ("{build}.sass_{instr}", "How many instructions of that SASS family its code holds (counted in the code, not "
     f"executed): {', '.join(SASS)}.", lambda d, e, instr: f"{e['sass'][SASS[instr]]:,}"),
    ("{build}.depbar_{n}", "How many of its WARPGROUP.DEPBAR waits leave at most n HGMMA groups pending "
     "(wait_group(n)).", lambda d, e, n: str(e["depbar"].get(n, 0))),
    # Sizes computed from a version's configuration (its TUNED).
    ("{version}.stage", "One stage of its ring: (block_m + block_n) × block_k fp16 values.",
     lambda d, c: numfmt.kb_text(c["stage"])),
    ("{version}.ring", "Its whole ring: num_stages stages.", lambda d, c: numfmt.kb_text(c["num_stages"] * c["stage"])),
    ("{version}.c_tile", "Its output tile in fp16, block_m × block_n × 2 bytes (a staging buffer for C).",
     lambda d, c: numfmt.kb_text(c["c_tile"])),
    ("{version}.ring_plus_one_and_c", "One stage more than its ring, plus the fp16 output tile.",
     lambda d, c: numfmt.kb_text((c["num_stages"] + 1) * c["stage"] + c["c_tile"])),
    ("{version}.stmatrix_x4_{n}", "The stmatrix.x4 (four 8 × 8 fp16 fragments, 512 bytes) that write its output "
     "tiles at the ladder's problem size, times n: n = 1 counts them; 4 and 32 are their wavefronts without bank "
     "conflicts and with eight-way ones.", lambda d, c, n: f"{c['stmatrix_x4'] * int(n):,}"),
    # A try-it edit.
    ("{edit}.outcome", 'What the edit did on the GPU, checked against float64: "exact in all ... checks", '
     '"wrong in ...", "hangs: ...".', lambda d, e: outcome_text(e)),
    ("{edit}.result", "That outcome in a word or two: exact, wrong, hangs, does not build, crashes.",
     lambda d, e: e["outcome"]),
    ("{edit}.wrong_checks", 'In how many of its checks some element was outside tolerance: "2 of 5".',
     lambda d, e: f"{sum(1 for c in e['checks'] if c['bad'])} of {len(e['checks'])}"),
    # The results file as a whole.
    ("gpu.sm_count", "How many SMs the benchmark GPU has.", lambda d: str(d["gpu"]["sm_count"])),
    ("gpu.peak", "The datasheet's dense FP16 tensor-core peak.",
     lambda d: f"{need(d['gpu'].get('published_dense_fp16_tflops')):.1f} TFLOPS"),
    ("gpu.power_limit", "The board's power limit.", lambda d: unit_text("watts", d["gpu"].get("power_limit_w"))),
    ("problem.shape", "The ladder's problem size, M×N×K.", lambda d: numfmt.shape_text(d["problem"])),
    ("method.verdict_count", "How many verdicts the results file states (the Bonferroni family).",
     lambda d: f"{method(d, 'count'):,}"),
    ("method.confidence_each", "The confidence level of each interval: 1 - 0.05 / the number of verdicts.",
     lambda d: f"{100 * method(d, 'confidence_each'):.2f}%"),
    ("method.family_confidence", "The confidence with which all of the file's verdicts hold together.",
     lambda d: f"{100 * method(d, 'family_confidence'):.0f}%"),
    ("method.band_floor", "The smallest parity band the method allows, whatever the runs' spread.",
     lambda d: f"{100 * method(d, 'band_floor'):.0f}%"),
    ("method.parity_band", "The parity band: a step pays or costs only outside 1 ± this.",
     lambda d: f"±{100 * method(d, 'parity_band'):.1f}%"),
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
]
# fmt: on
FACTS: list[Fact] = []
for _name, _doc, _value in VOCABULARY:
    define(_name, _doc, _value, FACTS)
