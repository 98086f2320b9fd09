"""Numbers on the site come from the results file, through this extension only.

Role::

    :result:`v3.tflops`                  -> "601 TFLOPS"
    :result:`v3.fraction_of_cublas`      -> "80%"      (:x gives "0.80x", :num the bare number)
    :result:`v3.speedup`                 -> "1.10x"    (against the previous version)
    :result:`v3.fraction_of_cublas_entry` -> "82%"     (against the separate cublas entry, not the same processes)
    :result:`v3.config`                  -> block_m=128, block_n=128, block_k=64
    :result:`gpu.name`, :result:`problem.shape`, :result:`software.tilus`, :result:`method.repeats`
    :result:`cublas.same_process_min_tflops`  -> slowest cuBLAS of the versions' own processes (also _max_tflops,
                                             _min_ms, _max_ms); :result:`cublas.same_process_spread` -> "9%"

cuBLAS appears twice in the file: every version's entry holds the cuBLAS latency
timed in that version's own processes (``cublas_latency_ms``, behind "% of cuBLAS"),
and the ``cublas`` entry is cuBLAS timed on its own in fresh processes (the charts'
dashed line). The ``same_process_*`` values summarise the first kind.

Directives::

    .. results-ladder::                  the V0-V6 table: technique, TFLOPS, ms, % of cuBLAS
    .. results-performance:: v3          one version: numbers, tuned config, counters, provenance
    .. results-provenance::              hardware, software and method of the whole file
    .. results-steps:: v6                the attempts recorded after a version (experiments/steps.py)
    .. results-chart:: plot_v3.py        the chart (plot directive) with a caption from the file
       :requires: v3                     ... or the plain words "not measured yet" (no placeholder)

A value that is not in the file renders as "not measured yet". No file at all
means every value is not measured yet; a file that exists but does not load is a
build error that names the file and the problem.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.docutils import SphinxDirective, SphinxRole

from matmul_site import charts as chartlib
from matmul_site import results

NOT_MEASURED = chartlib.NOT_MEASURED
NOT_RECORDED = "not recorded"
ENTRY_NAMES = (*chartlib.VERSIONS, "cublas")
SECTIONS = ("gpu", "software", "method", "problem")
DERIVED = ("speedup", "fraction_of_peak", "cublas_tflops", "fraction_of_cublas_entry")
# Over the versions' own-process cuBLAS timings (cublas_latency_ms of v0..v6), not the cublas entry.
SAME_PROCESS = (
    "same_process_min_ms",
    "same_process_max_ms",
    "same_process_min_tflops",
    "same_process_max_tflops",
    "same_process_spread",
)
COUNTER_LABELS = {
    "tensor_pipe_pct": "Tensor pipe utilisation (ncu)",
    "dram_throughput_pct": "DRAM throughput, share of peak (ncu)",
}


class Missing(Exception):
    """The file does not hold this value (yet)."""


# ---------------------------------------------------------------------------- values and formats


def lookup(data: dict[str, Any] | None, path: str) -> Any:
    """The raw value at a dotted path ("v3.tflops", "gpu.clocks_mhz.sm_max"), derived values included."""
    parts = path.split(".")
    head = parts[0]
    if head not in ENTRY_NAMES and head not in SECTIONS:
        raise ValueError(f"unknown result {path!r}: start with one of {', '.join(ENTRY_NAMES + SECTIONS)}")
    if data is None:
        raise Missing(path)
    if head == "cublas" and len(parts) == 2 and parts[1] in SAME_PROCESS:
        return _same_process_cublas(data, parts[1])
    if head in ENTRY_NAMES:
        node: Any = data["entries"].get(head)
        if node is None:
            raise Missing(path)
        if len(parts) == 2 and parts[1] in DERIVED:
            return _derived(data, head, parts[1])
    else:
        if head == "problem" and parts[1:] == ["shape"]:
            p = data["problem"]
            return f"{p['m']}\u00d7{p['n']}\u00d7{p['k']}"
        node = data[head]
    for part in parts[1:]:
        if node is None:
            return None  # a group the benchmark could not record (counters without ncu): "not recorded"
        if not isinstance(node, dict) or part not in node:
            raise ValueError(f"unknown result {path!r}: no field {part!r} in the results file's layout")
        node = node[part]
    return node


def _derived(data: dict[str, Any], name: str, what: str) -> float:
    e = data["entries"][name]
    if what == "speedup":
        if name not in chartlib.VERSIONS or name == "v0":
            raise ValueError(f"{name}.speedup: only V1-V6 have a previous version")
        previous = data["entries"].get(f"v{int(name[1]) - 1}")
        if previous is None:
            raise Missing(f"{name}.speedup")
        return e["tflops"] / previous["tflops"]
    if what == "fraction_of_peak":
        peak = data["gpu"].get("published_dense_fp16_tflops")
        if not peak:
            raise Missing(f"{name}.fraction_of_peak")
        return e["tflops"] / peak
    if what == "fraction_of_cublas_entry":  # against the separate cublas entry (the charts' dashed line)
        cublas = data["entries"].get("cublas")
        if cublas is None or name == "cublas":
            raise Missing(f"{name}.fraction_of_cublas_entry")
        return e["tflops"] / cublas["tflops"]
    p = data["problem"]  # cublas_tflops: cuBLAS timed in the same processes as this entry
    return 2.0 * p["m"] * p["n"] * p["k"] / (e["cublas_latency_ms"] * 1e-3) / 1e12


def _same_process_cublas(data: dict[str, Any], what: str) -> float:
    """Range of the cuBLAS latencies timed inside the versions' own processes (one per version entry)."""
    times = [e["cublas_latency_ms"] for n, e in data["entries"].items() if n != "cublas" and e.get("cublas_latency_ms")]
    if not times:
        raise Missing(f"cublas.{what}")
    p = data["problem"]
    flop = 2.0 * p["m"] * p["n"] * p["k"]
    return {
        "same_process_min_ms": min(times),
        "same_process_max_ms": max(times),
        "same_process_min_tflops": flop / (max(times) * 1e-3) / 1e12,  # the slowest cuBLAS
        "same_process_max_tflops": flop / (min(times) * 1e-3) / 1e12,  # the fastest cuBLAS
        "same_process_spread": max(times) / min(times) - 1.0,
    }[what]


