"""On a Hopper GPU: the minimal TMA + WGMMA kernel, with the fixes, is exact at large sizes."""

from __future__ import annotations

from pathlib import Path

import pytest

pytestmark = pytest.mark.gpu

SIZES = [2048, 4096, 8192]


@pytest.fixture(scope="module")
def built() -> None:
    """Each size's build in its own process, at once (Tilus caches them on disk for the tests)."""
    from matmul_bench import jobs
    from matmul_bench.protocol import BuildSpec

    file = str(Path(__file__).resolve().parent / "minimal_kernel.py")
    specs = [BuildSpec.of(file=file, cls="MinimalTmaWgmma", config=None, shapes=((s, s, s),)) for s in SIZES]
    jobs.build_all(specs, jobs=len(specs), timeout_s=900)


@pytest.mark.usefixtures("built")
@pytest.mark.parametrize("size", SIZES)
def test_minimal_kernel_writes_every_element_correctly(size: int) -> None:
    from matmul_bench import kernels
    from minimal_kernel import MinimalTmaWgmma

    common = kernels.load("common")

    result = common.check(MinimalTmaWgmma(), size, size, size)
    assert result.ok, f"{result.bad} of {size * size} elements wrong or unwritten, max |err| {result.max_abs_err}"
