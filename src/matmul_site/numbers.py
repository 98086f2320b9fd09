"""Every number the site states: looked up or derived from a results file (schema 2), formatted one way.

Torch-free and docutils-free: the Sphinx extension (:mod:`matmul_site.sphinx.results_role`), the
charts and the tests all call this module, so a page, a chart and a test print a number alike.

A *spec* names one value: ``[scope/]subject.field[:style]``.

- scope: omitted for the ladder; ``sweep/8192x4096x4096`` for the sweep run at that shape;
  ``steps/<run_id>`` or ``steps/<after>`` (when one run after that version holds the row) for steps
  (the chapters' timed try-its are steps runs too: ``steps/v2/try-v2-s4.step``);
  ``tryit/<version>`` for the outcome of a try-it edit (the subject is the edit's name).
- subject: an implementation of that run (``v3``, ``cublas``, ``v6-rows-sw16``), or one of the
  file's sections (``gpu``, ``software``, ``method``, ``problem``, ``ladder``, ``sweep``).
- fields of a row: ``tflops``, ``ms``, ``ratio`` (to the same run's cuBLAS, with its 95% interval),
  ``step`` (paired ratio over ``step.over``), ``over`` (its label), ``verdict`` (of the step),
  ``ratio_verdict``, ``sm_clock``, ``power``, ``peak_at_clock`` (the tensor-core peak at the
  row's own SM clock), ``peak_fraction`` (of that), ``datasheet_fraction`` (of the published
  peak), ``config``, ``title``, ``kept``, ``counters.<name>``.
- fields of a try-it edit (``tryit/v5/release-before-wait.outcome``): ``outcome`` (a sentence:
  "exact in all 5 checks (...)", "wrong in 2 of 5 checks: ..."), ``result`` (one word or two: exact,
  wrong, hangs, does not build, crashes), ``title``, ``error``, ``checks`` (how many ran),
  ``wrong_checks`` (how many found bad elements), ``bad`` (the most bad elements in one check),
  ``nonfinite`` (the most still NaN or inf), ``max_error`` (the largest finite error).
- styles: ``x`` (median only, "0.97x"), ``pct`` (as a percentage, interval included), ``num``
  (the bare number).

A value the file does not hold raises :class:`Missing` (pages print :data:`NOT_MEASURED`); a spec
the layout cannot hold raises :class:`SpecError`.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

from matmul_site import paths, results, stats, versions

# Re-exported: pages, charts and tests print through numbers.format_*.
from matmul_site.numfmt import DASH, TIMES, format_interval, format_value, shape_text  # noqa: F401
from matmul_site.tryit_text import tryit_entries, tryit_outcome_text, tryit_runs  # noqa: F401

NOT_MEASURED = "not measured yet"
NOT_RECORDED = "not recorded"
SECTIONS = ("gpu", "software", "method", "problem", "ladder", "sweep")
STYLES = ("", "x", "pct", "num")
ROW_FIELDS = (
    "tflops",
    "ms",
    "ratio",
    "step",
    "over",
    "verdict",
    "ratio_verdict",
    "sm_clock",
    "power",
    "peak_at_clock",
    "peak_fraction",
    "datasheet_fraction",
    "config",
    "title",
    "kept",
    "counters",
)
TRYIT_FIELDS = ("outcome", "result", "title", "error", "checks", "wrong_checks", "bad", "nonfinite", "max_error")
# How a verdict reads in a sentence whose subject is the step ("This step pays: ...").
STEP_WORDS = {stats.PAYS: "pays", stats.COSTS: "costs", stats.WITHIN_NOISE: "is within noise"}
# ... and whose subject is an implementation compared with cuBLAS ("V6 is behind cuBLAS: ...").
RATIO_WORDS = {
    stats.PAYS: "is ahead of cuBLAS",
    stats.COSTS: "is behind cuBLAS",
    stats.WITHIN_NOISE: "is within noise of cuBLAS",
}


class Missing(Exception):
    """The file does not hold this value (yet): the page says "not measured yet"."""


class SpecError(ValueError):
    """A spec that no results file could satisfy (a typo, an unknown field or style)."""


# ---------------------------------------------------------------------------- loading


@functools.lru_cache(maxsize=8)
def _load(path: str, mtime_ns: int, size: int) -> dict[str, Any]:
    return results.load(Path(path))


def load(path: Path | None) -> dict[str, Any] | None:
    """The validated file at ``path`` (None: no file), read once per content (keyed by path, mtime and size)."""
    if path is None or not Path(path).is_file():
        return None
    stat = Path(path).stat()
    return _load(str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)


def load_default() -> dict[str, Any] | None:
    """The results the site shows (:func:`matmul_site.paths.results_file`), or None when there are none yet."""
    try:
        return load(paths.results_file())
    except paths.ResultsFileError as exc:
        raise results.ResultsError(str(exc)) from exc


# ---------------------------------------------------------------------------- runs and rows


def ladder(data: dict[str, Any] | None) -> dict[str, Any] | None:
    return None if data is None else data.get("ladder")


def shape_key(shape: dict[str, int]) -> str:
    """How a spec names a shape: "8192x4096x4096"."""
    return f"{shape['m']}x{shape['n']}x{shape['k']}"


def run_for(data: dict[str, Any] | None, scope: str, impl: str | None = None) -> dict[str, Any]:
    """The run a scope names: "" (the ladder), "sweep/<MxNxK>", "steps/<run_id>" or "steps/<after>" (either
    optionally with "@<MxNxK>")."""
    kind, _, key = scope.partition("/")
    if kind not in ("", "sweep", "steps") or (kind and not key):
        raise SpecError(f"unknown scope {scope!r}: use sweep/<M>x<N>x<K> or steps/<run id or version>")
    if data is None:
        raise Missing(scope)
    if kind == "":
        run = data.get("ladder")
        if run is None:
            raise Missing("ladder")
        return run
    if kind == "sweep":
        for run in data.get("sweep", []):
            if shape_key(run["shape"]) == key:
                return run
        raise Missing(scope)
    # "<run id or version>@<MxNxK>" picks by shape too. One benchmark invocation gives all its runs one
    # run_id, so keep only the runs that hold the row asked for.
    key, _, at = key.partition("@")
    candidates = [r for r in data.get("steps", []) if (not at or shape_key(r["shape"]) == at)]
    candidates = [r for r in candidates if impl is None or impl in r["rows"]]
    runs = [r for r in candidates if r["run_id"] == key] or [r for r in candidates if r["after"] == key]
    if len(runs) > 1 and impl is not None:  # prefer the run in which the row is a step (not a reference)
        runs = [r for r in runs if r["rows"][impl].get("step")] or runs
    if len(runs) > 1:
        ids = ", ".join(r["run_id"] for r in runs)
        raise SpecError(f"{scope}: several steps runs hold {impl} ({ids}); name one by its run_id")
    if not runs:
        raise Missing(scope)
    return runs[0]


def ladder_impls(data: dict[str, Any] | None) -> list[str]:
    """The versions in the ladder, in order, then cuBLAS when measured."""
    run = ladder(data)
    if run is None:
        return []
    ours = sorted((i for i in run["rows"] if versions.is_version_name(i)), key=lambda i: int(i[1:]))
    return ours + [i for i in run["rows"] if i == results.CUBLAS]


def peak_at_clock(data: dict[str, Any], row: dict[str, Any]) -> float:
    """The dense fp16 tensor-core peak at the SM clock this row ran at (Missing when no clock was sampled)."""
    if row.get("sm_clock_mhz") is None:
        raise Missing("sm_clock_mhz")
    return results.peak_tflops_at(data, row["sm_clock_mhz"])


def verdict(interval: dict[str, Any]) -> str:
    """The site's one rule (:func:`matmul_site.stats.verdict`): pays, costs or within noise."""
    return stats.verdict(interval)