def _unit(path: str) -> str:
    last = path.split(".")[-1]
    if last.endswith("tflops"):
        return "tflops"
    if last.endswith("_ms"):
        return "ms"
    if last.startswith("fraction_of") or last.endswith("_spread"):
        return "fraction"
    if last == "speedup":
        return "x"
    if last.endswith("_pct"):
        return "pct_value"
    if "_mhz" in path:
        return "mhz"
    if last == "memory_gb":
        return "gb"
    return "plain"


def format_number(value: float, unit: str, style: str | None = None) -> str:
    """How the site prints a number of a given kind; the number test uses the same rules."""
    if style == "num":
        return f"{value:.0f}" if unit in ("tflops", "mhz", "gb") else f"{value:g}"
    if style == "x" or (unit == "x" and style is None):
        return f"{value:.2f}\u00d7"
    if style == "pct" or (unit == "fraction" and style is None):
        return f"{100 * value:.0f}%"
    if unit == "tflops":
        return f"{value:.0f} TFLOPS"
    if unit == "ms":
        return f"{value:.3f} ms"
    if unit == "pct_value":
        return f"{value:.0f}%"
    if unit == "mhz":
        return f"{value:.0f} MHz"
    if unit == "gb":
        return f"{value:.0f} GB"
    return f"{value:g}" if isinstance(value, float) else str(value)


