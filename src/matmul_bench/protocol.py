"""The worker protocol as typed objects: the job a parent writes, the answers a worker writes back (see
:mod:`.worker` and :mod:`.jobs`), and the raw-sample file a record keeps of them (``samples/<run_id>.json.gz``).

Each is a :class:`matmul_data.decoding.Model`, as the results file's objects are: ``from_json`` refuses a missing,
unknown or ill-kinded key, naming it; ``to_json`` gives back the dict it was read from, key for key, so that a
sample file decoded and encoded again is the same file.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from matmul_bench.plan import Shape
from matmul_data.decoding import (
    COUNT,
    COUNT0,
    FLAG,
    LIST,
    NUMBER,
    POSITIVE,
    TEXT,
    Config,
    Kind,
    Model,
    key,
    optional,
)
from matmul_data.model import Counters, PeerMissing, Software

MODES = ("probe", "build", "time", "profile")
MODE = Kind(lambda v: v in MODES, f"must be one of {', '.join(MODES)}")
# A wrong result's largest error may be NaN or infinite: any real number (the decoder's float takes finite ones only).
REAL = Kind(lambda v: isinstance(v, (int, float)) and not isinstance(v, bool), "must be a number (NaN and inf too)")
SHAPE = Kind(lambda v: isinstance(v, list) and len(v) == 3 and all(COUNT.holds(x) for x in v),
             "must be a shape [m, n, k] of positive integers")  # fmt: skip


@dataclasses.dataclass(frozen=True, kw_only=True)
class Check(Model):
    """One implementation's result at one shape against the float64 reference; a build check's has its report line."""

    ok: bool = key(FLAG)
    bad: int = key(COUNT0)  # elements outside tolerance, NaN included
    max_abs_err: Any = key(REAL)  # a float, NaN or inf for a wrong result
    shape: Shape = key(SHAPE)
    report: str | None = optional(TEXT)


@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildSpec(Model):
    """One kernel to build at every shape it is timed or checked at (and to check there when ``check``)."""

    name: str | None = optional(TEXT)  # the impl it is built for, as the messages name it
    file: str = key(TEXT)
    cls: str = key(TEXT)
    config: Config | None = key(null=True)  # None: the file's own (config_for, else TUNED)
    shapes: tuple[Shape, ...] = key(LIST)
    check: bool = key(FLAG, absent=True, default=False)
    seed: int | None = optional(COUNT0)  # the check's inputs' seed (None: fresh ones)


@dataclasses.dataclass(frozen=True, kw_only=True)
class BuildAnswer(Model):
    """A build job's answer: whether it built (and passed its checks), what Tilus chose at each shape, what failed."""

    ok: bool = key(FLAG)
    configs: dict[str, Config] = key()  # "MxNxK" -> the configuration built there
    checks: tuple[Check, ...] = key(LIST)
    error: str | None = key(TEXT, null=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Device(Model):
    """CUDA device 0 as a worker's probe found it: torch's properties and NVML's limits (null where it has none)."""

    name: str = key(TEXT)
    sm_count: int = key(COUNT)
    compute_capability: str = key(TEXT)
    memory_gb: float = key(POSITIVE)
    uuid: str = key()  # "" where torch does not say
    driver: str = key(TEXT)  # "unknown" without NVML
    sm_max: float | None = key(POSITIVE, null=True)  # MHz
    mem_max: float | None = key(POSITIVE, null=True)  # MHz
    power_limit_w: float | None = key(POSITIVE, null=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class RunAnswer(Model):
    """One run's answer from one process, also what the sample file keeps of it: the checks, then (when it was timed)
    per impl the per-round times, the clock and power read during them, their kernel shares and each round's order."""

    name: str = key(TEXT)
    checks: dict[str, tuple[Check, ...]] = key()  # impl -> its checks, the timed shape first
    configs: dict[str, Config] = key()
    titles: dict[str, str | None] = key()  # None: neither the spec nor its file names one
    missing: dict[str, PeerMissing] = key()  # peers that could not run, left out
    samples: dict[str, tuple[float, ...]] | None = key(absent=True)  # ms, one per round
    clocks: dict[str, tuple[float, ...]] | None = key(absent=True)  # MHz
    power: dict[str, tuple[float, ...]] | None = key(absent=True)  # W
    busy: dict[str, tuple[float, ...]] | None = key(absent=True)  # the kernel's share of each round's timed loop
    orders: tuple[tuple[str, ...], ...] | None = key(absent=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Settings(Model):
    """How a worker times, and which of the record's processes it is (a check's build or probe job: only that)."""

    rounds: int | None = key(COUNT, absent=True)
    repeats: int | None = key(COUNT, absent=True)
    warmup_s: float | None = key(NUMBER, absent=True)
    process: int = key(COUNT0)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Job(Model):
    """What a worker is asked: its mode, where it runs (a backend and the fake's options), and what it runs."""

    mode: str = key(MODE)
    backend: str | None = key(TEXT, absent=True)  # "cuda" (None too), or "module:factory": the CPU tests' fake
    fake: dict[str, Any] | None = key(absent=True)  # the fake backend's options (tests/fake_gpu.py)
    autotune: bool | None = key(FLAG, absent=True)
    settings: Settings | None = key(absent=True)
    runs: tuple[dict[str, Any], ...] = key(LIST, absent=True, default=())  # plan.RunSpec.to_json(), each
    build: BuildSpec | None = key(absent=True)  # a build job's


@dataclasses.dataclass(frozen=True, kw_only=True)
class Answer(Model):
    """A probe's, time job's or profile job's answer, or any job's failure: its error (None: none), what it found."""

    error: str | None = key(TEXT, null=True)
    device: Device | None = key(absent=True)
    runs: tuple[RunAnswer, ...] = key(LIST, absent=True, default=())
    software: Software | None = key(absent=True)  # a probe's
    no_gpu: bool | None = key(FLAG, absent=True)  # true: the error is that there is no Hopper GPU


@dataclasses.dataclass(frozen=True, kw_only=True)
class RecordSettings(Model):
    """A record's timing settings (plan.Settings), as its sample file keeps them."""

    processes: int = key(COUNT)
    rounds: int = key(COUNT)
    repeats: int = key(COUNT)
    warmup_s: float = key(NUMBER)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SampleRun(Model):
    """One run of a sample file: its spec, each process's answer and (--ncu) each impl's counters, null where none."""

    spec: dict[str, Any] = key()  # plan.RunSpec.to_json()
    processes: tuple[RunAnswer, ...] = key(LIST)
    counters: dict[str, Counters | None] | None = key(null=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class SampleFile(Model):
    """A record's raw samples (``samples/<run_id>.json.gz``): what its runs in the results file are computed from."""

    run_id: str = key(TEXT)
    date: str = key(TEXT)
    git_commit: str = key(TEXT)
    gpu: Device = key()
    software: Software = key()
    settings: RecordSettings = key()
    runs: tuple[SampleRun, ...] = key(LIST)
