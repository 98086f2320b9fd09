"""Paired ratios, their confidence intervals, and the rule every comparison on the site follows.

The H200's clock wanders with power and temperature, so absolute times drift by 5-10% between runs. Implementations are
therefore timed in one session, interleaved in rounds, and compared by paired ratios: in each round, the other
implementation's time over this one's. The interval is a 95% percentile bootstrap of the median ratio that resamples
processes, then rounds within each resampled process (the two levels at which the clock moves); independent runs
merged into one figure add a level above them (:mod:`matmul_data.replicate`).

The rule (:func:`band_verdict`): a step *pays* when the whole interval of its ratio lies above 1 + band, *costs* when it
lies below 1 - band, is *within* the band when the whole interval lies inside 1 +/- band, and is *unresolved* otherwise:
its interval reaches past an edge of the band, so the runs show neither a change larger than the band nor one smaller.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20261130  # fixed: the same samples always give the same interval (results files are reproducible)

PAYS, COSTS, WITHIN, UNRESOLVED = "pays", "costs", "within", "unresolved"  # as the results file stores them


def interval(groups: Sequence[Sequence[float]], *, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, float]:
    """Median of all samples and a 95% bootstrap interval; ``groups`` holds one list of ratios per process."""
    groups = [list(g) for g in groups if len(g)]
    if not groups:
        raise ValueError("no samples: an interval needs at least one ratio")
    low, high = bootstrap([groups], CONFIDENCE, resamples=resamples, seed=seed)
    median = statistics.median(x for g in groups for x in g)
    return {"median": median, "low": min(low, median), "high": max(high, median)}


def bootstrap(
    runs: Sequence[Sequence[Sequence[float]]], confidence: float, *, resamples: int, seed: int
) -> tuple[float, float]:
    """Percentile interval of the median: resample runs, then processes within each, then rounds within each (the
    levels at which the clock moves); one run's interval is the same with its one run always drawn."""
    import numpy as np  # the benchmark's and the site's extras have it; a bare install's `plan` never gets here

    runs = [kept for run in runs if (kept := [list(p) for p in run if len(p)])]
    if not runs:
        raise ValueError("no samples")
    n_runs, p_max, r_max = len(runs), max(len(run) for run in runs), max(len(p) for run in runs for p in run)
    values = np.full((n_runs, p_max, r_max), np.nan)  # padded with NaN: a ratio is never NaN
    for r, run in enumerate(runs):
        for p, process in enumerate(run):
            values[r, p, : len(process)] = process
    rounds = np.sum(~np.isnan(values), axis=2)  # (n_runs, p_max)
    rng, b = np.random.default_rng(seed), resamples
    run_pick = rng.integers(0, n_runs, (b, n_runs))
    proc_count = np.sum(rounds > 0, axis=1)[run_pick]  # (b, n_runs): the processes of each picked run
    proc_pick = np.floor(rng.random((b, n_runs, p_max)) * proc_count[..., None]).astype(int)
    proc_used = np.arange(p_max) < proc_count[..., None]
    round_count = rounds[run_pick[..., None], proc_pick]  # (b, n_runs, p_max)
    round_pick = np.floor(rng.random((b, n_runs, p_max, r_max)) * np.maximum(round_count, 1)[..., None]).astype(int)
    used = proc_used[..., None] & (np.arange(r_max) < round_count[..., None])
    picked = values[run_pick[..., None, None], proc_pick[..., None], round_pick]
    medians = np.nanmedian(np.where(used, picked, np.nan).reshape(b, -1), axis=1)
    tail = (1.0 - confidence) / 2.0
    return float(np.quantile(medians, tail)), float(np.quantile(medians, 1.0 - tail))


def median_of(values: Sequence[float | None]) -> float | None:
    """The median of the values present; None when none is."""
    present = [v for v in values if v is not None]
    return float(statistics.median(present)) if present else None


def band_verdict(low: float, high: float, band: float) -> str:
    """The rule on an interval [low, high]: PAYS wholly above 1 + band, COSTS wholly below 1 - band, WITHIN wholly
    inside, else UNRESOLVED."""
    if low > 1.0 + band:
        return PAYS
    if high < 1.0 - band:
        return COSTS
    if low >= 1.0 - band and high <= 1.0 + band:
        return WITHIN
    return UNRESOLVED


def paired_ratios(numerator_ms: Sequence[float], denominator_ms: Sequence[float]) -> list[float]:
    """Round by round, numerator time over denominator time (>1 means the denominator is faster)."""
    if len(numerator_ms) != len(denominator_ms):
        raise ValueError(f"paired ratios need the same rounds: {len(numerator_ms)} vs {len(denominator_ms)} samples")
    return [a / b for a, b in zip(numerator_ms, denominator_ms, strict=True)]


# A warm-up block (the warm-up check, docs/method.rst) in slices of time from its first call, in ms: its first calls,
# the rest of the first quarter second, the second quarter, the second half second, the second second.
WARMUP_SLICES_MS = ((0, 25), (25, 250), (250, 500), (500, 1000), (1000, 2000))


def warmup_slices(calls: Sequence[Sequence[float]], tail_ms: float = 1000.0) -> list[float | None]:
    """Each slice's median call time over the median of the block's last ``tail_ms`` (1.0: its end's speed);
    ``calls`` holds [start ms from the block's first call, duration ms]; None for a slice with no call."""
    end = calls[-1][0]
    final = statistics.median(ms for at, ms in calls if at >= end - tail_ms)
    inside = [[ms for at, ms in calls if low <= at < high] for low, high in WARMUP_SLICES_MS]
    return [statistics.median(times) / final if times else None for times in inside]
