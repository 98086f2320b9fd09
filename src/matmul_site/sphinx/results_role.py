"""Numbers on the site come from the results file, through this extension only. Docutils work only:
what a spec means and how a number prints is :mod:`matmul_site.numbers`; captions are
:mod:`matmul_site.captions`; sentences are in the rst.

Roles::

    :result:`v3.tflops`            a value ("601 TFLOPS"); the spec language is numbers.py's docstring
    :verdict:`v5.step`             a comparison by the rule: "pays: 1.04x (1.02-1.06)", "costs: ...",
                                   "is within noise: 0.99x (0.97-1.02)"; for .ratio: "is behind cuBLAS: ..."

Directives::

    .. results-ladder::            every version and the same run's cuBLAS: TFLOPS, ms, x cuBLAS, step, clock, power
    .. results-performance:: v3    one version's numbers, peak at its clock, config, counters, run (a table)
    .. results-provenance::        hardware, software and method of the whole file
    .. results-steps:: v6          the steps runs after a version, every row (``:impls:`` glob filter);
                                   the chapters' try-it runs only with ``:tryit: only``
    .. results-tryit:: v5          a chapter's try-its: timed changes (step over the tuned config) and
       :recorded: steps/v6/v6-rows-sw16   edits with what the check saw; ``:recorded:`` adds steps rows
    .. results-ladder-steps::      every ladder step with its verdict
    .. results-chart:: plot_v3.py  the chart (plot directive) captioned from the file, or "not measured yet"
       :requires: v3               (a version, any, sweep or steps)
    .. results-when:: v5.step costs    the content only when the rule says so (pays, costs, within-noise,
                                   measured, not-measured); for a try-it edit's ``tryit/v5/<edit>.result``:
                                   exact, wrong, hangs, does-not-build, crashes

No file, or a value the file lacks, renders "not measured yet"; a file that does not load stops
the build with its name and the problem.
"""

from __future__ import annotations

import fnmatch
import re
from collections.abc import Iterator
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective, SphinxRole

from matmul_site import captions, numbers, paths, rerun, results, stats, tryit_text, versions
from matmul_site.sphinx.results_nodes import (
    caption_para,
    check_at_start,
    impl_cell,
    page_data,
    pending,
    table,
    value_node,
)
from matmul_site.sphinx.tryit_table import ResultsTryit

NOT_MEASURED = numbers.NOT_MEASURED
NOT_RECORDED = numbers.NOT_RECORDED
COUNTER_LABELS = {
    "tensor_pipe_pct": "Tensor pipe utilisation (ncu)",
    "dram_throughput_pct": "DRAM throughput, share of peak (ncu)",
    "dram_read_bytes": "Bytes read from DRAM (ncu)",
    "l2_hit_pct": "L2 hit rate (ncu)",
    "smem_store_wavefronts": "Shared-memory store wavefronts (ncu)",
    "smem_store_bank_conflicts": "Of those, from bank conflicts (ncu)",
}
CONDITIONS = {"pays": stats.PAYS, "costs": stats.COSTS, "within-noise": stats.WITHIN_NOISE}


