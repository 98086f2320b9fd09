"""On a Hopper GPU: the minimal TMA + WGMMA kernel, with the fixes, is exact at large sizes."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.gpu


@pytest.mark.parametrize("size", [2048, 4096, 8192])
def test_minimal_kernel_writes_every_element_correctly(size: int) -> None:
    import common
    from minimal_kernel import MinimalTmaWgmma

    result = common.check(MinimalTmaWgmma(), size, size, size)
    assert result.ok, f"{result.bad} of {size * size} elements wrong or unwritten, max |err| {result.max_abs_err}"
