"""Nsight Compute counters for the rows of the ladder and steps runs: one profiled launch per row, its own process.

A separate pass after the timed runs (``--ncu``): ncu serialises and replays kernels, so nothing it
touches is timed. Clocks are left alone (``--clock-control none``), as in the timed runs.
"""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

# Metrics per counter. The tensor pipe has one metric per instruction family on Hopper (gmma = WGMMA,
# hmma = mma.sync); a kernel uses one of them, so the counter is the larger of the two.
NCU_METRICS: dict[str, tuple[str, ...]] = {
    "tensor_pipe_pct": (
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    ),
    "dram_throughput_pct": ("dram__throughput.avg.pct_of_peak_sustained_elapsed",),
    # What a tile order or a schedule does to L2 reuse: bytes that had to come from HBM, and L2's hit rate.
    "dram_read_bytes": ("dram__bytes_read.sum",),
    "l2_hit_pct": ("lts__t_sector_hit_rate.pct",),
    # Shared-memory stores (st.shared and stmatrix go through the LSU pipe): wavefronts, and those caused by bank
    # conflicts. An epilogue that writes C with conflicts shows up here.
    "smem_store_wavefronts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",),
    "smem_store_bank_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",),
}


def metric_names() -> list[str]:
    return [metric for group in NCU_METRICS.values() for metric in group]


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    candidates = sorted(Path("/usr/local").glob("cuda*/bin/ncu"))
    return str(candidates[-1]) if candidates else None


def available_metrics(ncu: str) -> list[str]:
    """The metrics of NCU_METRICS that this ncu knows (all of them if the query itself fails)."""
    wanted = metric_names()
    try:
        done = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return wanted
    if done.returncode != 0:
        return wanted
    known = set(re.findall(r"[a-z0-9_]+__[a-z0-9_]+", done.stdout))
    return [metric for metric in wanted if metric.split(".")[0] in known]


def parse_csv(text: str, metrics: Sequence[str]) -> dict[str, float]:
    """Metric values of the first profiled kernel in `ncu --csv --page raw` output."""
    lines = text.splitlines()
    # The header is the first CSV row naming a metric (ncu's "==PROF==" lines come before it).
    start = next((i for i, line in enumerate(lines) if line.startswith('"') and any(m in line for m in metrics)), None)
    if start is None:
        return {}
    rows = list(csv.reader(lines[start:]))
    header, data = rows[0], [row for row in rows[1:] if row and row[0].strip().isdigit()]
    if not data:
        return {}
    values: dict[str, float] = {}
    for column, cell in zip(header, data[0], strict=False):
        if column in metrics:
            try:
                values[column] = float(cell.replace(",", ""))
            except ValueError:
                continue
    return values


def counters_from_metrics(values: dict[str, float]) -> dict[str, Any] | None:
    """The results file's counters from raw ncu values; None when ncu gave none of them."""
    counters: dict[str, Any] = {}
    for counter, metrics in NCU_METRICS.items():
        found = [values[m] for m in metrics if m in values]
        counters[counter] = max(found) if found else None
    if all(v is None for v in counters.values()):
        return None
    counters["ncu_metrics"] = dict(values)
    return counters


def ncu_prefix(ncu: str, metrics: Sequence[str], log: Path) -> list[str]:
    """What goes before the worker's command line: one launch (the one between profiler start and stop)."""
    cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--launch-count", "1"]
    return cmd + ["--metrics", ",".join(metrics), "--csv", "--page", "raw", "--log-file", str(log)]


def profile(ncu: str, metrics: Sequence[str], log: Path, run: Callable[[list[str]], Any]) -> dict[str, Any] | None:
    """Profile one worker (``run`` starts it under the prefix, raising on failure); None when ncu measured nothing."""
    run(ncu_prefix(ncu, metrics, log))
    text = log.read_text(errors="replace") if log.exists() else ""
    return counters_from_metrics(parse_csv(text, metrics))
