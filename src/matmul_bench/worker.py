"""One fresh worker process: ``python -m matmul_bench worker JOB.json ANSWER.json`` (started by :mod:`.jobs`).

A job's mode: "probe", "build" (one kernel at its shapes), "time" (every impl checked, then timed in rounds) or
"profile" (one launch, for ncu). A wrong result of ours exits with WRONG_RESULT before any timing; an optional peer
that cannot run, or is wrong, is left out and reported in its run's ``missing``; cuBLAS, the baseline, is timed even
when wrong (as at N % 8 != 0), its failed checks in the answer's ``checks`` (the row's ``wrong_elements``)."""

from __future__ import annotations

import dataclasses
import importlib
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matmul_bench import kernels, machine
from matmul_bench.plan import PEER_PACKAGES, ImplSpec, RunSpec, Shape, shape_text
from matmul_bench.protocol import Answer, BuildAnswer, BuildSpec, Check, Device, Job, RunAnswer
from matmul_data.decoding import Config
from matmul_data.model import PeerMissing, Software

WRONG_RESULT = 3
BUSY_MIN = 0.8  # below this share of the timed loop in the kernel, NVML's readings describe the L2 flush as much


@dataclass
class Prepared:
    """A built implementation at one shape: ``call()`` is exactly what is timed."""

    call: Callable[[], Any]
    config: Config
    title: str | None
    check: Callable[[Shape], Check]


@dataclass
class Timing:
    """One implementation's turn in a round: the median timed call, the host-time span whose NVML readings describe
    its loop, and the share of that loop spent in its kernels (the rest is the L2 flush and launch gaps)."""

    ms: float
    span: machine.Span
    busy: float


class CudaBackend:
    """Tilus kernels, cuBLAS and the optional peers on CUDA device 0."""

    def __init__(self, autotune: bool = False) -> None:
        self.autotune = autotune
        self.kernels: dict[str, Any] = {}
        self.operands: dict[Shape, Any] = {}
        self.uuid = ""
        self.timer: Any = None  # common.CudaTimer: the L2 flush buffer, events and clock of the timing loop

    def device(self) -> Device:
        """CUDA device 0, refused unless it is a Hopper GPU."""
        found = machine.device()
        self.uuid = found.uuid
        return found

    def software(self) -> Software:
        """What the worker runs with."""
        return Software.from_json(machine.software())

    def peer_version(self, impl: ImplSpec) -> str | None:
        """The installed version of a peer's package."""
        return machine.package_version(PEER_PACKAGES[impl.kind])

    def prepare(self, impl: ImplSpec, shape: Shape) -> Prepared:
        """Build (or load from Tilus's cache) one impl on the run's operands, and compile a peer."""
        import torch

        common = kernels.load("common")
        m, n, k = shape
        if shape not in self.operands:  # every impl of a run is timed on the same inputs
            a, b = common.random_operands(m, n, k)
            self.operands[shape] = (a, b, torch.empty(m, n, dtype=torch.float16, device="cuda"))
        a, b, c = self.operands[shape]
        config, title = impl.config, impl.title
        if impl.kind in PEER_PACKAGES:
            from matmul_bench import peers

            kernel, call, config = peers.build(impl, a, b, c)  # compiled and autotuned here, not when timed
        elif impl.kind == "cublas":
            kernel: Any = lambda m_, n_, k_, x, y, z: torch.matmul(x, y.T, out=z)  # noqa: E731
            call = lambda: torch.matmul(a, b.T, out=c)  # noqa: E731
        else:
            key = json.dumps(dataclasses.asdict(impl), sort_keys=True)
            if key not in self.kernels:  # one instance per spec: Tilus builds each (N, K) once per instance
                self.kernels[key] = kernels.make_kernel(impl.file, impl.cls, config, self.autotune)
            kernel = self.kernels[key]
            call = lambda: kernel(m, n, k, a, b, c)  # noqa: E731
            title = title or kernels.load_file(impl.file).TITLE
        common.matmul(kernel, a, b, out=c)
        torch.cuda.synchronize()

        def check(at: Shape) -> Check:
            result = common.check(kernel, *at)
            return Check.of(ok=result.ok, bad=result.bad, max_abs_err=result.max_abs_err, shape=at)

        return Prepared(call, dict(config if config is not None else tuned(kernel)), title, check)

    def time_ms(self, prepared: Prepared, warmup_s: float, repeats: int) -> Timing:
        """The median of ``repeats`` timed calls (L2 flushed before each, CUDA events) after ``warmup_s`` seconds of
        the same loop (common.time_loop): the power and clock state the timed calls meet is this implementation's."""
        common = kernels.load("common")
        if self.timer is None:  # one flush buffer for the whole process
            self.timer = common.CudaTimer()
        timed = common.time_loop(prepared.call, warmup_s, repeats, self.timer)
        return Timing(timed.ms, timed.span, timed.busy)

    def build(self, spec: BuildSpec) -> BuildAnswer:
        """One kernel built at every shape of ``spec`` and checked there when it asks (:func:`build`)."""
        return build(spec, self.autotune)

    def sampler(self) -> machine.WindowSampler:
        """NVML's clock and power, polled while a window is open."""
        return machine.WindowSampler(machine.nvml_reader(self.uuid))

    def profile(self, prepared: Prepared) -> None:
        """One launch between profiler start and stop: the one ncu profiles."""
        import torch

        for then in (torch.cuda.profiler.start, torch.cuda.profiler.stop):  # a launch before, then the profiled one
            prepared.call()
            torch.cuda.synchronize()
            then()


