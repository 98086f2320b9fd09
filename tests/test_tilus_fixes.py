"""The Tilus 0.2.0 workarounds: each one is needed (the bug shows without it) and works (gone with it)."""

from __future__ import annotations

import re

import pytest

import kernel_builds
from matmul_bench import kernels

tilus_fixes = kernels.load("tilus_fixes")

pytestmark = pytest.mark.slow


def barrier_offset(source: str) -> int:
    match = re.search(r"barriers = .*?dynamic_shared_memory_uint64\((\d+)\)", source)
    assert match, "no mbarrier allocation found in the generated source"
    return int(match.group(1))


@pytest.fixture(scope="module")
def unfixed_source() -> str:
    if not tilus_fixes.needed():
        pytest.skip(f"tilus {tilus_fixes.tilus.__version__} is past 0.2.0: the fixes are off, nothing to compare")
    return kernel_builds.minimal_source_without_fixes()


@pytest.fixture(scope="module")
def fixed_source() -> str:
    """The same lowering with the fixes: the source of the minimal kernel's build (tests/test_buildcheck.py)."""
    return kernel_builds.built_experiment(kernel_builds.MINIMAL).source


def test_tilus_020_emits_blackwell_cta_group_without_the_fix(unfixed_source: str) -> None:
    assert ".cta_group::1" in unfixed_source


def test_tma_copies_carry_no_cta_group_with_the_fix(fixed_source: str) -> None:
    assert "cp.async.bulk.tensor.2d.shared::cta.global" in fixed_source
    assert ".cta_group" not in fixed_source


def test_tilus_020_puts_barriers_in_freed_tile_memory_without_the_fix(unfixed_source: str) -> None:
    assert barrier_offset(unfixed_source) == 0  # the freed A tile started at byte 0


def test_barriers_sit_above_every_tile_with_the_fix(fixed_source: str) -> None:
    tiles_bytes = (128 * 64 + 128 * 64) * 2  # the A and B tiles of the minimal kernel
    assert barrier_offset(fixed_source) >= tiles_bytes


@pytest.mark.parametrize(
    ("version", "needed"), [("0.1.3", True), ("0.2.0", True), ("0.2.1", False), ("1.0.0rc1", False)]
)
def test_fixes_turn_off_past_the_last_buggy_release(version: str, needed: bool) -> None:
    assert tilus_fixes.needed(version) is needed


def test_apply_reports_every_fix_active_on_tilus_020() -> None:
    assert tilus_fixes.tilus.__version__ == "0.2.0", "re-check the fixes against this Tilus release"
    assert tilus_fixes.apply() == {
        "tma_cta_group": True,
        "barriers_above_tiles": True,
        "exact_fast_divmod": True,
        "whole_wgmma_n": True,
    }


@pytest.mark.parametrize(("n", "unfixed", "fixed"), [(64, 64, 64), (128, 128, 128), (192, 64, 192), (256, 256, 256),
                                                     (200, 8, 200), (320, 64, 64)])  # fmt: skip
def test_wgmma_takes_the_whole_tile_width_up_to_256(n: int, unfixed: int, fixed: int) -> None:
    from tilus.hidet.ir.dtypes import float16, float32
    from tilus.ir.instructions.cuda.wgmma import WgmmaMmaSSInst

    tilus_fixes.apply()
    inst_mnk = WgmmaMmaSSInst.get_inst_mnk
    assert inst_mnk.__wrapped__(64, n, 64, float16, float16, float32) == (64, unfixed, 16)  # Tilus 0.2.0: gcd(N, 256)
    assert inst_mnk(64, n, 64, float16, float16, float32) == (64, fixed, 16)
