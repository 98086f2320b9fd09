"""Every kernel version computes C = A @ B^T correctly on a Hopper GPU, and refuses bad input without touching C.

Each (version, shape) runs on fresh random inputs into a NaN-poisoned C and is compared element by element
with a float64 reference (common.check). Versions are found by convention, so later versions are covered too.
"""

from __future__ import annotations

import importlib
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import torch

import common

pytestmark = pytest.mark.gpu

KERNEL_DIR = Path(__file__).resolve().parent.parent / "examples" / "hopper_matmul"


def versions() -> list[int]:
    found = (re.fullmatch(r"matmul_v(\d+)\.py", path.name) for path in KERNEL_DIR.glob("matmul_v*.py"))
    return sorted(int(match.group(1)) for match in found if match)


_kernels: dict[int, Any] = {}


def kernel(version: int) -> Any:
    """One instance per version for the whole session, so each (N, K) is built and tuned once."""
    if version not in _kernels:
        _kernels[version] = getattr(importlib.import_module(f"matmul_v{version}"), f"MatmulV{version}")()
    return _kernels[version]


V = [pytest.param(v, id=f"v{v}") for v in versions()]
SHAPES = [pytest.param(shape, id="x".join(map(str, shape))) for shape in common.CHECK_SHAPES]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("version", V)
def test_version_matches_float64_reference_on_every_element(version: int, shape: tuple[int, int, int]) -> None:
    seed = int.from_bytes(os.urandom(4), "little")  # fresh inputs every run; the seed reproduces a failure
    result = common.check(kernel(version), *shape, seed=seed)
    assert result.ok, f"V{version} {shape} seed={seed}: {result.bad} bad elements, max |err| {result.max_abs_err:.3g}"


def half(*shape: int) -> torch.Tensor:
    return torch.randn(*shape, device="cuda").half()


def nan_c(m: int, n: int) -> torch.Tensor:
    return torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")


# Each case builds (A, B, C) with C poisoned; every one must be refused before any launch.
BAD_INPUTS: dict[str, Callable[[], tuple[Any, Any, torch.Tensor]]] = {
    "fp32_a": lambda: (torch.randn(256, 128, device="cuda"), half(192, 128), nan_c(256, 192)),
    "a_on_cpu": lambda: (half(256, 128).cpu(), half(192, 128), nan_c(256, 192)),
    "b_not_contiguous": lambda: (half(256, 128), half(128, 192).T, nan_c(256, 192)),
    "k_mismatch": lambda: (half(256, 128), half(192, 136), nan_c(256, 192)),
    "k_not_multiple_of_8": lambda: (half(256, 132), half(192, 132), nan_c(256, 192)),
    "wrong_c_shape": lambda: (half(256, 128), half(192, 128), nan_c(192, 256)),
    "a_off_16_byte_boundary": lambda: (half(256 * 128 + 1)[1:].view(256, 128), half(192, 128), nan_c(256, 192)),
}


@pytest.mark.parametrize("case", list(BAD_INPUTS))
@pytest.mark.parametrize("version", V)
def test_version_refuses_bad_input_and_leaves_c_untouched(version: int, case: str) -> None:
    a, b, c = BAD_INPUTS[case]()
    with pytest.raises(ValueError):
        common.matmul(kernel(version), a, b, out=c)
    torch.cuda.synchronize()
    assert torch.isnan(c).all(), "C was written although the input was refused"
