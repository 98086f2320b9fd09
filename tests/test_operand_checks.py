"""Bad operands get a ValueError that says what to change, before anything launches (runs on CPU)."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import torch

from conftest import ROOT
from matmul_bench.kernels import load

common = load("common")


class CudaLooking(torch.Tensor):
    """A CPU tensor that reports a CUDA device: it gets past the device check so the later checks can be tested here."""

    @property
    def device(self) -> torch.device:  # type: ignore[override]
        return torch.device("cuda", 0)


def cuda_like(*shape: int, dtype: torch.dtype = torch.float16) -> torch.Tensor:
    return torch.zeros(*shape, dtype=dtype).as_subclass(CudaLooking)


@pytest.fixture
def no_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)


def test_non_tensor_operand_is_refused() -> None:
    with pytest.raises(ValueError, match=r"B must be a torch.Tensor, got list"):
        common.validate_operands(cuda_like(64, 64), [[0.0] * 64] * 64)  # type: ignore[arg-type]


@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.int8])
def test_wrong_dtype_is_refused_with_the_fix(dtype: torch.dtype) -> None:
    with pytest.raises(ValueError, match=r"A is torch\.\w+; pass torch\.float16 \(e\.g\. a\.half\(\)\)"):
        common.validate_operands(cuda_like(64, 64, dtype=dtype), cuda_like(64, 64))


def test_dtype_is_checked_before_device() -> None:
    # A float32 CPU tensor is wrong twice; the dtype message comes first, as the checks are ordered.
    with pytest.raises(ValueError, match="pass torch.float16"):
        common.validate_operands(torch.zeros(64, 64), torch.zeros(64, 64, dtype=torch.float16))


def test_cpu_tensor_is_refused_with_the_fix() -> None:
    a = torch.zeros(64, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match=r"A is on cpu; move it to the GPU with a\.cuda\(\)"):
        common.validate_operands(a, a)


def test_device_is_checked_before_layout() -> None:
    # Non-contiguous and on the CPU: the device message comes first.
    a = torch.zeros(64, 128, dtype=torch.float16)[:, ::2]
    with pytest.raises(ValueError, match="move it to the GPU"):
        common.validate_operands(a, torch.zeros(64, 64, dtype=torch.float16))


def test_operand_that_is_not_a_matrix_is_refused() -> None:
    with pytest.raises(ValueError, match=r"B must be 2-D, got shape \(64, 64, 1\)"):
        common.validate_operands(cuda_like(64, 64), cuda_like(64, 64, 1))


def test_non_contiguous_operand_is_refused_with_the_fix() -> None:
    b = cuda_like(128, 64).T  # a transposed view: column-major
    with pytest.raises(ValueError, match=r"B must be row-major contiguous; call b\.contiguous\(\)"):
        common.validate_operands(cuda_like(64, 128), b)


def test_operand_off_a_16_byte_boundary_is_refused() -> None:
    # Contiguous, but starting one element into a buffer: TMA cannot take that base address.
    a = torch.zeros(64 * 64 + 1, dtype=torch.float16)[1:].view(64, 64).as_subclass(CudaLooking)
    assert a.is_contiguous() and a.data_ptr() % 16 == 2
    with pytest.raises(ValueError, match=r"A does not start on a 16-byte boundary; pass a fresh copy \(a\.clone\(\)\)"):
        common.validate_operands(a, cuda_like(64, 64))


def nan_cuda_like(*shape: int) -> torch.Tensor:
    return torch.full(shape, float("nan"), dtype=torch.float16).as_subclass(CudaLooking)


def refused_by_matmul(c: torch.Tensor, message: str) -> None:
    """common.matmul(out=c) refuses C with ``message`` before the kernel is called, and leaves C's NaNs alone."""
    calls: list[tuple[object, ...]] = []
    with pytest.raises(ValueError, match=message):
        common.matmul(lambda *args: calls.append(args), cuda_like(64, 128), cuda_like(32, 128), out=c)
    assert calls == [] and torch.isnan(c).all()