def ladder_steps(data: dict[str, Any] | None) -> list[tuple[str, dict[str, Any]]]:
    """(version, step) for every ladder row that carries a step, in ladder order."""
    run = ladder(data)
    return [(i, run["rows"][i]["step"]) for i in ladder_impls(data) if run["rows"][i].get("step")]


# ---------------------------------------------------------------------------- lookup


def _split(spec: str) -> tuple[str, str, str, str]:
    """(scope, subject, field, style) of a spec."""
    body, _, style = spec.strip().partition(":")
    if style not in STYLES:
        raise SpecError(f"unknown style {style!r} in {spec!r}: use one of x, pct, num")
    scope, _, rest = body.rpartition("/")
    subject, _, field = rest.partition(".")
    if not subject or not field:
        raise SpecError(f"unknown result {spec!r}: write subject.field, e.g. v3.tflops")
    return scope, subject, field, style


def lookup(data: dict[str, Any] | None, spec: str) -> tuple[str, Any]:
    """(kind, value) of a spec; kinds: tflops, ms, interval, fraction, mhz, watts, text, config, pct, plain,
    count, error."""
    scope, subject, field, _ = _split(spec)
    if scope.startswith("tryit"):
        return _tryit_field(data, scope, subject, field)
    if not scope and subject in SECTIONS:
        return _section(data, subject, field)
    if not scope and not (versions.is_version_name(subject) or subject == results.CUBLAS):
        raise SpecError(f"unknown result {spec!r}: the ladder holds versions v<N> and cublas; sections: {SECTIONS}")
    head = field.split(".")[0]
    if head not in ROW_FIELDS:
        raise SpecError(f"unknown result {spec!r}: no field {head!r} (fields: {', '.join(ROW_FIELDS)})")
    run = run_for(data, scope, subject)
    row = run["rows"].get(subject)
    if row is None:
        raise Missing(spec)
    return _row_field(data, row, field)


