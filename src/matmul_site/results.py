"""The recorded benchmark results: one JSON file per GPU model under ``plots/results/``.

The benchmark writes these files; the charts and the Sphinx build read them. Pure Python
(json, os, tempfile): the docs build on a machine with no torch, no Tilus and no GPU.

Layout (schema 2)::

    schema, gpu, software, method     provenance of the whole file (method.earlier_runs, optional:
                                      {run_id: how that run was measured} for runs that predate the method)
    problem                           the ladder's shape, dtype and accumulation
    ladder                            one run: every version and cuBLAS, interleaved (a Run, below)
    sweep                             runs at other shapes, one per shape, interleaved with cuBLAS
    steps                             runs of attempted changes after a version, kept or not
                                      (a run titled "Try it: ..." is a chapter's try-it, not a step)
    tryit                             (optional) outcomes of the chapters' try-it edits (a TryIt, below)

A Run is one interleaved session at one shape::

    run_id, date, git_commit, shape {m, n, k}, rounds, processes
    warmup, repeats, log              (optional) calls per round, and the raw samples' log (relative to plots/results)
    rows {impl: Row}                  impl is "v<N>", "cublas", "torch-compile-max-autotune" or a variant's name
    after, title                      (steps only) the version the attempts start from, and what they try

A TryIt is one edit of a chapter's kernel file (experiments/tryit.py), checked on the GPU::

    version, name, title              the chapter ("v5"), the edit's key and what it changes
    file, edits [[old, new], ...], config     what was run: the substitutions and the pinned configuration
    outcome                           "exact", "wrong", "hangs", "does not build" or "crashes"
    checks [{shape {m, n, k}, bad, nonfinite, max_abs_err}]   every check run (NaN-poisoned C against
                                      float64): elements outside tolerance, of them still NaN/inf, and the
                                      largest finite error (null: no finite element)
    error                             (hangs, does not build, crashes) the first line of what went wrong
    timeout_s                         (hangs) seconds the launch was given before the process was killed
    run_id, date, git_commit

A Row is one implementation in that run::

    latency_ms, tflops                median over every (process, round) sample
    ratio_to_cublas {median, low, high}   paired with the cuBLAS of the same round; 95% interval
    step {over, median, low, high}    (optional) paired ratio to another row of the same run:
                                      the previous version in the ladder, the baseline in steps
    sm_clock_mhz, power_w             medians sampled during this row's timed windows (null: not sampled)
    config                            the tuned configuration ({} for library calls)
    title                             what it is (a version's TITLE, a peer's label, a variant's change)
    counters                          (ladder and steps, optional) ncu: tensor pipe and DRAM throughput, %;
                                      DRAM bytes read; L2 hit rate, %
    kept                              (steps only) whether the change went into the next version

:func:`validate` enforces it field by field; derived numbers must agree with what they come from.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import tempfile
from pathlib import Path
from typing import Any

from matmul_site import paths

SCHEMA_VERSION = 2
HOW_TO_CREATE = paths.HOW_TO_CREATE
CUBLAS = "cublas"
# A steps run with this title prefix is a chapter's "Try it" (experiments/tryit.py), not a step of the ladder.
TRYIT_TITLE_PREFIX = "Try it: "
TRYIT_OUTCOMES = ("exact", "wrong", "hangs", "does not build", "crashes")

_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")
# Derived numbers must agree with the ones they come from (they are computed, never typed).
_REL_TOL = 1e-3


class ResultsError(ValueError):
    """A results file is missing, unreadable or does not follow the schema; the message says which and why."""


def slug(gpu_name: str) -> str:
    """File stem for a GPU model: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"."""
    stem = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")
    if not stem:
        raise ResultsError(f"GPU name {gpu_name!r} has no letters or digits to name a results file after")
    return stem


def path_for_gpu(gpu_name: str) -> Path:
    """Where the results of a GPU model are committed: plots/results/<slug>.json."""
    return paths.RESULTS_DIR / f"{slug(gpu_name)}.json"


def load(path: Path) -> dict[str, Any]:
    """Read and validate a results file; ResultsError names the file and what is wrong with it."""
    path = Path(path)
    if not path.is_file():
        raise ResultsError(f"{path}: no results file; {HOW_TO_CREATE}")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: cannot be read ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc}); restore it from git or rerun `nox -s bench`") from exc
    try:
        validate(data)
    except ResultsError as exc:
        raise ResultsError(f"{path}: {exc}") from exc
    return data


def load_default() -> dict[str, Any] | None:
    """The results the site shows (:func:`matmul_site.paths.results_file`), or None when there are none yet."""
    try:
        path = paths.results_file()
    except paths.ResultsFileError as exc:
        raise ResultsError(str(exc)) from exc
    return None if path is None else load(path)


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


