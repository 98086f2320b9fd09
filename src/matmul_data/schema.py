"""The results file's schema: its constants, and the checks that a file (or a run, a row, a try-it) follows it.

:mod:`matmul_data.results` re-exports what its callers use (``validate``, ``ResultsError``, ``CUBLAS``,
``tflops``, ...); the layout itself is documented there.
"""

from __future__ import annotations

import math
import re
from typing import Any

from matmul_data import paths, stats

SCHEMA_VERSION = 3
VERDICTS = (stats.PAYS, stats.COSTS, stats.WITHIN, stats.UNRESOLVED)
HOW_TO_CREATE = paths.HOW_TO_CREATE
CUBLAS = "cublas"
# A steps run with this title prefix is a chapter's "Try it" (experiments/tryit.py), not a step of the ladder.
TRYIT_TITLE_PREFIX = "Try it: "
PROOF_TITLE_PREFIX = "the warm-up's proof"  # steps runs that test the method (docs/method.rst), not a kernel
TRYIT_OUTCOMES = ("exact", "wrong", "hangs", "does not build", "crashes")

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Derived numbers must agree with the ones they come from (they are computed, never typed).
_REL_TOL = 1e-3


class ResultsError(ValueError):
    """A results file is missing, unreadable or does not follow the schema; the message says which and why."""


# --- validation ---------------------------------------------------------------------------------


def _fail(field: str, problem: str, value: Any) -> ResultsError:
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return ResultsError(f"field {field!r} {problem}, got {shown}")


def _dict(data: Any, field: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise _fail(field, "must be an object", data)
    return data


def _get(data: dict[str, Any], key: str, field: str) -> Any:
    if key not in data:
        raise ResultsError(f"field {field + '.' + key if field else key!r} is missing")
    return data[key]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _checked(data: dict[str, Any], key: str, field: str, optional: bool, ok: Any, problem: str) -> None:
    """Fail with ``problem`` unless ``ok`` holds of the value (which ``optional`` lets be null)."""
    value = _get(data, key, field)
    if not (value is None and optional) and not ok(value):
        raise _fail(f"{field}.{key}" if field else key, problem, value)


def _number(data: dict[str, Any], key: str, field: str, *, positive: bool = True, optional: bool = False) -> None:
    problem = "must be a positive number" if positive else "must be a finite number"
    _checked(data, key, field, optional, lambda v: _is_number(v) and not (positive and v <= 0), problem)


def _integer(data: dict[str, Any], key: str, field: str, *, minimum: int = 1, optional: bool = False) -> None:
    def ok(value: Any) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and value >= minimum

    _checked(data, key, field, optional, ok, f"must be an integer >= {minimum}")


def _string(data: dict[str, Any], key: str, field: str, *, optional: bool = False) -> None:
    _checked(data, key, field, optional, lambda v: isinstance(v, str) and bool(v), "must be a non-empty string")


def _shape(data: dict[str, Any], key: str, field: str) -> dict[str, Any]:
    """A shape {m, n, k} of positive integers."""
    shape = _dict(_get(data, key, field), f"{field}.{key}" if field else key)
    for dim in ("m", "n", "k"):
        _integer(shape, dim, f"{field}.{key}" if field else key)
    return shape


def _date(data: dict[str, Any], key: str, field: str) -> None:
    _string(data, key, field)
    if not _DATE.fullmatch(data[key]):
        raise _fail(f"{field}.{key}", "must be a date YYYY-MM-DD", data[key])


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL_TOL)


