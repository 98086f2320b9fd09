"""Independent runs merged into one figure, the one merge of a results file (:func:`merge_file`): runs-first bootstrap
intervals at the Bonferroni level, widened to hold every run's median; verdicts against a band around 1; efficiency
at the sampled clock (docs/method.rst says why)."""

from __future__ import annotations

import copy
import dataclasses
import math
import statistics
from typing import Any

from matmul_data import hopper, results, stats, versions
from matmul_data.model import Figure, Interval, Results, Row, Shape, Verdicts
from matmul_data.results import METHOD_VERSION  # runs of an older method are not merged with new ones
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


def verdict(interval: Interval, band: float) -> Interval:
    """The interval with the verdict fields it gets: the rule's word (stats.band_verdict) and the band it was taken
    against."""
    return interval.put(verdict=stats.band_verdict(interval.low, interval.high, band), band=band)


def rotation(figure: Figure) -> tuple[str, ...]:
    """The implementations a figure's runs time together: what else runs in a rotation moves a ratio."""
    return tuple(sorted(figure.runs[-1].rows))


def efficiency(tflops: float, sm_clock_mhz: float | None, sm_count: int) -> float | None:
    """TFLOPS over the dense fp16 tensor-core peak at that clock (:func:`matmul_data.hopper.peak_tflops`)."""
    return tflops / hopper.peak_tflops(sm_count, sm_clock_mhz) if sm_clock_mhz else None


def is_suspect(impl: str, shape: Shape, value: float | None) -> bool:
    """Whether a row's implied efficiency is outside what the hardware allows (see the module's docstring)."""
    if value is None:
        return False
    top = impl == results.CUBLAS or impl in versions.names()[-2:]
    large = min(shape.mnk) >= LARGE
    return value > EFFICIENCY_CEILING or (top and large and value < EFFICIENCY_FLOOR)


def merge_row(impl: str, rows: list[Row], shape: Shape, confidence: float, band: float, sm_count: int,
              own: bool) -> Row:  # fmt: skip
    """One implementation's merged row from its row in each run (``own``: the runs' clocks and power are their own)."""
    last = rows[-1]
    latency = float(statistics.median(r.latency_ms for r in rows))
    tflops = results.tflops(*shape.mnk, latency)
    clock, power = (median_of([getattr(r, key) for r in rows]) if own else None for key in ("sm_clock_mhz", "power_w"))
    ratio = merged_ratio(rows, "ratio_to_cublas", confidence)
    values = {"latency_ms": latency, "tflops": tflops,
              "ratio_to_cublas": ratio if impl == results.CUBLAS else verdict(ratio, band),
              "sm_clock_mhz": clock, "power_w": power, "busy": median_of([r.busy for r in rows]),
              "config": copy.deepcopy(last.config), "title": last.title}  # fmt: skip
    if last.step is not None:
        step = merged_ratio(rows, "step", confidence)
        values["step"] = verdict(Interval.of(over=last.step.over, **step.to_json()), band)
    counters = next((r.counters for r in reversed(rows) if r.counters), None)
    if last.has("counters") or counters:
        values["counters"] = counters
    if last.has("kept"):
        values["kept"] = last.kept
    wrong = [r.wrong_elements for r in rows if r.wrong_elements is not None]
    if wrong:  # an inexact baseline in any run marks the figure's row
        values["wrong_elements"] = max(wrong)
    values["efficiency"] = efficiency(tflops, clock, sm_count)
    return Row.of(**values, suspect=is_suspect(impl, shape, values["efficiency"]))


def merge_figure(figure: Figure, confidence: float, band: float, sm_count: int) -> Figure:
    """The figure's merged rows from its runs (the runs are kept whole, newest last)."""
    runs, newest = figure.runs, figure.runs[-1]
    # Before results.WARMUP_METHOD NVML was read inside kernels of 30 calls after a few warm-up calls: its clock and
    # power described what ran around the kernel (docs/method.rst, "Warm-up"), so such figures quote none.
    own = all((run.method or 0) >= results.WARMUP_METHOD for run in runs)
    merged_rows = {impl: merge_row(impl, [run.rows[impl] for run in runs], figure.shape, confidence, band, sm_count,
                                   own) for impl in newest.rows}  # fmt: skip
    # the keys in the order a dict built up key by key would hold them: the figure's own, then any new ones
    order = [key for key in figure.keys() if key not in ("rows", "runs", "peers_missing")]
    changes = {key: getattr(newest, key) for key in ("run_id", "date", "git_commit", "rounds", "processes")}
    # what the newest run could not time is what the figure lacks now
    changes["peers_missing"] = newest.peers_missing or None
    changes.update({key: getattr(newest, key) for key in ("warmup", "warmup_s", "repeats", "log", "field")
                    if getattr(newest, key) is not None})  # fmt: skip
    shown = [key for key in (*changes, "replicated") if key != "peers_missing" or newest.peers_missing]
    order += [key for key in shown if key not in order]
    return dataclasses.replace(figure, **changes, replicated=len(runs) >= REPLICATED, rows=merged_rows, runs=runs,
                               key_order=(*order, "rows", "runs"))  # fmt: skip


