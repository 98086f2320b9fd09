"""What every kernel file shares: input checks, the launch wrapper, the correctness check, timing.

Importing this module applies the Tilus 0.2.0 workarounds (``tilus_fixes``)
before any kernel is built, which keeps them out of the kernels' teaching code.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import torch

import tilus_fixes

tilus_fixes.apply()

# The shape every chapter quotes, and the shapes every version must get right.
BENCH_SHAPE = (8192, 8192, 8192)
CHECK_SHAPES: tuple[tuple[int, int, int], ...] = (
    (512, 512, 512),
    (4096, 4096, 4096),
    (4096, 8192, 1024),
    (1000, 3000, 520),  # M, N not multiples of any tile; K not a multiple of block_k
    (129, 257, 64),
    (8192, 8192, 8192),
    (3001, 4999, 4104),  # N % 8 = 7: C's rows do not start on 16 bytes, so TMA cannot store them
)
# fp16 output of an fp32 sum: half-precision rounding (2**-11 relative) dominates.
ATOL, RTOL = 1e-3, 2e-3


# Streaming multiprocessors of an H100 SXM or an H200, for the CPU build check, which has no GPU to ask
# (tile_model.H100_SMS and the data core's hopper.SM_COUNT say the same: a test holds them equal).
H100_SMS = 132


def sm_count() -> int:
    """Streaming multiprocessors of the current GPU: the persistent kernels' grid size (V6 on) and the tile
    model's wave size (V8 on); H100_SMS when there is no GPU."""
    if torch.cuda.is_available():
        return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    return H100_SMS


def require_hopper(device: torch.device | None = None) -> None:
    """Raise ValueError unless a Hopper GPU (compute capability 9.0) is present."""
    if not torch.cuda.is_available():
        raise ValueError("no CUDA GPU is visible: these kernels need an NVIDIA Hopper GPU (H100/H200, sm_90a)")
    index = device.index if device is not None and device.index is not None else torch.cuda.current_device()
    major, minor = torch.cuda.get_device_capability(index)
    if (major, minor) != (9, 0):
        name = torch.cuda.get_device_name(index)
        raise ValueError(f"{name} is sm_{major}{minor}; these kernels use WGMMA and need a Hopper GPU (sm_90a)")


