"""The facts that are tables or charts, placed by ``.. fact:: name`` (:mod:`matmul_site.sphinx.results_role`).

Each is defined once below, like the inline facts of :mod:`matmul_site.facts`: a function whose
docstring says what it shows. Docutils work only; the numbers print through :mod:`matmul_site.numfmt`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.util.docutils import SphinxDirective

from matmul_site import budget, captions, facts, numfmt, paths, rerun, results, versions
from matmul_site.numfmt import NOT_MEASURED, NOT_RECORDED, TIMES, unit_text
from matmul_site.sphinx.results_nodes import Cell, caption_para, impl_cell, pending, table, value_node

Data = dict[str, Any] | None
BLOCKS: list[facts.Fact] = []
COUNTER_LABELS = {
    "tensor_pipe_pct": ("Tensor pipe utilisation (ncu)", "pct"),
    "dram_throughput_pct": ("DRAM throughput, share of peak (ncu)", "pct"),
    "dram_read_bytes": ("Bytes read from DRAM (ncu)", "mb"),
    "l2_hit_pct": ("L2 hit rate (ncu)", "pct"),
    "smem_store_wavefronts": ("Shared-memory store wavefronts (ncu)", "count"),
    "smem_store_bank_conflicts": ("Of those, from bank conflicts (ncu)", "count"),
}
# The steps rows a chapter's "Try it" table adds to its own try-its: recorded changes a reader can make.
TRYIT_RECORDED = {
    "v6": ("v6-rows-sw16", "v6-chunks-sw8", "v6-regs-s4"),
    "v7": ("v7@16384x8192x1024", "v7-streamk@4096"),
}


def block(name: str) -> Callable[[Callable[..., list[nodes.Node]]], Callable[..., list[nodes.Node]]]:
    """Register the decorated function as the table or chart fact ``name``."""

    def register(render: Callable[..., list[nodes.Node]]) -> Callable[..., list[nodes.Node]]:
        BLOCKS.append(facts.Fact(name, " ".join((render.__doc__ or "").split()), render, facts.pattern_of(name)))
        return render

    return register


def find(name: str) -> tuple[facts.Fact, dict[str, str]]:
    for found in BLOCKS:
        match = found.pattern.fullmatch(name)
        if match:
            return found, match.groupdict()
    raise facts.UnknownFact(f"no table or chart fact is called {name!r}; docs/writing.rst lists them")


def f(name: str, data: Data) -> str:
    return facts.render(name, data)


# ---------------------------------------------------------------------------- the ladder


@block("ladder.table")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """Every version and the ladder run's own cuBLAS: TFLOPS, latency, × cuBLAS, step, clock, power."""
    rows: list[list[Cell]] = []
    names = versions.names()
    for impl in [*names, results.CUBLAS]:
        step = f(f"{impl}.step", data) if impl != names[0] else "first version"
        values = [f(f"{impl}.{what}", data) for what in ("tflops", "ms", "ratio", "sm_clock", "power")]
        step = "the baseline" if impl == results.CUBLAS else step
        rows.append([impl_cell(d.env, impl), *values[:3], step, *values[3:]])
    header = ["Version", "TFLOPS", "Latency", f"{TIMES} cuBLAS [95% interval]", "Step over the previous version"]
    result = table([*header, "SM clock", "Power"], rows, [30, 9, 9, 16, 22, 8, 7], "ladder")
    return [result, caption_para(captions.ladder_caption(data))]


@block("sweep.baseline_kernels")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """cuBLAS's kernel at each sweep shape (the torch profiler's name) and the tile, K-tile, stages and cluster
    that its nvjet name encodes."""
    rows: list[list[Cell]] = []
    for figure in results.sweep_runs(data):
        entry = figure.get("cublas_kernel")
        if not entry:
            continue
        code = entry.get("decoded") or {}
        tile = f"{code['tile'][0]} {TIMES} {code['tile'][1]}" if code else NOT_RECORDED
        cluster = f"{code['cluster'][0]} {TIMES} {code['cluster'][1]}" if code else NOT_RECORDED
        stages = f"{code['stages']} of K {code['block_k']}" if code else NOT_RECORDED
        rows.append([numfmt.shape_text(figure["shape"]), nodes.literal(text=entry["name"]), tile, stages, cluster])
    if not rows:
        return [pending(f"cuBLAS's kernels are {NOT_MEASURED}.")]
    header = ["Shape", "cuBLAS kernel (torch profiler)", "Tile", "Stages", "Cluster"]
    return [table(header, rows, [18, 46, 12, 12, 10], "baseline-kernels")]