def tuned(kernel: Any) -> Config:
    """The configuration a kernel ran with; {} for a script with no autotune space."""
    try:
        return kernels.load("common").tuned_config(kernel)
    except (AttributeError, KeyError, IndexError, TypeError):
        return {}


class CheckFailed(Exception):
    """An optional peer's result is wrong: it is not timed, and the run goes on without it."""


def time_runs(backend: CudaBackend, job: Job) -> tuple[list[RunAnswer], str | None]:
    """Build and check every impl of every run first, then time each run in rounds; (per-run answers, error or None)."""
    settings, prepared_runs, out = job.settings, [], []
    if settings is None or settings.rounds is None or settings.repeats is None or settings.warmup_s is None:
        raise ValueError("a time job's settings need rounds, repeats and warmup_s")
    for run in map(RunSpec.from_json, job.runs):
        prepared, answer, wrong = prepare_run(backend, run)
        out.append(answer)
        if wrong:
            return out, f"{wrong}; nothing was timed"
        prepared_runs.append(prepared)
    sampler = backend.sampler()
    try:
        for i, prepared in enumerate(prepared_runs):
            names = list(prepared)  # in the run's order, less the peers that cannot run
            samples, clocks, power, busy = ({n: [] for n in names} for _ in range(4))
            orders = [names if r % 2 == 0 else names[::-1] for r in range(settings.rounds)]  # no fixed neighbour
            for order in orders:
                for name in order:
                    with sampler.window(name):
                        timing = backend.time_ms(prepared[name], settings.warmup_s, settings.repeats)
                    samples[name].append(timing.ms)
                    busy[name].append(round(timing.busy, 4))
                    got_clocks, got_power = sampler.take(name, [timing.span])
                    if timing.busy >= BUSY_MIN:  # else the readings describe the L2 flush as much as the kernel
                        clocks[name] += got_clocks
                        power[name] += got_power
            out[i] = out[i].put(samples=frozen(samples), clocks=frozen(clocks), power=frozen(power), busy=frozen(busy),
                                orders=tuple(map(tuple, orders)))  # fmt: skip
    finally:
        sampler.close()
    return out, None


def frozen(values: dict[str, list[float]]) -> dict[str, tuple[float, ...]]:
    """Per impl, its values as a tuple."""
    return {name: tuple(found) for name, found in values.items()}


def prepare_run(backend: CudaBackend, run: RunSpec) -> tuple[dict[str, Prepared], RunAnswer, str | None]:
    """Every impl of one run built and checked, up to the first of ours that is wrong: (the impls that can be timed,
    the run's answer so far, what is wrong or None)."""
    prepared: dict[str, Prepared] = {}
    checks: dict[str, tuple[Check, ...]] = {}
    configs: dict[str, Config] = {}
    titles: dict[str, str | None] = {}
    missing: dict[str, PeerMissing] = {}
    wrong = None
    for impl in run.impls:
        name, peer = impl.name, impl.kind in PEER_PACKAGES
        print(f"  {run.name}: building {name}", file=sys.stderr, flush=True)
        try:
            p = backend.prepare(impl, run.shape)
            found = tuple(p.check(s) for s in (run.shape, *run.check_shapes))
            bad = next((c for c in found if not c.ok), None)
            wrong = bad and (f"{name} is wrong at {shape_text(bad.shape)}: {bad.bad} elements "
                             f"outside tolerance (max |err| {bad.max_abs_err:.3g})")  # fmt: skip
            if wrong and peer:
                raise CheckFailed(f"{wrong}; not timed")
            if wrong and impl.kind == "cublas":  # the baseline is timed all the same, marked inexact
                print(f"  {wrong}; timed as the baseline all the same", file=sys.stderr, flush=True)
                wrong = None
        except Exception as exc:
            if not peer:
                raise
            if not isinstance(exc, (ImportError, CheckFailed)):  # those say it all; a failed build needs its trace
                traceback.print_exc()
            error = f"{type(exc).__name__}: {(str(exc).strip().splitlines() or [''])[0]}".strip()[:400]
            if isinstance(exc, ImportError):
                error += ' (the peers are optional extras: pip install -e ".[peers]")'
            missing[name] = PeerMissing.of(version=backend.peer_version(impl), error=error)
            print(f"  {name} cannot run: {error}", file=sys.stderr)
            wrong = None
            continue
        prepared[name] = p
        checks[name], configs[name], titles[name] = found, p.config, p.title
        if wrong:
            break
    answer = RunAnswer.of(name=run.name, checks=checks, configs=configs, titles=titles, missing=missing)
    return prepared, answer, wrong or None


