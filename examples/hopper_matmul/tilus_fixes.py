"""Workarounds that make Tilus 0.2.0 build correct kernels for Hopper (sm_90a).

Import this module before any kernel is built and call :func:`apply`; the
kernel files do it through ``common.py`` so that the teaching code stays free
of it. Each fix is gated on the installed Tilus still being a release that has
the bug (0.2.0 and older); a newer Tilus turns them all off by itself. The facts
behind the first three are in ``docs/method.rst`` ("Known Tilus 0.2.0 issues").

Fix 1, TMA on sm_90a: Tilus 0.2.0 always passes ``cta_group=1`` to the bulk
tensor copy, which prints the Blackwell-only PTX qualifier ``.cta_group::1``;
ptxas rejects it for sm_90a. Below compute capability 10.0 we drop it.

Fix 2, barrier placement: Tilus 0.2.0 allocates the mbarriers last, through the
ordinary shared-memory allocator, so they can reuse bytes that ``free_shared``
released while a TMA copy may still be writing them. We place them above the
high-water mark of every tile instead.

Fix 3, ``fast_divmod``: Tilus 0.2.0 computes the multiplier for division by a
grid constant as a 33-bit number and truncates it to 32 bits, so for 1407 of
the divisors 1..4096 (7, 14, 56, 112, 448, 896, ...) the device's
``mul.hi`` + shift gives a wrong quotient (7 / 7 = 0). We compute
``m = ceil(2**(31 + l) / b)`` with ``l = ceil(log2 b)`` and shift ``l - 1``:
it fits in 32 bits and is exact for every dividend below 2**31.

Fix 4, WGMMA width: Tilus 0.2.0 splits an N-wide WGMMA into instructions
``m64n{gcd(N, 256)}k16``, so a 192-wide tile becomes three ``m64n64k16`` per K step,
and each of them reads the warp group's A rows from shared memory again. PTX has an
``m64nNk16`` for every N that is a multiple of 8 up to 256 (and Tilus registers them
all); we issue that one instruction. Powers of two (every tile before V8) are unchanged.
"""

# No `from __future__ import annotations`: hidet scripts below need real annotations.
import functools
import os
from collections.abc import Callable
from typing import Any, no_type_check

import tilus
from tilus.backends.contexts import mbarrier_alloc_ctx
from tilus.backends.emitters.cuda import cp_async_tensor as tma_emitter
from tilus.hidet.ir.dtypes import uint32, uint64
from tilus.hidet.ir.primitives.func import call_primitive_func, register_primitive_function
from tilus.hidet.lang import attrs, script
from tilus.hidet.transforms import lower_fast_div
from tilus.ir.instructions.cuda.wgmma import WgmmaMmaSSInst
from tilus.target import get_current_target

LAST_BUGGY_RELEASE = (0, 2, 0)
_TMA_PRIMITIVES = ("cp_async_tensor_global_to_shared", "cp_async_tensor_global_to_cluster_shared")
_applied: dict[str, bool] = {
    "tma_cta_group": False,
    "barriers_above_tiles": False,
    "exact_fast_divmod": False,
    "whole_wgmma_n": False,
}


