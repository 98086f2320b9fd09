"""The optional peers, built in a worker: Triton's GEMM templates (torch.compile) and QuACK; raise where they cannot."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from typing import Any

from matmul_bench import machine
from matmul_bench.baseline import busiest_kernel
from matmul_bench.plan import TORCH_COMPILE_MODE, TRITON_INDUCTOR_CONFIG, ImplSpec
from matmul_data.decoding import Config

Kernel = Callable[[int, int, int, Any, Any, Any], Any]
Built = tuple[Kernel, Callable[[], Any], Config]


def triton_matmul(x: Any, y: Any) -> Any:
    """C = A @ B^T, its own function: dynamo keeps compiled graphs per code object, apart from other rows'."""
    return x @ y.T


def build_triton(a: Any, b: Any, c: Any) -> Built:
    """``a @ b.T`` compiled under TRITON_INDUCTOR_CONFIG (a torch without those settings raises); refused unless its
    busiest kernel is a Triton one."""
    import torch
    from torch._inductor import config as inductor_config

    # Room in dynamo's cache for one static-shape graph per shape, all kept (a reset would recompile when timed).
    torch._dynamo.config.recompile_limit = max(64, torch._dynamo.config.recompile_limit)
    fn = torch.compile(triton_matmul, mode=TORCH_COMPILE_MODE, dynamic=False)

    def kernel(m: int, n: int, k: int, x: Any, y: Any, z: Any) -> Any:
        with inductor_config.patch(TRITON_INDUCTOR_CONFIG):  # a new shape (a check's) compiles under the same settings
            return z.copy_(fn(x, y))

    kernel(*c.shape, a.shape[1], a, b, c)  # compile and autotune at the timed shape
    torch.cuda.synchronize()
    call = lambda: fn(a, b)  # noqa: E731  (timed without the copy: it returns its own output)
    name = busiest_kernel(call)
    if not name.startswith("triton"):
        raise RuntimeError(f"the compiled matmul ran {name}, not one of Inductor's Triton templates")
    config = {"mode": TORCH_COMPILE_MODE, "inductor": TRITON_INDUCTOR_CONFIG, "kernel": name,
              "torch": torch.__version__, "triton": machine.package_version("triton")}  # fmt: skip
    return kernel, call, config


def build_quack(tuned: bool, a: Any, b: Any, c: Any) -> Built:
    """QuACK's ``gemm(A, B.T)`` (B is (N, K) row-major), default or autotuned at this shape; first call made here."""
    import torch

    # QuACK's autotuner keeps its timings on disk only when asked (read as its module is imported): with it, the
    # first process on a machine autotunes each shape and the benchmark's later processes and runs reuse that pick.
    os.environ.setdefault("QUACK_CACHE_AUTOTUNING", "1")
    from quack.gemm_interface import gemm, gemm_tuned

    def kernel(m: int, n: int, k: int, x: Any, y: Any, z: Any) -> Any:
        return gemm(x, y.T, out=z, tuned=tuned)

    kernel(*c.shape, a.shape[1], a, b, c)  # compile (and autotune) at the timed shape
    torch.cuda.synchronize()
    # tuned: the autotuner's pick on the call above (Autotuner.best_config, set on every tuned call); else what
    # gemm(tuned=False) resolves: gemm_tuned.fn with config=None
    chosen = gemm_tuned.best_config.kwargs["config"] if tuned else gemm_tuned.fn(a, b.T, c, config=None)[0]
    call = lambda: gemm(a, b.T, out=c, tuned=tuned)  # noqa: E731
    config = {"tuned": tuned, "config": dataclasses.asdict(chosen) if dataclasses.is_dataclass(chosen) else str(chosen),
              "kernel": busiest_kernel(call), "quack-kernels": machine.package_version("quack-kernels"),
              "nvidia-cutlass-dsl": machine.package_version("nvidia-cutlass-dsl")}  # fmt: skip
    return kernel, call, config


def build(impl: ImplSpec, a: Any, b: Any, c: Any) -> Built:
    """The peer an ImplSpec of kind "triton" or "quack" names, built, compiled and (where asked) autotuned."""
    return build_triton(a, b, c) if impl.kind == "triton" else build_quack(bool((impl.config or {})["tuned"]), a, b, c)