def tflops(m: int, n: int, k: int, ms: float) -> float:
    """Dense matmul throughput: 2*M*N*K floating-point operations in ``ms`` milliseconds."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def _validate_gpu(gpu: Any) -> None:
    gpu = _dict(gpu, "gpu")
    _string(gpu, "name", "gpu")
    _integer(gpu, "sm_count", "gpu")
    _string(gpu, "compute_capability", "gpu")
    _number(gpu, "memory_gb", "gpu")
    _string(gpu, "driver", "gpu")
    clocks = _dict(_get(gpu, "clocks_mhz", "gpu"), "gpu.clocks_mhz")
    _number(clocks, "sm_max", "gpu.clocks_mhz", optional=True)
    _number(clocks, "mem_max", "gpu.clocks_mhz", optional=True)
    _number(gpu, "power_limit_w", "gpu", optional=True)
    _number(gpu, "published_dense_fp16_tflops", "gpu", optional=True)
    _string(gpu, "published_source", "gpu", optional=True)
    if (gpu["published_dense_fp16_tflops"] is None) != (gpu["published_source"] is None):
        raise _fail("gpu.published_source", "must be given exactly when published_dense_fp16_tflops is", gpu)


def _interval(data: dict[str, Any], key: str, field: str, band: float | None = None) -> None:
    value = _dict(_get(data, key, field), f"{field}.{key}")
    for part in ("median", "low", "high"):
        _number(value, part, f"{field}.{key}")
    if not value["low"] <= value["median"] <= value["high"]:
        raise _fail(f"{field}.{key}", "must have low <= median <= high", value)
    if "verdict" in value:
        if value["verdict"] not in VERDICTS:
            raise _fail(f"{field}.{key}.verdict", f"must be one of {', '.join(VERDICTS)}", value["verdict"])
        if band is not None and (value.get("band") != band or value["verdict"] != stats.band_verdict(value, band)):
            raise _fail(f"{field}.{key}.verdict", f"does not follow the band of {band:.3f}", value)


def _validate_row(
    impl: str, row: Any, run: dict[str, Any], field: str, *, steps: bool, band: float | None = None
) -> None:
    row = _dict(row, field)
    _number(row, "latency_ms", field)
    _number(row, "tflops", field)
    shape = run["shape"]
    if not _close(row["tflops"], tflops(shape["m"], shape["n"], shape["k"], row["latency_ms"])):
        raise _fail(f"{field}.tflops", f"does not match latency_ms at {shape['m']}x{shape['n']}x{shape['k']}", row)
    _interval(row, "ratio_to_cublas", field, band)
    if impl == CUBLAS and any(not _close(row["ratio_to_cublas"][p], 1.0) for p in ("median", "low", "high")):
        raise _fail(f"{field}.ratio_to_cublas", "must be exactly 1 for cuBLAS itself", row["ratio_to_cublas"])
    if row.get("step") is not None:
        _interval(row, "step", field, band)
        _string(row["step"], "over", f"{field}.step")
        if row["step"]["over"] not in run["rows"] or row["step"]["over"] == impl:
            raise _fail(f"{field}.step.over", "must name another row of the same run", row["step"]["over"])
    _number(row, "sm_clock_mhz", field, optional=True)
    _number(row, "power_w", field, optional=True)
    if row.get("busy") is not None:
        _number(row, "busy", field)
    _dict(_get(row, "config", field), f"{field}.config")
    _string(row, "title", field)
    counters = row.get("counters")
    if counters is not None:
        counters = _dict(counters, f"{field}.counters")
        _number(counters, "tensor_pipe_pct", f"{field}.counters", positive=False, optional=True)
        _number(counters, "dram_throughput_pct", f"{field}.counters", positive=False, optional=True)
        for key in ("dram_read_bytes", "l2_hit_pct"):  # added later: records made before them lack the keys
            if key in counters:
                _number(counters, key, f"{field}.counters", positive=False, optional=True)
    if steps and impl != CUBLAS and not isinstance(_get(row, "kept", field), bool):
        raise _fail(f"{field}.kept", "must be true or false", row["kept"])
    if row.get("efficiency") is not None:
        _number(row, "efficiency", field)
    if "suspect" in row and not isinstance(row["suspect"], bool):
        raise _fail(f"{field}.suspect", "must be true or false", row["suspect"])


def _validate_run(run: Any, field: str, *, steps: bool = False, band: float | None = None) -> None:
    run = _dict(run, field)
    _string(run, "run_id", field)
    _date(run, "date", field)
    _string(run, "git_commit", field)
    _shape(run, "shape", field)
    _integer(run, "rounds", field)
    _integer(run, "processes", field)
    # Optional: how each round timed a row (the method's defaults otherwise) and the raw log's path.
    if run.get("warmup") is not None:  # method 3 and older: calls
        _integer(run, "warmup", field, minimum=0)
    if run.get("warmup_s") is not None:  # method 4: seconds of the timed loop
        _number(run, "warmup_s", field, positive=False)
    if run.get("repeats") is not None:
        _integer(run, "repeats", field)
    if run.get("log") is not None:
        _string(run, "log", field)
    if run.get("invocation_s") is not None:
        _number(run, "invocation_s", field)
    rows = _dict(_get(run, "rows", field), f"{field}.rows")
    if CUBLAS not in rows:
        raise ResultsError(f"field {field + '.rows'!r} has no cublas row: every ratio is paired with it")
    for impl, row in rows.items():
        _validate_row(impl, row, run, f"{field}.rows.{impl}", steps=steps, band=band)
    if run.get("peers_missing") is not None:
        _validate_peers_missing(run, field)
    if steps:
        _string(run, "after", field)
        _string(run, "title", field)


def _validate_peers_missing(run: dict[str, Any], field: str) -> None:
    """Optional: {impl: {version, error}} for peers asked for that could not run (version null: not installed)."""
    missing = _dict(run["peers_missing"], f"{field}.peers_missing")
    for impl, entry in missing.items():
        where = f"{field}.peers_missing.{impl}"
        entry = _dict(entry, where)
        _string(entry, "version", where, optional=True)
        _string(entry, "error", where)
        if impl in run["rows"] or impl == CUBLAS:
            raise _fail(where, "names a row of the run: a peer is either timed or missing", impl)


def _validate_figure(figure: Any, field: str, *, steps: bool = False, band: float | None = None) -> None:
    """A figure: its merged rows (shaped like a run's), and ``runs``, the independent runs they merge.

    Every merged interval must hold each run's own median: the interval a second run must fall in.
    """
    _validate_run(figure, field, steps=steps, band=band)
    runs = _get(figure, "runs", field)
    if not isinstance(runs, list) or not runs:
        raise _fail(f"{field}.runs", "must be a non-empty list of the runs merged", runs)
    if figure.get("peers_missing") != runs[-1].get("peers_missing"):
        raise _fail(f"{field}.peers_missing", "must be its newest run's", figure.get("peers_missing"))
    for index, run in enumerate(runs):
        where = f"{field}.runs[{index}]"
        _validate_run(run, where, steps=steps)
        if set(run["rows"]) != set(figure["rows"]):
            raise _fail(f"{where}.rows", "must time the same implementations as the figure (one rotation)", run)
        if run["shape"] != figure["shape"]:
            raise _fail(f"{where}.shape", "must be the figure's shape", run["shape"])
        for impl, row in run["rows"].items():
            for key in ("ratio_to_cublas", "step"):
                merged = figure["rows"][impl].get(key)
                if row.get(key) is None or merged is None:
                    continue
                if not merged["low"] <= row[key]["median"] <= merged["high"]:
                    raise _fail(f"{where}.rows.{impl}.{key}.median",
                                f"lies outside the merged interval [{merged['low']:.4f}, {merged['high']:.4f}]",
                                row[key]["median"])  # fmt: skip


def _validate_cublas_kernel(entry: Any, field: str) -> None:
    entry = _dict(entry, field)
    _string(entry, "name", field)
    decoded = entry.get("decoded")
    if decoded is not None:
        decoded = _dict(decoded, f"{field}.decoded")
        for key in ("tile", "cluster"):
            value = _get(decoded, key, f"{field}.decoded")
            if not (isinstance(value, list) and len(value) == 2 and all(isinstance(v, int) and v > 0 for v in value)):
                raise _fail(f"{field}.decoded.{key}", "must be two positive integers", value)
        _integer(decoded, "stages", f"{field}.decoded")
        _integer(decoded, "block_k", f"{field}.decoded")


def is_proof_run(run: dict[str, Any]) -> bool:
    """Whether a steps run is the warm-up's proof (one kernel beside different neighbours), not an attempt."""
    return str(run.get("title", "")).startswith(PROOF_TITLE_PREFIX)


def is_tryit_run(run: dict[str, Any]) -> bool:
    """Whether a steps run times a chapter's try-it changes (titled "Try it: ...") rather than attempted steps."""
    return str(run.get("title", "")).startswith(TRYIT_TITLE_PREFIX)


def _validate_tryit(entry: Any, field: str) -> None:
    entry = _dict(entry, field)
    for key in ("version", "name", "title", "file", "outcome", "run_id", "git_commit"):
        _string(entry, key, field)
    _date(entry, "date", field)
    if not re.fullmatch(r"v\d+", entry["version"]):
        raise _fail(f"{field}.version", "must be a version name v<N>", entry["version"])
    outcome = entry["outcome"]
    if outcome not in TRYIT_OUTCOMES:
        raise _fail(f"{field}.outcome", f"must be one of {', '.join(TRYIT_OUTCOMES)}", outcome)
    edits = _get(entry, "edits", field)
    if not isinstance(edits, list) or any(
        not isinstance(e, list) or len(e) != 2 or not all(isinstance(s, str) for s in e) or not e[0] for e in edits
    ):
        raise _fail(f"{field}.edits", "must be a list of [old text, new text] (old not empty)", edits)
    config = _dict(_get(entry, "config", field), f"{field}.config")
    if not edits and not config:
        raise _fail(field, "changes nothing: give edits or a config", entry)
    checks = _get(entry, "checks", field)
    if not isinstance(checks, list):
        raise _fail(f"{field}.checks", "must be a list", checks)
    for i, check in enumerate(checks):
        where = f"{field}.checks[{i}]"
        check = _dict(check, where)
        shape = _shape(check, "shape", where)
        _integer(check, "bad", where, minimum=0)
        _integer(check, "nonfinite", where, minimum=0)
        if not check["nonfinite"] <= check["bad"] <= shape["m"] * shape["n"]:
            raise _fail(where, "must have nonfinite <= bad <= m * n", check)
        err = _get(check, "max_abs_err", where)
        if err is not None and (not _is_number(err) or err < 0):
            raise _fail(f"{where}.max_abs_err", "must be a finite number >= 0 or null", err)
        if err is None and check["nonfinite"] < shape["m"] * shape["n"]:
            raise _fail(f"{where}.max_abs_err", "may be null only when no element is finite", check)
    # The outcome must follow from the checks (it is derived, never typed).
    wrong = any(c["bad"] for c in checks)
    if outcome == "exact" and (not checks or wrong):
        raise _fail(f"{field}.outcome", "is exact only when checks ran and none found a bad element", outcome)
    if outcome == "wrong" and not wrong:
        raise _fail(f"{field}.outcome", "is wrong only when a check found bad elements", outcome)
    if outcome in ("hangs", "does not build", "crashes"):
        _string(entry, "error", field)
        if wrong:
            raise _fail(
                f"{field}.outcome", "cannot be " + outcome + " when a check already found bad elements", outcome
            )
    if outcome == "does not build" and checks:
        raise _fail(f"{field}.checks", "must be empty when the kernel did not build", checks)
    if outcome == "hangs":
        _number(entry, "timeout_s", field)


def tryit_key(entry: dict[str, Any]) -> tuple[str, str]:
    """What identifies a try-it entry: (version, name); a newer entry with the same key replaces it."""
    return (entry["version"], entry["name"])


def validate(data: dict[str, Any]) -> None:
    """Check a results dict against the schema; ResultsError names the first bad field."""
    data = _dict(data, "(top level)")
    if _get(data, "schema", "") != SCHEMA_VERSION:
        raise _fail("schema", f"must be {SCHEMA_VERSION}, the only schema this code reads", data["schema"])
    _validate_gpu(_get(data, "gpu", ""))
    software = _dict(_get(data, "software", ""), "software")
    for key in ("cuda", "torch", "tilus", "python"):
        _string(software, key, "software")
    if "cublas" in software:
        _string(software, "cublas", "software")
    method = _dict(_get(data, "method", ""), "method")
    for key in ("timer", "statistic", "interval", "l2_flush", "order", "clocks"):
        _string(method, key, "method")
    if isinstance(method.get("warmup"), int):  # method 3 and older: calls per round
        _integer(method, "warmup", "method", minimum=0)
    else:
        _string(method, "warmup", "method")
        _number(method, "warmup_s", "method", positive=False)
    _integer(method, "repeats", "method")
    problem = _shape(data, "problem", "")
    _string(problem, "dtype", "problem")
    _string(problem, "accumulate", "problem")
    band = None
    if method.get("verdicts") is not None:
        verdicts = _dict(method["verdicts"], "method.verdicts")
        for key in ("band", "confidence_each", "family_confidence"):
            _number(verdicts, key, "method.verdicts")
        _integer(verdicts, "count", "method.verdicts")
        band = verdicts["band"]
    ladder = data.get("ladder")
    if ladder is not None:
        _validate_figure(ladder, "ladder", band=band)
        if {k: ladder["shape"][k] for k in ("m", "n", "k")} != {k: problem[k] for k in ("m", "n", "k")}:
            raise _fail("ladder.shape", "must be the problem's shape", ladder["shape"])
    for name in ("sweep", "steps"):
        runs = data.get(name, [])
        if not isinstance(runs, list):
            raise _fail(name, "must be a list (possibly empty)", runs)
        seen = set()
        for index, run in enumerate(runs):
            _validate_figure(run, f"{name}[{index}]", steps=name == "steps", band=band)
            if run.get("cublas_kernel") is not None:
                _validate_cublas_kernel(run["cublas_kernel"], f"{name}[{index}].cublas_kernel")
            key = run_key(name, run)
            if key in seen:
                raise _fail(f"{name}[{index}]", "repeats the key of an earlier run", key)
            seen.add(key)
    tryit = data.get("tryit", [])
    if not isinstance(tryit, list):
        raise _fail("tryit", "must be a list (possibly empty)", tryit)
    seen_tryit = set()
    for index, entry in enumerate(tryit):
        _validate_tryit(entry, f"tryit[{index}]")
        if tryit_key(entry) in seen_tryit:
            raise _fail(f"tryit[{index}]", "repeats the (version, name) of an earlier entry", tryit_key(entry))
        seen_tryit.add(tryit_key(entry))


# --- combining and writing ----------------------------------------------------------------------


def run_key(section: str, run: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a run in its section: its shape (sweep), or (after, title, shape) (steps)."""
    shape = (run["shape"]["m"], run["shape"]["n"], run["shape"]["k"])
    return (run["after"], run["title"], shape) if section == "steps" else shape