@block("ladder.steps_table")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """Every step of the ladder: its paired ratio with the interval, and the verdict of the rule."""
    steps = results.ladder_steps(data)
    if not steps:
        return [pending(f"The ladder's steps are {NOT_MEASURED}.")]
    rows: list[list[Cell]] = [
        [impl_cell(d.env, i), versions.label(s["over"]), numfmt.ratio_text(s), numfmt.STEP_WORDS[results.verdict(s)]]
        for i, s in steps
    ]
    result = table(["Version", "Over", "Step [95% interval]", "Verdict"], rows, [40, 8, 20, 14], "ladder-steps")
    return [result, caption_para(captions.ladder_caption(data))]


@block("{version}.performance")
def _(d: SphinxDirective, data: Data, version: str) -> list[nodes.Node]:
    """One version's numbers in the ladder: throughput, ratio, step, clock, peaks, configuration, counters, run."""
    row, run = results.ladder_row(data, version), results.ladder(data)
    if row is None or run is None:
        return [pending(f"{versions.label(version)}: {NOT_MEASURED}.")]
    r = lambda what: f(f"{version}.{what}", data)  # noqa: E731
    merged = captions.independent([run])  # every independent run the ladder's rows merge
    counters = {k: v for k, v in (row.get("counters") or {}).items() if isinstance(v, int | float)}  # not raw ncu
    counter_rows: list[list[Cell]] = [
        [COUNTER_LABELS.get(k, (k.replace("_", " "), "pct"))[0], counter_text(k, v)] for k, v in counters.items()
    ] or [["Profiler counters", NOT_RECORDED]]
    rows: list[list[Cell]] = [
        ["Throughput", r("tflops")],
        ["Median latency", r("ms")],
        [f"{TIMES} cuBLAS, paired in the same rounds [95% interval]", r("ratio")],
        ["Step over the previous version", r("step") if version != versions.names()[0] else "first version"],
        ["SM clock during timing", r("sm_clock")],
        ["Power during timing", r("power")],
        ["Tensor-core peak at that clock", r("peak_at_clock")],
        ["Share of the peak at that clock", r("peak_fraction")],
        [f"Share of the datasheet peak ({f('gpu.peak', data)})", r("datasheet_fraction")],
        ["Tuned configuration", nodes.literal(text=r("config"))],
        *counter_rows,
        [
            "Runs" if len(merged) > 1 else "Run",
            "; ".join(f"{r['run_id']}, {r['date']}, commit {r['git_commit']}" for r in merged),
        ],
    ]
    return [table(["Quantity", versions.label(version)], rows, [34, 56], "performance")]


def counter_text(name: str, value: float) -> str:
    kind = COUNTER_LABELS.get(name, ("", "pct"))[1]
    return unit_text(kind, value / 1e6 if kind == "mb" else int(value) if kind == "count" else value)


