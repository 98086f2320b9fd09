"""Paired ratios, their confidence intervals, and the rule every comparison on the site follows.

The H200's clock wanders with power and temperature, so absolute times drift by 5-10% between runs. Implementations are
therefore timed in one session, interleaved in rounds, and compared by paired ratios: in each round, the other
implementation's time over this one's. The interval is a 95% percentile bootstrap of the median ratio that resamples
processes, then rounds within each resampled process (the two levels at which the clock moves).

The rule (:func:`band_verdict`): a step *pays* when the whole interval of its ratio lies above 1 + band, *costs* when it
lies below 1 - band, is *within* the band when the whole interval lies inside 1 +/- band, and is *unresolved* otherwise:
its interval reaches past an edge of the band, so the runs show neither a change larger than the band nor one smaller.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from typing import Any

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20261130  # fixed: the same samples always give the same interval (results files are reproducible)

PAYS, COSTS, WITHIN, UNRESOLVED = "pays", "costs", "within", "unresolved"  # as the results file stores them


def interval(groups: Sequence[Sequence[float]], *, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, float]:
    """Median of all samples and a 95% bootstrap interval; ``groups`` holds one list of ratios per process."""
    groups = [list(g) for g in groups if len(g)]
    if not groups:
        raise ValueError("no samples: an interval needs at least one ratio")
    choices = random.Random(seed).choices
    medians = []
    for _ in range(resamples):
        sample: list[float] = []
        for group in choices(groups, k=len(groups)):  # processes, with replacement...
            sample += choices(group, k=len(group))  # ...then rounds within each, with replacement
        medians.append(_median(sample))
    medians.sort()
    tail = (1.0 - CONFIDENCE) / 2.0
    low = medians[int(tail * (resamples - 1))]
    high = medians[int(round((1.0 - tail) * (resamples - 1)))]
    median = statistics.median(x for g in groups for x in g)
    return {"median": median, "low": min(low, median), "high": max(high, median)}


def _median(values: list[float]) -> float:
    """statistics.median without its checks (the bootstrap calls it thousands of times); sorts in place."""
    values.sort()
    half = len(values) // 2
    return values[half] if len(values) % 2 else (values[half - 1] + values[half]) / 2


def band_verdict(interval: dict[str, Any], band: float) -> str:
    """The rule: PAYS wholly above 1 + band, COSTS wholly below 1 - band, WITHIN wholly inside, else UNRESOLVED."""
    if interval["low"] > 1.0 + band:
        return PAYS
    if interval["high"] < 1.0 - band:
        return COSTS
    if interval["low"] >= 1.0 - band and interval["high"] <= 1.0 + band:
        return WITHIN
    return UNRESOLVED


def verdict(ratio: dict[str, Any]) -> str:
    """The verdict the results file states (taken against its ``band``), else the rule against 1.0 itself."""
    return ratio.get("verdict") or band_verdict(ratio, 0.0)


def paired_ratios(numerator_ms: Sequence[float], denominator_ms: Sequence[float]) -> list[float]:
    """Round by round, numerator time over denominator time (>1 means the denominator is faster)."""
    if len(numerator_ms) != len(denominator_ms):
        raise ValueError(f"paired ratios need the same rounds: {len(numerator_ms)} vs {len(denominator_ms)} samples")
    return [a / b for a, b in zip(numerator_ms, denominator_ms, strict=True)]


# A warm-up block (experiments/warmup.py) in slices of time from its first call, in ms: its first calls, the rest of
# the first quarter second, the second quarter, the second half second, the second second.
WARMUP_SLICES_MS = ((0, 25), (25, 250), (250, 500), (500, 1000), (1000, 2000))


def warmup_slices(calls: Sequence[Sequence[float]], tail_ms: float = 1000.0) -> list[float | None]:
    """Each slice's median call time over the median of the block's last ``tail_ms`` (1.0: its end's speed);
    ``calls`` holds [start ms from the block's first call, duration ms]; None for a slice with no call."""
    end = calls[-1][0]
    final = statistics.median(ms for at, ms in calls if at >= end - tail_ms)
    inside = [[ms for at, ms in calls if low <= at < high] for low, high in WARMUP_SLICES_MS]
    return [statistics.median(times) / final if times else None for times in inside]
