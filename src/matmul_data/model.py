"""The results file as typed objects: frozen dataclasses, one per object of the layout that :mod:`matmul_data.results`
documents, each key declared once with the kind of value it holds.

``Results.from_json(data)`` decodes a file's dict and checks its structure (every key known, present unless it may be
absent, of its kind or null where it may be); :mod:`matmul_data.schema` checks what kinds cannot say (derived numbers,
cross-references). ``to_json()`` gives the dict back as it was read, key for key and in the same order: each decoded
object keeps the order of its keys, so that a field a reader never touches is written back unchanged. An object made
in code writes its fields in the order declared here, leaving out those that may be absent and are unset.

A key that is not declared is refused, not carried: a misspelt or renamed key fails where it is read, not later.
"""

from __future__ import annotations

import dataclasses

from matmul_data.decoding import (
    COUNT,
    COUNT0,
    DATE,
    EDITS,
    FLAG,
    LIST,
    NONNEGATIVE,
    NUMBER,
    PAIR,
    POSITIVE,
    RUNS,
    TEXT,
    WARMUP,
    Config,
    Model,
    key,
    optional,
)

# --- the file -------------------------------------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True, kw_only=True)
class Clocks(Model):
    """The GPU's maximum clocks, MHz (null: not reported)."""

    sm_max: float | None = key(POSITIVE, null=True)
    mem_max: float | None = key(POSITIVE, null=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Gpu(Model):
    """The GPU model the file was measured on."""

    name: str = key(TEXT)
    sm_count: int = key(COUNT)
    compute_capability: str = key(TEXT)
    memory_gb: float = key(POSITIVE)
    driver: str = key(TEXT)
    clocks_mhz: Clocks = key()
    power_limit_w: float | None = key(POSITIVE, null=True)
    published_dense_fp16_tflops: float | None = key(POSITIVE, null=True)
    published_source: str | None = key(TEXT, null=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Software(Model):
    """Versions of what the benchmark ran with."""

    cuda: str = key(TEXT)
    torch: str = key(TEXT)
    tilus: str = key(TEXT)
    cublas: str | None = key(TEXT, absent=True)
    python: str = key(TEXT)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Verdicts(Model):
    """How the file's verdicts are stated: how many, at what confidence, against which band."""

    count: int = key(COUNT)
    family_confidence: float = key(POSITIVE)
    confidence_each: float = key(POSITIVE)
    band: float = key(POSITIVE)
    band_floor: float | None = key(POSITIVE, absent=True)
    replicated_runs: int | None = key(COUNT, absent=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Method(Model):
    """How the file's runs were measured, in words (docs/method.rst)."""

    timer: str = key(TEXT)
    warmup_s: float | None = key(NUMBER, absent=True)
    repeats: int = key(COUNT)
    warmup: int | str = key(WARMUP)
    statistic: str = key(TEXT)
    interval: str = key(TEXT)
    l2_flush: str = key(TEXT)
    order: str = key(TEXT)
    clocks: str = key(TEXT)
    configs: str | None = key(TEXT, absent=True)
    verdicts: Verdicts | None = optional()
    earlier_runs: dict[str, str] | None = key(absent=True)  # run_id -> how that run was measured


@dataclasses.dataclass(frozen=True, kw_only=True)
class Problem(Model):
    """The ladder's problem: its shape, dtype and accumulation."""

    m: int = key(COUNT)
    n: int = key(COUNT)
    k: int = key(COUNT)
    dtype: str = key(TEXT)
    accumulate: str = key(TEXT)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Shape(Model):
    """A problem size: C (M x N) = A (M x K) @ B (K x N)."""

    m: int = key(COUNT)
    n: int = key(COUNT)
    k: int = key(COUNT)

    @property
    def mnk(self) -> tuple[int, int, int]:
        """(M, N, K)."""
        return (self.m, self.n, self.k)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Interval(Model):
    """A ratio's median and 95% interval; on a figure, its verdict against the band; a step's names the row over."""

    over: str | None = key(TEXT, absent=True)
    median: float = key(POSITIVE)
    low: float = key(POSITIVE)
    high: float = key(POSITIVE)
    verdict: str | None = key(TEXT, absent=True)
    band: float | None = key(POSITIVE, absent=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Counters(Model):
    """Nsight Compute's counters of one launch (the benchmark's profile); null where ncu did not measure one."""

    tensor_pipe_pct: float | None = key(NUMBER, null=True)
    gmma_instructions: float | None = optional(NUMBER)
    dram_throughput_pct: float | None = key(NUMBER, null=True)
    # the ones below were added later: records made before them lack the keys
    dram_read_bytes: float | None = optional(NUMBER)
    l2_hit_pct: float | None = optional(NUMBER)
    smem_store_wavefronts: float | None = optional(NUMBER)
    smem_store_bank_conflicts: float | None = optional(NUMBER)
    ncu_metrics: dict[str, float] | None = key(absent=True)  # the raw metrics they came from


@dataclasses.dataclass(frozen=True, kw_only=True)
class Samples(Model):
    """A run's per-round paired ratios, per process: what figures merge from."""

    ratio_to_cublas: tuple[tuple[float, ...], ...] = key()
    step: tuple[tuple[float, ...], ...] | None = key(absent=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Row(Model):
    """One implementation in a run or a figure."""

    latency_ms: float = key(POSITIVE)
    tflops: float = key(POSITIVE)
    ratio_to_cublas: Interval = key()
    sm_clock_mhz: float | None = key(POSITIVE, null=True)
    power_w: float | None = key(POSITIVE, null=True)
    busy: float | None = optional(POSITIVE)
    config: Config = key()
    title: str = key(TEXT)
    samples: Samples | None = key(absent=True)
    step: Interval | None = optional()
    counters: Counters | None = optional()
    kept: bool | None = key(FLAG, absent=True)  # steps only, not cuBLAS
    wrong_elements: int | None = key(COUNT0, absent=True)  # cuBLAS only: it failed its float64 check
    efficiency: float | None = optional(POSITIVE)  # figures: TFLOPS over the peak at the sampled clock
    suspect: bool | None = key(FLAG, absent=True)  # figures: that efficiency is implausible


@dataclasses.dataclass(frozen=True, kw_only=True)
class PeerMissing(Model):
    """A peer asked for that could not run: its installed version (null: not installed) and the error."""

    version: str | None = key(TEXT, null=True)
    error: str = key(TEXT)


@dataclasses.dataclass(frozen=True, kw_only=True)
class FieldInfo(Model):
    """The field set's shape a field run times (matmul_data.field)."""

    name: str = key(TEXT)
    source: str = key(TEXT)
    kind: str = key(TEXT)
    half: str = key(TEXT)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Run(Model):
    """One interleaved session at one shape."""

    run_id: str = key(TEXT)
    date: str = key(DATE)
    git_commit: str = key(TEXT)
    shape: Shape = key()
    rounds: int = key(COUNT)
    processes: int = key(COUNT)
    after: str | None = key(TEXT, absent=True)  # steps only
    title: str | None = key(TEXT, absent=True)  # steps only
    warmup: int | None = optional(COUNT0)  # calls (method 3 and older)
    warmup_s: float | None = optional(NUMBER)  # seconds of each implementation's own loop (method 4)
    repeats: int | None = optional(COUNT)
    log: str | None = optional(TEXT)
    method: int | None = key(COUNT, absent=True)
    field: FieldInfo | None = optional()  # field runs only
    rows: dict[str, Row] = key()
    peers_missing: dict[str, PeerMissing] | None = optional()
    invocation_s: float | None = optional(POSITIVE)


@dataclasses.dataclass(frozen=True, kw_only=True)
class DecodedKernel(Model):
    """What a cuBLAS kernel's name says of its tiling."""

    tile: tuple[int, int] = key(PAIR)
    cluster: tuple[int, int] = key(PAIR)
    stages: int = key(COUNT)
    block_k: int = key(COUNT)


@dataclasses.dataclass(frozen=True, kw_only=True)
class CublasKernel(Model):
    """The kernel cuBLAS ran at a figure's shape."""

    name: str = key(TEXT)
    decoded: DecodedKernel | None = optional()


@dataclasses.dataclass(frozen=True, kw_only=True)
class Figure(Run):
    """A figure: merged rows shaped like a run's, and the independent runs they merge (newest last)."""

    replicated: bool | None = key(FLAG, absent=True)
    cublas_kernel: CublasKernel | None = optional()
    runs: tuple[Run, ...] = key(RUNS)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TryItCheck(Model):
    """One check of a try-it edit against float64: elements outside tolerance, of them non-finite, the largest
    finite error (null: no finite element)."""

    shape: Shape = key()
    bad: int = key(COUNT0)
    nonfinite: int = key(COUNT0)
    max_abs_err: float | None = key(NONNEGATIVE, null=True)


@dataclasses.dataclass(frozen=True, kw_only=True)
class TryIt(Model):
    """One edit of a chapter's kernel file (specs/tryit.py), checked on the GPU."""

    version: str = key(TEXT)
    name: str = key(TEXT)
    title: str = key(TEXT)
    file: str = key(TEXT)
    edits: tuple[tuple[str, str], ...] = key(EDITS)
    config: Config = key()
    checks: tuple[TryItCheck, ...] = key()
    error: str | None = optional(TEXT)  # hangs, does not build, crashes
    timeout_s: float | None = optional(POSITIVE)  # hangs
    outcome: str = key(TEXT)
    run_id: str = key(TEXT)
    date: str = key(DATE)
    git_commit: str = key(TEXT)


@dataclasses.dataclass(frozen=True, kw_only=True)
class Results(Model):
    """A whole results file."""

    schema: int = key(COUNT)
    gpu: Gpu = key()
    software: Software = key()
    method: Method = key()
    problem: Problem = key()
    ladder: Figure | None = optional()
    sweep: tuple[Figure, ...] = key(LIST, absent=True, default=())
    steps: tuple[Figure, ...] = key(LIST, absent=True, default=())
    field: tuple[Figure, ...] = key(LIST, absent=True, default=())  # files before the field set lack it
    tryit: tuple[TryIt, ...] = key(LIST, absent=True, default=())

    @property
    def figures(self) -> list[Figure]:
        """Every figure: the ladder, then the sweep's, the steps' and the field's."""
        return [f for f in (self.ladder, *self.sweep, *self.steps, *self.field) if f is not None]