@block("provenance.table")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """Where and how the numbers were measured: GPU, clocks and limits, software, problem, method, dates."""
    if data is None:
        return [pending(f"No results file is recorded yet: hardware, software and dates are {NOT_MEASURED}.")]
    g, s, m, p = data["gpu"], data["software"], data["method"], data["problem"]
    peak = nodes.inline()
    peak += value_node(f("gpu.peak", data))
    if g.get("published_source"):
        peak += [nodes.Text(" ("), nodes.reference("", "datasheet", refuri=g["published_source"]), nodes.Text(")")]
    runs = [r for r in (data.get("ladder"), *data.get("sweep", []), *data.get("steps", [])) if r]
    path = paths.results_file()
    clocks = g["clocks_mhz"]
    rows: list[list[Cell]] = [
        ["GPU", f"{g['name']}, {g['sm_count']} SMs, compute capability {g['compute_capability']}, "
                f"driver {g['driver']}, {unit_text('gb', g.get('memory_gb'))}"],
        ["Clock and power limits", f"SM up to {unit_text('mhz', clocks.get('sm_max'))}, memory up to "
         f"{unit_text('mhz', clocks.get('mem_max'))}, power limit {f('gpu.power_limit', data)}"],
        ["Datasheet dense FP16 peak", peak],
        ["Software", f"CUDA {s['cuda']}, cuBLAS {s.get('cublas', NOT_RECORDED)}, torch {s['torch']}, "
                     f"Tilus {s['tilus']}, Python {s['python']}"],
        ["Problem", f"{numfmt.shape_text(p)}, {p['dtype']} inputs, {p['accumulate']} accumulation"],
        ["Timer", f"{m['timer']}, {m['warmup']} warm-up and {m['repeats']} timed calls per round; "
                  f"L2 flush: {m['l2_flush']}"],
        ["Order", m["order"]],
        ["Statistic", f"{m['statistic']}; {m['interval']}"],
        ["Clocks and power", m["clocks"]],
        *[[f"Run {run_id} (earlier method)", note] for run_id, note in (m.get("earlier_runs") or {}).items()],
        ["Dates", captions.dates(runs) if runs else NOT_MEASURED],
        ["Results file", f"plots/results/{path.name}" if path else NOT_MEASURED],
    ]  # fmt: skip
    return [table(["", "Recorded in the results file"], rows, [24, 66], "provenance")]


# ---------------------------------------------------------------------------- the steps runs after V6


def attempts(d: SphinxDirective, data: Data, patterns: tuple[str, ...], only_not_kept: bool = False) -> list[Any]:
    """Rows of the steps runs after V6 whose names match ``patterns``; with ``only_not_kept``, the unkept changes."""
    rows: list[list[Cell]] = []
    runs: list[dict[str, Any]] = []  # only the runs that give the table a row: the caption names these
    for run in results.steps_runs(data, "v6"):
        for impl, row in run["rows"].items():
            if impl == results.CUBLAS or not any(fnmatch.fnmatchcase(impl, p) for p in patterns):
                continue
            if only_not_kept and (row.get("kept") or not row.get("step")):
                continue
            step = row.get("step")
            step_words = f"{numfmt.step_text(step)} over {versions.label(step['over'])}" if step else "reference"
            runs += [] if any(r is run for r in runs) else [run]
            rows.append([
                nodes.literal(impl, impl), row["title"], run["title"], f"{row['tflops']:.0f}",
                numfmt.ratio_text(row["ratio_to_cublas"]), step_words,
                "kept" if row.get("kept") else ("no" if step else "n/a (the reference)"),
            ])  # fmt: skip
    if not rows:
        return [pending(f"No attempts after V6 are recorded yet: {NOT_MEASURED}.")]
    header = ["Variant", "What changed", "Run", "TFLOPS", f"{TIMES} cuBLAS [95% interval]", "Step [95% interval]"]
    result = table([*header, "Kept"], rows, [14, 25, 14, 7, 14, 19, 8], "steps")
    return [result, caption_para(captions.steps_caption(data, runs))]


@block("v5.attempts")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """V4 and V5 (v4, v5-*) as timed in the steps runs after V6, each a step over that run's baseline."""
    return attempts(d, data, ("v4", "v5*"))


@block("v6.attempts")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """Every row of the steps runs after V6, kept or not, each a step over its run's baseline."""
    return attempts(d, data, ("*",))


@block("v7.attempts")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """V7 and its variants (v7, v7-*) in the steps runs after V6."""
    return attempts(d, data, ("v7", "v7-*"))


@block("attempts.not_kept")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """The changes tried after V6 (v6*, v7-*) that went into no version."""
    return attempts(d, data, ("v6*", "v7-*"), only_not_kept=True)


