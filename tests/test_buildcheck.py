"""The CPU build check proves that a TMA + WGMMA kernel builds for sm_90a with no GPU present."""

from __future__ import annotations

import pytest

import kernel_builds
from matmul_bench import buildcheck

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def minimal_build() -> buildcheck.BuildReport:
    """The minimal kernel's 128 x 128 x 64 build, made in the background (tests/kernel_builds.py)."""
    return kernel_builds.built_experiment(kernel_builds.MINIMAL)


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


def test_minimal_kernel_sass_counts_its_hgmma_shape_and_tma_loads(minimal_build: buildcheck.BuildReport) -> None:
    counted = buildcheck.sass_facts(minimal_build.sass)
    assert "HGMMA.64x128x16.F32" in minimal_build.sass
    assert counted["hgmma"] == {"64x128x16.F32": counted["sass"]["HGMMA"]} and counted["sass"]["HGMMA"] > 0
    assert counted["sass"]["UTMALDG"] > 0 and counted["sass"]["HMMA"] == 0
    assert counted["depbar"] == {"0": counted["sass"]["WARPGROUP.DEPBAR"]}  # wait_group(0) only


SASS = """
        /*0100*/                   LDSM.16.M88.4 R4, [R2] ;
        /*0110*/              @!P0 HGMMA.64x256x16.F32 R24, gdesc[UR4], RZ, !UPT, gsb0 ;
        /*0120*/                   WARPGROUP.DEPBAR.LE gsb0, 0x1 ;
        /*0130*/                   LDS.128 R8, [R3] ;
        /*0140*/              @UP0 WARPGROUP.DEPBAR.LE gsb0, 0x0 ;
        /*0150*/                   STSM.16.M88.4 [R5], R8 ;
        /*0160*/                   SYNCS.PHASECHK.TRANS64.TRYWAIT P0, [UR8], R9 ;
"""


def test_sass_is_counted_by_family_shape_and_pending_groups() -> None:
    counted = buildcheck.sass_facts(SASS)
    families = {k: v for k, v in counted["sass"].items() if v}
    assert families == {"LDSM": 1, "HGMMA": 1, "WARPGROUP.DEPBAR": 2, "LDS": 1, "STSM": 1, "SYNCS": 1}
    assert counted["hgmma"] == {"64x256x16.F32": 1}
    assert counted["depbar"] == {"0": 1, "1": 1}


def test_ptxas_advisories_are_counted_by_code_and_compile_time_dropped() -> None:
    report = (
        "ptxas info    : (C7517) warpgroup.wait is injected in around line 3 by compiler\n"
        "ptxas info    : (C7518) Potential Performance Loss: wgmma.mma_async instructions are serialized\n"
        "ptxas info    : Used 154 registers, used 1 barriers\n"
        "ptxas info    : Compile time = 187.753 ms\n"
    )
    assert buildcheck.advisories(report) == {"C7517": 1, "C7518": 1}
    assert "Compile time" not in buildcheck.ptxas_text(report) and "Used 154" in buildcheck.ptxas_text(report)


def test_v0_source_holds_what_the_outside_tilus_page_lists(capsys: pytest.CaptureFixture[str]) -> None:
    # docs/outside-tilus.rst describes V0's generated CUDA piece by piece; `buildcheck --source v0` prints it.
    assert buildcheck.main(["--source", "v0"]) == 0
    source = capsys.readouterr().out
    for piece in (
        "const __grid_constant__ CUtensorMap",
        "mbarrier.init.shared::cta.b64",
        "fence.mbarrier_init.release.cluster",
        "mbarrier.arrive.expect_tx.release.cta.shared::cta.b64",
        "uint32_t(24576u)",  # (64 x 64 + 64 x 128) x 2 bytes: both boxes in full
        "cp.async.bulk.tensor.2d.shared::cta.global.tile.mbarrier::complete_tx::bytes",
        "mbarrier.try_wait.parity.acquire.cta.shared::cta.b64",
        "CU_TENSOR_MAP_SWIZZLE_128B",
        "CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE",
        "extern __align__(128) __shared__",
        "dynamic_shared_memory_float16(8192)",  # the B tile at a multiple of 1024 bytes
        "__launch_bounds__(128)",
    ):
        assert piece in source, piece
    assert source.count("cuTensorMapEncodeTiled(") == 2  # A and B, on the host at every launch
