"""How one measured row, step, run or try-it edit reads, in a page's value and in a table cell alike (the values:
:mod:`.page_values`; the tables: :mod:`.chapter_tables`)."""

from __future__ import annotations

import re

from matmul_data import model, results, versions
from matmul_site import numfmt
from matmul_site.numfmt import NOT_RECORDED, TIMES, escape, shape_name, unit_text

# An Nsight Compute counter a row may hold: name -> (its key in the row's "counters", label, unit kind).
COUNTERS = {
    "tensor_pipe": ("tensor_pipe_pct", "Tensor pipe utilisation (ncu)", "pct"),
    "gmma_instructions": ("gmma_instructions", "WGMMA warp instructions (ncu; 4 per wgmma)", "count"),
    "dram_throughput": ("dram_throughput_pct", "DRAM throughput, share of peak (ncu)", "pct"),
    "dram_read": ("dram_read_bytes", "Bytes read from DRAM (ncu)", "mb"),
    "l2_hit": ("l2_hit_pct", "L2 hit rate (ncu)", "pct"),
    "smem_wavefronts": ("smem_store_wavefronts", "Shared-memory store wavefronts (ncu)", "count"),
    "smem_conflicts": ("smem_store_bank_conflicts", "Of those, from bank conflicts (ncu)", "count"),
}


def reversed_interval(step: model.Interval) -> model.Interval:
    """A step read the other way, its baseline over the row: the ratio and its bounds inverted, the verdict too."""
    verdict = results.verdict(step)
    verdict = {results.PAYS: results.COSTS, results.COSTS: results.PAYS}.get(verdict, verdict)
    return model.Interval(median=1 / step.median, low=1 / step.high, high=1 / step.low, verdict=verdict,
                          band=step.band)  # fmt: skip


def reversed_step(step: model.Interval) -> str:
    """A step read the other way, by the rule ("pays: 1.04× [1.02, 1.06]")."""
    return numfmt.step_text(reversed_interval(step))


def clock_text(row: model.Row) -> str:
    """The row's clock; where its implied efficiency is implausible, marked as a suspect reading."""
    if row.suspect:
        return f"not shown (the reading would put the row at {100 * row.efficiency:.0f}% of the peak at that clock)"
    return unit_text("mhz", row.sm_clock_mhz)


def power_text(row: model.Row) -> str:
    """The row's power; none where its clock reading is implausible (both come from the same window)."""
    return "not shown" if row.suspect else unit_text("watts", row.power_w)


# Nsight Compute's stall reasons in a row's raw metrics: warps stalled for the reason per issued instruction.
STALL_METRIC = re.compile(r"smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio")


def stall_text(counters: model.Counters | None, shown: int = 3) -> str | None:
    """The largest stall reasons of a profiled launch, "long scoreboard 1.92, barrier 0.85, wait 0.40" (warps
    stalled per issued instruction); None where the profile recorded none."""
    found = {match[1]: value for name, value in ((counters and counters.ncu_metrics) or {}).items()
             if (match := STALL_METRIC.fullmatch(name)) and match[1] != "selected"}  # fmt: skip
    if not found:
        return None
    top = sorted(found.items(), key=lambda item: -item[1])[:shown]
    return ", ".join(f"{reason.replace('_', ' ')} {value:.2f}" for reason, value in top)


def counter_text(key: str, value: float | None) -> str:
    kind = next((kind for k, _, kind in COUNTERS.values() if k == key), "pct")
    scaled = None if value is None else value / 1e6 if kind == "mb" else int(value) if kind == "count" else value
    return unit_text(kind, scaled)


def outcome_text(entry: model.TryIt) -> str:
    """What a try-it edit did: "correct in all 5 checks (...)", "wrong in 2 of 5 checks (...): ...", "hangs: ..."."""
    checks, outcome = entry.checks, entry.outcome
    shapes = [numfmt.shape_text(check.shape) for check in checks]
    where = ", ".join(f"{shapes.count(shape)} at {shape}" for shape in dict.fromkeys(shapes))
    if outcome == "exact":  # every element within the check's fp16 tolerance: correct, not bit-exact
        errors = [c.max_abs_err for c in checks if c.max_abs_err is not None]
        largest = f"; largest error {max(errors):.2g}" if errors else ""
        return f"{outcome_word(outcome)} in all {len(checks)} checks ({where}{largest})"
    if outcome != "wrong":
        return f"{outcome}: {entry.error}"
    wrong = [c for c in checks if c.bad]
    worst = max(wrong, key=lambda c: c.bad)
    still = f", {worst.nonfinite:,} of them still NaN or inf" if worst.nonfinite else ""
    errors = [c.max_abs_err for c in wrong if c.max_abs_err is not None]
    largest = f"; largest finite error {max(errors):.3g}" if errors else ""
    return (f"wrong in {len(wrong)} of {len(checks)} checks ({where}): up to {worst.bad:,} of "
            f"{worst.shape.m * worst.shape.n:,} elements outside tolerance{still}{largest}")  # fmt: skip


def outcome_word(outcome: str) -> str:
    """A try-it outcome as prose says it: the record's "exact" (every element within tolerance) is "correct"."""
    return "correct" if outcome == "exact" else outcome


def chapter_link(impl: str) -> str:
    """An implementation's name; a version's links to its chapter."""
    if impl not in versions.names():
        return versions.label(impl)
    return f":doc:`{escape(versions.get(impl).heading)} </chapters/{impl}>`"


def per_clock(data: model.Results, impl: str, step: model.Interval) -> tuple[str, str]:
    """A ladder step's SM clock change and the step per clock cycle (at the medians); "not recorded" if either's bad."""
    row, over = results.ladder_row(data, impl), results.ladder_row(data, step.over or "")
    clocks = [r.sm_clock_mhz if r and not r.suspect else None for r in (over, row)]
    if None in clocks:
        return NOT_RECORDED, NOT_RECORDED
    before, after = clocks
    return f"{before:.0f} \u2192 {after:.0f} MHz", f"{step.median * before / after:.2f}{TIMES}"


def run_slug(run: model.Run) -> str:
    """A steps run's file name: its title's first five words and its shape ("a-tile-chosen-per-problem-5120")."""
    words = re.findall(r"[a-z0-9]+", (run.title or "").lower().split(",")[0].split(" at ")[0])[:5]
    return "-".join([*words, shape_name(run.shape.mnk)])
