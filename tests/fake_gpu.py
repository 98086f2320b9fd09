"""The fake GPU the CPU tests run records on: made-up, deterministic times and a power state that follows what runs.

A job names it as its backend (``BACKEND``); a worker in a child process imports it from this folder, which
:func:`on_child_path` puts on the children's PYTHONPATH.
"""

from __future__ import annotations

import contextlib
import math
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from matmul_bench import machine
from matmul_bench.plan import ImplSpec, Shape
from matmul_bench.protocol import BuildAnswer, BuildSpec, Check, Device, Job
from matmul_bench.worker import CudaBackend, Prepared, Timing
from matmul_data.model import Software

BACKEND = "fake_gpu:backend"  # what a job's "backend" says: this module's factory
TESTS_DIR = Path(__file__).resolve().parent

FAKE_DEVICE = {"name": "NVIDIA H200", "sm_count": 132, "compute_capability": "9.0", "memory_gb": 139.8, "uuid": "",
               "driver": "580.159.04", "sm_max": 1980.0, "mem_max": 3201.0, "power_limit_w": 700.0}  # fmt: skip
# The fake's milliseconds at 8192^3 (others 1.6).
FAKE_MS = {"v0": 3.5, "v1": 2.0, "v2": 1.9, "v3": 1.9, "v4": 1.65, "v5": 1.7, "v6": 1.6, "v7": 1.55, "v8": 1.5,
           "cublas": 1.5, "triton-templates": 1.58, "quack": 1.45, "quack-autotuned": 1.42}  # fmt: skip
FAKE_TAU_S = 0.05  # how fast the fake GPU's power state follows the running impl (made up)
FAKE_POWER_EFFECT = 0.2  # relative speed per unit of power-state difference


class FakeBackend(CudaBackend):
    """A stand-in GPU for the CPU tests: made-up times, and a power state that its neighbour leaves behind.

    Each impl draws power in proportion to its speed (cuBLAS 1.0); the state follows the running impl's draw with
    time constant FAKE_TAU_S (simulated, nothing sleeps). An impl meeting a cooler state than its own runs faster
    (power headroom), a hotter one slower, by FAKE_POWER_EFFECT per unit: the warm-up makes its time its own."""

    def __init__(self, fake: dict[str, Any], process: int) -> None:
        super().__init__()
        self.fail, self.missing, self.process = fake.get("fail_check"), set(fake.get("missing_peers") or ()), process
        self.fail_build = fake.get("fail_build")
        self.inexact = fake.get("inexact_baseline")  # True: cuBLAS fails every check; a list [[m, n, k], ...]: those
        self.rounds: dict[int, int] = {}
        self.state = 0.0  # an idle GPU
        self.draws: dict[int, float] = {}

    def device(self) -> Device:
        """The H200 the tests pretend to have."""
        return Device.from_json(FAKE_DEVICE)

    def software(self) -> Software:
        """Made-up versions."""
        return Software.of(cuda="13.0", torch="fake", tilus="fake", python="3.12.3")

    def peer_version(self, impl: ImplSpec) -> str | None:
        """No peer is installed on the fake."""
        return None

    def prepare(self, impl: ImplSpec, shape: Shape) -> Prepared:
        """An impl whose call returns its made-up time; ``fail_check`` fails, ``missing_peers`` cannot import,
        ``inexact_baseline`` makes cuBLAS miss the tolerance on 3 elements (at every shape, or at those listed)."""
        if impl.name in self.missing:
            raise ModuleNotFoundError(f"No module named {impl.kind!r} (the fake backend's stand-in)")
        scale = FAKE_MS.get(impl.name, 1.6)
        ms = scale * shape[0] * shape[1] * shape[2] / 8192**3

        def check(at: Shape) -> Check:
            inexact = impl.kind == "cublas" and (self.inexact is True or list(at) in (self.inexact or []))
            bad = 17 if impl.name == self.fail else 3 if inexact else 0
            return Check.of(ok=not bad, bad=bad, max_abs_err=7.0 if bad else 1e-4, shape=at)

        prepared = Prepared(lambda: ms, dict(impl.config or {"block_m": 128}), impl.title or impl.name, check)
        self.draws[id(prepared)] = FAKE_MS["cublas"] / scale  # power in proportion to speed, cuBLAS's 1.0
        return prepared

    def time_ms(self, prepared: Prepared, warmup_s: float, repeats: int) -> Timing:
        """The made-up time at the state the warm-up left, scaled by a clock of this process and round; the span
        reaches past the call, so that the sampler's reading as the window closes falls inside it on a loaded CPU."""
        round_ = self.rounds[id(prepared)] = self.rounds.get(id(prepared), -1) + 1
        base_ms = prepared.call()
        draw = self.draws[id(prepared)]
        self.state = draw + (self.state - draw) * math.exp(-warmup_s / FAKE_TAU_S)
        ms = base_ms * (1.0 + FAKE_POWER_EFFECT * (self.state - draw))
        self.state = draw + (self.state - draw) * math.exp(-repeats * ms / 1e3 / FAKE_TAU_S)
        began = time.perf_counter()
        time.sleep(0.002)
        return Timing(ms * (1.0 + 0.05 * ((self.process * 3 + round_) % 4) / 3), (began, began + 0.05), 0.95)

    def sampler(self) -> machine.WindowSampler:
        """A constant clock and power."""
        return machine.WindowSampler(lambda: (1755.0, 690.0))

    def profile(self, prepared: Prepared) -> None:
        """Nothing to profile."""

    def build(self, spec: BuildSpec) -> BuildAnswer:
        """A build answer as the worker's: ``fail_check`` (a spec's name) is wrong at every shape it checks, and
        ``fail_build`` fails to build; a pinned spec reports its own config, an unpinned one {"block_m": 128}."""
        if spec.name == self.fail_build:
            return BuildAnswer.of(ok=False, configs={}, checks=(), error="RuntimeError: the fake's failed build")
        ok, configs, checks = True, {}, []
        for m, n, k in spec.shapes:
            bad = 17 if spec.name == self.fail else 0
            if spec.check:
                report = f"{m}x{n}x{k}: " + (f"{bad} of {m * n} elements wrong" if bad else "ok, max |err| 1.00e-04")
                checks.append(Check.of(ok=not bad, bad=bad, max_abs_err=7.0 if bad else 1e-4, shape=(m, n, k),
                                       report=report))  # fmt: skip
                ok = ok and not bad
            configs[f"{m}x{n}x{k}"] = spec.config or {"block_m": 128}
        return BuildAnswer.of(ok=ok, configs=configs, checks=tuple(checks), error=None)


def backend(job: Job) -> FakeBackend:
    """The fake for one worker: the job's ``fake`` options, and its process number for the made-up clock."""
    return FakeBackend(job.fake or {}, job.settings.process if job.settings is not None else 0)


@contextlib.contextmanager
def on_child_path() -> Iterator[None]:
    """This folder on PYTHONPATH while the block runs, so that worker processes can import this module."""
    before = os.environ.get("PYTHONPATH")
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(TESTS_DIR), before) if p)
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("PYTHONPATH", None)
        else:
            os.environ["PYTHONPATH"] = before
