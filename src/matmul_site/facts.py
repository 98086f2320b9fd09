"""The facts a page may state, by name: ``:fact:`v7.ratio``` in a page prints V7's ratio to cuBLAS.

Each fact is defined once below: its name, what it shows (the writers' page, docs/writing.rst, prints
this), and how it is printed. A name is ``subject.what``; a family of facts has a placeholder in it:

- ``{version}``: a version (``v0``, ``v1``, ...) or ``cublas``, as measured in the ladder;
- ``{impl}``: a row of the sweep (a version, ``cublas``, ``torch-compile-max-autotune``);
- ``{shape}``: a problem size, ``4096`` for 4096³ or ``16384x8192x1024``;
- ``{row}``: a row of a steps run, by its name in the results file (``v6-rows-sw16``, ``try-v2-s4``),
  with ``@{shape}`` where runs at several shapes hold that name (``v7-streamk@4096``);
- ``{edit}``: a chapter's try-it edit, ``{version}-{name}`` (``v5-release-before-wait``);
- ``{build}``: a build in the sm_90a build record (plots/results/builds/sm_90a.json): a version, or one
  of its extra builds (``v5-no-final-wait``, ``v7-streamk``); ``{instr}`` a SASS family of that record
  (``hgmma``, ``stsm``, ``warpgroup_depbar``), ``{n}`` a number.

Build facts come from the build record, not the results file; they print with any results file.

``latest`` stands for the newest version the ladder has measured: ``:fact:`latest.tflops``` is V7's TFLOPS
while V8 has no results, and V8's once it has. Pages that speak of "where the ladder ends" use it, so a
new chapter needs no edit to them.

A value the file does not hold prints "not measured yet". Tables and charts are facts too, placed by
the ``fact`` directive (:mod:`matmul_site.sphinx.fact_blocks`). Torch-free and docutils-free.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from matmul_site import budget, numfmt, results, versions
from matmul_site.numfmt import NOT_MEASURED, unit_text

Data = dict[str, Any] | None
PLACEHOLDERS = {
    "version": r"v\d+|cublas",
    "impl": r"[a-z][\w-]*",
    "shape": r"\d+(?:x\d+x\d+)?",
    "row": r"(?!(?:v\d+|cublas)\.)[a-z][\w-]*(?:@\d+(?:x\d+x\d+)?)?",
    "edit": r"v\d+-[\w-]+",
    "build": r"v\d+(?:-[a-z0-9][\w-]*)?",
    "instr": r"[a-z]+(?:_[a-z]+)?",
    "n": r"\d+",
}


# A role or directive, not an example of one in ``literal text``.
USES = re.compile(r"(?<!``):fact:`([^`]+)`|^[ \t]*\.\. fact:: (\S+)", re.M)


class Missing(LookupError):
    """The file does not hold this value (yet): the page prints "not measured yet"."""


class UnknownFact(KeyError):
    """A name that no fact below defines."""


@dataclass(frozen=True)
class Fact:
    """One fact, or one family of facts: its name (with placeholders), what it prints, and how."""

    name: str
    doc: str
    render: Callable[..., str]
    pattern: re.Pattern[str]


def pattern_of(name: str) -> re.Pattern[str]:
    """A fact name with placeholders as a regular expression: "{version}.ms" matches "v3.ms"."""
    parts = re.split(r"\{(\w+)\}", name)
    body = "".join(re.escape(p) if i % 2 == 0 else f"(?P<{p}>{PLACEHOLDERS[p]})" for i, p in enumerate(parts))
    return re.compile(body)


FACTS: list[Fact] = []


def fact(name: str, doc: str, render: Callable[..., str]) -> None:
    """Define the fact ``name``: ``render(data, **placeholders)`` prints it; ``doc`` is what the writers' page says."""
    FACTS.append(Fact(name, doc, render, pattern_of(name)))


LATEST = "latest"


