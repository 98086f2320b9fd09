"""The recorded benchmark results: one JSON file per GPU model under ``plots/results/``.

The benchmark writes these files; the plot scripts and the Sphinx build read them.
This module is pure Python (json, os, tempfile) so that the docs build on a
machine with no torch, no Tilus and no GPU. The file layout is described in
``.agents/RESULTS_SCHEMA.md``; :func:`validate` enforces it field by field.
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

SCHEMA_VERSION = 1

# How to make a results file when there is none: shown in every "missing" message.
HOW_TO_CREATE = "create it by running `nox -s bench` on a machine with a Hopper GPU (H100/H200)"

_VERSION_NAME = re.compile(r"v(\d+)")
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


def results_dir() -> Path:
    """<repo>/plots/results, where one file per GPU model is committed."""
    return Path(__file__).resolve().parents[2] / "plots" / "results"


def default_path(gpu_name: str | None = None) -> Path:
    """The results file of a GPU model, or (no name given) the single file that is committed."""
    if gpu_name is not None:
        return results_dir() / f"{slug(gpu_name)}.json"
    found = sorted(results_dir().glob("*.json"))
    if not found:
        raise ResultsError(f"no results file in {results_dir()}: {HOW_TO_CREATE}")
    if len(found) > 1:
        names = ", ".join(p.name for p in found)
        raise ResultsError(f"several results files in {results_dir()} ({names}): name the GPU to pick one")
    return found[0]


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


def _tflops(m: int, n: int, k: int, ms: float) -> float:
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
    seen = _get(clocks, "sm_seen_during_run", "gpu.clocks_mhz")
    if not isinstance(seen, list) or not all(_is_number(v) and v > 0 for v in seen):
        raise _fail("gpu.clocks_mhz.sm_seen_during_run", "must be a list of positive numbers", seen)
    _number(gpu, "published_dense_fp16_tflops", "gpu", optional=True)
    _string(gpu, "published_source", "gpu", optional=True)
    if (gpu["published_dense_fp16_tflops"] is None) != (gpu["published_source"] is None):
        raise _fail("gpu.published_source", "must be given exactly when published_dense_fp16_tflops is", gpu)


def _validate_entry(name: str, entry: Any, problem: dict[str, Any]) -> None:
    field = f"entries.{name}"
    entry = _dict(entry, field)
    for key in ("latency_ms", "tflops", "fraction_of_cublas"):
        _number(entry, key, field)
    latencies = _get(entry, "process_latencies_ms", field)
    if not isinstance(latencies, list) or not latencies or not all(_is_number(v) and v > 0 for v in latencies):
        raise _fail(f"{field}.process_latencies_ms", "must be a non-empty list of positive numbers", latencies)
    _dict(_get(entry, "config", field), f"{field}.config")
    counters = _get(entry, "counters", field)
    if counters is not None:
        counters = _dict(counters, f"{field}.counters")
        _number(counters, "tensor_pipe_pct", f"{field}.counters", positive=False, optional=True)
        _number(counters, "dram_throughput_pct", f"{field}.counters", positive=False, optional=True)
    _date(entry, "date", field)
    _string(entry, "git_commit", field)
    _string(entry, "technique", field)
    m, n, k = problem["m"], problem["n"], problem["k"]
    if not _close(entry["tflops"], _tflops(m, n, k, entry["latency_ms"])):
        raise _fail(f"{field}.tflops", f"does not match latency_ms at {m}x{n}x{k}", entry["tflops"])
    if name == "cublas":
        if not _close(entry["fraction_of_cublas"], 1.0):
            raise _fail(f"{field}.fraction_of_cublas", "must be 1.0 for cuBLAS itself", entry["fraction_of_cublas"])
        return
    _number(entry, "cublas_latency_ms", field)
    if not _close(entry["fraction_of_cublas"], entry["cublas_latency_ms"] / entry["latency_ms"]):
        raise _fail(f"{field}.fraction_of_cublas", "must equal cublas_latency_ms / latency_ms", entry)


def _validate_sweep_row(index: int, row: Any) -> None:
    field = f"sweep[{index}]"
    row = _dict(row, field)
    _string(row, "impl", field)
    for key in ("m", "n", "k"):
        _integer(row, key, field)
    _number(row, "latency_ms", field)
    _number(row, "tflops", field)
    _date(row, "date", field)
    if not _close(row["tflops"], _tflops(row["m"], row["n"], row["k"], row["latency_ms"])):
        raise _fail(f"{field}.tflops", "does not match latency_ms and the shape", row["tflops"])


def _validate_step(index: int, row: Any) -> None:
    field = f"steps[{index}]"
    row = _dict(row, field)
    for key in ("impl", "name", "change", "round"):
        _string(row, key, field)
    _integer(row, "rounds", field)
    _number(row, "tflops", field)
    _number(row, "fraction_of_cublas", field)
    low_high = _get(row, "fraction_range", field)
    if not (isinstance(low_high, list) and len(low_high) == 2 and all(isinstance(x, (int, float)) for x in low_high)):
        raise _fail(f"{field}.fraction_range", "must be [lowest, highest]", low_high)
    if not low_high[0] <= row["fraction_of_cublas"] <= low_high[1]:
        raise _fail(f"{field}.fraction_of_cublas", "lies outside its own fraction_range", row["fraction_of_cublas"])
    if not isinstance(_get(row, "kept", field), bool):
        raise _fail(f"{field}.kept", "must be true or false", row["kept"])
    _date(row, "date", field)


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
    for key in ("timer", "statistic", "l2_flush"):
        _string(method, key, "method")
    _integer(method, "warmup", "method", minimum=0)
    _integer(method, "repeats", "method")
    _integer(method, "processes", "method")
    problem = _dict(_get(data, "problem", ""), "problem")
    for key in ("m", "n", "k"):
        _integer(problem, key, "problem")
    _string(problem, "dtype", "problem")
    _string(problem, "accumulate", "problem")
    entries = _dict(_get(data, "entries", ""), "entries")
    for name, entry in entries.items():
        if name != "cublas" and not _VERSION_NAME.fullmatch(name):
            raise _fail(f"entries.{name}", 'has a name that is neither "v<N>" nor "cublas"', name)
        _validate_entry(name, entry, problem)
    sweep = _get(data, "sweep", "")
    if not isinstance(sweep, list):
        raise _fail("sweep", "must be a list (possibly empty)", sweep)
    keys = set()
    for index, row in enumerate(sweep):
        _validate_sweep_row(index, row)
        key = _sweep_key(row)
        if key in keys:
            raise _fail(f"sweep[{index}]", "repeats an (impl, m, n, k) that an earlier row has", key)
        keys.add(key)
    steps = data.get("steps", [])  # optional: the attempts after a version, kept or not (experiments/steps.py)
    if not isinstance(steps, list):
        raise _fail("steps", "must be a list (possibly empty)", steps)
    names = set()
    for index, row in enumerate(steps):
        _validate_step(index, row)
        if (row["round"], row["name"]) in names:
            raise _fail(f"steps[{index}]", "repeats a (round, name) that an earlier row has", row["name"])
        names.add((row["round"], row["name"]))


# --- combining and writing ----------------------------------------------------------------------


def _sweep_key(row: dict[str, Any]) -> tuple[str, int, int, int]:
    return (row["impl"], row["m"], row["n"], row["k"])


def merge(existing: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """Fold a new run into an existing file.

    Provenance (gpu, software, method, problem) comes from the new run; entries
    it measured replace the same-named ones and the others are kept; sweep rows
    are replaced by (impl, m, n, k) and rows it did not measure are kept.
    """
    merged = copy.deepcopy(new)
    if existing is None:
        return merged
    old_gpu, new_gpu = existing.get("gpu", {}).get("name"), new.get("gpu", {}).get("name")
    if old_gpu != new_gpu:
        raise ResultsError(f"cannot merge results of {new_gpu!r} into a file for {old_gpu!r}: one file per GPU model")
    if existing.get("problem") != new.get("problem"):
        raise ResultsError(
            f"cannot merge entries measured on {new.get('problem')} into a file measured on {existing.get('problem')}: "
            "rerun every entry into a new file"
        )
    entries = copy.deepcopy(existing.get("entries", {}))
    entries.update(copy.deepcopy(new.get("entries", {})))
    merged["entries"] = entries
    new_rows = {_sweep_key(row): row for row in new.get("sweep", [])}
    rows = [copy.deepcopy(new_rows.pop(_sweep_key(row), row)) for row in existing.get("sweep", [])]
    rows += [copy.deepcopy(row) for row in new_rows.values()]
    merged["sweep"] = rows
    if "steps" not in new and "steps" in existing:  # a benchmark run does not measure steps; keep them
        merged["steps"] = copy.deepcopy(existing["steps"])
    return merged


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


def entry(data: dict[str, Any], name: str) -> dict[str, Any]:
    """One measured entry ("v0".."v6" or "cublas"); ResultsError says how to measure it if absent."""
    entries = data.get("entries", {})
    if name not in entries:
        measured = ", ".join(sorted(entries)) or "nothing"
        what = "--cublas" if name == "cublas" else f"--versions {name}"
        raise ResultsError(
            f"{name} is not in the results (measured: {measured}); run `nox -s bench -- {what}` on a Hopper GPU"
        )
    return entries[name]


def versions(data: dict[str, Any]) -> list[str]:
    """The measured kernel versions, "v0" first, in numeric order (so "v10" follows "v9")."""
    names = [name for name in data.get("entries", {}) if _VERSION_NAME.fullmatch(name)]
    return sorted(names, key=lambda name: int(name[1:]))
