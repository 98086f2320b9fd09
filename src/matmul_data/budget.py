"""The budget of a kernel version on an H100/H200, computed from its build and configuration, never typed.

Inputs: the sm_90a build record (threads, registers per thread, shared memory per block, written by the benchmark's
build check) and the tile configuration the ladder measured. Outputs: how many blocks fit on an SM and what limits them,
the FLOP per byte each tile load buys (its yardstick: the fastest rate L2 was measured sending the SMs, from the ncu
logs in ``plots/results/logs``), how the tiles of the ladder's problem fall into waves, and the speed of light at the
clock the GPU really ran.

The Hopper limits per SM it counts against are :mod:`matmul_data.hopper`'s.
"""

from __future__ import annotations

import csv
import functools
import hashlib
import json
import math
from dataclasses import dataclass
from pathlib import Path

from matmul_data import paths, versions
from matmul_data.builds import BuildFacts, BuildRecord
from matmul_data.decoding import Config
from matmul_data.hopper import (
    BLOCKS_PER_SM,
    REGISTER_UNIT_PER_WARP,
    REGISTERS_PER_SM,
    SHARED_BYTES_PER_SM,
    SHARED_RESERVED_PER_BLOCK,
    THREADS_PER_SM,
)

BUILD_RECORD = paths.RESULTS_DIR / "builds" / "sm_90a.json"
# The intensity's yardstick: Nsight Compute profiles of V8 (128 x 192, 3072 x 7168 at three K, one launch each) that
# counted the bytes L2 sent the SMs over the crossbar (TMA's operand loads: for these kernels they equal the operand
# bytes the tiles load) and the kernel's time.
L2_PROFILES = "ncu-v8-*.csv"
L2_BYTES = "l1tex__m_xbar2l1tex_read_bytes.sum"
L2_PEAK_PCT = "lts__throughput.avg.pct_of_peak_sustained_elapsed"
DURATION_NS = "gpu__time_duration.sum"


# The SASS families the build record counts: family -> (the PTX it comes from, what it does). A family is an opcode's
# first part ("LDSM" of "LDSM.16.M88.4"); WARPGROUP's are two.
SASS_FAMILIES: dict[str, tuple[str, str]] = {
    "HMMA": ("mma.sync", "warp-level tensor-core MMA on register operands"),
    "HGMMA": ("wgmma.mma_async", "warp-group MMA reading shared memory by descriptor"),
    "WARPGROUP.ARRIVE": ("wgmma.fence", "orders register and shared-memory accesses before an HGMMA"),
    "WARPGROUP.DEPBAR": ("wgmma.wait_group", "waits until at most N HGMMA groups are pending"),
    "LDSM": ("ldmatrix", "8 x 8 fragments from shared memory into registers"),
    "STSM": ("stmatrix", "8 x 8 fragments from registers into shared memory"),
    "LDS": ("ld.shared", "plain shared-memory loads"),
    "STS": ("st.shared", "plain shared-memory stores"),
    "LDG": ("ld.global", "global-memory loads"),
    "STG": ("st.global", "global-memory stores"),
    "LDL": ("ld.local", "local-memory loads: the stack (spills, arrays indexed at run time)"),
    "STL": ("st.local", "local-memory stores"),
    "UTMALDG": ("cp.async.bulk.tensor", "TMA loads, global to shared"),
    "UTMASTG": ("cp.async.bulk.tensor", "TMA stores, shared to global"),
    "SYNCS": ("mbarrier", "mbarrier operations: arrive, expect-tx, try-wait"),
    "BAR": ("bar.sync", "block-wide and named barriers"),
    "MEMBAR": ("fence, or the release of a wider scope", "waits until earlier memory operations are visible"),
    "USETMAXREG": ("setmaxnreg", "a warp group's register budget changed at run time"),
}


class BudgetError(ValueError):
    """The build record is missing or does not describe this version; the message says which."""


@dataclass(frozen=True)
class Build:
    """What the sm_90a build of one version needs per block."""

    threads: int
    registers: int  # per thread, from ptxas
    shared_bytes: int  # dynamic shared memory per block, from the launch
    persistent_blocks: int | None  # blocks launched when the grid is fixed (a persistent kernel), else None

    @classmethod
    def of(cls, facts: BuildFacts) -> Build:
        """What a build in the record needs per block."""
        return cls(facts.threads, facts.registers, facts.shared_bytes, facts.persistent_blocks)


@dataclass(frozen=True)
class Budget:
    blocks_per_sm: int
    limited_by: str  # "registers", "shared memory", "threads", "the 32-block limit", or several joined by "and"
    by_resource: dict[str, int]
    flop_per_byte: float  # per K-step: 2*bm*bn*bk FLOP over the (bm + bn)*bk*2 bytes TMA brings in
    tiles: int
    resident_blocks: int  # blocks that run at once over the whole GPU
    waves: float
    last_wave_fraction: float  # share of the resident slots the last wave fills (1.0: a full wave)


