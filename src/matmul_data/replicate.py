"""Independent runs merged into one figure, the one merge of a results file (:func:`merge_file`): runs-first bootstrap
intervals at the Bonferroni level, widened to hold every run's median; verdicts against a band around 1; efficiency
at the sampled clock (docs/method.rst says why)."""

from __future__ import annotations

import copy
import math
import statistics
from typing import Any

from matmul_data import hopper, results, stats, versions
from matmul_data.results import METHOD_VERSION, figures  # runs of an older method are not merged with new ones
from matmul_data.stats import bootstrap, median_of

FAMILY_CONFIDENCE = 0.95
MIN_BAND = 0.01
BAND_STEP = 0.005
RESAMPLES = 20000  # more than a run's own interval takes: a figure's level is Bonferroni's, far out in the tails
SEED = 20261201  # fixed: the same runs always give the same interval
EFFICIENCY_CEILING = 0.95  # above this the clock reading must be wrong: no kernel sustains the peak
EFFICIENCY_FLOOR = 0.70  # cuBLAS and the last versions at large shapes run well above this
LARGE = 4096  # "large shape": every dimension at least this
REPLICATED = 3  # runs a figure needs before its verdict counts as replicated


def verdict(interval: dict[str, float], band: float) -> dict[str, Any]:
    """The verdict fields an interval gets: the rule's word (stats.band_verdict) and the band it was taken against."""
    return {"verdict": stats.band_verdict(interval, band), "band": band}


def rotation(figure: dict[str, Any]) -> tuple[str, ...]:
    """The implementations a figure's runs time together: what else runs in a rotation moves a ratio."""
    return tuple(sorted(figure["runs"][-1]["rows"]))


def efficiency(tflops: float, sm_clock_mhz: float | None, sm_count: int) -> float | None:
    """TFLOPS over the dense fp16 tensor-core peak at that clock (:func:`matmul_data.hopper.peak_tflops`)."""
    return tflops / hopper.peak_tflops(sm_count, sm_clock_mhz) if sm_clock_mhz else None


def is_suspect(impl: str, shape: dict[str, int], value: float | None) -> bool:
    """Whether a row's implied efficiency is outside what the hardware allows (see the module's docstring)."""
    if value is None:
        return False
    top = impl == results.CUBLAS or impl in versions.names()[-2:]
    large = min(shape["m"], shape["n"], shape["k"]) >= LARGE
    return value > EFFICIENCY_CEILING or (top and large and value < EFFICIENCY_FLOOR)


def merge_figure(figure: dict[str, Any], confidence: float, band: float, sm_count: int) -> dict[str, Any]:
    """The figure's merged rows from its runs (the runs are kept whole, newest last)."""
    runs, shape, merged_rows = figure["runs"], figure["shape"], {}
    newest = runs[-1]
    # Before results.WARMUP_METHOD NVML was read inside kernels of 30 calls after a few warm-up calls: its clock and
    # power described what ran around the kernel (docs/method.rst, "Warm-up"), so such figures quote none.
    own = all(run.get("method", 0) >= results.WARMUP_METHOD for run in runs)
    for impl, last in newest["rows"].items():
        rows = [run["rows"][impl] for run in runs]
        latency = float(statistics.median(r["latency_ms"] for r in rows))
        tflops = results.tflops(shape["m"], shape["n"], shape["k"], latency)
        clock, power = (median_of([r.get(key) for r in rows]) if own else None for key in ("sm_clock_mhz", "power_w"))
        row: dict[str, Any] = {"latency_ms": latency, "tflops": tflops,
                               "ratio_to_cublas": merged_ratio(rows, "ratio_to_cublas", confidence),
                               "sm_clock_mhz": clock, "power_w": power,
                               "busy": median_of([r.get("busy") for r in rows]),
                               "config": copy.deepcopy(last["config"]), "title": last["title"]}  # fmt: skip
        if impl != results.CUBLAS:
            row["ratio_to_cublas"].update(verdict(row["ratio_to_cublas"], band))
        if last.get("step") is not None:
            row["step"] = {"over": last["step"]["over"], **merged_ratio(rows, "step", confidence)}
            row["step"].update(verdict(row["step"], band))
        counters = next((r["counters"] for r in reversed(rows) if r.get("counters")), None)
        if "counters" in last or counters:
            row["counters"] = copy.deepcopy(counters)
        if "kept" in last:
            row["kept"] = last["kept"]
        wrong = [r["wrong_elements"] for r in rows if r.get("wrong_elements") is not None]
        if wrong:  # an inexact baseline in any run marks the figure's row
            row["wrong_elements"] = max(wrong)
        row["efficiency"] = efficiency(tflops, clock, sm_count)
        merged_rows[impl] = row | {"suspect": is_suspect(impl, shape, row["efficiency"])}
    out = {key: value for key, value in figure.items() if key not in ("rows", "runs", "peers_missing")}
    out.update({key: newest[key] for key in ("run_id", "date", "git_commit", "rounds", "processes")})
    if newest.get("peers_missing"):  # what the newest run could not time is what the figure lacks now
        out["peers_missing"] = copy.deepcopy(newest["peers_missing"])
    out.update({key: newest[key] for key in ("warmup", "warmup_s", "repeats", "log", "field")
                if newest.get(key) is not None})  # fmt: skip
    return out | {"replicated": len(runs) >= REPLICATED, "rows": merged_rows, "runs": runs}


