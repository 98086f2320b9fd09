"""The results file's schema (its layout is documented in :mod:`matmul_data.results`, which re-exports what its
callers use): its constants, and the checks that a file, a run, a row or a try-it follows it."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any

from matmul_data import stats

SCHEMA_VERSION = 3
VERDICTS = (stats.PAYS, stats.COSTS, stats.WITHIN, stats.UNRESOLVED)
CUBLAS = "cublas"
# A steps run with this title prefix is a chapter's "Try it" (specs/tryit.py), not a step of the ladder.
TRYIT_TITLE_PREFIX = "Try it: "
PROOF_TITLE_PREFIX = "the warm-up's proof"  # steps runs that test the method (docs/method.rst), not a kernel
TRYIT_OUTCOMES = ("exact", "wrong", "hangs", "does not build", "crashes")
# The lists of figures beside the ladder, in the file's order; "field" is optional (files before it lack the key).
SECTIONS = ("sweep", "steps", "field")

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Derived numbers must agree with the ones they come from (they are computed, never typed).
_REL_TOL = 1e-3


class ResultsError(ValueError):
    """A results file is missing, unreadable or does not follow the schema; the message says which and why."""


# --- validation ---------------------------------------------------------------------------------


def _fail(field: str, problem: str, value: Any) -> ResultsError:
    shown = repr(value)
    return ResultsError(f"field {field!r} {problem}, got {shown if len(shown) <= 80 else shown[:77] + '...'}")


def _get(data: dict[str, Any], key: str, field: str) -> Any:
    if key not in data:
        raise ResultsError(f"field {field + '.' + key if field else key!r} is missing")
    return data[key]


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


# What a field's value may be, by kind, and what the error says when it is not.
_KINDS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "str": (lambda v: isinstance(v, str) and bool(v), "must be a non-empty string"),
    "int": (lambda v: _is_int(v, 1), "must be an integer >= 1"),
    "int0": (lambda v: _is_int(v, 0), "must be an integer >= 0"),
    "pos": (lambda v: _is_number(v) and v > 0, "must be a positive number"),
    "num": (_is_number, "must be a finite number"),
    "bool": (lambda v: isinstance(v, bool), "must be true or false"),
    "obj": (lambda v: isinstance(v, dict), "must be an object"),
    "list": (lambda v: isinstance(v, list), "must be a list"),
    "date": (lambda v: isinstance(v, str) and bool(_DATE.fullmatch(v)), "must be a date YYYY-MM-DD"),
    "pair": (
        lambda v: isinstance(v, list) and len(v) == 2 and all(_is_int(x, 1) for x in v),
        "must be two positive integers",
    ),
}

# The objects of the file: "key:kind" for each key (a kind ending in "?" may be null, one ending in "*" may be null
# or absent); what a kind cannot say (derived numbers, cross-references) is checked in code below.
_OBJECTS = {
    "gpu": "name:str sm_count:int compute_capability:str memory_gb:pos driver:str clocks_mhz:obj power_limit_w:pos? "
    "published_dense_fp16_tflops:pos? published_source:str?",
    "clocks_mhz": "sm_max:pos? mem_max:pos?",
    "software": "cuda:str torch:str tilus:str python:str",
    "method": "timer:str statistic:str interval:str l2_flush:str order:str clocks:str repeats:int verdicts:obj*",
    "verdicts": "band:pos confidence_each:pos family_confidence:pos count:int",
    "problem": "m:int n:int k:int dtype:str accumulate:str",
    "shape": "m:int n:int k:int",
    # warmup (calls, method 3 and older) or warmup_s (seconds of the timed loop, method 4), else the method's
    "run": "run_id:str date:date git_commit:str shape:obj rounds:int processes:int warmup:int0* warmup_s:num* "
    "repeats:int* log:str* invocation_s:pos* rows:obj peers_missing:obj*",
    "row": "latency_ms:pos tflops:pos sm_clock_mhz:pos? power_w:pos? busy:pos* config:obj title:str counters:obj* "
    "efficiency:pos* wrong_elements:int0*",
    # dram_read_bytes and l2_hit_pct were added later: records made before them lack the keys
    "counters": "tensor_pipe_pct:num? dram_throughput_pct:num? dram_read_bytes:num* l2_hit_pct:num*",
    "interval": "median:pos low:pos high:pos",
    "peer_missing": "version:str? error:str",  # a peer asked for that could not run (version null: not installed)
    "cublas_kernel": "name:str decoded:obj*",
    "decoded": "tile:pair cluster:pair stages:int block_k:int",
    "tryit": "version:str name:str title:str file:str outcome:str run_id:str git_commit:str date:date config:obj "
    "checks:list",
    "check": "shape:obj bad:int0 nonfinite:int0",
    "field": "name:str source:str kind:str half:str",  # a field run's problem (matmul_data.field)
}


def _check(data: Any, field: str, spec: str) -> dict[str, Any]:
    """``data``, checked to be an object whose keys hold values of their kinds: ``spec`` is "key:kind ..."."""
    if not isinstance(data, dict):
        raise _fail(field or "(top level)", "must be an object", data)
    for key, _, kind in (item.partition(":") for item in spec.split()):
        if kind.endswith("*") and data.get(key) is None:
            continue
        value = _get(data, key, field)
        if value is None and kind.endswith("?"):
            continue
        ok, problem = _KINDS[kind.rstrip("?*")]
        if not ok(value):
            raise _fail(f"{field}.{key}" if field else key, problem, value)
    return data


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL_TOL)


def tflops(m: int, n: int, k: int, ms: float) -> float:
    """Dense matmul throughput: 2*M*N*K floating-point operations in ``ms`` milliseconds."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def _interval(data: dict[str, Any], key: str, field: str, band: float | None = None) -> None:
    value = _check(_get(data, key, field), f"{field}.{key}", _OBJECTS["interval"])
    if not value["low"] <= value["median"] <= value["high"]:
        raise _fail(f"{field}.{key}", "must have low <= median <= high", value)
    if "verdict" in value:
        if value["verdict"] not in VERDICTS:
            raise _fail(f"{field}.{key}.verdict", f"must be one of {', '.join(VERDICTS)}", value["verdict"])
        if band is not None and (value.get("band") != band or value["verdict"] != stats.band_verdict(value, band)):
            raise _fail(f"{field}.{key}.verdict", f"does not follow the band of {band:.3f}", value)