# ---------------------------------------------------------------------------- a chapter's try-its


def timed_row(impl: str, row: dict[str, Any], kind: str) -> list[Cell]:
    seen = f"{row['tflops']:.0f} TFLOPS; {numfmt.step_text(row['step'])} over {row['step']['over']}" if row.get(
        "step") else f"{row['tflops']:.0f} TFLOPS: the baseline the other rows are paired with"  # fmt: skip
    change = nodes.inline()
    change += [nodes.Text(f"{row['title']} "), nodes.literal(impl, impl)]
    return [change, kind, seen]


@block("{version}.tryit")
def _(d: SphinxDirective, data: Data, version: str) -> list[nodes.Node]:
    """A chapter's "Try it" outcomes: its timed changes, the recorded steps it points to, its checked edits."""
    runs = results.steps_runs(data, version, tryit=True)
    rows = [timed_row(impl, row, "timed") for run in runs for impl, row in run["rows"].items() if impl != "cublas"]
    for item in TRYIT_RECORDED.get(version, ()):
        name, _, shape = item.partition("@")
        found = results.steps_row(data, name, facts.shape_of(shape) if shape else None)
        if found is None:
            rows.append([nodes.literal(name, name), "recorded", NOT_MEASURED])
            continue
        runs.append(found[0])
        rows.append(timed_row(name, found[1], f"recorded ({found[0]['title']})"))
    for entry in results.tryit_entries(data, version):
        change = nodes.container()
        change += nodes.paragraph(text=entry["title"])
        diff = "\n".join(
            "\n".join([*(f"- {line}" for line in old.splitlines()), *(f"+ {line}" for line in new.splitlines())])
            for old, new in entry["edits"]
        )
        if diff:
            change += nodes.literal_block(diff, diff, language="diff")
        change += nodes.paragraph(text=f"with {', '.join(f'{k}={v}' for k, v in entry['config'].items())}")
        rows.append([change, "edit, checked", facts.outcome_text(entry)])
    if not rows:
        return [pending(f"The try-its of {version.upper()} are {NOT_MEASURED}.")]
    result = table(["Change", "Kind", "What it did on the GPU"], rows, [40, 12, 38], "tryit")
    return [result, caption_para(captions.steps_caption(data, runs))] if runs else [result]


# ---------------------------------------------------------------------------- charts


def chart(
    d: SphinxDirective, script: str, ready: bool, caption: str, missing: str, code: str | None = None
) -> list[nodes.Node]:
    """A chart through the plot directive; or plain words when unmeasured.

    ``script`` names a file in plots/; with ``code`` the chart is that code instead (a version's chart, one line
    by convention), and ``script``'s stem names its images, as a file's would. Its caption
    (:func:`matmul_site.captions.chart_caption`: what it shows, which runs) ends with the link to the method page,
    the one page that says how the runs were timed.
    """
    if code is None and not (paths.PLOTS_DIR / script).is_file():
        raise d.error(f"{d.arguments[0]}: plots/{script} does not exist")
    if code is None:
        d.env.note_dependency(str(paths.PLOTS_DIR / script))
    if not ready:
        return [pending(missing)]
    caption = "".join("\\" + c if c in "\\*`|_" else c for c in caption)
    alt = d.options.get("alt", f"Chart drawn by plots/{script} from the results file")
    caption = f"{caption} :doc:`{captions.METHOD_LINK} </method>`."
    if code is None:
        lines = [f".. plot:: {script}", f"   :alt: {alt}", f"   :caption: {caption}", ""]
    else:
        prefix = script.removesuffix(".py")
        lines = [".. plot::", f"   :alt: {alt}", f"   :caption: {caption}", f"   :filename-prefix: {prefix}", ""]
        lines += [f"   {line}" for line in code.splitlines()] + [""]
    container = nodes.container(classes=["results-chart"])
    d.state.nested_parse(StringList(lines, source=d.get_source_info()[0]), d.content_offset, container)
    return [container]


