"""Workarounds that make Tilus 0.2.0 build correct kernels for Hopper (sm_90a).

Import this module before any kernel is built and call :func:`apply`; the
kernel files do it through ``common.py`` so that the teaching code stays free
of it. Each fix is gated on the installed Tilus still being a release that has
the bug (0.2.0 and older); a newer Tilus turns both off by itself. The facts
behind both are in ``docs/method.rst`` ("Known Tilus 0.2.0 issues").

Fix 1, TMA on sm_90a: Tilus 0.2.0 always passes ``cta_group=1`` to the bulk
tensor copy, which prints the Blackwell-only PTX qualifier ``.cta_group::1``;
ptxas rejects it for sm_90a. Below compute capability 10.0 we drop it.

Fix 2, barrier placement: Tilus 0.2.0 allocates the mbarriers last, through the
ordinary shared-memory allocator, so they can reuse bytes that ``free_shared``
released while a TMA copy may still be writing them. We place them above the
high-water mark of every tile instead.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable
from typing import Any

import tilus
from tilus.backends.contexts import mbarrier_alloc_ctx
from tilus.backends.emitters.cuda import cp_async_tensor as tma_emitter
from tilus.target import get_current_target

LAST_BUGGY_RELEASE = (0, 2, 0)
_TMA_PRIMITIVES = ("cp_async_tensor_global_to_shared", "cp_async_tensor_global_to_cluster_shared")
_applied: dict[str, bool] = {"tma_cta_group": False, "barriers_above_tiles": False}


def _release(version: str) -> tuple[int, ...]:
    parts = []
    for piece in version.split("+")[0].split("."):
        digits = "".join(ch for ch in piece if ch.isdigit())
        if not digits:
            break
        parts.append(int(digits))
    return tuple(parts)


def needed(version: str | None = None) -> bool:
    """True when the Tilus release (default: the installed one) has both bugs."""
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


def apply() -> dict[str, bool]:
    """Apply the fixes the installed Tilus needs; returns which ones are active."""
    if needed():
        _fix_tma_cta_group()
        _fix_barrier_placement()
        _applied.update(tma_cta_group=True, barriers_above_tiles=True)
    return dict(_applied)