def _validate_row(impl: str, row: Any, run: dict[str, Any], field: str, *, steps: bool, band: float | None) -> None:
    row = _check(row, field, _OBJECTS["row"])
    shape = run["shape"]
    if not _close(row["tflops"], tflops(shape["m"], shape["n"], shape["k"], row["latency_ms"])):
        raise _fail(f"{field}.tflops", f"does not match latency_ms at {shape['m']}x{shape['n']}x{shape['k']}", row)
    _interval(row, "ratio_to_cublas", field, band)
    if impl == CUBLAS and any(not _close(row["ratio_to_cublas"][p], 1.0) for p in ("median", "low", "high")):
        raise _fail(f"{field}.ratio_to_cublas", "must be exactly 1 for cuBLAS itself", row["ratio_to_cublas"])
    if row.get("step") is not None:
        _interval(row, "step", field, band)
        _check(row["step"], f"{field}.step", "over:str")
        if row["step"]["over"] not in run["rows"] or row["step"]["over"] == impl:
            raise _fail(f"{field}.step.over", "must name another row of the same run", row["step"]["over"])
    if row.get("counters") is not None:
        _check(row["counters"], f"{field}.counters", _OBJECTS["counters"])
    kept = "kept:bool" if steps and impl != CUBLAS else ""  # a step's, not cuBLAS's; suspect where it is given
    _check(row, field, f"{kept} suspect:bool" if "suspect" in row else kept)
    if impl != CUBLAS and "wrong_elements" in row:  # ours and the peers are never timed when wrong
        raise _fail(f"{field}.wrong_elements", "is the baseline's alone (cublas)", row["wrong_elements"])


