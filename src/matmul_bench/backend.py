"""What a worker times through: a backend (the GPU, or the CPU tests' stand-in) and what it hands back."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from matmul_bench import machine


@dataclass
class Prepared:
    """A built implementation at one shape: ``call()`` is exactly what is timed."""

    name: str
    call: Callable[[], Any]
    config: dict[str, Any]
    check: Callable[[tuple[int, int, int]], dict[str, Any]]


@dataclass
class Timing:
    """One round of one impl: the median of its timed calls, and when those calls ran on the GPU."""

    ms: float
    spans: list[machine.Span]  # (start, end) of each timed call, in this process's time.perf_counter seconds


class Backend(Protocol):
    def device(self) -> dict[str, Any]: ...
    def software(self) -> dict[str, str]: ...
    def prepare(self, impl: dict[str, Any], shape: tuple[int, int, int]) -> Prepared: ...
    def peer_version(self, impl: dict[str, Any]) -> str | None: ...
    def time_ms(self, prepared: Prepared, warmup: int, repeats: int) -> Timing: ...
    def sampler(self) -> machine.WindowSampler: ...
    def profile(self, prepared: Prepared) -> None: ...
