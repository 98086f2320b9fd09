"""Every kernel version builds for sm_90a on this CPU machine and holds the instructions its chapter claims.

Versions are found by convention (examples/hopper_matmul/matmul_v<N>.py defining MatmulV<N>), so a new
version is built and checked here as soon as its file exists. Each version is built once, with one
representative configuration: BUILD_CONFIGS[N] if given, else the first choice of every autotune knob.
Instruction expectations live in EXPECTATIONS; a version without an entry inherits the nearest lower one.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

import buildcheck

pytestmark = pytest.mark.slow

KERNEL_DIR = Path(__file__).resolve().parent.parent / "examples" / "hopper_matmul"
# Ragged M and N edges and a partial last K-tile (520 = 8 * 64 + 8), so the bounds code is compiled too.
BUILD_SHAPE = (1000, 3000, 520)
# Per-version configuration overrides; versions not listed build their first autotune choice.
BUILD_CONFIGS: dict[int, dict[str, Any]] = {}


@dataclass(frozen=True)
class Expectation:
    """What a version's PTX must and must not hold, and how its barriers are organised."""

    present: tuple[str, ...]  # PTX substrings that must appear
    absent: tuple[str, ...]  # PTX substrings that must not appear
    barriers_per_stage: int  # mbarrier.init per stage of the ring (0: a single barrier, no ring)
    role_split: bool  # producer and consumer warps run different code paths


TMA_LOAD = "cp.async.bulk.tensor.2d.shared::cta.global"
WGMMA = ("wgmma.fence.sync.aligned", "wgmma.mma_async.sync.aligned", "wgmma.commit_group.sync.aligned")
EXPECTATIONS: dict[int, Expectation] = {
    0: Expectation((TMA_LOAD, "mbarrier.try_wait", "ldmatrix", "mma.sync.aligned"), ("wgmma",), 0, False),
    1: Expectation((TMA_LOAD, *WGMMA, "wgmma.wait_group.sync.aligned 0"), ("mma.sync", "ldmatrix"), 0, False),
    2: Expectation((TMA_LOAD, *WGMMA, "wgmma.wait_group.sync.aligned 0"), ("mma.sync", "ldmatrix"), 1, False),
    3: Expectation((TMA_LOAD, *WGMMA, "wgmma.wait_group.sync.aligned"), ("mma.sync", "ldmatrix"), 2, True),
}


def versions() -> list[int]:
    found = (re.fullmatch(r"matmul_v(\d+)\.py", path.name) for path in KERNEL_DIR.glob("matmul_v*.py"))
    return sorted(int(match.group(1)) for match in found if match)


def expectation(version: int) -> Expectation:
    return EXPECTATIONS[max(v for v in EXPECTATIONS if v <= version)]


def kernel_class(version: int) -> type:
    return getattr(importlib.import_module(f"matmul_v{version}"), f"MatmulV{version}")


def autotune_space(cls: type) -> list[dict[str, Any]]:
    """Every configuration the autotuner would try, in its order (first choice of every knob first)."""
    groups = []
    for names, choices in getattr(cls, "_autotune_space", {}).items():
        keys = [name.strip() for name in names.split(",")]
        groups.append([dict(zip(keys, choice if len(keys) > 1 else [choice], strict=True)) for choice in choices])
    return [{k: v for part in combo for k, v in part.items()} for combo in itertools.product(*groups)]


def build_config(version: int) -> dict[str, Any]:
    return BUILD_CONFIGS.get(version) or autotune_space(kernel_class(version))[0]


def num_stages(version: int) -> int:
    """The ring depth the representative build uses: its config, else the constructor's default."""
    config = build_config(version)
    if "num_stages" in config:
        return int(config["num_stages"])
    return int(inspect.signature(kernel_class(version).__init__).parameters["num_stages"].default)


@functools.cache
def built(version: int) -> buildcheck.BuildReport:
    return buildcheck.build_sm90a(kernel_class(version), build_config(version), *BUILD_SHAPE)


def kernel_body(source: str) -> str:
    """The __global__ function of the generated CUDA source."""
    start = source.index("__global__")
    return source[start : source.index("\nDLL ", start)]