def test_non_contiguous_c_is_refused_with_the_fix_before_the_kernel_runs() -> None:
    # The right shape, but a column slice of a wider buffer: its rows are 64 elements apart, not 32.
    c = nan_cuda_like(64, 64)[:, :32]
    assert isinstance(c, CudaLooking) and tuple(c.shape) == (64, 32) and not c.is_contiguous()
    refused_by_matmul(c, r"C must be row-major contiguous; call c\.contiguous\(\)")


def test_c_off_a_16_byte_boundary_is_refused_before_the_kernel_runs() -> None:
    # Contiguous, but starting one element into a buffer: the TMA store's tensor map cannot take that base.
    c = nan_cuda_like(64 * 32 + 1)[1:].view(64, 32)
    assert isinstance(c, CudaLooking) and c.is_contiguous() and c.data_ptr() % 16 == 2
    refused_by_matmul(c, r"C does not start on a 16-byte boundary; pass a fresh copy \(c\.clone\(\)\)")


def test_mismatched_k_is_refused() -> None:
    with pytest.raises(ValueError, match=r"A is 64x128 and B is 32x64: C = A @ B\^T needs both to have the same K"):
        common.validate_operands(cuda_like(64, 128), cuda_like(32, 64))


@pytest.mark.parametrize("k", [4, 12, 520 + 2])
def test_k_not_a_multiple_of_8_is_refused_with_the_padding_to_use(k: int) -> None:
    padded = math.ceil(k / 8) * 8
    with pytest.raises(
        ValueError, match=rf"K = {k} is not a multiple of 8: TMA needs 16-byte row strides; pad K to {padded}"
    ):
        common.validate_operands(cuda_like(64, k), cuda_like(32, k))


def test_empty_problem_is_refused() -> None:
    with pytest.raises(ValueError, match="empty problem 0x32x64"):
        common.validate_operands(cuda_like(0, 64), cuda_like(32, 64))


@pytest.mark.parametrize("shape", [(32, 64), (64, 33), (64,)])
def test_wrong_c_shape_is_refused(shape: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=r"C (has shape|must be 2-D)"):
        common.validate_operands(cuda_like(64, 128), cuda_like(32, 128), cuda_like(*shape))


def test_c_is_checked_like_a_and_b() -> None:
    with pytest.raises(ValueError, match="C is torch.float32"):
        common.validate_operands(cuda_like(64, 128), cuda_like(32, 128), cuda_like(64, 32, dtype=torch.float32))


@pytest.mark.usefixtures("no_gpu")
def test_correct_operands_on_a_machine_without_gpu_are_refused() -> None:
    with pytest.raises(ValueError, match=r"no CUDA GPU is visible: these kernels need an NVIDIA Hopper GPU"):
        common.validate_operands(cuda_like(64, 128), cuda_like(32, 128), cuda_like(64, 32))


@pytest.mark.usefixtures("no_gpu")
def test_require_hopper_without_gpu_raises_value_error() -> None:
    with pytest.raises(ValueError, match="no CUDA GPU is visible"):
        common.require_hopper()


def test_require_hopper_refuses_other_architectures(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index=None: (8, 0))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=None: "NVIDIA A100-SXM4-80GB")
    with pytest.raises(
        ValueError, match=r"NVIDIA A100-SXM4-80GB is sm_80; these kernels use WGMMA and need a Hopper GPU"
    ):
        common.require_hopper()


def test_bad_input_never_reaches_the_kernel_and_leaves_c_untouched() -> None:
    calls: list[tuple[object, ...]] = []
    a = torch.zeros(64, 64, dtype=torch.float16)
    c = torch.full((64, 64), float("nan"), dtype=torch.float16)
    with pytest.raises(ValueError):
        common.matmul(lambda *args: calls.append(args), a, a, out=c)
    assert calls == []
    assert torch.isnan(c).all()


@pytest.mark.slow
def test_a_kernel_file_run_without_a_gpu_says_so_in_one_line() -> None:
    kernel = ROOT / "examples" / "hopper_matmul" / "matmul_v1.py"
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "TQDM_DISABLE": "1"}
    done = subprocess.run([sys.executable, str(kernel)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 1 and done.stdout == "", (done.stdout, done.stderr)
    no_gpu = "no CUDA GPU is visible: these kernels need an NVIDIA Hopper GPU (H100/H200, sm_90a)"
    assert done.stderr.strip().splitlines() == [f"MatmulV1: {no_gpu}"], done.stderr
