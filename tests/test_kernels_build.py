"""Every kernel version builds for sm_90a on this CPU machine and holds the instructions its chapter claims.

Versions are found by convention (examples/hopper_matmul/matmul_v<N>.py defining MatmulV<N>), so a new
version is built and checked here as soon as its file exists. Each version is built once per session
(tests/kernel_builds.py), with the first choice of every autotune knob.
Instruction expectations live in EXPECTATIONS; a version without an entry inherits the nearest lower one.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass

import pytest

import kernel_builds
from kernel_builds import autotune_space, build_config, kernel_class
from matmul_bench import buildcheck, kernels
from matmul_data import versions

pytestmark = pytest.mark.slow


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


def expectation(version: int) -> Expectation:
    return EXPECTATIONS[max(v for v in EXPECTATIONS if v <= version)]


def num_stages(version: int) -> int:
    """The ring depth the representative build uses: its config, else the constructor's default."""
    config = build_config(f"v{version}")
    if "num_stages" in config:
        return int(config["num_stages"])
    return int(inspect.signature(kernel_class(f"v{version}").__init__).parameters["num_stages"].default)


def built(version: int) -> buildcheck.BuildReport:
    return kernel_builds.built(f"v{version}")


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


VERSIONS = [v.number for v in versions.all_versions()]
V = [pytest.param(v, id=f"v{v}") for v in VERSIONS]


def role_paths(source: str) -> tuple[list[str], list[str]]:
    """Conditions of the branches that only issue TMA (producers) and of those that only issue WGMMA (consumers)."""
    branches = role_branches(source)
    producers = [c for c, body in branches if "cp_async_bulk_tensor" in body and "wgmma_mma_async" not in body]
    consumers = [c for c, body in branches if "wgmma_mma_async" in body and "cp_async_bulk_tensor" not in body]
    return producers, consumers


def test_every_version_follows_the_kernel_file_skeleton() -> None:
    for version in versions.all_versions():
        module = kernels.load(f"matmul_{version.name}")
        assert callable(module.main) and module.TITLE == version.title
        # Each config an autotuner tries costs ~10 s of nvcc per shape; a version with a rule (config_for) builds only
        # the one it names, and its autotune lists are the rule's menu.
        most = 16 if version.per_problem else 8
        assert 1 <= len(autotune_space(kernel_class(version.name))) <= most, "each config costs ~10 s of nvcc per shape"
        header = version.path.read_text(encoding="utf-8").splitlines()[0]
        assert version.number == 0 or header.startswith(f"# What changed from V{version.number - 1}:"), header


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