def _number(data: dict[str, Any], key: str, field: str, *, positive: bool = True, optional: bool = False) -> None:
    name = f"{field}.{key}" if field else key
    value = _get(data, key, field)
    if value is None and optional:
        return
    if not _is_number(value) or (positive and value <= 0):
        raise _fail(name, "must be a positive number" if positive else "must be a finite number", value)


def _integer(data: dict[str, Any], key: str, field: str, *, minimum: int = 1, optional: bool = False) -> None:
    name = f"{field}.{key}" if field else key
    value = _get(data, key, field)
    if value is None and optional:
        return
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise _fail(name, f"must be an integer >= {minimum}", value)


def _string(data: dict[str, Any], key: str, field: str, *, optional: bool = False) -> None:
    name = f"{field}.{key}" if field else key
    value = _get(data, key, field)
    if value is None and optional:
        return
    if not isinstance(value, str) or not value:
        raise _fail(name, "must be a non-empty string", value)


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


def _interval(data: dict[str, Any], key: str, field: str) -> None:
    value = _dict(_get(data, key, field), f"{field}.{key}")
    for part in ("median", "low", "high"):
        _number(value, part, f"{field}.{key}")
    if not value["low"] <= value["median"] <= value["high"]:
        raise _fail(f"{field}.{key}", "must have low <= median <= high", value)


def _validate_row(impl: str, row: Any, run: dict[str, Any], field: str, *, steps: bool) -> None:
    row = _dict(row, field)
    _number(row, "latency_ms", field)
    _number(row, "tflops", field)
    shape = run["shape"]
    if not _close(row["tflops"], tflops(shape["m"], shape["n"], shape["k"], row["latency_ms"])):
        raise _fail(f"{field}.tflops", f"does not match latency_ms at {shape['m']}x{shape['n']}x{shape['k']}", row)
    _interval(row, "ratio_to_cublas", field)
    if impl == CUBLAS and any(not _close(row["ratio_to_cublas"][p], 1.0) for p in ("median", "low", "high")):
        raise _fail(f"{field}.ratio_to_cublas", "must be exactly 1 for cuBLAS itself", row["ratio_to_cublas"])
    if row.get("step") is not None:
        _interval(row, "step", field)
        _string(row["step"], "over", f"{field}.step")
        if row["step"]["over"] not in run["rows"] or row["step"]["over"] == impl:
            raise _fail(f"{field}.step.over", "must name another row of the same run", row["step"]["over"])
    _number(row, "sm_clock_mhz", field, optional=True)
    _number(row, "power_w", field, optional=True)
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


def _validate_run(run: Any, field: str, *, steps: bool = False) -> None:
    run = _dict(run, field)
    _string(run, "run_id", field)
    _date(run, "date", field)
    _string(run, "git_commit", field)
    shape = _dict(_get(run, "shape", field), f"{field}.shape")
    for key in ("m", "n", "k"):
        _integer(shape, key, f"{field}.shape")
    _integer(run, "rounds", field)
    _integer(run, "processes", field)
    # Optional: how each round timed a row (the method's defaults otherwise) and the raw log's path.
    if run.get("warmup") is not None:
        _integer(run, "warmup", field, minimum=0)
    if run.get("repeats") is not None:
        _integer(run, "repeats", field)
    if run.get("log") is not None:
        _string(run, "log", field)
    rows = _dict(_get(run, "rows", field), f"{field}.rows")
    if CUBLAS not in rows:
        raise ResultsError(f"field {field + '.rows'!r} has no cublas row: every ratio is paired with it")
    for impl, row in rows.items():
        _validate_row(impl, row, run, f"{field}.rows.{impl}", steps=steps)
    if steps:
        _string(run, "after", field)
        _string(run, "title", field)


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
        shape = _dict(_get(check, "shape", where), f"{where}.shape")
        for key in ("m", "n", "k"):
            _integer(shape, key, f"{where}.shape")
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


def _tryit_key(entry: dict[str, Any]) -> tuple[str, str]:
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
    method = _dict(_get(data, "method", ""), "method")
    for key in ("timer", "statistic", "interval", "l2_flush", "order", "clocks"):
        _string(method, key, "method")
    _integer(method, "warmup", "method", minimum=0)
    _integer(method, "repeats", "method")
    problem = _dict(_get(data, "problem", ""), "problem")
    for key in ("m", "n", "k"):
        _integer(problem, key, "problem")
    _string(problem, "dtype", "problem")
    _string(problem, "accumulate", "problem")
    ladder = data.get("ladder")
    if ladder is not None:
        _validate_run(ladder, "ladder")
        if {k: ladder["shape"][k] for k in ("m", "n", "k")} != {k: problem[k] for k in ("m", "n", "k")}:
            raise _fail("ladder.shape", "must be the problem's shape", ladder["shape"])
    for name in ("sweep", "steps"):
        runs = data.get(name, [])
        if not isinstance(runs, list):
            raise _fail(name, "must be a list (possibly empty)", runs)
        seen = set()
        for index, run in enumerate(runs):
            _validate_run(run, f"{name}[{index}]", steps=name == "steps")
            key = _run_key(name, run)
            if key in seen:
                raise _fail(f"{name}[{index}]", "repeats the key of an earlier run", key)
            seen.add(key)
    tryit = data.get("tryit", [])
    if not isinstance(tryit, list):
        raise _fail("tryit", "must be a list (possibly empty)", tryit)
    seen_tryit = set()
    for index, entry in enumerate(tryit):
        _validate_tryit(entry, f"tryit[{index}]")
        if _tryit_key(entry) in seen_tryit:
            raise _fail(f"tryit[{index}]", "repeats the (version, name) of an earlier entry", _tryit_key(entry))
        seen_tryit.add(_tryit_key(entry))