def render(data: dict[str, Any] | None, spec: str) -> str:
    """The text of ``:result:`spec```: a formatted value, "not measured yet" or "not recorded"."""
    path, _, style = spec.partition(":")
    if style not in ("", "num", "pct", "x"):
        raise ValueError(f"unknown format {style!r} in {spec!r}: use num, pct or x")
    try:
        value = lookup(data, path.strip())
    except Missing:
        return NOT_MEASURED
    if value is None:
        return NOT_RECORDED  # e.g. counters when ncu was not available on the benchmark machine
    unit = _unit(path)
    if isinstance(value, dict):
        return ", ".join(f"{k}={v}" for k, v in value.items()) if value else "defaults (no tuning knobs)"
    if isinstance(value, list):
        return ", ".join(format_number(v, unit, style or None) for v in value)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return format_number(value, unit, style or None)


def numbers_held(data: dict[str, Any] | None) -> list[float]:
    """Every number the file holds or the site derives from it (percentages also as 0-100)."""
    found: list[float] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)
        elif isinstance(node, (int, float)) and not isinstance(node, bool):
            found.append(float(node))

    if data is None:
        return found
    walk(data)
    for name in data["entries"]:
        for what in DERIVED:
            try:
                found.append(_derived(data, name, what))
            except (Missing, ValueError, KeyError, ZeroDivisionError):
                pass
    for what in SAME_PROCESS:
        try:
            found.append(_same_process_cublas(data, what))
        except Missing:
            pass
    found += [100 * v for v in list(found) if abs(v) <= 10]
    return found


# ---------------------------------------------------------------------------- loading, once per build


def _load(app: Sphinx) -> None:
    try:
        path = chartlib.results_path()
        app.hopper_results_path = path  # type: ignore[attr-defined]
        app.hopper_results = None if path is None else results.load(path)  # type: ignore[attr-defined]
    except results.ResultsError as err:
        raise ExtensionError(f"the results file cannot be used: {err}") from err


def _data(env: Any) -> dict[str, Any] | None:
    path = env.app.hopper_results_path
    env.note_dependency(str(path if path is not None else results.results_dir()))
    return env.app.hopper_results


def _text(value: str) -> nodes.inline:
    classes = ["result", "not-measured"] if value in (NOT_MEASURED, NOT_RECORDED) else ["result"]
    return nodes.inline(value, value, classes=classes)


