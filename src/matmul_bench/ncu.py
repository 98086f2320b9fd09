"""Nsight Compute counters: one profiled launch per row, in its own worker, after the timed runs (``--ncu``)."""

from __future__ import annotations

import csv
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import Any

# Counter -> its metrics, most wanted first; a counter is the first of them that ncu measured. On the H200's ncu
# (2025.3) the tensor pipe's cycles-active metric of the WGMMA family alone does not exist: the whole pipe's
# (sm__pipe_tensor_cycles_active) counts HGMMA and mma.sync alike, and hmma's ("HMMA/HFMA2.MMA/HGMMA/QGMMA ops",
# ncu --query-metrics) is the fallback; the WGMMA instruction count says which family a kernel used.
NCU_METRICS: dict[str, tuple[str, ...]] = {
    "tensor_pipe_pct": (
        "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    ),
    "gmma_instructions": ("sm__inst_executed_pipe_tensor_op_gmma.sum",),
    "dram_throughput_pct": ("dram__throughput.avg.pct_of_peak_sustained_elapsed",),
    "dram_read_bytes": ("dram__bytes_read.sum",),
    "l2_hit_pct": ("lts__t_sector_hit_rate.pct",),
    "smem_store_wavefronts": ("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum",),
    "smem_store_bank_conflicts": ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum",),
}


def metric_names() -> list[str]:
    """Every metric of NCU_METRICS."""
    return [metric for group in NCU_METRICS.values() for metric in group]


def find_ncu() -> str | None:
    """ncu on PATH, else the newest under /usr/local/cuda*."""
    candidates = sorted(Path("/usr/local").glob("cuda*/bin/ncu"))
    return shutil.which("ncu") or (str(candidates[-1]) if candidates else None)


def available_metrics(ncu: str) -> list[str]:
    """The metrics of NCU_METRICS that this ncu knows (all of them if the query itself fails)."""
    wanted = metric_names()
    try:
        done = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return wanted
    known = set(re.findall(r"[a-z0-9_]+__[a-z0-9_]+", done.stdout))
    return [m for m in wanted if m.split(".")[0] in known] if done.returncode == 0 else wanted


def parse_csv(text: str, metrics: Sequence[str]) -> dict[str, float]:
    """Metric values of the first profiled kernel in ``ncu --csv --page raw`` output."""
    lines = text.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"') and any(m in line for m in metrics)), None)
    if start is None:
        return {}
    rows = list(csv.reader(lines[start:]))
    data = [row for row in rows[1:] if row and row[0].strip().isdigit()]
    values: dict[str, float] = {}
    for column, cell in zip(rows[0], data[0] if data else [], strict=False):
        try:
            if column in metrics:
                values[column] = float(cell.replace(",", ""))
        except ValueError:
            continue
    return values


def counters_from_metrics(values: dict[str, float]) -> dict[str, Any] | None:
    """The results file's counters from raw ncu values; None when ncu gave none of them."""
    counters: dict[str, Any] = {c: next((values[m] for m in ms if m in values), None) for c, ms in NCU_METRICS.items()}
    return None if all(v is None for v in counters.values()) else {**counters, "ncu_metrics": dict(values)}


def prefix(ncu: str, metrics: Sequence[str], log: Path) -> list[str]:
    """What goes before a worker's command line: profile the one launch between profiler start and stop."""
    return [ncu, "--clock-control", "none", "--profile-from-start", "off", "--launch-count", "1",
            "--metrics", ",".join(metrics), "--csv", "--page", "raw", "--log-file", str(log)]  # fmt: skip


def counters(log: Path, metrics: Sequence[str]) -> dict[str, Any] | None:
    """The counters of the log ncu wrote; None when it measured nothing."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return counters_from_metrics(parse_csv(text, metrics))