def _validate_run(run: Any, field: str, *, steps: bool = False, band: float | None = None) -> None:
    run = _check(run, field, _OBJECTS["run"] + (" after:str title:str" if steps else ""))
    _check(run["shape"], f"{field}.shape", _OBJECTS["shape"])
    if run.get("field") is not None:
        _check(run["field"], f"{field}.field", _OBJECTS["field"])
    rows = run["rows"]
    if CUBLAS not in rows:
        raise ResultsError(f"field {field + '.rows'!r} has no cublas row: every ratio is paired with it")
    for impl, row in rows.items():
        _validate_row(impl, row, run, f"{field}.rows.{impl}", steps=steps, band=band)
    for impl, entry in (run.get("peers_missing") or {}).items():
        where = f"{field}.peers_missing.{impl}"
        _check(entry, where, _OBJECTS["peer_missing"])
        if impl in rows or impl == CUBLAS:
            raise _fail(where, "names a row of the run: a peer is either timed or missing", impl)


def _validate_figure(figure: Any, field: str, *, steps: bool = False, band: float | None = None) -> None:
    """A figure: its merged rows (shaped like a run's), and ``runs``, the independent runs they merge; every merged
    interval must hold each run's own median (the interval a second run must fall in)."""
    _validate_run(figure, field, steps=steps, band=band)
    runs = _get(figure, "runs", field)
    if not isinstance(runs, list) or not runs:
        raise _fail(f"{field}.runs", "must be a non-empty list of the runs merged", runs)
    if figure.get("peers_missing") != runs[-1].get("peers_missing"):
        raise _fail(f"{field}.peers_missing", "must be its newest run's", figure.get("peers_missing"))
    if figure.get("cublas_kernel") is not None:  # the kernel cuBLAS ran at a sweep or field figure's shape
        kernel = _check(figure["cublas_kernel"], f"{field}.cublas_kernel", _OBJECTS["cublas_kernel"])
        if kernel.get("decoded") is not None:
            _check(kernel["decoded"], f"{field}.cublas_kernel.decoded", _OBJECTS["decoded"])
    for index, run in enumerate(runs):
        where = f"{field}.runs[{index}]"
        _validate_run(run, where, steps=steps)
        if set(run["rows"]) != set(figure["rows"]):
            raise _fail(f"{where}.rows", "must time the same implementations as the figure (one rotation)", run)
        if run["shape"] != figure["shape"]:
            raise _fail(f"{where}.shape", "must be the figure's shape", run["shape"])
        for impl, row in run["rows"].items():
            for key in ("ratio_to_cublas", "step"):
                own, merged = row.get(key), figure["rows"][impl].get(key)
                if own is None or merged is None or merged["low"] <= own["median"] <= merged["high"]:
                    continue
                problem = f"lies outside the merged interval [{merged['low']:.4f}, {merged['high']:.4f}]"
                raise _fail(f"{where}.rows.{impl}.{key}.median", problem, own["median"])


def is_proof_run(run: dict[str, Any]) -> bool:
    """Whether a steps run is the warm-up's proof (one kernel beside different neighbours), not an attempt."""
    return str(run.get("title", "")).startswith(PROOF_TITLE_PREFIX)


def is_tryit_run(run: dict[str, Any]) -> bool:
    """Whether a steps run times a chapter's try-it changes (titled "Try it: ...") rather than attempted steps."""
    return str(run.get("title", "")).startswith(TRYIT_TITLE_PREFIX)


