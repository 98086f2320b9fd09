"""Paired ratios, their confidence intervals, and the rule every comparison on the site follows.

The H200's clock wanders with power and temperature, so absolute times drift by 5-10% between
runs. Implementations are therefore timed in one session, interleaved in rounds, and compared
by paired ratios: in each round, the other implementation's time over this one's. The interval
is a 95% percentile bootstrap of the median ratio that resamples processes, then rounds within
each resampled process (the two levels at which the clock moves).

The rule (:func:`verdict`): a step *pays* when the whole interval of its ratio lies above 1.0,
*costs* when it lies below, and is *within noise* otherwise.
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from typing import Any

CONFIDENCE = 0.95
RESAMPLES = 2000
SEED = 20261130  # fixed: the same samples always give the same interval (results files are reproducible)

PAYS, COSTS, WITHIN_NOISE = "pays", "costs", "within noise"


def interval(groups: Sequence[Sequence[float]], *, resamples: int = RESAMPLES, seed: int = SEED) -> dict[str, float]:
    """Median of all samples and a 95% bootstrap interval; ``groups`` holds one list of ratios per process."""
    groups = [list(g) for g in groups if len(g)]
    if not groups:
        raise ValueError("no samples: an interval needs at least one ratio")
    pooled = [x for g in groups for x in g]
    rng = random.Random(seed)
    medians = []
    for _ in range(resamples):
        chosen = [groups[rng.randrange(len(groups))] for _ in groups]
        sample = [g[rng.randrange(len(g))] for g in chosen for _ in g]
        medians.append(statistics.median(sample))
    medians.sort()
    tail = (1.0 - CONFIDENCE) / 2.0
    low = medians[int(tail * (resamples - 1))]
    high = medians[int(round((1.0 - tail) * (resamples - 1)))]
    return {"median": statistics.median(pooled), "low": min(low, statistics.median(pooled)),
            "high": max(high, statistics.median(pooled))}  # fmt: skip


def verdict(ratio: dict[str, Any]) -> str:
    """"pays" when the interval lies wholly above 1.0, "costs" when wholly below, else "within noise"."""
    if ratio["low"] > 1.0:
        return PAYS
    if ratio["high"] < 1.0:
        return COSTS
    return WITHIN_NOISE


def paired_ratios(numerator_ms: Sequence[float], denominator_ms: Sequence[float]) -> list[float]:
    """Round by round, numerator time over denominator time (>1 means the denominator is faster)."""
    if len(numerator_ms) != len(denominator_ms):
        raise ValueError(f"paired ratios need the same rounds: {len(numerator_ms)} vs {len(denominator_ms)} samples")
    return [a / b for a, b in zip(numerator_ms, denominator_ms, strict=True)]