def latest_version(data: Data) -> str | None:
    """The newest version with a row in the recorded ladder ("v7"), or None when none is measured."""
    measured = [v for v in versions.names() if results.ladder_row(data, v) is not None]
    return measured[-1] if measured else None


def find(name: str) -> tuple[Fact, dict[str, str]]:
    """The fact a name refers to, and the values of its placeholders; UnknownFact when there is none."""
    if name.startswith(LATEST + "."):
        found, args = find("v0" + name[len(LATEST) :])  # the family ``{version}.what`` it belongs to
        key = next((k for k in ("version", "impl") if args.get(k) == "v0"), None)
        if key is None:
            raise UnknownFact(f"{name!r}: latest stands for a version, and no version fact is called that")
        return found, {**args, key: LATEST}
    for found in FACTS:
        match = found.pattern.fullmatch(name)
        if match:
            return found, match.groupdict()
    raise UnknownFact(f"no fact is called {name!r}; docs/writing.rst lists them")


def render(name: str, data: Data) -> str:
    """The text of ``:fact:`name```: the value as the site prints it, or "not measured yet"."""
    found, args = find(name)
    for key in ("version", "impl"):
        if args.get(key) == LATEST:
            args[key] = latest_version(data) or ""
            if not args[key]:
                return NOT_MEASURED
    try:
        return found.render(data, **args) if data is not None else NOT_MEASURED
    except Missing:
        return NOT_MEASURED


def names_in(text: str) -> list[str]:
    """The name of every ``:fact:`` role and ``fact`` directive in a piece of reStructuredText."""
    return [role or directive for role, directive in USES.findall(text)]


# ---------------------------------------------------------------------------- where values come from


def need(value: Any) -> Any:
    if value is None:
        raise Missing
    return value


def shape_of(token: str) -> tuple[int, int, int]:
    """A shape as facts name it: "4096" is 4096³, "16384x8192x1024" is itself."""
    sizes = tuple(int(s) for s in token.split("x"))
    return sizes * 3 if len(sizes) == 1 else sizes  # type: ignore[return-value]


def ladder_row(data: Data, version: str) -> dict[str, Any]:
    return need(results.ladder_row(data, version))


def steps_row(data: Data, row: str) -> dict[str, Any]:
    name, _, shape = row.partition("@")
    return need(results.steps_row(data, name, shape_of(shape) if shape else None))[1]


def counter(row: dict[str, Any], name: str, kind: str) -> str:
    value = (row.get("counters") or {}).get(name)
    if value is not None:
        value = value / 1e6 if kind == "mb" else int(value) if kind == "count" else value
    return unit_text(kind, value)


def tryit_entry(data: Data, edit: str) -> dict[str, Any]:
    version, _, name = edit.partition("-")
    found = [e for e in results.tryit_entries(data, version) if e["name"] == name]
    return need(found[0] if found else None)


def peak_at_clock(data: Data, row: dict[str, Any]) -> float:
    return need(results.row_peak_tflops(data, row))  # none for a clock the method flags as suspect


def clock_text(row: dict[str, Any]) -> str:
    """The row's clock, or, where its implied efficiency is implausible, the clock marked as a suspect reading."""
    text = unit_text("mhz", row.get("sm_clock_mhz"))
    if row.get("suspect"):
        return f"{text} (suspect: it would put the row at {100 * row['efficiency']:.0f}% of the peak at that clock)"
    return text


def ladder_verdicts(data: Data, rule: str) -> str:
    need(results.ladder(data))
    chosen = [versions.label(i) for i, step in results.ladder_steps(data) if results.verdict(step) == rule]
    return ", ".join(chosen) or "none"


def sweep_counts(data: Data, impl: str) -> str:
    found = [results.verdict(r["rows"][impl]["ratio_to_cublas"]) for r in results.sweep_runs(data) if impl in r["rows"]]
    counts = {rule: need(found or None).count(rule) for rule in (results.COSTS, results.PARITY, results.PAYS)}
    return (
        f"behind cuBLAS at {counts[results.COSTS]} of {len(found)} shapes, at parity at "
        f"{counts[results.PARITY]}, ahead at {counts[results.PAYS]}"
    )