def _validate_tryit(entry: Any, field: str) -> None:
    entry = _check(entry, field, _OBJECTS["tryit"])
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
    if not edits and not entry["config"]:
        raise _fail(field, "changes nothing: give edits or a config", entry)
    checks = entry["checks"]
    for i, check in enumerate(checks):
        where = f"{field}.checks[{i}]"
        _check(check, where, _OBJECTS["check"])
        shape = _check(check["shape"], f"{where}.shape", _OBJECTS["shape"])
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
        _check(entry, field, "error:str")
        if wrong:
            raise _fail(f"{field}.outcome", f"cannot be {outcome} when a check already found bad elements", outcome)
    if outcome == "does not build" and checks:
        raise _fail(f"{field}.checks", "must be empty when the kernel did not build", checks)
    if outcome == "hangs":
        _check(entry, field, "timeout_s:pos")


def tryit_key(entry: dict[str, Any]) -> tuple[str, str]:
    """What identifies a try-it entry: (version, name); a newer entry with the same key replaces it."""
    return (entry["version"], entry["name"])


def validate(data: dict[str, Any]) -> None:
    """Check a results dict against the schema; ResultsError names the first bad field."""
    _check(data, "", "gpu:obj software:obj method:obj problem:obj")
    if _get(data, "schema", "") != SCHEMA_VERSION:
        raise _fail("schema", f"must be {SCHEMA_VERSION}, the only schema this code reads", data["schema"])
    gpu = _check(data["gpu"], "gpu", _OBJECTS["gpu"])
    _check(gpu["clocks_mhz"], "gpu.clocks_mhz", _OBJECTS["clocks_mhz"])
    if (gpu["published_dense_fp16_tflops"] is None) != (gpu["published_source"] is None):
        raise _fail("gpu.published_source", "must be given exactly when published_dense_fp16_tflops is", gpu)
    software = _check(data["software"], "software", _OBJECTS["software"])
    if "cublas" in software:
        _check(software, "software", "cublas:str")
    method = _check(data["method"], "method", _OBJECTS["method"])
    # calls per round (method 3 and older), or what the warm-up is and its seconds
    _check(method, "method", "warmup:int0" if isinstance(method.get("warmup"), int) else "warmup:str warmup_s:num")
    problem = _check(data["problem"], "problem", _OBJECTS["problem"])
    verdicts = method.get("verdicts")
    band = None if verdicts is None else _check(verdicts, "method.verdicts", _OBJECTS["verdicts"])["band"]
    ladder = data.get("ladder")
    if ladder is not None:
        _validate_figure(ladder, "ladder", band=band)
        if shape_of(ladder) != (problem["m"], problem["n"], problem["k"]):
            raise _fail("ladder.shape", "must be the problem's shape", ladder["shape"])
    for name in (*SECTIONS, "tryit"):
        entries = data.get(name, [])
        if not isinstance(entries, list):
            raise _fail(name, "must be a list (possibly empty)", entries)
        seen = set()
        for index, entry in enumerate(entries):
            if name == "tryit":
                _validate_tryit(entry, f"{name}[{index}]")
            else:
                _validate_figure(entry, f"{name}[{index}]", steps=name == "steps", band=band)
            key = tryit_key(entry) if name == "tryit" else run_key(name, entry)
            if key in seen:
                what = "(version, name) of an earlier entry" if name == "tryit" else "key of an earlier run"
                raise _fail(f"{name}[{index}]", f"repeats the {what}", key)
            seen.add(key)


def run_key(section: str, run: dict[str, Any]) -> tuple[Any, ...]:
    """What identifies a run in its section: its shape (sweep, field), or (after, title, shape) (steps)."""
    return (run["after"], run["title"], shape_of(run)) if section == "steps" else shape_of(run)


def shape_of(run: dict[str, Any]) -> tuple[int, int, int]:
    """A run's problem size as (M, N, K)."""
    return (run["shape"]["m"], run["shape"]["n"], run["shape"]["k"])
