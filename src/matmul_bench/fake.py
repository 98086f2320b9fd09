"""A stand-in for the GPU, so that the CPU tests drive the whole worker protocol (no torch, no CUDA).

Latencies are made up and deterministic: each implementation has a base time (the ladder's order, V0
slowest), scaled per round by a "clock" that wanders the same way for every implementation of that round,
so paired ratios come out exact where absolute times drift. ``fail_check`` names an impl whose check fails;
``missing_peers`` names optional peers that cannot run here (their prepare raises, as an import would).
"""

from __future__ import annotations

import time
from typing import Any

from matmul_bench import machine
from matmul_bench.backend import Prepared, Timing

FAKE_DEVICE = {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0", "memory_gb": 139.8, "uuid": "",
               "driver": "580.159.04", "sm_max": 1980.0, "mem_max": 3201.0, "power_limit_w": 700.0}  # fmt: skip
BASE_MS = {"v0": 3.5, "v1": 2.0, "v2": 1.9, "v3": 1.9, "v4": 1.65, "v5": 1.7, "v6": 1.6, "v7": 1.55, "cublas": 1.5,
           "triton-templates": 1.58, "quack": 1.45, "quack-autotuned": 1.42}  # fmt: skip
FAKE_SPAN_MARGIN_S = 0.05  # how far a fake kernel's span reaches past its call (time_ms says why)


def base_ms(name: str, shape: tuple[int, int, int]) -> float:
    """8192^3 times above, scaled by the work; unknown names (variants) get 1.6 ms at 8192^3."""
    m, n, k = shape
    return BASE_MS.get(name, 1.6) * m * n * k / 8192**3


class FakeBackend:
    def __init__(self, options: dict[str, Any], process: int) -> None:
        self._fail = options.get("fail_check")
        self._missing = set(options.get("missing_peers") or ())
        self._process = process
        self._calls: dict[int, int] = {}

    def device(self) -> dict[str, Any]:
        return dict(FAKE_DEVICE)

    def software(self) -> dict[str, str]:
        return {"cuda": "13.0", "torch": "fake", "tilus": "fake", "python": "3.12.3"}

    def peer_version(self, impl: dict[str, Any]) -> str | None:
        return None  # the fake installs no peer

    def prepare(self, impl: dict[str, Any], shape: tuple[int, int, int]) -> Prepared:
        name = impl["name"]
        if name in self._missing:
            raise ModuleNotFoundError(f"No module named {impl['kind']!r} (the fake backend's stand-in)")

        def check(at: tuple[int, int, int]) -> dict[str, Any]:
            ok = name != self._fail
            return {"ok": ok, "bad": 0 if ok else 17, "max_abs_err": 1e-4 if ok else float(7)}

        return Prepared(name, lambda: base_ms(name, shape), dict(impl["config"] or {"block_m": 128}), check)

    def time_ms(self, prepared: Prepared, warmup: int, repeats: int) -> Timing:
        # The round is how often this prepared impl was timed; the clock depends on process and round only.
        round_ = self._calls.get(id(prepared), 0)
        self._calls[id(prepared)] = round_ + 1
        clock = 1.0 + 0.05 * ((self._process * 3 + round_) % 4) / 3
        began = time.perf_counter()
        ms = prepared.call() * clock
        time.sleep(0.002)
        # The fake kernel's span reaches a little past the call, so that the reading the sampler takes as the
        # window closes always falls inside it: on a loaded CPU the polling thread may not run within 2 ms.
        return Timing(ms, [(began, time.perf_counter() + FAKE_SPAN_MARGIN_S)])

    def sampler(self) -> machine.WindowSampler:
        return machine.WindowSampler(lambda: (1755.0, 690.0))

    def profile(self, prepared: Prepared) -> None:
        prepared.call()