class ResultRole(SphinxRole):
    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        try:
            value = render(_data(self.env), self.text)
        except ValueError as err:
            msg = self.inliner.reporter.error(str(err), line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
        if self.text.split(":")[0].endswith(".config") and value != NOT_MEASURED:
            return [nodes.literal(value, value, classes=["result"])], []
        return [_text(value)], []


# ---------------------------------------------------------------------------- tables


def _cell(content: str | nodes.Node) -> nodes.entry:
    cell = nodes.entry()
    cell += nodes.paragraph("", "", _text(content) if isinstance(content, str) else content)
    return cell


def _table(header: list[str], rows: list[list[str | nodes.Node]], widths: list[int], kind: str) -> nodes.table:
    table = nodes.table(classes=["results-table", kind])
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for title in header:
        entry = nodes.entry()
        entry += nodes.paragraph(title, title)
        row += entry
    head += row
    body = nodes.tbody()
    group += body
    for values in rows:
        row = nodes.row()
        for value in values:
            row += _cell(value)
        body += row
    return table


def _doc_link(env: Any, name: str) -> nodes.Node:
    ref = addnodes.pending_xref(
        "", refdomain="std", reftype="doc", reftarget=f"/chapters/{name}", refexplicit=True, refdoc=env.docname
    )
    ref += nodes.inline(chartlib.label(name), chartlib.label(name))
    return ref


def _para(*parts: str | nodes.Node) -> nodes.paragraph:
    para = nodes.paragraph()
    for part in parts:
        para += nodes.Text(part) if isinstance(part, str) else part
    return para


class ResultsLadder(SphinxDirective):
    """The version ladder: one row per version and one for cuBLAS."""

    def run(self) -> list[nodes.Node]:
        data = _data(self.env)
        rows: list[list[str | nodes.Node]] = []
        for name in ENTRY_NAMES:
            first = _doc_link(self.env, name) if name in chartlib.VERSIONS else chartlib.label(name)
            technique = render(data, f"{name}.technique")
            rows.append([
                first,
                chartlib.TECHNIQUES[name] if technique == NOT_MEASURED else technique,
                render(data, f"{name}.tflops"),
                render(data, f"{name}.latency_ms"),
                render(data, f"{name}.fraction_of_cublas"),
            ])  # fmt: skip
        header = ["Version", "Technique", "TFLOPS", "Latency", "% of cuBLAS"]
        table = _table(header, rows, [8, 36, 14, 14, 14], "ladder")
        if data is None:
            note = _para(
                "No benchmark results are recorded yet, so every number below says ",
                _text(NOT_MEASURED),
                ". The benchmark fills them in on a Hopper GPU.",
            )
        else:
            note = _para(
                "Measured on the ",
                _text(render(data, "gpu.name")),
                " at ",
                _text(render(data, "problem.shape")),
                f" ({data['problem']['dtype']} inputs, {data['problem']['accumulate']} accumulation), "
                f"{data['method']['statistic']}. Each version's \u201c% of cuBLAS\u201d compares it with cuBLAS timed "
                "in that version's own processes; the cuBLAS row is cuBLAS's own entry, timed in separate fresh "
                "processes in the same session. ",
                "Dates: ",
                _text(chartlib.dates(data)),
                ".",
            )
        return [note, table]


class ResultsPerformance(SphinxDirective):
    """One version's numbers, tuned configuration, profiler counters and provenance."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        name = self.arguments[0]
        if name not in chartlib.VERSIONS:
            raise self.error(f"results-performance: unknown version {name!r}; use v0 to v6")
        data = _data(self.env)
        label = chartlib.label(name)
        if chartlib.entry(data, name) is None:
            return [
                _para(
                    f"{label} is ",
                    _text(NOT_MEASURED),
                    ": this section will show its throughput, latency, tuned configuration and profiler "
                    "counters once the benchmark has run it on a Hopper GPU. Nothing here is estimated.",
                )
            ]
        assert data is not None
        r = lambda spec: _text(render(data, spec))  # noqa: E731
        parts: list[str | nodes.Node] = [
            f"On the {data['gpu']['name']}, {label} computes the ",
            r("problem.shape"),
            " product in ",
            r(f"{name}.latency_ms"),
            ", or ",
            r(f"{name}.tflops"),
            ": ",
            r(f"{name}.fraction_of_cublas"),
            " of cuBLAS, which reached ",
            r(f"{name}.cublas_tflops"),
            " in the same processes.",
        ]
        if chartlib.entry(data, "cublas") is not None:
            parts += [" The chart's dashed line is the separate cuBLAS entry (", r("cublas.tflops"),
                      ", timed in its own processes).",]  # fmt: skip
        if name != "v0":
            previous = f"v{int(name[1]) - 1}"
            if chartlib.entry(data, previous) is None:
                parts.append(f" {chartlib.label(previous)} is not measured yet, so there is no step to compare.")
            elif data["entries"][name]["tflops"] < data["entries"][previous]["tflops"]:
                parts += [
                    f" This step did not pay on this GPU: {label} is slower than {chartlib.label(previous)} (",
                    r(f"{previous}.tflops"),
                    "); the counters below show where the time went.",
                ]
            else:
                parts += [f" Against {chartlib.label(previous)} that is ", r(f"{name}.speedup"), "."]
        counters = data["entries"][name].get("counters")
        counter_rows: list[list[str | nodes.Node]]
        if counters:
            counter_rows = [
                [COUNTER_LABELS.get(key, key.replace("_", " ")), render(data, f"{name}.counters.{key}")]
                for key in counters
            ]
        else:
            counter_rows = [["Profiler counters", NOT_RECORDED + " (ncu was not available in the benchmark run)"]]
        rows: list[list[str | nodes.Node]] = [
            ["Throughput", r(f"{name}.tflops")],
            ["Median latency", r(f"{name}.latency_ms")],
            ["Per-process medians", r(f"{name}.process_latencies_ms")],
            ["cuBLAS in this version's processes", r(f"{name}.cublas_tflops")],
            ["Fraction of cuBLAS", r(f"{name}.fraction_of_cublas")],
            ["Fraction of the published dense FP16 peak", r(f"{name}.fraction_of_peak")],
            ["Tuned configuration", nodes.literal(text=render(data, f"{name}.config"))],
            *counter_rows,
            ["Measured", _text(f"{render(data, f'{name}.date')}, commit {render(data, f'{name}.git_commit')}")],
            ["GPU", _text(_gpu_text(data))],
            ["Software", _text(_software_text(data))],
            ["Method", _text(_method_text(data))],
        ]
        return [_para(*parts), _table(["Quantity", label], rows, [30, 60], "performance")]


def _gpu_text(data: dict[str, Any]) -> str:
    g = data["gpu"]
    return f"{g['name']}, {g['sm_count']} SMs, compute capability {g['compute_capability']}, driver {g['driver']}"


def _clocks_text(data: dict[str, Any]) -> str:
    c = data["gpu"]["clocks_mhz"]
    seen = c.get("sm_seen_during_run") or []
    during = f"; SM clock seen during the run {min(seen)}-{max(seen)} MHz" if seen else ""
    return f"SM up to {c['sm_max']} MHz, memory up to {c['mem_max']} MHz{during}"


def _software_text(data: dict[str, Any]) -> str:
    s = data["software"]
    return f"CUDA {s['cuda']}, torch {s['torch']}, Tilus {s['tilus']}, Python {s['python']}"


def _method_text(data: dict[str, Any]) -> str:
    m = data["method"]
    return (
        f"{m['timer']}, {m['warmup']} warm-up calls, {m['repeats']} timed calls per process, "
        f"{m['statistic']}; L2 flush: {m['l2_flush']}"
    )


class ResultsProvenance(SphinxDirective):
    """Where and how the recorded numbers were measured."""

    def run(self) -> list[nodes.Node]:
        data = _data(self.env)
        if data is None:
            return [_para("No results file is recorded yet: hardware, software and dates are ", _text(NOT_MEASURED),
                          ".")]  # fmt: skip
        source = data["gpu"].get("published_source") or ""
        peak: list[str | nodes.Node] = [_text(render(data, "gpu.published_dense_fp16_tflops"))]
        if source:
            peak += [" (", nodes.reference(source, "datasheet", refuri=source), ")"]
        p = nodes.inline()
        for part in peak:
            p += part if isinstance(part, nodes.Node) else nodes.Text(part)
        rows: list[list[str | nodes.Node]] = [
            ["GPU", _gpu_text(data)],
            ["Memory", render(data, "gpu.memory_gb")],
            ["Clocks", _clocks_text(data)],
            ["Published dense FP16 peak", p],
            ["Software", _software_text(data)],
            [
                "Problem",
                f"{render(data, 'problem.shape')}, {data['problem']['dtype']} inputs, "
                f"{data['problem']['accumulate']} accumulation",
            ],  # fmt: skip
            ["Method", _method_text(data)],
            ["Dates", chartlib.dates(data)],
            ["Results file", f"plots/results/{Path(self.env.app.hopper_results_path).name}"],
        ]
        return [_table(["", "Recorded in the results file"], rows, [24, 66], "provenance")]


def _escape(text: str) -> str:
    for ch in "\\*`|_":
        text = text.replace(ch, "\\" + ch)
    return text


class ResultsSteps(SphinxDirective):
    """The attempts recorded after one version, kept or not, round by round."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        data = _data(self.env)
        impl = self.arguments[0].lower()
        steps = [row for row in (data or {}).get("steps", []) if row["impl"] == impl]
        if not steps:
            return [_para("No attempts after ", impl.upper(), " are recorded yet: ", _text(NOT_MEASURED), ".")]
        rows: list[list[str | nodes.Node]] = []
        for row in steps:
            low, high = row["fraction_range"]
            rows.append([
                nodes.literal(row["name"], row["name"]),
                row["change"],
                row["round"],
                _text(f"{row['tflops']:.0f}"),
                _text(f"{row['fraction_of_cublas']:.1%}"),
                _text(f"{low:.0%}\u2013{high:.0%}"),
                "kept" if row["kept"] else "no",
            ])  # fmt: skip
        header = ["Variant", "What changed", "Run", "TFLOPS", "\u00d7 cuBLAS", "Range", "In V6"]
        table = _table(header, rows, [16, 36, 8, 9, 10, 11, 7], "steps")
        rounds = sorted({row["round"] for row in steps})
        counts = ", ".join(f"{r}: {next(x['rounds'] for x in steps if x['round'] == r)} rounds" for r in rounds)
        note = _para(
            "Each run timed its variants in one process at ",
            _text(render(data, "problem.shape")),
            ", every variant between two cuBLAS timings in each round and in a shuffled order (",
            counts,
            "; dates: ",
            _text(", ".join(sorted({row["date"] for row in steps}))),
            "). \u201c\u00d7 cuBLAS\u201d is the median over rounds of cuBLAS's time that round over the "
            "variant's; the range is the lowest and highest round. Compare rows within a run: the GPU's clocks "
            "differ between runs, and these are not the benchmark's fresh-process medians.",
        )
        return [note, table]


class ResultsChart(SphinxDirective):
    """A chart from plots/ through the plot directive, captioned from the file; or plain words when unmeasured."""

    required_arguments = 1
    option_spec = {"requires": directives.unchanged_required, "alt": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        script = self.arguments[0]
        plots = chartlib.ROOT / "plots"
        if not (plots / script).is_file():
            raise self.error(f"results-chart: plots/{script} does not exist")
        self.env.note_dependency(str(plots / script))
        self.env.note_dependency(str(plots / "chartlib.py"))
        data = _data(self.env)
        needs = self.options.get("requires", "any")
        if needs == "sweep":
            ready, caption = bool(data and data.get("sweep")), chartlib.sweep_caption(data)
            what = "The shape sweep is"
        elif needs == "any":
            ready, caption = bool(chartlib.measured_versions(data)), chartlib.caption(data)
            what = "No version is measured yet, so the chart is"
        else:
            ready, caption = chartlib.entry(data, needs) is not None, chartlib.caption(data)
            what = f"{chartlib.label(needs)} is not measured yet, so its chart is"
        if not ready:
            words = f"{what} not drawn: {NOT_MEASURED}." if needs != "sweep" else f"{what} {NOT_MEASURED}."
            return [nodes.paragraph(words, words, classes=["chart-pending"])]
        alt = self.options.get("alt", f"Chart drawn by plots/{script} from the results file")
        lines = [f".. plot:: {script}", f"   :alt: {alt}", f"   :caption: {_escape(caption)}", ""]
        container = nodes.container(classes=["results-chart"])
        self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), self.content_offset, container)
        return [container]


def iter_specs(text: str) -> Iterator[str]:
    """Every :result:`...` spec in a piece of reStructuredText (the tests use this)."""
    yield from re.findall(r":result:`([^`]+)`", text)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", _load)
    app.add_role("result", ResultRole())
    app.add_directive("results-ladder", ResultsLadder)
    app.add_directive("results-performance", ResultsPerformance)
    app.add_directive("results-provenance", ResultsProvenance)
    app.add_directive("results-steps", ResultsSteps)
    app.add_directive("results-chart", ResultsChart)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
