"""From raw per-round samples to the results file's runs: medians, paired ratios and their intervals.

Pure functions of the samples (no GPU, no clock): the runner calls them on what the workers sent,
and :func:`runs_from_log` recomputes the same runs from a raw log, so intervals can be recomputed.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from matmul_bench.plan import ImplSpec, RunSpec, Shape
from matmul_data import results, stats

CUBLAS = results.CUBLAS
METHOD_VERSION = 3


def _pooled(per_process: Sequence[dict[str, Any]], key: str, impl: str) -> list[float]:
    return [x for p in per_process for x in p[key][impl]]


def _paired(per_process: Sequence[dict[str, Any]], over: str, impl: str) -> list[list[float]]:
    """Per process, round by round: ``over``'s time divided by ``impl``'s (>1: impl is faster)."""
    return [stats.paired_ratios(p["samples"][over], p["samples"][impl]) for p in per_process]


def _rounded(groups: list[list[float]]) -> list[list[float]]:
    return [[round(x, 6) for x in group] for group in groups]


def make_row(spec: RunSpec, impl: str, per_process: Sequence[dict[str, Any]],
             counters: dict[str, Any] | None) -> dict[str, Any]:  # fmt: skip
    """One row: latency from every (process, round) sample, ratios paired within each round."""
    m, n, k = spec.shape
    latency = float(statistics.median(_pooled(per_process, "samples", impl)))
    clocks, power = _pooled(per_process, "clocks", impl), _pooled(per_process, "power", impl)
    title = next(i.title for i in spec.impls if i.name == impl)
    to_cublas = _paired(per_process, CUBLAS, impl)
    row: dict[str, Any] = {
        "latency_ms": latency,
        "tflops": results.tflops(m, n, k, latency),
        "ratio_to_cublas": stats.interval(to_cublas),
        "sm_clock_mhz": float(statistics.median(clocks)) if clocks else None,
        "power_w": float(statistics.median(power)) if power else None,
        "config": dict(per_process[0]["configs"].get(impl) or {}),
        "title": title,
    }
    row["samples"] = {"ratio_to_cublas": _rounded(to_cublas)}  # per process, per round: what runs merge from
    over = spec.step_over.get(impl)
    if over is not None:
        to_over = _paired(per_process, over, impl)
        row["step"] = {"over": over, **stats.interval(to_over)}
        row["samples"]["step"] = _rounded(to_over)
    if spec.section == "ladder" or counters:  # the ladder always has the key; a steps run when profiled
        row["counters"] = (counters or {}).get(impl)
    if spec.section == "steps" and impl != CUBLAS:
        row["kept"] = bool(spec.kept.get(impl, False))
    return row


def peers_missing(per_process: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """The optional peers some process could not run, each with what the first such process said of it."""
    missing: dict[str, dict[str, Any]] = {}
    for p in per_process:
        for name, entry in (p.get("missing") or {}).items():
            missing.setdefault(name, dict(entry))
    return missing


def make_run(
    spec: RunSpec,
    per_process: Sequence[dict[str, Any]],
    *,
    run_id: str,
    date: str,
    git_commit: str,
    warmup: int,
    repeats: int,
    log: str | None,
    counters: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The results file's run for one RunSpec from each process's samples of it.

    A peer that some process could not run is no row of the run (its samples from other processes are left
    out too: every row pairs the same rounds) but an entry of its ``peers_missing``.
    """
    if not per_process:
        raise ValueError(f"{spec.name}: no process measured it")
    missing = peers_missing(per_process)
    spec = replace(spec, impls=tuple(i for i in spec.impls if i.name not in missing))
    rounds = {len(p["samples"][i.name]) for p in per_process for i in spec.impls}
    if len(rounds) != 1 or 0 in rounds:
        raise ValueError(f"{spec.name}: every impl needs the same number of rounds in every process, got {rounds}")
    m, n, k = spec.shape
    run: dict[str, Any] = {
        "run_id": run_id,
        "date": date,
        "git_commit": git_commit,
        "shape": {"m": m, "n": n, "k": k},
        "rounds": rounds.pop(),
        "processes": len(per_process),
        "warmup": warmup,
        "repeats": repeats,
        "log": log,
        "method": METHOD_VERSION,  # clocks sampled inside the timed kernels; merged with runs of the same method
        "rows": {i.name: make_row(spec, i.name, per_process, counters) for i in spec.impls},
    }
    if spec.section == "steps":
        run["after"], run["title"] = spec.after, spec.title
    if missing:
        run["peers_missing"] = missing
    return run


def as_figure(run: dict[str, Any]) -> dict[str, Any]:
    """A new figure holding one run; :func:`matmul_bench.replicate.remerge` gives it its merged rows."""
    figure = {key: run[key] for key in ("run_id", "date", "git_commit", "shape", "rounds", "processes")}
    for key in ("after", "title", "peers_missing"):
        if key in run:
            figure[key] = run[key]
    figure["rows"] = run["rows"]  # replaced by the merged rows before anything is written
    figure["runs"] = [run]
    return figure


def shape_key(shape: Shape | Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


def spec_to_log(spec: RunSpec) -> dict[str, Any]:
    """Everything of a RunSpec that the runs are computed from, for the raw log."""
    return {"section": spec.section, "name": spec.name, "shape": list(spec.shape),
            "impls": [i.to_json() for i in spec.impls], "step_over": dict(spec.step_over),
            "check_shapes": [list(s) for s in spec.check_shapes], "after": spec.after, "title": spec.title,
            "kept": dict(spec.kept)}  # fmt: skip


def spec_from_log(entry: dict[str, Any]) -> RunSpec:
    impls = tuple(ImplSpec(**i) for i in entry["impls"])
    return RunSpec(entry["section"], entry["name"], tuple(entry["shape"]), impls, dict(entry["step_over"]),
                   tuple(tuple(s) for s in entry["check_shapes"]), entry["after"], entry["title"],
                   dict(entry["kept"]))  # fmt: skip


def runs_from_log(log: dict[str, Any]) -> list[dict[str, Any]]:
    """Recompute every run of a raw log (as the runner writes it): the same numbers the results file got."""
    out = []
    for entry in log["runs"]:
        out.append(make_run(
            spec_from_log(entry["spec"]), entry["processes"], run_id=log["run_id"], date=log["date"],
            git_commit=log["git_commit"], warmup=log["settings"]["warmup"], repeats=log["settings"]["repeats"],
            log=entry.get("log"), counters=entry.get("counters"),
        ))  # fmt: skip
    return out