def reversed_step(row: dict[str, Any]) -> str:
    """The step read the other way, its baseline over this row: the ratio and its bounds inverted, pays <-> costs."""
    step = need(row.get("step"))
    swap = {results.PAYS: results.COSTS, results.COSTS: results.PAYS, results.PARITY: results.PARITY}
    inverse = {"median": 1 / step["median"], "low": 1 / step["high"], "high": 1 / step["low"],
               "verdict": swap[results.verdict(step)]}  # fmt: skip
    return numfmt.step_text(inverse)


def sweep_versions(data: Data) -> str:
    timed = {impl for run in results.sweep_runs(data) for impl in run["rows"]}
    labels = [versions.label(name) for name in versions.names() if name in timed]
    need(labels or None)
    return labels[0] if len(labels) == 1 else f"{', '.join(labels[:-1])} and {labels[-1]}"


def attempt(row: dict[str, Any]) -> str:
    step = need(row.get("step"))
    words, _, ratio = numfmt.step_text(step).partition(": ")
    return f"{words} over {versions.label(step['over'])}: {ratio}; {'kept' if row.get('kept') else 'not kept'}"


def outcome_text(entry: dict[str, Any]) -> str:
    """What an edit did: "exact in all 5 checks (...)", "wrong in 2 of 5 checks (...): ...", "hangs: ..."."""
    checks, outcome = entry["checks"], entry["outcome"]
    per_shape: dict[str, int] = {}
    for check in checks:
        per_shape[numfmt.shape_text(check["shape"])] = per_shape.get(numfmt.shape_text(check["shape"]), 0) + 1
    where = ", ".join(f"{n} at {shape}" for shape, n in per_shape.items())
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


def config_of(version: str) -> dict[str, Any]:
    """The configuration a version measured (its kernel file's TUNED): the sizes below are arithmetic on it."""
    if version not in versions.names():
        raise Missing
    return versions.get(version).tuned


def stage_bytes(version: str) -> int:
    """One stage of the ring: a block_m x block_k tile of A and a block_n x block_k tile of B, fp16."""
    c = config_of(version)
    return (c["block_m"] + c["block_n"]) * c["block_k"] * 2


def c_tile_bytes(version: str) -> int:
    c = config_of(version)
    return c["block_m"] * c["block_n"] * 2


def blocks_per_sm(version: str) -> int:
    """How many of a version's blocks fit on one SM, from its sm_90a build (as the budget box counts them)."""
    e = build_entry(version)
    build = budget.Build(e["threads"], e["registers"], e["shared_bytes"], e.get("persistent_blocks"))
    return budget.blocks_per_sm(build)[0]


