"""The pages' one way to the results file: ``:fact:`v3.tflops``` (an inline fact of :mod:`matmul_site.facts`) and
``.. fact:: v3.performance`` (a table or chart, defined below; a chart takes ``:alt:``, its text alternative).

docs/writing.rst lists every fact. A value the file lacks prints "not measured yet"; an unknown name is an
error at its line. Docutils work only: the numbers print through :mod:`matmul_site.numfmt`.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Callable, Sequence
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective, SphinxRole

from matmul_bench.kernels import import_spec
from matmul_data import budget, paths, results, versions
from matmul_site import captions, facts, numfmt, rerun
from matmul_site.numfmt import NOT_MEASURED, NOT_RECORDED, TIMES, unit_text
from matmul_site.sphinx.results_file import note_dependency

Data = dict[str, Any] | None
Cell = str | nodes.Node
BLOCKS: list[facts.Fact] = []
Block = Callable[..., list[nodes.Node]]


def block(name: str) -> Callable[[Block], Block]:
    """Define the decorated function as the table or chart fact ``name``; its docstring says what it shows."""
    return lambda render: facts.define(name, render.__doc__ or "", render, BLOCKS) or render


# ---------------------------------------------------------------------------- nodes


def value_node(value: str) -> nodes.inline:
    classes = ["result", "not-measured"] if value in (NOT_MEASURED, NOT_RECORDED) else ["result"]
    return nodes.inline(value, value, classes=classes)


def table(header: Sequence[str], rows: list[list[Cell]], widths: Sequence[int], kind: str) -> nodes.table:
    """A table of the site's style; a str cell is a value (styled "not measured" when it says so)."""
    result = nodes.table(classes=["results-table", kind])
    group = nodes.tgroup(cols=len(header))
    result += group
    group += [nodes.colspec(colwidth=width) for width in widths]
    for section, lines in ((nodes.thead(), [[nodes.Text(t) for t in header]]), (nodes.tbody(), rows)):
        group += section
        for values in lines:
            row = nodes.row()
            for value in values:
                row += nodes.entry("", nodes.paragraph("", "", value_node(value) if isinstance(value, str) else value))
            section += row
    return result


def grid(kind: str, columns: list[tuple[str, int, Any]], subjects: Sequence[Any], data: Data) -> nodes.table:
    """A table with a row per subject and a column per (header, width, cell): a cell is the fact ``{subject}.cell``
    when a str, else a function of the subject."""
    rows = [[c(s) if callable(c) else facts.render(f"{s}.{c}", data) for _, _, c in columns] for s in subjects]
    return table([c[0] for c in columns], rows, [c[1] for c in columns], kind)


def xref(target: str, text: str, env: Any = None) -> nodes.Node:
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget=target, refexplicit=True)
    if env is not None:
        ref["refdoc"] = env.docname
    ref += nodes.inline(text, text)
    return ref


def impl_cell(env: Any, impl: str) -> nodes.Node:
    """An implementation's name; a version's links to its chapter."""
    if impl not in versions.names():
        return value_node(versions.label(impl))
    return xref(f"/chapters/{impl}", versions.get(impl).heading, env)


def caption_para(text: str) -> nodes.paragraph:
    """A table's caption (matmul_site.captions: what and which run), then the link to the method page."""
    para = nodes.paragraph("", "", classes=["results-caption"])
    para += [nodes.Text(f"{text} "), xref("/method", captions.METHOD_LINK), nodes.Text(".")]
    return para


def pending(text: str) -> nodes.paragraph:
    return nodes.paragraph(text, text, classes=["chart-pending"])


# ---------------------------------------------------------------------------- the ladder