def validate_operands(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor | None = None) -> tuple[int, int, int]:
    """Check A (MxK) and B (NxK) for C = A @ B^T; return (M, N, K) or raise ValueError saying what to change."""
    for name, t in (("A", a), ("B", b)) + ((("C", c),) if c is not None else ()):
        if not isinstance(t, torch.Tensor):
            raise ValueError(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        if t.dtype != torch.float16:
            raise ValueError(f"{name} is {t.dtype}; pass torch.float16 (e.g. {name.lower()}.half())")
        if t.dim() != 2:
            raise ValueError(f"{name} must be 2-D, got shape {tuple(t.shape)}")
        if t.device.type != "cuda":
            raise ValueError(f"{name} is on {t.device}; move it to the GPU with {name.lower()}.cuda()")
        if not t.is_contiguous():
            raise ValueError(f"{name} must be row-major contiguous; call {name.lower()}.contiguous()")
        if t.data_ptr() % 16:
            # TMA descriptors need a 16-byte aligned base; a view at an odd offset into a buffer is not.
            raise ValueError(f"{name} does not start on a 16-byte boundary; pass a fresh copy ({name.lower()}.clone())")
    (m, k), (n, kb) = a.shape, b.shape
    if k != kb:
        raise ValueError(f"A is {m}x{k} and B is {n}x{kb}: C = A @ B^T needs both to have the same K")
    if min(m, n, k) == 0:
        raise ValueError(f"empty problem {m}x{n}x{k}: M, N and K must be positive")
    if k % 8:
        raise ValueError(f"K = {k} is not a multiple of 8: TMA needs 16-byte row strides; pad K to {k + 8 - k % 8} "
                         "(zero columns appended to both A and B leave C unchanged)")  # fmt: skip
    if a.device != b.device:
        raise ValueError(f"A is on {a.device} and B on {b.device}; put both on one GPU")
    if c is not None:
        if tuple(c.shape) != (m, n):
            raise ValueError(f"C has shape {tuple(c.shape)}; expected ({m}, {n})")
        if c.device != a.device:
            raise ValueError(f"C is on {c.device}, A on {a.device}; put all three on one GPU")
    require_hopper(a.device)
    return m, n, k


def matmul(
    kernel: Callable[..., Any], a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None
) -> torch.Tensor:
    """C = A @ B^T with a Tilus kernel, after checking the inputs (nothing launches on bad input)."""
    m, n, k = validate_operands(a, b, out)
    c = torch.empty(m, n, dtype=torch.float16, device=a.device) if out is None else out
    kernel(m, n, k, a, b, c)
    return c


def random_operands(m: int, n: int, k: int, seed: int | None = None) -> tuple[torch.Tensor, torch.Tensor]:
    """Fresh normal fp16 operands on the GPU, standard deviation K^(-1/4): each of C's K products has variance 1/K,
    so C is of order one."""
    gen = torch.Generator(device="cuda")
    gen.manual_seed(seed if seed is not None else torch.seed())
    scale = 1.0 / math.sqrt(math.sqrt(k))
    a = (torch.randn(m, k, generator=gen, device="cuda") * scale).half()
    b = (torch.randn(n, k, generator=gen, device="cuda") * scale).half()
    return a, b


@dataclass(frozen=True)
class CheckResult:
    shape: tuple[int, int, int]
    max_abs_err: float
    bad: int  # elements outside tolerance, NaN included
    # The first wrong element in row-major order, as (row, column, kernel's value, float64 reference), or None.
    first_bad: tuple[int, int, float, float] | None = None

    @property
    def ok(self) -> bool:
        return self.bad == 0

    def describe(self) -> str:
        """One line for a report: the shape, how many elements are wrong, and the first of them."""
        m, n, k = self.shape
        if self.ok:
            return f"{m}x{n}x{k}: ok, max |err| {self.max_abs_err:.2e}"
        row, col, got, want = self.first_bad or (0, 0, math.nan, math.nan)
        return (f"{m}x{n}x{k}: {self.bad} of {m * n} elements wrong, the first C[{row}, {col}] = {got:.6g} "
                f"(float64: {want:.6g}); max |err| {self.max_abs_err:.3g}")  # fmt: skip


def check(kernel: Callable[..., Any], m: int, n: int, k: int, seed: int | None = None) -> CheckResult:
    """Run the kernel on fresh random inputs into a NaN-poisoned C; compare every element to float64."""
    a, b = random_operands(m, n, k, seed)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    matmul(kernel, a, b, out=c)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().T
    err = (c.double() - ref).abs()
    bad = ~(err <= ATOL + RTOL * ref.abs())  # NaN compares False, so it counts as bad
    max_err = err.nan_to_num(nan=math.inf).max().item()
    count = int(bad.sum().item())
    first = None
    if count:
        row, col = (int(i) for i in bad.nonzero()[0])
        first = (row, col, float(c[row, col].item()), float(ref[row, col].item()))
    return CheckResult((m, n, k), max_err, count, first)


FLUSH_BYTES = 512 * 1024 * 1024  # zeroed before each timed call: several times the 50-60 MB L2
BATCH_S = 0.02  # the warm-up syncs every ~20 ms, so that the host never runs further ahead of the GPU than that
# What ``python matmul_vN.py`` times with: the record's loop, in fewer rounds and one process.
MAIN_ROUNDS, MAIN_WARMUP_S, MAIN_REPEATS = 3, 1.0, 50


class CudaTimer:
    """The GPU pieces of the timing loop on the current CUDA device: the L2 flush, a sync, events, the host clock."""

    clock = staticmethod(time.perf_counter)

    def __init__(self) -> None:
        self.buffer = torch.empty(FLUSH_BYTES // 4, dtype=torch.int32, device="cuda")

    def flush(self) -> None:
        """Overwrite the L2: the next call reads its operands from HBM, as a matmul in a real model does."""
        self.buffer.zero_()

    def synchronize(self) -> None:
        torch.cuda.synchronize()

    def event(self) -> Any:
        return torch.cuda.Event(enable_timing=True)


@dataclass(frozen=True)
class LoopTiming:
    """A timed loop: the median call and every call in ms, each call's start in ms from the first's, the host-time
    span (perf_counter seconds, warm-up midpoint to the last call's end) that only this loop ran in, and the share
    of the timed window spent in the calls (the rest is the L2 flush and launch gaps)."""

    ms: float
    times: tuple[float, ...]
    starts: tuple[float, ...]
    span: tuple[float, float]
    busy: float


def next_batch(batch: int, seconds: float) -> int:
    """The warm-up's next batch: as many calls as fill BATCH_S at the rate the last ``batch`` calls took ``seconds``."""
    return max(1, min(10_000, int(BATCH_S * batch / max(seconds, 1e-6))))


def warm_up(call: Callable[[], Any], seconds: float, timer: Any) -> float:
    """Run the timed loop (flush, call) untimed for ``seconds``, at least once; the host time it began."""
    began, batch = timer.clock(), 1
    while True:
        start = timer.clock()
        for _ in range(batch):
            timer.flush()
            call()
        timer.synchronize()
        now = timer.clock()
        if now - began >= seconds:
            return began
        batch = next_batch(batch, now - start)


def timed_calls(call: Callable[[], Any], repeats: int, timer: Any) -> LoopTiming:
    """``repeats`` calls, L2 flushed before each, CUDA events around each, with no warm-up: the span runs from just
    before the first call to the last call's end."""
    # The anchor is recorded on the idle GPU right after a host timestamp: it ties event time to host time.
    anchor = timer.event()
    events = [(timer.event(), timer.event()) for _ in range(repeats)]
    host = timer.clock()
    anchor.record()
    for start_event, end_event in events:
        timer.flush()
        start_event.record()
        call()
        end_event.record()
    timer.synchronize()
    times = [s.elapsed_time(e) for s, e in events]
    first_ms, end_ms = anchor.elapsed_time(events[0][0]), anchor.elapsed_time(events[-1][1])
    starts = [anchor.elapsed_time(s) - first_ms for s, _ in events]
    return LoopTiming(statistics.median(times), tuple(times), tuple(starts), (host, host + end_ms / 1e3),
                      sum(times) / max(end_ms - first_ms, 1e-9))  # fmt: skip


def time_loop(call: Callable[[], Any], warmup_s: float = 1.0, repeats: int = 50, timer: Any = None) -> LoopTiming:
    """The method's timing loop: ``warmup_s`` seconds of the loop (L2 flush, call), then ``repeats`` calls, each
    flushed and timed by CUDA events; the clock and power state the timed calls meet is this call's own. The span
    starts halfway through the warm-up: from there on only this loop has run for a while."""
    timer = timer if timer is not None else CudaTimer()
    began = warm_up(call, warmup_s, timer)
    timed = timed_calls(call, repeats, timer)
    return replace(timed, span=(began + warmup_s / 2.0, timed.span[1]))


def interleaved(calls: dict[str, Callable[[], Any]], rounds: int = 3, warmup_s: float = 1.0, repeats: int = 50,
                timer: Any = None) -> dict[str, list[float]]:  # fmt: skip
    """Each call's median ms in each round; rounds alternate the order (forward, reversed), so that no call always
    meets the state one neighbour leaves, and its warm-up makes the state its own."""
    timer = timer if timer is not None else CudaTimer()
    ms: dict[str, list[float]] = {name: [] for name in calls}
    for round_ in range(rounds):
        for name in list(calls) if round_ % 2 == 0 else list(calls)[::-1]:
            ms[name].append(time_loop(calls[name], warmup_s, repeats, timer).ms)
    return ms


def paired_ratio(baseline_ms: Sequence[float], ms: Sequence[float]) -> float:
    """The median over rounds of the baseline's time over this one's in the same round (above 1: faster)."""
    return statistics.median(base / own for base, own in zip(baseline_ms, ms, strict=True))


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def pinned(script_cls: type, config: dict[str, Any]) -> type:
    """The script with its autotuning space narrowed to one configuration (same name, so the same cache)."""
    return type(script_cls.__name__, (script_cls,), {"debug_schedule": dict(config)})


class PerProblem:
    """A kernel whose configuration a rule picks for each problem (V8's tile model): ``rule(m, n, k)`` names it,
    and each configuration it names is pinned and built once, the first time it is needed."""

    def __init__(self, script_cls: type, rule: Callable[[int, int, int], dict[str, Any]]):
        self.script_cls, self.rule = script_cls, rule
        self.kernels: dict[tuple[tuple[str, Any], ...], Any] = {}
        self.last_config: dict[str, Any] = {}

    def kernel_for(self, m: int, n: int, k: int) -> Any:
        """The pinned kernel the rule names for M x N x K (built on its first call)."""
        config = self.rule(m, n, k)
        key = tuple(sorted(config.items()))
        if key not in self.kernels:
            self.kernels[key] = pinned(self.script_cls, config)()
        self.last_config = config
        return self.kernels[key]

    def __call__(self, m: int, n: int, k: int, *tensors: Any) -> None:
        self.kernel_for(m, n, k)(m, n, k, *tensors)


def tuned_config(kernel: Any) -> dict[str, Any]:
    """The configuration the Tilus autotuner (or a PerProblem rule) picked on the kernel's last new problem size."""
    if isinstance(kernel, PerProblem):
        return dict(kernel.last_config)
    for jit_key, tuning_key in reversed(list(kernel.dispatch_table)):
        instance = kernel.jit_instances[jit_key]
        chosen = instance.dispatch_table[tuning_key]
        return dict(instance.schedules[instance.valid_schedules[chosen]])
    return {}


def run_main(kernel: Callable[..., Any], title: str, shapes: Sequence[tuple[int, int, int]] = CHECK_SHAPES) -> None:
    """What ``python matmul_vN.py`` does: check every shape, then time BENCH_SHAPE next to cuBLAS.

    ``title`` is the kernel file's TITLE, the same string its chapter and the charts show.
    """
    name = getattr(kernel, "script_cls", type(kernel)).__name__  # a PerProblem rule: the script it pins
    try:
        require_hopper()
    except ValueError as exc:  # the message is the whole story: one line, no traceback
        raise SystemExit(f"{name}: {exc}") from None
    print(f"{name}, {title}, on {torch.cuda.get_device_name()}")
    for m, n, k in shapes:
        result = check(kernel, m, n, k)
        print(f"  check {result.describe()}" if result.ok else f"  check FAILED: {result.describe()}")
        if not result.ok:
            raise SystemExit(1)
    m, n, k = BENCH_SHAPE
    a, b = random_operands(m, n, k)
    c = torch.empty(m, n, dtype=torch.float16, device="cuda")
    ms = interleaved({"ours": lambda: kernel(m, n, k, a, b, c), "cublas": lambda: torch.matmul(a, b.T, out=c)},
                     MAIN_ROUNDS, MAIN_WARMUP_S, MAIN_REPEATS)  # fmt: skip
    ours, cublas = statistics.median(ms["ours"]), statistics.median(ms["cublas"])
    print(f"  {m}x{n}x{k} fp16: {ours:.3f} ms, {tflops(m, n, k, ours):.0f} TFLOPS")
    print(f"  cuBLAS (torch.matmul): {cublas:.3f} ms, {tflops(m, n, k, cublas):.0f} TFLOPS")
    print(f"  ratio to cuBLAS: {paired_ratio(ms['cublas'], ms['ours']):.2f}")
    # The record pins a file's TUNED (its chapter's measured configuration) or asks its per-problem rule, as here; an
    # autotuned kernel here picks among its autotune lists again, and may pick another configuration than TUNED.
    chosen = "the file's rule, as in the site's record" if isinstance(kernel, PerProblem) else (
        "picked by Tilus's autotuner here; the site's record pins the file's TUNED")  # fmt: skip
    print(f"  configuration: {chosen}")
    print(f"  timed as the site times, in fewer rounds: {MAIN_ROUNDS} alternating rounds of {MAIN_WARMUP_S:g} s "
          f"warm-up + {MAIN_REPEATS} calls, L2 flushed; the site's numbers: python -m matmul_bench record")  # fmt: skip