def merged_ratio(rows: list[Row], key: str, confidence: float) -> Interval:
    """The median of every per-round ratio, and the runs-first interval widened to hold each run's median; a figure
    whose runs lack their samples (one old run) keeps that run's interval."""
    medians = [getattr(r, key).median for r in rows]
    samples = [None if r.samples is None else getattr(r.samples, key) for r in rows]
    if len(rows) == 1 and samples[0] is None:
        own = getattr(rows[0], key)
        return Interval.of(median=own.median, low=own.low, high=own.high)
    if any(s is None for s in samples):
        raise ValueError(f"runs of one figure must all carry their per-round {key} samples to be merged")
    median = float(statistics.median(x for run in samples for process in run for x in process))
    low, high = bootstrap(samples, confidence, resamples=RESAMPLES, seed=SEED)
    return Interval.of(median=median, low=min(low, median, *medians), high=max(high, median, *medians))


def verdict_count(data: Results) -> int:
    """How many verdicts the file states: each step, and each non-cuBLAS row against cuBLAS (of a peers' run beside
    a figure without peers, its peers' rows only: the versions' verdicts there come from that figure)."""
    beside = [figure for section in ("sweep", "field") for figure in results.peer_runs(data, section)]
    return sum((impl != results.CUBLAS) + (row.step is not None)
               for figure in data.figures for impl, row in figure.runs[-1].rows.items()
               if figure not in beside or results.is_peer(impl))  # fmt: skip


def band_of(data: Results) -> float:
    """At least 1%; more where replicated rows' runs disagree more (see the module's docstring)."""
    spreads = []
    for figure in data.figures:
        for impl in figure.runs[-1].rows:
            for key in ("ratio_to_cublas", "step"):
                medians = [getattr(run.rows[impl], key).median for run in figure.runs
                           if getattr(run.rows[impl], key) is not None]  # fmt: skip
                if len(medians) >= 2 and not (impl == results.CUBLAS and key == "ratio_to_cublas"):
                    spreads.append((max(medians) - min(medians)) / 2.0)
    if not spreads:
        return MIN_BAND
    spreads.sort()
    q90 = spreads[min(len(spreads) - 1, math.ceil(0.9 * len(spreads)) - 1)]
    return max(MIN_BAND, math.ceil(q90 / BAND_STEP - 1e-9) * BAND_STEP)


def remerge(data: Results) -> Results:
    """Every figure's merged rows recomputed, at the level and band the whole file calls for."""
    count = max(1, verdict_count(data))
    confidence = 1.0 - (1.0 - FAMILY_CONFIDENCE) / count
    band, sm_count = band_of(data), data.gpu.sm_count
    data = results.map_figures(data, lambda figure: merge_figure(figure, confidence, band, sm_count))
    verdicts = Verdicts.of(count=count, family_confidence=FAMILY_CONFIDENCE, confidence_each=confidence, band=band,
                           band_floor=MIN_BAND, replicated_runs=REPLICATED)  # fmt: skip
    return data.put(method=data.method.put(verdicts=verdicts))


def merge_file(existing: Results | None, new: Results) -> Results:
    """A new record folded into the file (results.merge), each new run joining its figure; then all merged anew."""
    merged = results.merge(existing, new)
    if existing is not None:
        same_cublas = existing.software.cublas == new.software.cublas
        old, fresh = keyed(existing), keyed(new)
        for (section, key), figure in fresh.items():
            if (section, key) in old:
                merged = replaced(merged, section, key, add_run(old[(section, key)], figure, same_cublas))
    return remerge(merged)


def replaced(data: Results, section: str, key: tuple[Any, ...], figure: Figure) -> Results:
    """The file with its figure of that section and key (results.run_key) replaced."""
    if section == "ladder":
        return data.put(ladder=figure)
    figures = getattr(data, section)
    return data.put(**{section: tuple(figure if results.run_key(section, f) == key else f for f in figures)})


def keyed(data: Results) -> dict[tuple[str, tuple[Any, ...]], Figure]:
    """Every figure of a file by its section and its key there (results.run_key)."""
    placed = [("ladder", data.ladder)] if data.ladder is not None else []
    placed += [(section, figure) for section in results.SECTIONS for figure in getattr(data, section)]
    return {(section, results.run_key(section, figure)): figure for section, figure in placed}


def add_run(existing: Figure, new_figure: Figure, same_cublas: bool = True) -> Figure:
    """A new run joins the figure it measures again (same rotation and method), else starts one that keeps the
    cuBLAS kernel named at its shape unless cuBLAS itself changed (``same_cublas`` false)."""
    run = new_figure.runs[0]
    if rotation(existing) == rotation(new_figure) and all(
        r.method == METHOD_VERSION and r.warmup_s == run.warmup_s for r in existing.runs
    ):
        return existing.put(runs=(*existing.runs, run))
    if same_cublas and existing.cublas_kernel and not new_figure.cublas_kernel:
        return new_figure.put(cublas_kernel=existing.cublas_kernel)
    return new_figure