def build(spec: BuildSpec, autotune: bool) -> BuildAnswer:
    """One kernel built at every shape of ``spec`` (and checked there when it asks): what Tilus chose, what failed."""
    import torch

    common = kernels.load("common")
    kernel = kernels.make_kernel(spec.file, spec.cls, spec.config, autotune)
    ok, configs, checks = True, {}, []
    for m, n, k in spec.shapes:
        if spec.check:
            result = common.check(kernel, m, n, k, seed=spec.seed)
            checks.append(Check.of(ok=result.ok, bad=result.bad, max_abs_err=result.max_abs_err, shape=(m, n, k),
                                   report=result.describe()))  # fmt: skip
            ok = ok and result.ok
        else:  # M is a run-time argument: a small M builds (N, K); a per-problem rule is asked at the real M
            built = kernel.kernel_for(m, n, k) if isinstance(kernel, common.PerProblem) else kernel
            common.matmul(built, *common.random_operands(min(m, 256), n, k))
            torch.cuda.synchronize()
        configs[f"{m}x{n}x{k}"] = spec.config or tuned(kernel)
    return BuildAnswer.of(ok=ok, configs=configs, checks=tuple(checks), error=None)


def make_backend(job: Job) -> CudaBackend:
    """The job's backend: "cuda", or "module:factory", a callable that makes one from the job (the CPU tests' fake
    GPU, imported from the child's PYTHONPATH)."""
    name = job.backend or "cuda"
    if name == "cuda":
        return CudaBackend(bool(job.autotune))
    module, _, attribute = name.partition(":")
    if not module or not attribute:
        raise ValueError(f'backend {name!r}: give "cuda" or "module:factory"')
    return getattr(importlib.import_module(module), attribute)(job)


def run_job(job: Job) -> tuple[Answer | BuildAnswer, int]:
    """A job's answer and this process's exit status."""
    backend = make_backend(job)
    if job.mode == "build":
        if job.build is None:
            raise ValueError("a build job needs its build spec")
        return backend.build(job.build), 0  # a wrong build is the answer, not a failure
    return measure(backend, job)


def measure(backend: CudaBackend, job: Job) -> tuple[Answer, int]:
    """A probe's, a time job's or a profile job's answer on ``backend``, and this process's exit status."""
    answer = Answer.of(error=None, device=backend.device(), runs=())
    if job.mode == "probe":
        answer = answer.put(software=backend.software())
    elif job.mode == "profile":
        run = RunSpec.from_json(job.runs[0])
        backend.profile(backend.prepare(run.impls[0], run.shape))
    else:
        runs, error = time_runs(backend, job)
        answer = answer.put(runs=tuple(runs), error=error)
    return answer, WRONG_RESULT if answer.error else 0


def main(argv: Sequence[str]) -> int:
    """Run the job file ``argv[0]``; write the answer to ``argv[1]`` (stdout stays the libraries')."""
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    answer: Answer | BuildAnswer
    try:
        answer, status = run_job(Job.from_json(job))
    except machine.NoHopperGPU as exc:  # the message is the whole story: no traceback
        answer, status = Answer.of(error=str(exc), no_gpu=True), 1
    except Exception as exc:  # reported to the parent, with the traceback on stderr
        traceback.print_exc()
        answer, status = Answer.of(error=f"{type(exc).__name__}: {exc}"), 1
    Path(argv[1]).write_text(json.dumps(answer.to_json()), encoding="utf-8")
    return status