@dataclass(frozen=True)
class L2Rate:
    """The most bytes per second that L2 was measured sending the SMs: a rate reached, not L2's peak."""

    bytes_per_second: float
    bytes: float  # what the crossbar carried from L2 to the SMs in that launch
    peak_pct: float  # ncu's L2 throughput in that launch, percent of its peak
    shape: tuple[int, int, int]  # from the log's name, ncu-v8-<tile>-<M>x<N>x<K>-<date>.csv
    log: str


@functools.cache  # every budget box asks; the logs are read once
def l2_rate(logs: Path = paths.RESULTS_DIR / "logs") -> L2Rate | None:
    """The fastest of the profiled launches (L2_PROFILES): crossbar bytes over the kernel's time; None without one."""
    rates = []
    for log in sorted(logs.glob(L2_PROFILES)):
        lines = log.read_text(encoding="utf-8", errors="replace").splitlines()
        start = next((i for i, line in enumerate(lines) if line.startswith('"ID"')), None)
        if start is None:
            continue
        header, _units, *rows = csv.reader(lines[start:])
        for row in rows:
            cell = {name: value.replace(",", "") for name, value in zip(header, row, strict=False)}
            if not all(cell.get(name) for name in (L2_BYTES, DURATION_NS, L2_PEAK_PCT)):
                continue
            shape = tuple(int(n) for n in log.stem.split("-")[3].split("x"))
            rate = float(cell[L2_BYTES]) / (float(cell[DURATION_NS]) * 1e-9)
            rates.append(L2Rate(rate, float(cell[L2_BYTES]), float(cell[L2_PEAK_PCT]), shape, log.name))  # type: ignore[arg-type]
    return max(rates, key=lambda r: r.bytes_per_second, default=None)


def load_builds(path: Path = BUILD_RECORD) -> BuildRecord:
    """The build record (:mod:`matmul_data.builds`); BudgetError where it is missing or does not decode."""
    if not path.is_file():
        raise BudgetError(f"{path}: no build record")
    try:
        return BuildRecord.from_json(json.loads(path.read_text(encoding="utf-8")))
    except ValueError as exc:  # not JSON, or a ResultsError naming the bad field
        raise BudgetError(f"{path}: {exc}") from exc


def build_of(record: BuildRecord, version: str) -> tuple[Build, Config]:
    """One version's build and the configuration it was built with (its kernel file's TUNED)."""
    facts = record.versions.get(version)
    if facts is None:
        raise BudgetError(f"{version} is not in the build record")
    return Build.of(facts), versions.get(version).tuned


def blocks_per_sm(build: Build) -> tuple[int, str, dict[str, int]]:
    """Resident blocks per SM, the resource that limits it, and what each resource alone would allow."""
    warps = math.ceil(build.threads / 32)
    registers_per_warp = math.ceil(build.registers * 32 / REGISTER_UNIT_PER_WARP) * REGISTER_UNIT_PER_WARP
    by_resource = {
        "registers": (REGISTERS_PER_SM // registers_per_warp) // warps,
        "shared memory": SHARED_BYTES_PER_SM // (build.shared_bytes + SHARED_RESERVED_PER_BLOCK),
        "threads": THREADS_PER_SM // (warps * 32),
        "the 32-block limit": BLOCKS_PER_SM,
    }
    fewest = min(by_resource.values())
    limited_by = " and ".join(name for name, count in by_resource.items() if count == fewest)
    return fewest, limited_by, by_resource


def budget(build: Build, config: Config, shape: tuple[int, int, int], sm_count: int) -> Budget:
    """Occupancy, intensity and waves of one version at one problem shape."""
    bm, bn, bk = config["block_m"], config["block_n"], config["block_k"]
    per_sm, limited_by, by_resource = blocks_per_sm(build)
    m, n, _ = shape
    tiles = math.ceil(m / bm) * math.ceil(n / bn)
    resident = per_sm * sm_count if build.persistent_blocks is None else min(build.persistent_blocks, per_sm * sm_count)
    waves = tiles / resident
    last = tiles - (math.ceil(waves) - 1) * resident
    flop_per_byte = (2 * bm * bn * bk) / ((bm + bn) * bk * 2)
    return Budget(per_sm, limited_by, by_resource, flop_per_byte, tiles, resident, waves, last / resident)


def files_hash(relative: list[str]) -> str:
    """SHA-256 of files named relative to the repository root, then of the kernel helpers: a build's stamp."""
    digest = hashlib.sha256()
    for path in (*(paths.ROOT / r for r in relative), *(paths.KERNEL_DIR / name for name in HELPERS)):
        digest.update(path.read_bytes())
    return digest.hexdigest()


# The kernel folder's modules whose code ends up inside a kernel (V4 and later import the first two).
HELPERS = ("pipeline.py", "raster.py", "tilus_fixes.py")