@block("ladder.table")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """Every version and the ladder run's own cuBLAS: TFLOPS, latency, × cuBLAS, step, clock, power."""
    first = versions.names()[0]
    step = {first: "first version", results.CUBLAS: "the baseline"}
    result = grid("ladder", [
        ("Version", 30, lambda impl: impl_cell(d.env, impl)), ("TFLOPS", 9, "tflops"), ("Latency", 9, "ms"),
        (f"{TIMES} cuBLAS [95% interval]", 16, "ratio"),
        ("Step over the previous version", 22, lambda impl: step.get(impl) or facts.render(f"{impl}.step", data)),
        ("SM clock", 8, "sm_clock"), ("Power", 7, "power"),
    ], [*versions.names(), results.CUBLAS], data)  # fmt: skip
    return [result, caption_para(captions.ladder_caption(data))]


@block("ladder.steps_table")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """Every step of the ladder: its paired ratio with the interval, and the verdict of the rule."""
    steps = results.ladder_steps(data)
    if not steps:
        return [pending(f"The ladder's steps are {NOT_MEASURED}.")]
    result = grid("ladder-steps", [
        ("Version", 40, lambda s: impl_cell(d.env, s[0])), ("Over", 8, lambda s: versions.label(s[1]["over"])),
        ("Step [95% interval]", 20, lambda s: numfmt.ratio_text(s[1])),
        ("Verdict", 14, lambda s: numfmt.STEP_WORDS[results.verdict(s[1])]),
    ], steps, data)  # fmt: skip
    return [result, caption_para(captions.ladder_caption(data))]


PERFORMANCE = [
    ("Throughput", "tflops"), ("Median latency", "ms"),
    (f"{TIMES} cuBLAS, paired in the same rounds [95% interval]", "ratio"), ("Step over the previous version", "step"),
    ("SM clock during timing", "sm_clock"), ("Power during timing", "power"),
    ("Tensor-core peak at that clock", "peak_at_clock"), ("Share of the peak at that clock", "peak_fraction"),
    ("Share of the datasheet peak ({})", "datasheet_fraction"), ("Tuned configuration", "config"),
]  # fmt: skip


@block("{version}.performance")
def _(d: SphinxDirective, data: Data, version: str) -> list[nodes.Node]:
    """One version's numbers in the ladder: throughput, ratio, step, clock, peaks, configuration, counters, run."""
    found, run = results.ladder_row(data, version), results.ladder(data)
    if found is None or run is None:
        return [pending(f"{versions.label(version)}: {NOT_MEASURED}.")]
    rows: list[list[Cell]] = [[label.format(facts.render("gpu.peak", data)), facts.render(f"{version}.{what}", data)]
                              for label, what in PERFORMANCE]  # fmt: skip
    rows[-1][1] = nodes.literal(text=rows[-1][1])
    if version == versions.names()[0]:
        rows[3][1] = "first version"
    labels = {key: label for key, label, _ in facts.COUNTERS.values()}
    counters = {k: v for k, v in (found.get("counters") or {}).items() if isinstance(v, int | float)}  # not raw ncu
    rows += [[labels.get(k, k.replace("_", " ")), facts.counter_text(k, v)] for k, v in counters.items()] or [
        ["Profiler counters", NOT_RECORDED]]  # fmt: skip
    merged = captions.independent([run])  # every independent run the ladder's rows merge
    rows.append(["Runs" if len(merged) > 1 else "Run",
                 "; ".join(f"{r['run_id']}, {r['date']}, commit {r['git_commit']}" for r in merged)])  # fmt: skip
    return [table(["Quantity", versions.label(version)], rows, [34, 56], "performance")]


@block("sweep.baseline_kernels")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """cuBLAS's kernel at each sweep shape (the torch profiler's name) and the tile, K-tile, stages and cluster
    that its nvjet name encodes."""
    runs = [run for run in results.sweep_runs(data) if run.get("cublas_kernel")]
    if not runs:
        return [pending(f"cuBLAS's kernels are {NOT_MEASURED}.")]

    def code(run: dict[str, Any], text: Callable[[dict[str, Any]], str]) -> str:
        decoded = run["cublas_kernel"].get("decoded")
        return text(decoded) if decoded else NOT_RECORDED

    return [grid("baseline-kernels", [
        ("Shape", 18, lambda r: numfmt.shape_text(r["shape"])),
        ("cuBLAS kernel (torch profiler)", 46, lambda r: nodes.literal(text=r["cublas_kernel"]["name"])),
        ("Tile", 12, lambda r: code(r, lambda c: f"{c['tile'][0]} {TIMES} {c['tile'][1]}")),
        ("Stages", 12, lambda r: code(r, lambda c: f"{c['stages']} of K {c['block_k']}")),
        ("Cluster", 10, lambda r: code(r, lambda c: f"{c['cluster'][0]} {TIMES} {c['cluster'][1]}")),
    ], runs, data)]  # fmt: skip