# --- combining and writing ----------------------------------------------------------------------


def _run_key(section: str, run: dict[str, Any]) -> tuple[Any, ...]:
    shape = (run["shape"]["m"], run["shape"]["n"], run["shape"]["k"])
    return (run["after"], run["title"], shape) if section == "steps" else shape


def merge(existing: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Fold a new run into an existing file.

    Provenance (gpu, software, method) comes from the new file. A new ladder replaces the old one
    whole (a ladder is one session, never stitched from two); sweep runs are replaced by shape,
    steps runs by (after, title, shape) and try-it outcomes by (version, name); what the new file
    did not measure is kept.
    """
    merged = copy.deepcopy(new)
    if existing is None:
        return merged
    old_gpu, new_gpu = existing.get("gpu", {}).get("name"), new.get("gpu", {}).get("name")
    if old_gpu != new_gpu:
        raise ResultsError(f"cannot merge results of {new_gpu!r} into a file for {old_gpu!r}: one file per GPU model")
    if new.get("ladder") is None and existing.get("ladder") is not None:
        if existing.get("problem") != new.get("problem"):
            raise ResultsError("cannot keep a ladder measured at another problem size: rerun the ladder")
        merged["ladder"] = copy.deepcopy(existing["ladder"])
    for section in ("sweep", "steps"):
        fresh = {_run_key(section, run): run for run in new.get(section, [])}
        runs = [copy.deepcopy(fresh.pop(_run_key(section, run), run)) for run in existing.get(section, [])]
        merged[section] = runs + [copy.deepcopy(run) for run in fresh.values()]
    if "tryit" in existing or "tryit" in new:
        merged["tryit"] = merge_tryit(existing.get("tryit", []), new.get("tryit", []))
    return merged


def merge_tryit(existing: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Try-it outcomes: a new entry replaces the one with its (version, name), in place; the rest are kept."""
    fresh = {_tryit_key(entry): entry for entry in new}
    kept = [copy.deepcopy(fresh.pop(_tryit_key(entry), entry)) for entry in existing]
    return kept + [copy.deepcopy(entry) for entry in fresh.values()]


def write_atomic(path: Path, data: dict[str, Any]) -> None:
    """Validate, then replace ``path`` in one step: readers see the old file or the new one, never half."""
    path = Path(path)
    try:
        validate(data)
    except ResultsError as exc:
        raise ResultsError(f"{path}: refusing to write invalid results: {exc}") from exc
    path.parent.mkdir(parents=True, exist_ok=True)
    # Same directory as the target, so os.replace is a rename within one filesystem (atomic on POSIX).
    fd, tmp_name = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, allow_nan=False)
            f.write("\n")
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        # mkstemp makes the file private (0600); give it the mode a normally written file would have.
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    # Persist the rename itself (the directory entry); not every platform can open a directory.
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)


# --- reading --------------------------------------------------------------------------------------


def row(data: dict[str, Any], impl: str) -> dict[str, Any]:
    """One implementation's row of the ladder; ResultsError says how to measure it when it is absent."""
    rows = (data.get("ladder") or {}).get("rows", {})
    if impl not in rows:
        measured = ", ".join(sorted(rows)) or "nothing"
        raise ResultsError(f"{impl} is not in the ladder (measured: {measured}); run `nox -s bench` on a Hopper GPU")
    return rows[impl]


def peak_tflops_at(data: dict[str, Any], sm_clock_mhz: float) -> float:
    """Dense fp16 tensor-core peak at a clock: SMs x 4096 FLOP per clock per SM (Hopper, dense fp16/bf16)."""
    return data["gpu"]["sm_count"] * DENSE_FP16_FLOP_PER_CLOCK_PER_SM * sm_clock_mhz * 1e6 / 1e12


# H100/H200 SXM: 989.4 dense fp16 TFLOPS at the 1830 MHz boost clock over 132 SMs is 4096 FLOP/clock/SM.
DENSE_FP16_FLOP_PER_CLOCK_PER_SM = 4096
