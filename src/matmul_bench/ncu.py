"""Nsight Compute counters: one profiled launch per row, in its own worker, after the timed runs (``--ncu``)."""

from __future__ import annotations

import contextlib
import csv
import math
import re
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from matmul_data import model

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


# Where the warps wait (Nsight Compute's WarpStateStats): per reason, the warps stalled for it per issued
# instruction. They are no counter of their own: their values land in a row's raw ``ncu_metrics``, and a chapter's
# performance table names the largest (matmul_site.chapter_tables). "selected" is the warp that issues, not a stall.
STALL_REASONS = ("barrier", "branch_resolving", "dispatch_stall", "drain", "imc_miss", "lg_throttle", "long_scoreboard",
                 "math_pipe_throttle", "membar", "mio_throttle", "misc", "no_instruction", "not_selected",
                 "short_scoreboard", "sleeping", "tex_throttle", "wait")  # fmt: skip
STALL_METRICS = tuple(f"smsp__average_warps_issue_stalled_{r}_per_issue_active.ratio" for r in STALL_REASONS)


def metric_names() -> list[str]:
    """Every metric of NCU_METRICS, then the stall reasons."""
    return [metric for group in NCU_METRICS.values() for metric in group] + list(STALL_METRICS)


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


def prefix(ncu: str, metrics: Sequence[str], log: Path) -> list[str]:
    """What goes before a worker's command line: profile the one launch between profiler start and stop."""
    return [ncu, "--clock-control", "none", "--profile-from-start", "off", "--launch-count", "1",
            "--metrics", ",".join(metrics), "--csv", "--page", "raw", "--log-file", str(log)]  # fmt: skip


def counters(log: Path, metrics: Sequence[str]) -> model.Counters | None:
    """The counters of the first kernel in ncu's log (``--csv --page raw``); None when it measured none of them."""
    lines = (log.read_text(errors="replace") if log.exists() else "").splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith('"') and any(m in line for m in metrics)), None)
    if start is None:
        return None
    header, *rows = csv.reader(lines[start:])
    first = next((row for row in rows if row and row[0].strip().isdigit()), [])
    values: dict[str, float] = {}
    for column, cell in zip(header, first, strict=False):
        with contextlib.suppress(ValueError):
            if column in metrics and math.isfinite(value := float(cell.replace(",", ""))):
                values[column] = value  # "nan" or "inf" (ncu's n/a) is a counter not measured, as a missing cell
    found = {c: next((values[m] for m in ms if m in values), None) for c, ms in NCU_METRICS.items()}
    if all(v is None for v in found.values()):
        return None
    return model.Counters.from_json({**found, "ncu_metrics": values})