def role_branches(source: str) -> list[tuple[str, str]]:
    """(condition, body) of every branch on threadIdx.x: how a block hands warps different roles."""
    body = kernel_body(source)
    branches = []
    for match in re.finditer(r"if \(([^{}\n]*threadIdx\.x[^{}\n]*)\) \{", body):
        if "shfl_sync" in match.group(1):
            continue  # a warp-uniform "which warp issues the copy" guard, not a role
        depth, i = 1, match.end()
        while depth:
            depth += {"{": 1, "}": -1}.get(body[i], 0)
            i += 1
        branches.append((match.group(1), body[match.end() : i - 1]))
    return branches


VERSIONS = versions()
V = [pytest.param(v, id=f"v{v}") for v in VERSIONS]


def role_paths(source: str) -> tuple[list[str], list[str]]:
    """Conditions of the branches that only issue TMA (producers) and of those that only issue WGMMA (consumers)."""
    branches = role_branches(source)
    producers = [c for c, body in branches if "cp_async_bulk_tensor" in body and "wgmma_mma_async" not in body]
    consumers = [c for c, body in branches if "wgmma_mma_async" in body and "cp_async_bulk_tensor" not in body]
    return producers, consumers


def test_versions_v0_to_v3_are_found_by_convention() -> None:
    assert set(range(4)) <= set(VERSIONS), VERSIONS
    for version in VERSIONS:
        module = importlib.import_module(f"matmul_v{version}")
        assert callable(module.main)
        assert 1 <= len(autotune_space(kernel_class(version))) <= 8, "each config costs ~10 s of nvcc per shape"
        assert module.TITLE.strip(), "each kernel file names what its version adds in TITLE"


@pytest.mark.parametrize("version", V)
def test_version_builds_for_sm90a_without_spills(version: int) -> None:
    report = built(version)
    assert ".target sm_90a" in report.ptx
    assert report.registers > 0, report.ptxas_report
    assert (report.spill_stores, report.spill_loads, report.stack_bytes) == (0, 0, 0), report.ptxas_report


@pytest.mark.parametrize("version", V)
def test_version_tma_has_no_blackwell_cta_group(version: int) -> None:
    assert TMA_LOAD in built(version).ptx
    assert ".cta_group" not in built(version).ptx


@pytest.mark.parametrize("version", V)
def test_version_holds_the_instructions_its_chapter_claims(version: int) -> None:
    ptx, expected = built(version).ptx, expectation(version)
    assert [s for s in expected.present if s not in ptx] == []
    assert [s for s in expected.absent if s in ptx] == []


@pytest.mark.parametrize("version", V)
def test_version_has_the_barriers_its_pipeline_needs(version: int) -> None:
    inits = built(version).ptx.count("mbarrier.init.shared")
    per_stage = expectation(version).barriers_per_stage
    if per_stage == 0:
        assert inits == 1  # one barrier, reused every K step
    else:
        assert num_stages(version) > 1
        assert inits >= per_stage * num_stages(version) > 2


def test_v0_stages_operands_through_registers_for_mma_sync() -> None:
    ptx = built(0).ptx
    # ldmatrix copies each tile from shared memory into registers; mma.sync multiplies registers.
    assert "ldmatrix.sync.aligned" in ptx
    assert "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32" in ptx
    assert "wgmma" not in ptx


def test_v1_computes_with_wgmma_from_shared_memory() -> None:
    ptx = built(1).ptx
    # Both operands by shared-memory descriptor (no register A operand), fp32 accumulate, fp16 inputs.
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16", ptx)
    assert "ldmatrix" not in ptx and "mma.sync" not in ptx
    assert "wgmma.wait_group.sync.aligned 0" in ptx  # single stage: wait for every MMA before the next load


def test_v2_keeps_one_barrier_per_stage_of_the_ring() -> None:
    assert built(2).ptx.count("mbarrier.init.shared") == num_stages(2) > 2
    assert role_paths(built(2).source) == ([], [])  # the same warps issue the loads and the MMAs


def test_v3_splits_producer_warp_and_consumer_warp_group() -> None:
    report = built(3)
    assert "__launch_bounds__(160)" in report.source  # 4 consumer warps + 1 producer warp
    assert report.ptx.count("mbarrier.init.shared") == 2 * num_stages(3)  # a full and an empty barrier per stage
    producers, consumers = role_paths(report.source)
    assert producers and consumers, [c for c, _ in role_branches(report.source)]
    assert set(producers).isdisjoint(consumers)