def _row_field(data: dict[str, Any], row: dict[str, Any], field: str) -> tuple[str, Any]:
    simple = {
        "tflops": ("tflops", "tflops"),
        "ms": ("ms", "latency_ms"),
        "ratio": ("interval", "ratio_to_cublas"),
        "sm_clock": ("mhz", "sm_clock_mhz"),
        "power": ("watts", "power_w"),
        "title": ("text", "title"),
        "config": ("config", "config"),
    }
    if field in simple:
        kind, key = simple[field]
        if row.get(key) is None:
            return "missing", NOT_RECORDED
        return kind, row[key]
    if field in ("step", "over", "verdict"):
        step = row.get("step")
        if step is None:
            raise Missing(field)
        if field == "over":
            return "text", versions.label(step["over"])
        return ("interval", step) if field == "step" else ("text", STEP_WORDS[verdict(step)])
    if field == "ratio_verdict":
        return "text", RATIO_WORDS[verdict(row["ratio_to_cublas"])]
    if field == "kept":
        if "kept" not in row:
            raise Missing(field)
        return "text", "kept" if row["kept"] else "not kept"
    if field == "peak_at_clock":
        return "tflops", peak_at_clock(data, row)
    if field == "peak_fraction":
        return "fraction", row["tflops"] / peak_at_clock(data, row)
    if field == "datasheet_fraction":
        peak = data["gpu"].get("published_dense_fp16_tflops")
        if not peak:
            raise Missing(field)
        return "fraction", row["tflops"] / peak
    name = field.partition(".")[2]  # counters.<name>
    counters = row.get("counters")
    if counters is None or counters.get(name) is None:
        return "missing", NOT_RECORDED
    if name == "dram_read_bytes":
        return "mb", counters[name] / 1e6
    if name.startswith("smem_"):  # counts of shared-memory wavefronts
        return "count", int(counters[name])
    return "pct", counters[name]


def _section(data: dict[str, Any] | None, subject: str, field: str) -> tuple[str, Any]:
    if data is None:
        raise Missing(subject)
    if subject == "problem" and field == "shape":
        return "text", shape_text(data["problem"])
    if subject == "gpu" and field == "peak":
        if not data["gpu"].get("published_dense_fp16_tflops"):
            raise Missing(field)
        return "published", data["gpu"]["published_dense_fp16_tflops"]
    if subject == "ladder":
        return _ladder_field(data, field)
    if subject == "sweep":
        return _sweep_field(data, field)
    node: Any = data[subject]
    for part in field.split("."):
        if not isinstance(node, dict) or part not in node:
            raise SpecError(f"unknown result {subject}.{field}: no field {part!r} in the results file's layout")
        node = node[part]
    if node is None:
        return "missing", NOT_RECORDED
    kind = "mhz" if "_mhz" in field else "watts" if field.endswith("_w") else "gb" if field == "memory_gb" else "plain"
    return kind, node


def _ladder_field(data: dict[str, Any], field: str) -> tuple[str, Any]:
    run = ladder(data)
    words = {"pays": stats.PAYS, "costs": stats.COSTS, "within_noise": stats.WITHIN_NOISE}
    if field in words:
        if run is None:
            raise Missing(field)
        chosen = [versions.label(i) for i, step in ladder_steps(data) if verdict(step) == words[field]]
        return "text", ", ".join(chosen) if chosen else "none"
    if field not in ("date", "rounds", "processes", "run_id", "git_commit", "shape"):
        raise SpecError(
            f"unknown result ladder.{field}: use date, rounds, processes, run_id, git_commit, shape, "
            "pays, costs or within_noise"
        )
    if run is None:
        raise Missing(field)
    return ("text", shape_text(run["shape"])) if field == "shape" else ("plain", run[field])