class _Role(SphinxRole):
    render = staticmethod(numbers.render)

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        try:
            value = self.render(page_data(self.env), self.text)
        except numbers.SpecError as err:
            msg = self.inliner.reporter.error(str(err), line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
        if self.text.split(":")[0].endswith(".config") and value != NOT_MEASURED:
            return [nodes.literal(value, value, classes=["result"])], []
        return [value_node(value)], []


class ResultRole(_Role):
    render = staticmethod(numbers.render)


class VerdictRole(_Role):
    render = staticmethod(numbers.render_verdict)


class ResultsLadder(SphinxDirective):
    """Every version and the ladder run's own cuBLAS, which is also the baseline of every ratio."""

    def run(self) -> list[nodes.Node]:
        data = page_data(self.env)
        names = [*versions.names(), results.CUBLAS]
        r = lambda impl, field: numbers.render(data, f"{impl}.{field}")  # noqa: E731
        rows: list[list[str | nodes.Node]] = []
        for impl in names:
            step = numbers.render_verdict(data, f"{impl}.step") if impl != names[0] else "first version"
            if impl == results.CUBLAS:
                step = "the baseline"
            rows.append(
                [
                    impl_cell(self.env, impl),
                    r(impl, "tflops"),
                    r(impl, "ms"),
                    r(impl, "ratio"),
                    step,
                    r(impl, "sm_clock"),
                    r(impl, "power"),
                ]
            )
        header = [
            "Version",
            "TFLOPS",
            "Latency",
            "\u00d7 cuBLAS (95% interval)",
            "Step over the previous version",
            "SM clock",
            "Power",
        ]
        result = table(header, rows, [30, 9, 9, 16, 22, 8, 7], "ladder")
        return [result, caption_para(captions.ladder_caption(data))]


class ResultsLadderSteps(SphinxDirective):
    """Every step of the ladder, its paired ratio and interval, and the verdict of the rule."""

    def run(self) -> list[nodes.Node]:
        data = page_data(self.env)
        steps = numbers.ladder_steps(data)
        if not steps:
            return [pending(f"The ladder's steps are {NOT_MEASURED}.")]
        rows: list[list[str | nodes.Node]] = []
        for impl, step in steps:
            rows.append(
                [
                    impl_cell(self.env, impl),
                    versions.label(step["over"]),
                    numbers.format_interval(step),
                    numbers.STEP_WORDS[numbers.verdict(step)],
                ]
            )
        result = table(["Version", "Over", "Step (95% interval)", "Verdict"], rows, [40, 8, 20, 14], "ladder-steps")
        return [result, caption_para(captions.ladder_caption(data))]


class ResultsPerformance(SphinxDirective):
    """One version's numbers as a table; the sentences about them are in the chapter."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        if name not in versions.names():
            raise self.error(f"results-performance: unknown version {name!r}; known: {', '.join(versions.names())}")
        data = page_data(self.env)
        run = numbers.ladder(data)
        if run is None or name not in run["rows"]:
            return [pending(f"{versions.label(name)}: {NOT_MEASURED}.")]
        r = lambda spec: numbers.render(data, f"{name}.{spec}")  # noqa: E731
        counters = run["rows"][name].get("counters") or {}
        counter_rows: list[list[str | nodes.Node]] = [
            [COUNTER_LABELS.get(key, key.replace("_", " ")), r(f"counters.{key}")]
            for key, value in counters.items()
            if isinstance(value, int | float)  # the summary counters; raw ncu metric names stay in the file
        ] or [["Profiler counters", NOT_RECORDED]]
        rows: list[list[str | nodes.Node]] = [
            ["Throughput", r("tflops")],
            ["Median latency", r("ms")],
            ["\u00d7 cuBLAS, same run (95% interval)", r("ratio")],
            ["Step over the previous version", numbers.render_verdict(data, f"{name}.step")],
            ["SM clock during timing", r("sm_clock")],
            ["Power during timing", r("power")],
            ["Tensor-core peak at that clock", r("peak_at_clock")],
            ["Share of the peak at that clock", r("peak_fraction")],
            ["Share of the datasheet peak (" + numbers.render(data, "gpu.peak") + ")", r("datasheet_fraction")],
            ["Tuned configuration", nodes.literal(text=r("config"))],
            *counter_rows,
            ["Run", f"{run['run_id']}, {run['date']}, commit {run['git_commit']}"],
        ]
        return [table(["Quantity", versions.label(name)], rows, [34, 56], "performance")]


class ResultsProvenance(SphinxDirective):
    """Where and how the recorded numbers were measured."""

    def run(self) -> list[nodes.Node]:
        data = page_data(self.env)
        if data is None:
            return [pending(f"No results file is recorded yet: hardware, software and dates are {NOT_MEASURED}.")]
        g, s, m, p = data["gpu"], data["software"], data["method"], data["problem"]
        peak: nodes.Node = value_node(numbers.render(data, "gpu.peak"))
        if g.get("published_source"):
            peak = nodes.inline()
            peak += value_node(numbers.render(data, "gpu.peak"))
            peak += nodes.Text(" (")
            peak += nodes.reference(g["published_source"], "datasheet", refuri=g["published_source"])
            peak += nodes.Text(")")
        runs = [r for r in (data.get("ladder"), *data.get("sweep", []), *data.get("steps", [])) if r]
        path = paths.results_file()
        rows: list[list[str | nodes.Node]] = [
            [
                "GPU",
                f"{g['name']}, {g['sm_count']} SMs, compute capability {g['compute_capability']}, "
                f"driver {g['driver']}, {numbers.render(data, 'gpu.memory_gb')}",
            ],
            [
                "Clock and power limits",
                f"SM up to {numbers.render(data, 'gpu.clocks_mhz.sm_max')}, memory up to "
                f"{numbers.render(data, 'gpu.clocks_mhz.mem_max')}, power limit "
                f"{numbers.render(data, 'gpu.power_limit_w')}",
            ],
            ["Datasheet dense FP16 peak", peak],
            ["Software", f"CUDA {s['cuda']}, torch {s['torch']}, Tilus {s['tilus']}, Python {s['python']}"],
            ["Problem", f"{numbers.shape_text(p)}, {p['dtype']} inputs, {p['accumulate']} accumulation"],
            [
                "Timer",
                f"{m['timer']}, {m['warmup']} warm-up and {m['repeats']} timed calls per round; "
                f"L2 flush: {m['l2_flush']}",
            ],
            ["Order", m["order"]],
            ["Statistic", f"{m['statistic']}; {m['interval']}"],
            ["Clocks and power", m["clocks"]],
            *[[f"Run {run_id} (earlier method)", note] for run_id, note in (m.get("earlier_runs") or {}).items()],
            ["Dates", captions.dates(runs) if runs else NOT_MEASURED],
            ["Results file", f"plots/results/{path.name}" if path else NOT_MEASURED],
        ]
        return [table(["", "Recorded in the results file"], rows, [24, 66], "provenance")]


class ResultsSteps(SphinxDirective):
    """Every row of the steps runs after one version (kept or not, references included)."""

    required_arguments = 1
    option_spec = {"impls": directives.unchanged, "kept": directives.unchanged, "tryit": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        data = page_data(self.env)
        after = self.arguments[0].lower()
        tryit = self.options.get("tryit", "exclude")
        if tryit not in ("exclude", "only"):
            raise self.error("results-steps: :tryit: is exclude (the default) or only")
        # A chapter's try-it runs are steps runs titled "Try it: ..."; they are no step of the ladder.
        runs = [
            r
            for r in (data or {}).get("steps", [])
            if r["after"] == after and results.is_tryit_run(r) == (tryit == "only")
        ]
        patterns = [p.strip() for p in self.options.get("impls", "*").split(",") if p.strip()]
        kept = self.options.get("kept")
        if kept not in (None, "yes", "no"):
            raise self.error("results-steps: :kept: is yes or no")
        rows: list[list[str | nodes.Node]] = []
        for run in runs:
            for impl, row in run["rows"].items():
                if impl == results.CUBLAS or not any(fnmatch.fnmatchcase(impl, p) for p in patterns):
                    continue
                if kept is not None and (row.get("kept", False) != (kept == "yes") or not row.get("step")):
                    continue  # with :kept:, only attempts (rows with a step), not the run's baseline
                step = numbers.verdict_text(row["step"]) if row.get("step") else "the run's baseline"
                over = versions.label(row["step"]["over"]) if row.get("step") else ""
                rows.append(
                    [
                        nodes.literal(impl, impl),
                        row["title"],
                        run["title"],
                        f"{row['tflops']:.0f}",
                        numbers.format_interval(row["ratio_to_cublas"]),
                        f"{step} over {over}" if over else "reference",
                        "kept" if row.get("kept") else "no",
                    ]
                )
        if not rows:
            return [pending(f"No attempts after {after.upper()} are recorded yet: {NOT_MEASURED}.")]
        header = [
            "Variant",
            "What changed",
            "Run",
            "TFLOPS",
            "\u00d7 cuBLAS (95% interval)",
            "Step (95% interval)",
            f"In {after.upper()}",
        ]
        result = table(header, rows, [14, 26, 14, 7, 14, 20, 6], "steps")
        return [result, caption_para(captions.steps_caption(data, runs))]


def _escape(text: str) -> str:
    for ch in "\\*`|_":
        text = text.replace(ch, "\\" + ch)
    return text


class ResultsChart(SphinxDirective):
    """A chart from plots/ through the plot directive, captioned from the file; or plain words when unmeasured."""

    required_arguments = 1
    option_spec = {"requires": directives.unchanged_required, "alt": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        script = self.arguments[0]
        if not (paths.PLOTS_DIR / script).is_file():
            raise self.error(f"results-chart: plots/{script} does not exist")
        self.env.note_dependency(str(paths.PLOTS_DIR / script))
        data = page_data(self.env)
        needs = self.options.get("requires", "any")
        if needs == "sweep":
            ready, caption = bool(data and data.get("sweep")), captions.chart_caption(script, data)
            missing = f"The shape sweep is {NOT_MEASURED}."
        elif needs in ("any", "steps"):
            ready = numbers.ladder(data) is not None and (needs == "any" or bool(numbers.ladder_steps(data)))
            caption = captions.chart_caption(script, data)
            missing = f"No ladder is measured yet, so the chart is not drawn: {NOT_MEASURED}."
        elif needs in versions.names():
            data, rerun_on = rerun.ladder_for(needs, data)
            ready = numbers.ladder(data) is not None and needs in numbers.ladder(data)["rows"]
            caption = captions.chart_caption(script, data, rerun_on=rerun_on)
            missing = f"{versions.label(needs)} is not measured yet, so its chart is not drawn: {NOT_MEASURED}."
        else:
            raise self.error(f"results-chart: :requires: {needs!r} is not a version, any, sweep or steps")
        if not ready:
            return [pending(missing)]
        alt = self.options.get("alt", f"Chart drawn by plots/{script} from the results file")
        link = f":doc:`{captions.METHOD_LINK} </method>`."
        lines = [f".. plot:: {script}", f"   :alt: {alt}", f"   :caption: {_escape(caption)} {link}", ""]
        container = nodes.container(classes=["results-chart"])
        self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), self.content_offset, container)
        return [container]


class ResultsWhen(SphinxDirective):
    """Its content, parsed, only when the data says so: ``.. results-when:: v5.step costs``."""

    required_arguments = 2
    has_content = True

    def run(self) -> list[nodes.Node]:
        spec, condition = self.arguments
        data = page_data(self.env)
        if spec.startswith("tryit/"):  # an edit's outcome: exact, wrong, hangs, does-not-build, crashes
            try:
                holds = tryit_text.tryit_holds(data, spec, condition)
            except numbers.SpecError as err:
                raise self.error(f"results-when: {err}") from err
            return self._content() if holds else []
        if condition not in (*CONDITIONS, "measured", "not-measured"):
            raise self.error(f"results-when: {condition!r}: use {', '.join(CONDITIONS)}, measured or not-measured")
        try:
            rule = numbers.verdict_of(data, spec)
        except numbers.SpecError as err:
            raise self.error(f"results-when: {err}") from err
        if condition == "measured":
            holds = rule is not None
        elif condition == "not-measured":
            holds = rule is None
        else:
            holds = rule == CONDITIONS[condition]
        return self._content() if holds else []

    def _content(self) -> list[nodes.Node]:
        container = nodes.container(classes=["results-when"])
        self.state.nested_parse(self.content, self.content_offset, container)
        return list(container.children)


def iter_specs(text: str) -> Iterator[tuple[str, str]]:
    """(role, spec) of every :result:/:verdict: in a piece of reStructuredText (the tests use this)."""
    yield from re.findall(r":(result|verdict):`([^`]+)`", text)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", check_at_start)
    app.add_role("result", ResultRole())
    app.add_role("verdict", VerdictRole())
    for name, directive in (
        ("results-ladder", ResultsLadder),
        ("results-ladder-steps", ResultsLadderSteps),
        ("results-performance", ResultsPerformance),
        ("results-provenance", ResultsProvenance),
        ("results-steps", ResultsSteps),
        ("results-tryit", ResultsTryit),
        ("results-chart", ResultsChart),
        ("results-when", ResultsWhen),
    ):
        app.add_directive(name, directive)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 2}