@block("{version}.chart")
def _(d: SphinxDirective, data: Data, version: str) -> list[nodes.Node]:
    """The chapter's chart: every version and cuBLAS, this one highlighted (rerun at build time when asked)."""
    data, rerun_on = rerun.ladder_for(version, data)
    missing = f"{versions.label(version)} is not measured yet, so its chart is not drawn: {NOT_MEASURED}."
    ready = results.ladder_row(data, version) is not None
    found = versions.get(version)  # its chart is code by convention: no chart script per version
    caption = captions.chart_caption(found.chart_name, data, rerun_on=rerun_on)
    return chart(d, f"{found.chart_name}.py", ready, caption, missing, found.chart_code)


@block("ladder.chart")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """The summary chart: every version and cuBLAS, with the peak at each bar's clock."""
    missing = f"No ladder is measured yet, so the chart is not drawn: {NOT_MEASURED}."
    ready = results.ladder(data) is not None
    return chart(d, "plot_summary.py", ready, captions.chart_caption("plot_summary.py", data), missing)


@block("ladder.steps_chart")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """The waterfall of the ladder's steps, each coloured by its verdict."""
    missing = f"No ladder is measured yet, so the chart is not drawn: {NOT_MEASURED}."
    ready = bool(results.ladder_steps(data))
    return chart(d, "plot_steps.py", ready, captions.chart_caption("plot_steps.py", data), missing)


@block("sweep.chart")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """The sweep: each implementation's ratio to cuBLAS and TFLOPS at every shape."""
    missing = f"The shape sweep is {NOT_MEASURED}."
    ready = bool(results.sweep_runs(data))
    return chart(d, "plot_sweep.py", ready, captions.chart_caption("plot_sweep.py", data), missing)


# ---------------------------------------------------------------------------- the sm_90a builds

# (label, value) of a build that a chapter's "what changed" compares; the SASS families follow.
BUILD_ROWS: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
    ("Threads per block", lambda e: str(e["threads"])),
    ("Registers per thread (ptxas)", lambda e: str(e["registers"])),
    ("Spill stores, loads (ptxas)", lambda e: f"{e['spill_stores']:,}, {e['spill_loads']:,} bytes"),
    ("Stack frame (ptxas)", lambda e: f"{e['stack_bytes']:,} bytes"),
    ("Shared memory per block", lambda e: numfmt.kb_text(e["shared_bytes"])),
    ("Named barriers (ptxas)", lambda e: str(e["barriers"])),
    ("ptxas advisories", lambda e: ", ".join(f"{c} ({n})" for c, n in e["advisories"].items()) or "none"),
    ("HGMMA shapes", lambda e: ", ".join(s.split(".")[0].replace("x", " \u00d7 ") for s in e["hgmma"]) or "none"),
    ("WARPGROUP.DEPBAR, by groups left pending",
     lambda e: ", ".join(f"{n} pending: {c}" for n, c in e["depbar"].items()) or "none"),
    *((f"{family} ({ptx})", lambda e, family=family: f"{e['sass'][family]:,}")
      for family, (ptx, _) in budget.SASS_FAMILIES.items()),
]  # fmt: skip


def build_record(d: SphinxDirective) -> dict[str, Any]:
    d.env.note_dependency(str(budget.BUILD_RECORD))
    try:
        return budget.load_builds_cached()
    except budget.BudgetError as err:
        raise d.error(f"{d.arguments[0]}: {err}") from err


def build_caption(record: dict[str, Any]) -> nodes.paragraph:
    """The build tables' caption (short: the method page tells the rest); the command is a literal, so that its
    ``--record`` is not typeset as a dash."""
    nvcc = re.search(r"cuda_(\d+\.\d+)", record["nvcc"])
    para = caption_para(
        f": the {record['arch']} build at {numfmt.shape_text(tuple(record['shape']))} (Tilus {record['tilus']}, "
        f"nvcc {nvcc[1] if nvcc else record['nvcc']}); SASS counts are static, not executions."
    )
    command = "python -m matmul_bench buildcheck --record"
    para.insert(0, nodes.Text("From the build record of "))
    para.insert(1, nodes.literal(command, command))
    return para