def _sweep_field(data: dict[str, Any], field: str) -> tuple[str, Any]:
    """sweep.shapes (how many), sweep.<impl>.verdicts (at how many shapes it is behind, level, ahead of cuBLAS)."""
    runs = data.get("sweep", [])
    if field == "shapes":
        if not runs:
            raise Missing(field)
        return "plain", len(runs)
    impl, _, what = field.rpartition(".")
    if what != "verdicts" or not impl:
        raise SpecError(f"unknown result sweep.{field}: use sweep.shapes or sweep.<impl>.verdicts")
    found = [verdict(r["rows"][impl]["ratio_to_cublas"]) for r in runs if impl in r["rows"]]
    if not found:
        raise Missing(field)
    counts = {v: found.count(v) for v in (stats.COSTS, stats.WITHIN_NOISE, stats.PAYS)}
    text = (
        f"behind cuBLAS at {counts[stats.COSTS]} of {len(found)} shapes, within noise at "
        f"{counts[stats.WITHIN_NOISE]}, ahead at {counts[stats.PAYS]}"
    )
    return "text", text


# ---------------------------------------------------------------------------- try-it edits


def _tryit_field(data: dict[str, Any] | None, scope: str, name: str, field: str) -> tuple[str, Any]:
    kind, _, version = scope.partition("/")
    if kind != "tryit" or not versions.is_version_name(version):
        raise SpecError(f"unknown scope {scope!r}: a try-it edit is tryit/<version>/<edit>.<field>")
    if field not in TRYIT_FIELDS:
        raise SpecError(f"unknown try-it field {field!r} (fields: {', '.join(TRYIT_FIELDS)})")
    found = [e for e in tryit_entries(data, version) if e["name"] == name]
    if not found:
        raise Missing(f"{scope}/{name}")
    entry = found[0]
    checks = entry["checks"]
    if field == "outcome":
        return "text", tryit_outcome_text(entry)
    if field == "result":
        return "text", entry["outcome"]
    if field in ("title", "error"):
        return ("text", entry[field]) if entry.get(field) else ("missing", NOT_RECORDED)
    if field == "checks":
        return "count", len(checks)
    if field == "wrong_checks":
        return "count", sum(1 for c in checks if c["bad"])
    if not checks:
        raise Missing(f"{scope}/{name}.{field}")
    if field in ("bad", "nonfinite"):
        return "count", max(c[field] for c in checks)
    errs = [c["max_abs_err"] for c in checks if c["max_abs_err"] is not None]
    if not errs:
        return "missing", NOT_RECORDED
    return "error", max(errs)


def render(data: dict[str, Any] | None, spec: str) -> str:
    """The text of ``:result:`spec```: a formatted value, "not measured yet" or "not recorded"."""
    style = _split(spec)[3]
    try:
        kind, value = lookup(data, spec)
    except Missing:
        return NOT_MEASURED
    return format_value(kind, value, style)


def render_verdict(data: dict[str, Any] | None, spec: str) -> str:
    """A comparison that follows the rule: "pays: 1.04x (1.02-1.06)", "is behind cuBLAS: 0.97x (0.96-0.98)"."""
    scope, subject, field, style = _split(spec)
    if field not in ("step", "ratio"):
        raise SpecError(f"a verdict compares a step or a ratio to cuBLAS: {spec!r} names neither")
    try:
        kind, interval = lookup(data, spec)
        if kind != "interval":
            raise Missing(spec)
    except Missing:
        return NOT_MEASURED
    return verdict_text(interval, field, style)


def verdict_text(interval: dict[str, Any], field: str = "step", style: str = "") -> str:
    """The words of the rule for one interval: "pays: 1.04x (1.02-1.06)" (a step) or "is behind cuBLAS: ..."."""
    words = STEP_WORDS if field == "step" else RATIO_WORDS
    return f"{words[verdict(interval)]}: {format_interval(interval, style)}"


def verdict_of(data: dict[str, Any] | None, spec: str) -> str | None:
    """stats.PAYS/COSTS/WITHIN_NOISE for a step or ratio spec, or None when it is not measured."""
    scope, subject, field, _ = _split(spec)
    try:
        kind, interval = lookup(data, f"{scope + '/' if scope else ''}{subject}.{field}")
    except Missing:
        return None
    if kind != "interval":
        raise SpecError(f"{spec!r} is not an interval (use .step or .ratio)")
    return verdict(interval)