def number_word(n: int) -> str:
    """A small count as a word ("three"), a larger one in digits."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def runs_each(figures: list[dict[str, Any]]) -> str:
    """How many independent runs each of some figures rests on, as a word: "three", or "two to three"."""
    counts = sorted({len(figure.get("runs") or [figure]) for figure in figures})
    if not counts:
        raise Missing
    words = [number_word(n) for n in counts]
    return words[0] if len(words) == 1 else f"{words[0]} to {words[-1]}"


def stmatrix_x4(data: Data, version: str) -> int:
    """stmatrix.x4 instructions (four 8 x 8 fp16 fragments, 512 bytes) to write every output tile of the ladder's
    problem once: tiles x block_m x block_n x 2 bytes / 512."""
    c, p = config_of(version), need(data)["problem"]
    tiles = -(-p["m"] // c["block_m"]) * -(-p["n"] // c["block_n"])
    return tiles * c["block_m"] * c["block_n"] * 2 // 512


def build_fact(what: str, doc: str, value: Callable[[dict[str, Any]], str]) -> None:
    fact(f"{{build}}.{what}", doc, lambda d, build: value(build_entry(build)))


def ladder_fact(what: str, doc: str, value: Callable[[Data, dict[str, Any]], str]) -> None:
    fact(f"{{version}}.{what}", doc, lambda d, version: value(d, ladder_row(d, version)))


def steps_fact(what: str, doc: str, value: Callable[[dict[str, Any]], str]) -> None:
    fact(f"{{row}}.{what}", doc, lambda d, row: value(steps_row(d, row)))


def tryit_fact(what: str, doc: str, value: Callable[[dict[str, Any]], str]) -> None:
    fact(f"{{edit}}.{what}", doc, lambda d, edit: value(tryit_entry(d, edit)))


# ---------------------------------------------------------------------------- the vocabulary
# fmt: off
fact("gpu.sm_count", "How many SMs the benchmark GPU has.", lambda d: str(d["gpu"]["sm_count"]))
fact("gpu.peak", "The datasheet's dense FP16 tensor-core peak.",
     lambda d: f"{need(d['gpu'].get('published_dense_fp16_tflops')):.1f} TFLOPS")
fact("gpu.power_limit", "The board's power limit.", lambda d: unit_text("watts", d["gpu"].get("power_limit_w")))
fact("method.verdict_count", "How many verdicts the results file states (the Bonferroni family).",
     lambda d: f"{need((d['method'].get('verdicts') or {}).get('count')):,}")
fact("method.confidence_each", "The confidence level of each interval: 1 - 0.05 / the number of verdicts.",
     lambda d: f"{100 * need((d['method'].get('verdicts') or {}).get('confidence_each')):.2f}%")
fact("method.family_confidence", "The confidence with which all of the file's verdicts hold together.",
     lambda d: f"{100 * need((d['method'].get('verdicts') or {}).get('family_confidence')):.0f}%")
fact("method.band_floor", "The smallest parity band the method allows, whatever the runs' spread.",
     lambda d: f"{100 * need((d['method'].get('verdicts') or {}).get('band_floor')):.0f}%")
fact("method.parity_band", "The parity band: a step pays or costs only outside 1 ± this.",
     lambda d: f"±{100 * need((d['method'].get('verdicts') or {}).get('parity_band')):.1f}%")
fact("ladder.runs", "The independent runs the ladder rests on: how many, and their ids.",
     lambda d: f"{len(need(d.get('ladder'))['runs'])} runs ("
     + ", ".join(r["run_id"] for r in d["ladder"]["runs"]) + ")")
fact("ladder.run_count", 'How many independent runs the ladder merges, as a word ("three").',
     lambda d: number_word(len(need(d.get("ladder")).get("runs") or [d["ladder"]])))
fact("steps.runs_each", 'How many independent runs each steps table rests on, as a word ("three").',
     lambda d: runs_each(d.get("steps") or []))
fact("problem.shape", "The ladder's problem size, M×N×K.", lambda d: numfmt.shape_text(d["problem"]))
fact("ladder.rounds", "How many interleaved rounds the ladder's run timed.",
     lambda d: str(need(results.ladder(d))["rounds"]))
fact("ladder.processes", "In how many fresh processes those rounds ran.",
     lambda d: str(need(results.ladder(d))["processes"]))
for _rule in (results.PAYS, results.PARITY, results.COSTS):
    fact(f"ladder.{_rule}", f'The versions whose step {numfmt.STEP_WORDS[_rule]}: "V1, V2" or "none".',
         lambda d, rule=_rule: ladder_verdicts(d, rule))

NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                "twelve")
fact("versions.count", 'How many versions the site builds, one per kernel file, as a word ("eight").',
     lambda d: number_word(len(versions.names())))
fact("versions.span", 'The first and the last version, "V0 to V7".',
     lambda d: f"{versions.label(versions.names()[0])} to {versions.label(versions.names()[-1])}")

# A version, or cuBLAS, in the ladder.
fact("{version}.label", 'How tables and prose name the version: "V7".', lambda d, version: versions.label(version))
ladder_fact("tflops", "Its throughput: TFLOPS from the median latency.", lambda d, r: unit_text("tflops", r["tflops"]))
ladder_fact("ms", "Its median latency.", lambda d, r: unit_text("ms", r["latency_ms"]))
ladder_fact("ratio", "Its speed over the cuBLAS of the same rounds, with the merged interval.",
            lambda d, r: numfmt.ratio_text(r["ratio_to_cublas"]))
ladder_fact("vs_cublas", 'That ratio by the rule: "is ahead of", "behind" or "at parity with cuBLAS", then the ratio.',
            lambda d, r: numfmt.vs_cublas_text(r["ratio_to_cublas"]))
ladder_fact("step", 'Its step over the previous version: "pays", "costs" or "is at parity", then the ratio.',
            lambda d, r: numfmt.step_text(need(r.get("step"))))
ladder_fact("sm_clock", "The median SM clock inside its timed kernels (marked suspect where implausible).",
            lambda d, r: clock_text(r))
ladder_fact("power", "The median board power in its timed windows.", lambda d, r: unit_text("watts", r.get("power_w")))
ladder_fact("peak_at_clock", "The tensor cores' peak at that clock: SMs × 4096 FLOP per clock × the clock.",
            lambda d, r: unit_text("tflops", peak_at_clock(d, r)))
ladder_fact("peak_fraction", "Its throughput as a share of the peak at its clock.",
            lambda d, r: unit_text("pct", 100 * r["tflops"] / peak_at_clock(d, r)))
ladder_fact("datasheet_fraction", "Its throughput as a share of the datasheet's peak.",
            lambda d, r: unit_text("pct", 100 * r["tflops"] / need(d["gpu"].get("published_dense_fp16_tflops"))))
ladder_fact("config", 'The tuned configuration it ran, as "block_m=..., block_n=..., ...".',
            lambda d, r: numfmt.config_text(r["config"]))
ladder_fact("tensor_pipe", "Nsight Compute: the share of active cycles with the tensor pipe active.",
            lambda d, r: counter(r, "tensor_pipe_pct", "pct"))
ladder_fact("dram_throughput", "Nsight Compute: DRAM throughput as a share of its peak.",
            lambda d, r: counter(r, "dram_throughput_pct", "pct"))
ladder_fact("smem_wavefronts", "Nsight Compute: shared-memory store wavefronts per launch.",
            lambda d, r: counter(r, "smem_store_wavefronts", "count"))
ladder_fact("smem_conflicts", "Nsight Compute: of those, the ones bank conflicts caused.",
            lambda d, r: counter(r, "smem_store_bank_conflicts", "count"))
fact("{version}.stmatrix_x4_{n}", "The stmatrix.x4 (512 bytes of fp16 each) that write its output tiles at the "
     "ladder's problem size, times n: n = 1 counts them; 4 and 32 are their wavefronts without bank conflicts and "
     "with eight-way ones.", lambda d, version, n: f"{stmatrix_x4(d, version) * int(n):,}")

# The sweep.
fact("sweep.runs_each", 'How many independent runs each shape of the sweep rests on, as a word ("three").',
     lambda d: runs_each(results.sweep_runs(d)))
fact("sweep.versions", 'The versions the sweep times, "V5, V6 and V7".', lambda d: sweep_versions(d))
fact("{impl}.sweep", "At how many of the sweep's shapes it is behind, at parity with, ahead of cuBLAS.", sweep_counts)
fact("{impl}.sweep_{shape}", "Its ratio to cuBLAS in the sweep's run at that shape, by the rule.",
     lambda d, impl, shape: numfmt.vs_cublas_text(need(results.sweep_row(d, impl, shape_of(shape)))["ratio_to_cublas"]))

# A row of a steps run.
steps_fact("step", "Its step over its run's baseline, by the rule.", lambda r: numfmt.step_text(need(r.get("step"))))
steps_fact("reversed", "Its step read the other way, its baseline over it (a reader's edit back to the "
           "baseline): the ratio inverted, pays and costs swapped.", reversed_step)
steps_fact("attempt", 'The step as a tried change: "pays over v6-rows: " and the ratio, then "kept" or "not kept".',
           attempt)
steps_fact("ratio", "Its speed over its run's cuBLAS, with the interval.",
           lambda r: numfmt.ratio_text(r["ratio_to_cublas"]))
steps_fact("sm_clock", "The median SM clock inside its timed kernels (marked suspect where implausible).", clock_text)
steps_fact("dram_read", "Nsight Compute: bytes read from DRAM.", lambda r: counter(r, "dram_read_bytes", "mb"))
steps_fact("l2_hit", "Nsight Compute: the L2 hit rate.", lambda r: counter(r, "l2_hit_pct", "pct"))

# A build (sm_90a, at the ladder's shape and configuration; the build record).
build_fact("registers", "Registers per thread, from ptxas.", lambda e: str(e["registers"]))
build_fact("spills", 'Bytes of spill stores and loads, from ptxas: "no spills" or both counts.', spills_text)
build_fact("stack_frame", "The stack frame per thread, from ptxas.", lambda e: f"{e['stack_bytes']:,} bytes")
build_fact("shared_memory", "Shared memory per block (the launch's dynamic shared memory).",
           lambda e: numfmt.kb_text(e["shared_bytes"]))
build_fact("advisories", 'The codes of the numbered messages ptxas printed ("C7517, C7518"), or "none".',
           lambda e: ", ".join(e["advisories"]) or "none")
build_fact("hgmma_shapes", 'The shapes of its HGMMA instructions, "64×256×16" (SASS), or "none".',
           lambda e: ", ".join(s.split(".")[0].replace("x", "\u00d7") for s in e["hgmma"]) or "none")
fact("{build}.sass_{instr}", "How many instructions of that SASS family its code holds (counted in the code, "
     "not executed): hmma, hgmma, warpgroup_arrive, warpgroup_depbar, ldsm, stsm, lds, sts, ldg, stg, ldl, stl, "
     "utmaldg, utmastg, syncs, bar, usetmaxreg.", lambda d, build, instr: sass_count(build, instr))
fact("{build}.depbar_{n}", "How many of its WARPGROUP.DEPBAR waits leave at most n HGMMA groups pending "
     "(wait_group(n)).", lambda d, build, n: str(build_entry(build)["depbar"].get(n, 0)))

# Sizes computed from a version's configuration (its TUNED).
fact("{version}.blocks_per_sm", 'How many of its blocks fit on one SM, as a word ("three"): the budget box\'s count.',
     lambda d, version: number_word(blocks_per_sm(version)))
fact("{version}.stage", "One stage of its ring: (block_m + block_n) × block_k fp16 values.",
     lambda d, version: numfmt.kb_text(stage_bytes(version)))
fact("{version}.ring", "Its whole ring: num_stages stages.",
     lambda d, version: numfmt.kb_text(config_of(version)["num_stages"] * stage_bytes(version)))
fact("{version}.c_tile", "Its output tile in fp16, block_m × block_n × 2 bytes (a staging buffer for C).",
     lambda d, version: numfmt.kb_text(c_tile_bytes(version)))
fact("{version}.ring_plus_one_and_c", "One stage more than its ring, plus the fp16 output tile.",
     lambda d, version: numfmt.kb_text((config_of(version)["num_stages"] + 1) * stage_bytes(version)
                                       + c_tile_bytes(version)))

# A try-it edit.
tryit_fact("outcome", 'What the edit did on the GPU, checked against float64: "exact in all ... checks", '
                      '"wrong in ...", "hangs: ...".', outcome_text)
tryit_fact("result", "That outcome in a word or two: exact, wrong, hangs, does not build, crashes.",
           lambda e: e["outcome"])
tryit_fact("checks", "How many checks ran.", lambda e: str(len(e["checks"])))
tryit_fact("wrong_checks", "In how many of them some element was outside tolerance.",
           lambda e: str(sum(1 for c in e["checks"] if c["bad"])))
# fmt: on