def merged_ratio(rows: list[dict[str, Any]], key: str, confidence: float) -> dict[str, float]:
    """The median of every per-round ratio, and the runs-first interval widened to hold each run's median; a figure
    whose runs lack their samples (one old run) keeps that run's interval."""
    medians = [r[key]["median"] for r in rows]
    samples = [r.get("samples", {}).get(key) for r in rows]
    if len(rows) == 1 and samples[0] is None:
        return {part: rows[0][key][part] for part in ("median", "low", "high")}
    if any(s is None for s in samples):
        raise ValueError(f"runs of one figure must all carry their per-round {key} samples to be merged")
    median = float(statistics.median(x for run in samples for process in run for x in process))
    low, high = bootstrap(samples, confidence, resamples=RESAMPLES, seed=SEED)
    return {"median": median, "low": min(low, median, *medians), "high": max(high, median, *medians)}


def verdict_count(data: dict[str, Any]) -> int:
    """How many verdicts the file states: each step, and each non-cuBLAS row against cuBLAS."""
    return sum((impl != results.CUBLAS) + (row.get("step") is not None)
               for figure in figures(data) for impl, row in figure["runs"][-1]["rows"].items())  # fmt: skip


def band_of(data: dict[str, Any]) -> float:
    """At least 1%; more where replicated rows' runs disagree more (see the module's docstring)."""
    spreads = []
    for figure in figures(data):
        for impl in figure["runs"][-1]["rows"]:
            for key in ("ratio_to_cublas", "step"):
                medians = [run["rows"][impl][key]["median"] for run in figure["runs"] if key in run["rows"][impl]]
                if len(medians) >= 2 and not (impl == results.CUBLAS and key == "ratio_to_cublas"):
                    spreads.append((max(medians) - min(medians)) / 2.0)
    if not spreads:
        return MIN_BAND
    spreads.sort()
    q90 = spreads[min(len(spreads) - 1, math.ceil(0.9 * len(spreads)) - 1)]
    return max(MIN_BAND, math.ceil(q90 / BAND_STEP - 1e-9) * BAND_STEP)


def remerge(data: dict[str, Any]) -> dict[str, Any]:
    """Every figure's merged rows recomputed, at the level and band the whole file calls for."""
    data = copy.deepcopy(data)
    count = max(1, verdict_count(data))
    confidence = 1.0 - (1.0 - FAMILY_CONFIDENCE) / count
    band, sm_count = band_of(data), data["gpu"]["sm_count"]
    if data.get("ladder"):
        data["ladder"] = merge_figure(data["ladder"], confidence, band, sm_count)
    for section in (s for s in results.SECTIONS if s in data):  # a file without a list stays without it
        data[section] = [merge_figure(f, confidence, band, sm_count) for f in data[section]]
    data["method"]["verdicts"] = {"count": count, "family_confidence": FAMILY_CONFIDENCE, "confidence_each": confidence,
                                  "band": band, "band_floor": MIN_BAND, "replicated_runs": REPLICATED}  # fmt: skip
    return data


def merge_file(existing: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """A new record folded into the file (results.merge), each new run joining its figure; then all merged anew."""
    merged = results.merge(existing, new)
    if existing is not None:
        same_cublas = existing.get("software", {}).get("cublas") == new.get("software", {}).get("cublas")
        old, fresh = keyed(existing), keyed(new)

        def joined(section: str, figure: dict[str, Any]) -> dict[str, Any]:
            key = (section, results.run_key(section, figure))
            return add_run(old[key], fresh[key], same_cublas) if key in old and key in fresh else figure

        if merged.get("ladder"):
            merged["ladder"] = joined("ladder", merged["ladder"])
        for section in (s for s in results.SECTIONS if s in merged):
            merged[section] = [joined(section, figure) for figure in merged[section]]
    return remerge(merged)


def keyed(data: dict[str, Any]) -> dict[tuple[Any, ...], dict[str, Any]]:
    """Every figure of a file by its section and its key there (results.run_key)."""
    placed = [("ladder", data["ladder"])] if data.get("ladder") else []
    placed += [(section, figure) for section in results.SECTIONS for figure in data.get(section, [])]
    return {(section, results.run_key(section, figure)): figure for section, figure in placed}


def add_run(existing: dict[str, Any], new_figure: dict[str, Any], same_cublas: bool = True) -> dict[str, Any]:
    """A new run joins the figure it measures again (same rotation and method), else starts one that keeps the
    cuBLAS kernel named at its shape unless cuBLAS itself changed (``same_cublas`` false)."""
    run = new_figure["runs"][0]
    if rotation(existing) == rotation(new_figure) and all(
        r.get("method") == METHOD_VERSION and r.get("warmup_s") == run.get("warmup_s") for r in existing["runs"]
    ):
        return {**copy.deepcopy(existing), "runs": [*copy.deepcopy(existing["runs"]), copy.deepcopy(run)]}
    fresh = copy.deepcopy(new_figure)
    if same_cublas and existing.get("cublas_kernel") and not fresh.get("cublas_kernel"):
        fresh["cublas_kernel"] = copy.deepcopy(existing["cublas_kernel"])
    return fresh
