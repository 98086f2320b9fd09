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

import copy
import dataclasses
import functools
import math
import re
import types
import typing
from collections.abc import Callable
from typing import Any, Self

# A configuration: parameter -> value, as the implementation takes it ({} for library calls; a peer's may nest).
Config = dict[str, Any]


class ResultsError(ValueError):
    """A results file is missing, unreadable or does not follow the schema; the message says which and why."""


def invalid(field: str, problem: str, value: Any) -> ResultsError:
    """The error for a field whose value breaks a rule: its dotted path, the rule, and (the start of) the value."""
    shown = repr(value)
    return ResultsError(f"field {field!r} {problem}, got {shown if len(shown) <= 80 else shown[:77] + '...'}")


def missing(field: str) -> ResultsError:
    """The error for a key that must be present and is not."""
    return ResultsError(f"field {field!r} is missing")


# --- kinds: what a value may be, and what the error says when it is not -------------------------------------------


@dataclasses.dataclass(frozen=True)
class Kind:
    """A rule for a field's value (checked on the JSON value, before it is decoded)."""

    holds: Callable[[Any], bool]
    problem: str


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _is_int(value: Any, minimum: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= minimum


TEXT = Kind(lambda v: isinstance(v, str) and bool(v), "must be a non-empty string")
COUNT = Kind(lambda v: _is_int(v, 1), "must be an integer >= 1")
COUNT0 = Kind(lambda v: _is_int(v, 0), "must be an integer >= 0")
POSITIVE = Kind(lambda v: _is_number(v) and v > 0, "must be a positive number")
NUMBER = Kind(_is_number, "must be a finite number")
NONNEGATIVE = Kind(lambda v: _is_number(v) and v >= 0, "must be a finite number >= 0 or null")
FLAG = Kind(lambda v: isinstance(v, bool), "must be true or false")
DATE = Kind(lambda v: isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v) is not None,
            "must be a date YYYY-MM-DD")  # fmt: skip
PAIR = Kind(lambda v: isinstance(v, list) and len(v) == 2 and all(_is_int(x, 1) for x in v),
            "must be two positive integers")  # fmt: skip
# calls per round (method 3 and older), or what the warm-up is (method 4, with warmup_s its seconds)
WARMUP = Kind(lambda v: _is_int(v, 0) or TEXT.holds(v), "must be an integer >= 0 or a non-empty string")
LIST = Kind(lambda v: isinstance(v, list), "must be a list (possibly empty)")
RUNS = Kind(lambda v: isinstance(v, list) and bool(v), "must be a non-empty list of the runs merged")
EDITS = Kind(
    lambda v: (
        isinstance(v, list)
        and all(isinstance(e, list) and len(e) == 2 and all(isinstance(s, str) for s in e) and e[0] for e in v)
    ),
    "must be a list of [old text, new text] (old not empty)",
)


def key(kind: Kind | None = None, *, null: bool = False, absent: bool = False, default: Any = None) -> Any:
    """A declared key: its kind, whether it may be null, whether it may be absent (its value is then ``default``)."""
    meta = {"kind": kind, "null": null, "absent": absent}
    if absent:
        return dataclasses.field(default=default, metadata=meta)
    return dataclasses.field(metadata=meta)


def optional(kind: Kind | None = None, default: Any = None) -> Any:
    """A key that may be null or absent (None either way)."""
    return key(kind, null=True, absent=True, default=default)


# --- the generic decoder and encoder ----------------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class _Spec:
    type: Any
    kind: Kind | None
    null: bool
    absent: bool
    default: Any