def _release(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def needed(version: str | None = None) -> bool:
    """True when the Tilus release (default: the installed one) has the bugs."""
    if os.environ.get("HOPPER_MATMUL_NO_TILUS_FIXES") == "1":
        return False
    return _release(version or tilus.__version__) <= LAST_BUGGY_RELEASE


def _drop_cta_group_below_sm100(primitive: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(primitive)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        if get_current_target().properties.compute_capability < (10, 0):
            kwargs["cta_group"] = None  # the qualifier exists from sm_100 on
        return primitive(*args, **kwargs)

    wrapper.__wrapped_by_hopper_matmul__ = True  # type: ignore[attr-defined]
    return wrapper


def _fix_tma_cta_group() -> None:
    for name in _TMA_PRIMITIVES:
        primitive = getattr(tma_emitter, name)
        if not getattr(primitive, "__wrapped_by_hopper_matmul__", False):
            setattr(tma_emitter, name, _drop_cta_group_below_sm100(primitive))


def _fix_barrier_placement() -> None:
    cls = mbarrier_alloc_ctx.BarrierAllocContext
    original = cls.finalize
    if getattr(original, "__wrapped_by_hopper_matmul__", False):
        return

    @functools.wraps(original)
    def finalize(self: Any) -> None:
        allocator = self.contexts.smem_alloc_ctx.smem_allocator
        top = allocator.maximum_allocated
        # Everything below the high-water mark may still be a TMA destination.
        allocator.free_slots = [(max(start, top), end) for start, end in allocator.free_slots if end > top]
        original(self)

    finalize.__wrapped_by_hopper_matmul__ = True  # type: ignore[attr-defined]
    cls.finalize = finalize


def _fix_fast_divmod_magic() -> None:
    @no_type_check
    @script
    def hopper_matmul_fastdiv_magic(b: uint32) -> uint32:
        attrs.func_kind = "cpu_internal"
        if (b & (b - uint32(1))) == uint32(0):
            return uint32(0)  # a power of two: the device shifts instead
        bits: uint32 = 0
        while (uint64(1) << uint64(bits)) < uint64(b):
            bits = bits + uint32(1)
        p: uint64 = uint64(31) + uint64(bits)
        return uint32(((uint64(1) << p) + uint64(b) - uint64(1)) / uint64(b))  # ceil(2**(31+bits) / b) < 2**32

    @no_type_check
    @script
    def hopper_matmul_fastdiv_shift(b: uint32) -> uint32:
        attrs.func_kind = "cpu_internal"
        bits: uint32 = 0
        while (uint64(1) << uint64(bits)) < uint64(b):
            bits = bits + uint32(1)
        if (b & (b - uint32(1))) == uint32(0):
            return bits  # log2 b
        return bits - uint32(1)  # (31 + bits) - 32: mul.hi already dropped 32 bits

    for func in (hopper_matmul_fastdiv_magic, hopper_matmul_fastdiv_shift):
        register_primitive_function(name=func.name, func_or_type=func)
    lower_fast_div.fastdiv_precompute_m = lambda b: call_primitive_func("hopper_matmul_fastdiv_magic", args=[b])
    lower_fast_div.fastdiv_precompute_s = lambda b: call_primitive_func("hopper_matmul_fastdiv_shift", args=[b])


def _fix_wgmma_n() -> None:
    original = WgmmaMmaSSInst.get_inst_mnk
    if getattr(original, "__wrapped_by_hopper_matmul__", False):
        return

    @functools.wraps(original)
    def get_inst_mnk(m: int, n: int, k: int, a_dtype: Any, b_dtype: Any, d_dtype: Any) -> tuple[int, int, int]:
        inst_m, inst_n, inst_k = original(m, n, k, a_dtype, b_dtype, d_dtype)
        if inst_k == 16 and n % 8 == 0 and n <= 256:  # fp16/bf16: m64nNk16 exists for N = 8, 16, ..., 256
            inst_n = n
        return inst_m, inst_n, inst_k

    get_inst_mnk.__wrapped_by_hopper_matmul__ = True  # type: ignore[attr-defined]
    WgmmaMmaSSInst.get_inst_mnk = staticmethod(get_inst_mnk)  # type: ignore[method-assign]


def apply() -> dict[str, bool]:
    """Apply the fixes the installed Tilus needs (once per process); returns which ones are active."""
    if needed() and not all(_applied.values()):
        _fix_tma_cta_group()
        _fix_barrier_placement()
        _fix_fast_divmod_magic()
        _fix_wgmma_n()
        _applied.update(tma_cta_group=True, barriers_above_tiles=True, exact_fast_divmod=True, whole_wgmma_n=True)
    return dict(_applied)