@block("provenance.table")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """Where and how the numbers were measured: GPU, clocks and limits, software, problem, method, dates."""
    if data is None:
        return [pending(f"No results file is recorded yet: hardware, software and dates are {NOT_MEASURED}.")]
    g, s, m, p = data["gpu"], data["software"], data["method"], data["problem"]
    peak = nodes.inline("", "", value_node(facts.render("gpu.peak", data)))
    if g.get("published_source"):
        peak += [nodes.Text(" ("), nodes.reference("", "datasheet", refuri=g["published_source"]), nodes.Text(")")]
    runs = [r for r in (data.get("ladder"), *data.get("sweep", []), *data.get("steps", [])) if r]
    path, clocks = paths.results_file(), g["clocks_mhz"]
    rows: list[list[Cell]] = [
        ["GPU", f"{g['name']}, {g['sm_count']} SMs, compute capability {g['compute_capability']}, "
                f"driver {g['driver']}, {unit_text('gb', g.get('memory_gb'))}"],
        ["Clock and power limits", f"SM up to {unit_text('mhz', clocks.get('sm_max'))}, memory up to "
         f"{unit_text('mhz', clocks.get('mem_max'))}, power limit {facts.render('gpu.power_limit', data)}"],
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


# ---------------------------------------------------------------------------- the steps runs after a version

# A chapter's table: the steps runs after which version, and the rows it shows.
ATTEMPTS = {"v5": ("v6", ("v4", "v5*")), "v6": ("v6", ("*",)), "v7": ("v6", ("v7", "v7-*")), "v8": ("v7", ("*",))}


def attempts(data: Data, after: str, patterns: Sequence[str], only_not_kept: bool = False) -> list[nodes.Node]:
    """Rows of the steps runs after ``after`` whose names match ``patterns``; with ``only_not_kept``, the unkept
    changes."""
    found = [(run, impl, row) for run in results.steps_runs(data, after) for impl, row in run["rows"].items()
             if impl != results.CUBLAS and any(fnmatch.fnmatchcase(impl, p) for p in patterns)
             and not (only_not_kept and (row.get("kept") or not row.get("step")))]  # fmt: skip
    if not found:
        return [pending(f"No attempts after {versions.label(after)} are recorded yet: {NOT_MEASURED}.")]

    def step(row: dict[str, Any]) -> str:
        s = row.get("step")
        return f"{numfmt.step_text(s)} over {versions.label(s['over'])}" if s else "reference"

    result = grid("steps", [
        ("Variant", 14, lambda f: nodes.literal(f[1], f[1])), ("What changed", 25, lambda f: f[2]["title"]),
        ("Run", 14, lambda f: f[0]["title"]), ("TFLOPS", 7, lambda f: f"{f[2]['tflops']:.0f}"),
        (f"{TIMES} cuBLAS [95% interval]", 14, lambda f: numfmt.ratio_text(f[2]["ratio_to_cublas"])),
        ("Step [95% interval]", 19, lambda f: step(f[2])),
        ("Kept", 8, lambda f: "kept" if f[2].get("kept") else ("no" if f[2].get("step") else "n/a (the reference)")),
    ], found, data)  # fmt: skip
    runs = list({id(run): run for run, _, _ in found}.values())  # the runs that give the table a row, in order
    return [result, caption_para(captions.steps_caption(data, runs))]


@block("{version}.attempts")
def _(d: SphinxDirective, data: Data, version: str) -> list[nodes.Node]:
    """The steps runs a chapter names in ATTEMPTS (V5: v4, v5* after V6; V6: all after V6; V7: v7, v7-* after V6;
    V8: all after V7), each a step over its run's baseline."""
    if version not in ATTEMPTS:
        raise d.error(f"{d.arguments[0]}: no attempts table for {version}; fact_blocks.ATTEMPTS lists them")
    return attempts(data, *ATTEMPTS[version])


@block("attempts.not_kept")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """The changes tried after V6 (v6*, v7-*) that went into no version."""
    return attempts(data, "v6", ("v6*", "v7-*"), only_not_kept=True)


# ---------------------------------------------------------------------------- a chapter's try-its
# The try-it spec: its RECORDED names the steps rows (run title, variant) that a chapter's "Try it" table adds.
TRYIT_SPEC = paths.ROOT / "experiments" / "tryit.py"


def timed_row(impl: str, row: dict[str, Any], kind: str) -> list[Cell]:
    step = row.get("step")
    seen = f"{numfmt.step_text(step)} over {step['over']}" if step else "the baseline the other rows are paired with"
    return [nodes.inline("", "", nodes.Text(f"{row['title']} "), nodes.literal(impl, impl)), kind,
            f"{row['tflops']:.0f} TFLOPS{'; ' if step else ': '}{seen}"]  # fmt: skip


@block("{version}.tryit")
def _(d: SphinxDirective, data: Data, version: str) -> list[nodes.Node]:
    """A chapter's "Try it" outcomes: its timed changes, the recorded steps it points to, its checked edits."""
    runs = results.steps_runs(data, version, tryit=True)
    rows = [timed_row(impl, row, "timed") for run in runs for impl, row in run["rows"].items() if impl != "cublas"]
    d.env.note_dependency(str(TRYIT_SPEC))
    for title, name, _ in import_spec(TRYIT_SPEC, "try-it").RECORDED.get(version, []):
        found = [run for run in results.steps_runs(data) if run["title"] == title and name in run["rows"]]
        if not found:
            rows.append([nodes.literal(name, name), f"recorded ({title})", NOT_MEASURED])  # the run tells rows apart
            continue
        runs.append(found[-1])
        rows.append(timed_row(name, found[-1]["rows"][name], f"recorded ({title})"))
    for entry in results.tryit_entries(data, version):
        change = nodes.container("", nodes.paragraph(text=entry["title"]))
        diff = "\n".join(
            "\n".join([*(f"- {line}" for line in old.splitlines()), *(f"+ {line}" for line in new.splitlines())])
            for old, new in entry["edits"]
        )
        change += [nodes.literal_block(diff, diff, language="diff")] if diff else []
        change += nodes.paragraph(text=f"with {', '.join(f'{k}={v}' for k, v in entry['config'].items())}")
        rows.append([change, "edit, checked", facts.outcome_text(entry)])
    if not rows:
        return [pending(f"The try-its of {version.upper()} are {NOT_MEASURED}.")]
    result = table(["Change", "Kind", "What it did on the GPU"], rows, [40, 12, 38], "tryit")
    return [result, caption_para(captions.steps_caption(data, runs))] if runs else [result]


# ---------------------------------------------------------------------------- charts


def chart(d: SphinxDirective, script: str, ready: bool, caption: str, missing: str, code: str = "") -> list[nodes.Node]:
    """A chart through the plot directive, or plain words when unmeasured. ``script`` names a file in plots/; with
    ``code`` the chart is that code instead (a version's chart, by convention) and ``script`` names its images.
    Its caption (:func:`matmul_site.captions.chart_caption`) ends with the link to the method page."""
    if not code:
        d.env.note_dependency(str(paths.PLOTS_DIR / script))
    if not ready:
        return [pending(missing)]
    caption = "".join("\\" + c if c in "\\*`|_" else c for c in caption)
    options = [f"   :alt: {d.options.get('alt', f'Chart drawn by plots/{script} from the results file')}",
               f"   :caption: {caption} :doc:`{captions.METHOD_LINK} </method>`."]  # fmt: skip
    if code:
        lines = [".. plot::", *options, f"   :filename-prefix: {script.removesuffix('.py')}", ""]
        lines += [f"   {line}" for line in code.splitlines()] + [""]
    else:
        lines = [f".. plot:: {script}", *options, ""]
    container = nodes.container(classes=["results-chart"])
    d.state.nested_parse(StringList(lines, source=d.get_source_info()[0]), d.content_offset, container)
    return [container]


@block("{version}.chart")
def _(d: SphinxDirective, data: Data, version: str) -> list[nodes.Node]:
    """The chapter's chart: every version and cuBLAS, this one highlighted (rerun at build time when asked)."""
    data, rerun_on = rerun.ladder_for(version, data)
    missing = f"{versions.label(version)} is not measured yet, so its chart is not drawn: {NOT_MEASURED}."
    found = versions.get(version)  # its chart is code by convention: no chart script per version
    caption = captions.chart_caption(found.chart_name, data, rerun_on=rerun_on)
    ready = results.ladder_row(data, version) is not None
    return chart(d, f"{found.chart_name}.py", ready, caption, missing, found.chart_code)


for _name, _doc, _script, _ready, _missing in (
    ("ladder.chart", "The summary chart: every version and cuBLAS, with the peak at each bar's clock.",
     "plot_summary.py", results.ladder, "No ladder is measured yet, so the chart is not drawn: {}."),
    ("ladder.steps_chart", "The waterfall of the ladder's steps, each coloured by its verdict.", "plot_steps.py",
     results.ladder_steps, "No ladder is measured yet, so the chart is not drawn: {}."),
    ("sweep.chart", "The sweep: each implementation's ratio to cuBLAS and TFLOPS at every shape.", "plot_sweep.py",
     results.sweep_runs, "The shape sweep is {}."),
):  # fmt: skip
    facts.define(
        _name,
        _doc,
        lambda d, data, s=_script, ready=_ready, missing=_missing: chart(
            d, s, bool(ready(data)), captions.chart_caption(s, data), missing.format(NOT_MEASURED)
        ),
        BLOCKS,
    )


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
    try:
        return budget.load_builds_cached()
    except budget.BudgetError as err:
        raise d.error(f"{d.arguments[0]}: {err}") from err


def build_caption(record: dict[str, Any]) -> nodes.paragraph:
    """The build tables' caption; the command is a literal, so that its ``--record`` is not typeset as a dash."""
    nvcc = re.search(r"cuda_(\d+\.\d+)", record["nvcc"])
    para = caption_para(f": the {record['arch']} build at {numfmt.shape_text(tuple(record['shape']))} (Tilus "
                        f"{record['tilus']}, nvcc {nvcc[1] if nvcc else record['nvcc']}); SASS counts are static, "
                        "not executions.")  # fmt: skip
    command = "python -m matmul_bench buildcheck --record"
    para[0:0] = [nodes.Text("From the build record of "), nodes.literal(command, command)]
    return para


@block("{version}.build_delta")
def _(d: SphinxDirective, data: Data, version: str) -> list[nodes.Node]:
    """What the sm_90a build of this version changed against the previous one's (ptxas's registers, spills,
    stack, advisories; shared memory; SASS instruction counts); the unchanged facts in one line below."""
    record, names = build_record(d), versions.names()
    if version not in names:
        raise d.error(f"{d.arguments[0]}: no version {version!r}; known: {', '.join(names)}")
    index = names.index(version)
    missing = [v for v in names[max(index - 1, 0) : index + 1] if v not in record["versions"]]
    if missing:  # a new chapter, before its first build check
        return [pending(f"The build facts of {versions.label(version)} are not recorded yet: {', '.join(missing)} "
                        "not in the build record (python -m matmul_bench buildcheck --record).")]  # fmt: skip
    entry = record["versions"][version]
    if index == 0:  # the first version: its own facts, the SASS families it uses
        rows: list[list[Cell]] = [[label, value(entry)] for label, value in BUILD_ROWS
                                  if value(entry) not in ("0", "none")]  # fmt: skip
        return [table(["Build fact", versions.label(version)], rows, [50, 40], "build"), build_caption(record)]
    before = record["versions"][names[index - 1]]
    changed: list[list[Cell]] = [[lab, val(before), val(entry)] for lab, val in BUILD_ROWS if val(before) != val(entry)]
    same = [f"{lab} {val(entry)}" for lab, val in BUILD_ROWS if val(before) == val(entry) not in ("0", "none")]
    header = ["Build fact", versions.label(names[index - 1]), versions.label(version)]
    first = (table(header, changed, [44, 23, 23], "build") if changed
             else pending(f"The build of {versions.label(version)} changed none of these facts."))  # fmt: skip
    return [first, nodes.paragraph(text=f"Unchanged: {'; '.join(same)}."), build_caption(record)]


@block("{build}.ptxas")
def _(d: SphinxDirective, data: Data, build: str) -> list[nodes.Node]:
    """Everything ptxas printed for a build (its "Compile time" line left out), as a literal block."""
    try:
        text = facts.build_entry(data, build)["ptxas"].rstrip("\n")
    except facts.Missing as err:
        raise d.error(f"{d.arguments[0]}: no build {build!r} in the build record") from err
    return [nodes.literal_block(text, text, language="text")]


# ---------------------------------------------------------------------------- for writers


@block("facts.vocabulary")
def _(d: SphinxDirective, data: Data) -> list[nodes.Node]:
    """Every fact a page may name, what it shows, and its first use in the pages with what that prints now."""
    uses: dict[str, tuple[str, str]] = {}  # fact name -> (a name that uses it, the page)
    for page in sorted(paths.DOCS_DIR.glob("**/*.rst")):
        d.env.note_dependency(str(page))
        for name in facts.names_in(page.read_text(encoding="utf-8")):
            found = next((f for f in (*facts.FACTS, *BLOCKS) if f.pattern.fullmatch(name)), None)
            if found is not None:
                uses.setdefault(found.name, (name, page.relative_to(paths.DOCS_DIR).with_suffix("").as_posix()))
    rows: list[list[Cell]] = []
    for kind, found in [*(("role", x) for x in facts.FACTS), *(("directive", x) for x in BLOCKS)]:
        example: Cell = "unused"
        if found.name in uses:
            name, page = uses[found.name]
            example = nodes.inline("", "", nodes.literal(text=name), nodes.Text(f" ({page})"))
            example += [nodes.Text(": "), value_node(facts.render(name, data))] if kind == "role" else []
        rows.append([nodes.literal(text=found.name), kind, nodes.Text(found.doc), example])
    return [table(["Name", "Placed by", "What it shows", "First used as, and what it prints now"], rows,
                  [22, 9, 39, 30], "vocabulary")]  # fmt: skip


# ---------------------------------------------------------------------------- the role and the directive


def page_data(env: Any) -> Data:
    """The results; they and the build record are noted as dependencies of the page being read (so that a new
    file re-renders it)."""
    note_dependency(env)
    env.note_dependency(str(budget.BUILD_RECORD))
    return results.load_default()


class FactRole(SphinxRole):
    """``:fact:`name```: the value of an inline fact."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        try:
            value = facts.render(self.text, page_data(self.env))
        except facts.UnknownFact as err:
            msg = self.inliner.reporter.error(str(err), line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
        if self.text.endswith(".config") and value != NOT_MEASURED:
            return [nodes.literal(value, value, classes=["result"])], []
        return [value_node(value)], []


class FactDirective(SphinxDirective):
    """``.. fact:: name``: a table or chart fact."""

    required_arguments = 1
    option_spec = {"alt": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        try:
            found, args = facts.find(self.arguments[0], BLOCKS)
        except facts.UnknownFact as err:
            raise self.error(str(err)) from err
        return found.render(self, page_data(self.env), **args)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_role("fact", FactRole())
    app.add_directive("fact", FactDirective)
    return {"version": "4", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 4}