def _path(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


@dataclasses.dataclass(frozen=True, kw_only=True)
class Model:
    """An object of the results file; ``key_order`` is the order of the keys it was read with (empty: made in code)."""

    key_order: tuple[str, ...] = dataclasses.field(default=(), compare=False, repr=False)

    @classmethod
    def from_json(cls, data: Any, where: str = "") -> Self:
        """Decode one object of the file (``where``: its dotted path, for errors); ResultsError names the bad field."""
        if not isinstance(data, dict):
            raise invalid(where or "(top level)", "must be an object", data)
        specs = _specs(cls)
        values = {}
        for name, spec in specs.items():
            field = _path(where, name)
            if name not in data:
                if not spec.absent:
                    raise missing(field)
                continue
            value = data[name]
            if value is None:
                if not spec.null:
                    raise invalid(field, spec.kind.problem if spec.kind else "must not be null", value)
            elif spec.kind is not None and not spec.kind.holds(value):
                raise invalid(field, spec.kind.problem, value)
            values[name] = None if value is None else _decode(spec.type, value, field)
        unknown = next((name for name in data if name not in specs), None)
        if unknown is not None:
            raise invalid(_path(where, unknown), f"is not a key of {cls.__name__} (matmul_data.model)", data[unknown])
        return cls(key_order=tuple(data), **values)

    def to_json(self) -> dict[str, Any]:
        """The object as the file holds it: the keys it was read with, in their order, then any set since."""
        specs = _specs(type(self))
        names = [*self.key_order]
        names += [n for n, s in specs.items() if n not in names and not (s.absent and getattr(self, n) == s.default)]
        return {name: _encode(getattr(self, name)) for name in names}


@functools.cache
def _specs(cls: type[Model]) -> dict[str, _Spec]:
    """The declared keys of a model class, with their types resolved (the annotations are strings)."""
    hints = typing.get_type_hints(cls)
    return {
        f.name: _Spec(hints[f.name], f.metadata.get("kind"), f.metadata["null"], f.metadata["absent"], f.default)
        for f in dataclasses.fields(cls)
        if "null" in f.metadata
    }


_SCALARS = {
    float: (_is_number, "must be a finite number"),
    int: (lambda v: isinstance(v, int) and not isinstance(v, bool), "must be an integer"),
    str: (lambda v: isinstance(v, str), "must be a string"),
    bool: (lambda v: isinstance(v, bool), "must be true or false"),
}


def _decode(tp: Any, value: Any, where: str) -> Any:
    """A JSON value as the declared type: objects as models, lists as tuples, maps as dicts, scalars as they are."""
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:  # free-form JSON, kept as it is (a copy: the model shares nothing with its input)
        return copy.deepcopy(value)
    if isinstance(tp, type) and issubclass(tp, Model):
        return tp.from_json(value, where)
    if origin is dict:
        if not isinstance(value, dict):
            raise invalid(where, "must be an object", value)
        return {name: _decode(args[1], item, _path(where, name)) for name, item in value.items()}
    if origin is tuple:
        if not isinstance(value, list) or (args[-1] is not Ellipsis and len(value) != len(args)):
            raise invalid(where, "must be a list", value)
        each = [args[0]] * len(value) if args[-1] is Ellipsis else args
        return tuple(_decode(t, item, f"{where}[{i}]") for i, (t, item) in enumerate(zip(each, value, strict=True)))
    options = [a for a in args if a is not type(None)] if origin in (typing.Union, types.UnionType) else [tp]
    if len(options) == 1 and options[0] not in _SCALARS:  # an optional model, list or map
        return _decode(options[0], value, where)
    if any(_SCALARS[t][0](value) for t in options):
        return value
    raise invalid(where, " or ".join(_SCALARS[t][1] for t in options), value)


def _encode(value: Any) -> Any:
    if isinstance(value, Model):
        return value.to_json()
    if isinstance(value, dict):
        return {name: _encode(item) for name, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [_encode(item) for item in value]
    return value


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
    """Nsight Compute's counters of one launch (matmul_bench.ncu); null where ncu did not measure one."""

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
    efficiency: float | None = optional(POSITIVE)  # figures: TFLOPS over the peak at the sampled clock
    suspect: bool | None = key(FLAG, absent=True)  # figures: that efficiency is implausible
    wrong_elements: int | None = key(COUNT0, absent=True)  # cuBLAS only: it failed its float64 check


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
    """One edit of a chapter's kernel file (experiments/tryit.py), checked on the GPU."""

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