@block("{version}.build_delta")
def _(d: SphinxDirective, data: Data, version: str) -> list[nodes.Node]:
    """What the sm_90a build of this version changed against the previous one's (ptxas's registers, spills,
    stack, advisories; shared memory; SASS instruction counts); the unchanged facts in one line below."""
    record = build_record(d)
    names = versions.names()
    if version not in names:
        raise d.error(f"{d.arguments[0]}: no version {version!r}; known: {', '.join(names)}")
    index = names.index(version)
    missing = [v for v in names[max(index - 1, 0) : index + 1] if v not in record["versions"]]
    if missing:  # a new chapter, before its first build check
        return [
            pending(
                f"The build facts of {versions.label(version)} are not recorded yet: "
                f"{', '.join(missing)} not in the build record (python -m matmul_bench buildcheck --record)."
            )
        ]
    entry = record["versions"][version]
    if index == 0:  # the first version: its own facts, the SASS families it uses
        rows: list[list[Cell]] = [[label, value(entry)] for label, value in BUILD_ROWS if value(entry) not in (
            "0", "none")]  # fmt: skip
        result = table(["Build fact", versions.label(version)], rows, [50, 40], "build")
        return [result, build_caption(record)]
    before = record["versions"][names[index - 1]]
    changed: list[list[Cell]] = []
    same: list[str] = []
    for label, value in BUILD_ROWS:
        old, new = value(before), value(entry)
        if old != new:
            changed.append([label, old, new])
        elif new not in ("0", "none"):
            same.append(f"{label} {new}")
    header = ["Build fact", versions.label(names[index - 1]), versions.label(version)]
    nodes_out: list[nodes.Node] = []
    if changed:
        nodes_out.append(table(header, changed, [44, 23, 23], "build"))
    else:
        nodes_out.append(pending(f"The build of {versions.label(version)} changed none of these facts."))
    unchanged = "; ".join(same)
    nodes_out.append(nodes.paragraph(text=f"Unchanged: {unchanged}."))
    nodes_out.append(build_caption(record))
    return nodes_out


@block("{build}.ptxas")
def _(d: SphinxDirective, data: Data, build: str) -> list[nodes.Node]:
    """Everything ptxas printed for a build (its "Compile time" line left out), as a literal block."""
    record = build_record(d)
    entry = record["versions"].get(build) or record.get("extras", {}).get(build)
    if entry is None:
        raise d.error(f"{d.arguments[0]}: no build {build!r} in the build record")
    text = entry["ptxas"].rstrip("\n")
    return [nodes.literal_block(text, text, language="text")]


# ---------------------------------------------------------------------------- for writers


@block("facts.vocabulary")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """Every fact a page may name, what it shows, and its first use in the pages with what that prints now."""
    uses: dict[str, tuple[str, str]] = {}  # fact name -> (a name that uses it, the page)
    for page in sorted(paths.DOCS_DIR.glob("**/*.rst")):
        d.env.note_dependency(str(page))
        for name in facts.names_in(page.read_text(encoding="utf-8")):
            for found in (*facts.FACTS, *BLOCKS):
                if found.pattern.fullmatch(name):
                    uses.setdefault(found.name, (name, page.relative_to(paths.DOCS_DIR).with_suffix("").as_posix()))
                    break
    rows: list[list[Cell]] = []
    for kind, found in [*(("role", x) for x in facts.FACTS), *(("directive", x) for x in BLOCKS)]:
        example: Cell = "unused"
        if found.name in uses:
            name, page = uses[found.name]
            example = nodes.inline()
            example += [nodes.literal(text=name), nodes.Text(f" ({page})")]
            if kind == "role":
                example += [nodes.Text(": "), value_node(facts.render(name, data))]
        rows.append([nodes.literal(text=found.name), kind, nodes.Text(found.doc), example])
    return [table(["Name", "Placed by", "What it shows", "First used as, and what it prints now"], rows,
                  [22, 9, 39, 30], "vocabulary")]  # fmt: skip
