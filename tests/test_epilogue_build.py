"""The epilogue reads the accumulator only after the last WGMMA has retired, in every build (SASS, on the CPU).

V6 to V8 once returned wrong C whenever N % 8 != 0: their epilogue for rows TMA cannot store converted the
accumulator from registers, and ptxas scheduled those conversions above the final ``WARPGROUP.DEPBAR.LE gsb0, 0x0``
although the PTX had them after ``wgmma.wait_group 0`` (buildcheck.early_accumulator_reads). Each version's build
(tests/kernel_builds.py: N % 8 == 0, so V6 to V8 store C by TMA; V1 to V5 store from registers at every N) and
V6 to V8's builds at an odd N (C copied out of shared memory) are disassembled and checked; the GPU suite checks
the results themselves.
"""

from __future__ import annotations

import pytest

import kernel_builds
from kernel_builds import build_config, kernel_class
from matmul_bench import buildcheck
from matmul_data import versions

pytestmark = pytest.mark.slow

# N % 8 = 7 (C's rows 2-byte aligned), M a multiple of no tile, a partial last K-tile; M = 1000 keeps the build quick.
ODD_N_SHAPE = (1000, 1799, 4104)
# The versions that multiply with WGMMA (V0 uses mma.sync, which has no final wait to read the accumulator after).
WGMMA_VERSIONS = [v.name for v in versions.all_versions() if "self.wgmma.mma(" in v.path.read_text(encoding="utf-8")]
MMA_SYNC_VERSIONS = [v.name for v in versions.all_versions() if v.name not in WGMMA_VERSIONS]
# The versions whose epilogue takes another path when N % 8 != 0 (TMA stores C only when its rows are 16-byte
# aligned); the others store C from registers at every N, and their builds above are that path.
TWO_PATH_VERSIONS = [v.name for v in versions.all_versions() if "tma_store" in v.path.read_text(encoding="utf-8")]
# V8's three-consumer tile has its own code path (a producer warp group, setmaxnreg): built at the odd N as well.
ODD_N_BUILDS = {v: build_config(v) for v in TWO_PATH_VERSIONS}
if "v8" in ODD_N_BUILDS:
    ODD_N_BUILDS["v8-192x192"] = {**build_config("v8"), "block_m": 192, "block_n": 192, "consumers": 3, "num_stages": 3}
for _name, _config in ODD_N_BUILDS.items():
    _version = _name.split("-")[0]
    kernel_builds.EXPERIMENT_BUILDS[f"{_name} odd N"] = (
        str(versions.get(_version).path),
        kernel_class(_version).__name__,
        _config,
        ODD_N_SHAPE,
        True,
    )


@pytest.mark.parametrize("version", WGMMA_VERSIONS)
def test_version_converts_the_accumulator_only_after_the_final_wgmma_wait(version: str) -> None:
    sass = kernel_builds.built(version).sass
    assert sass, "the build was not disassembled"
    assert "HGMMA" in sass  # else there is no WGMMA wait to be early for, and the check below holds vacuously
    assert buildcheck.early_accumulator_reads(sass) == []


@pytest.mark.parametrize("version", MMA_SYNC_VERSIONS)
def test_version_left_out_of_the_wgmma_check_builds_no_hgmma(version: str) -> None:
    sass = kernel_builds.built(version).sass
    assert sass, "the build was not disassembled"
    assert "HGMMA" not in sass and "HMMA" in sass  # mma.sync: no asynchronous MMA for the epilogue to outrun


@pytest.mark.parametrize("name", list(ODD_N_BUILDS))
def test_odd_n_epilogue_converts_the_accumulator_only_after_the_final_wgmma_wait(name: str) -> None:
    sass = kernel_builds.built_experiment(f"{name} odd N").sass
    assert "HGMMA" in sass
    assert buildcheck.early_accumulator_reads(sass) == []


def test_early_reads_are_found_in_the_order_ptxas_once_emitted() -> None:
    def line(address: int, instruction: str) -> str:
        return f"        /*{address:04x}*/                   {instruction} ;"

    wrong = [
        "HGMMA.64x256x16.F32 R24, gdesc[UR8], R24, gsb0",
        "WARPGROUP.DEPBAR.LE gsb0, 0x1",
        "F2FP.F16.F32.PACK_AB R9, R151, R150",
        "WARPGROUP.DEPBAR.LE gsb0, 0x0",
        "STG.E.U16 desc[UR8][R28.64], R9",
    ]
    sass = "\n".join(line(16 * i, text) for i, text in enumerate(wrong))
    assert buildcheck.early_accumulator_reads(sass) == ["F2FP.F16.F32.PACK_AB R9, R151, R150"]
    right = [wrong[0], wrong[1], wrong[3], wrong[2], wrong[4]]
    assert buildcheck.early_accumulator_reads("\n".join(line(16 * i, t) for i, t in enumerate(right))) == []
