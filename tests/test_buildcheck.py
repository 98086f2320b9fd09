"""The CPU build check proves that a TMA + WGMMA kernel builds for sm_90a with no GPU present."""

from __future__ import annotations

import pytest

from matmul_bench import buildcheck
from minimal_kernel import MinimalTmaWgmma

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minimal_build() -> buildcheck.BuildReport:
    return buildcheck.build_sm90a(MinimalTmaWgmma, {"block_m": 128, "block_n": 128, "block_k": 64})


def test_minimal_kernel_ptx_holds_tma_wgmma_and_mbarrier(minimal_build: buildcheck.BuildReport) -> None:
    ptx = minimal_build.ptx
    assert ".target sm_90a" in ptx
    assert "cp.async.bulk.tensor.2d.shared::cta.global" in ptx
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16" in ptx
    assert "wgmma.wait_group.sync.aligned 0" in ptx
    assert "mbarrier.try_wait" in ptx
    assert "mma.sync" not in ptx


def test_minimal_kernel_ptx_has_no_cta_group(minimal_build: buildcheck.BuildReport) -> None:
    assert ".cta_group" not in minimal_build.ptx


def test_minimal_kernel_does_not_spill(minimal_build: buildcheck.BuildReport) -> None:
    assert minimal_build.registers > 0, minimal_build.ptxas_report
    assert (minimal_build.spill_stores, minimal_build.spill_loads) == (0, 0), minimal_build.ptxas_report


def test_build_check_reports_nvcc_errors() -> None:
    with pytest.raises(buildcheck.BuildCheckError, match="nvcc --ptx failed"):
        buildcheck.compile_sm90a("this is not CUDA")
