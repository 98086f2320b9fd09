"""One fresh worker process: ``python -m matmul_bench worker JOB.json ANSWER.json`` (started by :mod:`.jobs`).

A job's mode: "probe", "build" (one kernel at its shapes), "time" (every impl checked, then timed in rounds) or
"profile" (one launch, for ncu). A wrong result of ours exits with WRONG_RESULT before any timing; an optional peer
that cannot run, or is wrong, is left out and reported in its run's ``missing``; cuBLAS, the baseline, is timed even
when wrong (as at N % 8 != 0), its failed checks in the answer's ``checks`` (the row's ``wrong_elements``)."""

from __future__ import annotations

import importlib
import json
import sys
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matmul_bench import kernels, machine
from matmul_bench.plan import PEER_PACKAGES, Shape

WRONG_RESULT = 3
BUSY_MIN = 0.8  # below this share of the timed loop in the kernel, NVML's readings describe the L2 flush as much


@dataclass
class Prepared:
    """A built implementation at one shape: ``call()`` is exactly what is timed."""

    call: Callable[[], Any]
    config: dict[str, Any]
    title: str | None
    check: Callable[[Shape], dict[str, Any]]


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

    def device(self) -> dict[str, Any]:
        """CUDA device 0, refused unless it is a Hopper GPU."""
        found = machine.device()
        self.uuid = found.get("uuid", "")
        return found

    def software(self) -> dict[str, str]:
        """What the worker runs with."""
        return machine.software()

    def peer_version(self, impl: dict[str, Any]) -> str | None:
        """The installed version of a peer's package."""
        return machine.package_version(PEER_PACKAGES[impl["kind"]])

    def prepare(self, impl: dict[str, Any], shape: Shape) -> Prepared:
        """Build (or load from Tilus's cache) one impl on the run's operands, and compile a peer."""
        import torch

        common = kernels.load("common")
        m, n, k = shape
        if shape not in self.operands:  # every impl of a run is timed on the same inputs
            a, b = common.random_operands(m, n, k)
            self.operands[shape] = (a, b, torch.empty(m, n, dtype=torch.float16, device="cuda"))
        a, b, c = self.operands[shape]
        config, title = impl["config"], impl["title"]
        if impl["kind"] in PEER_PACKAGES:
            from matmul_bench import peers

            kernel, call, config = peers.build(impl, a, b, c)  # compiled and autotuned here, not when timed
        elif impl["kind"] == "cublas":
            kernel: Any = lambda m_, n_, k_, x, y, z: torch.matmul(x, y.T, out=z)  # noqa: E731
            call = lambda: torch.matmul(a, b.T, out=c)  # noqa: E731
        else:
            key = json.dumps(impl, sort_keys=True)
            if key not in self.kernels:  # one instance per spec: Tilus builds each (N, K) once per instance
                self.kernels[key] = kernels.make_kernel(impl["file"], impl["cls"], config, self.autotune)
            kernel = self.kernels[key]
            call = lambda: kernel(m, n, k, a, b, c)  # noqa: E731
            title = title or kernels.load_file(impl["file"]).TITLE
        common.matmul(kernel, a, b, out=c)
        torch.cuda.synchronize()

        def check(at: Shape) -> dict[str, Any]:
            result = common.check(kernel, *at)
            return {"ok": result.ok, "bad": result.bad, "max_abs_err": result.max_abs_err}

        return Prepared(call, dict(config if config is not None else tuned(kernel)), title, check)

    def time_ms(self, prepared: Prepared, warmup_s: float, repeats: int) -> Timing:
        """The median of ``repeats`` timed calls (L2 flushed before each, CUDA events) after ``warmup_s`` seconds of
        the same loop (common.time_loop): the power and clock state the timed calls meet is this implementation's."""
        common = kernels.load("common")
        if self.timer is None:  # one flush buffer for the whole process
            self.timer = common.CudaTimer()
        timed = common.time_loop(prepared.call, warmup_s, repeats, self.timer)
        return Timing(timed.ms, timed.span, timed.busy)

    def build(self, spec: dict[str, Any]) -> dict[str, Any]:
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


def tuned(kernel: Any) -> dict[str, Any]:
    """The configuration a kernel ran with; {} for a script with no autotune space."""
    try:
        return kernels.load("common").tuned_config(kernel)
    except (AttributeError, KeyError, IndexError, TypeError):
        return {}


class CheckFailed(Exception):
    """An optional peer's result is wrong: it is not timed, and the run goes on without it."""


def time_runs(backend: CudaBackend, job: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """Build and check every impl of every run first, then time each run in rounds; (per-run answers, error or None)."""
    settings, prepared_runs, out = job["settings"], [], []
    for run in job["runs"]:
        shape, prepared = tuple(run["shape"]), {}
        answer: dict[str, Any] = {"name": run["name"], "checks": {}, "configs": {}, "titles": {}, "missing": {}}
        out.append(answer)
        for impl in run["impls"]:
            name, peer = impl["name"], impl["kind"] in PEER_PACKAGES
            print(f"  {run['name']}: building {name}", file=sys.stderr, flush=True)
            try:
                p = backend.prepare(impl, shape)
                found = [dict(p.check(s), shape=list(s)) for s in (shape, *map(tuple, run["check_shapes"]))]
                bad = next((c for c in found if not c["ok"]), None)
                wrong = bad and (f"{name} is wrong at {'x'.join(map(str, bad['shape']))}: {bad['bad']} elements "
                                 f"outside tolerance (max |err| {bad['max_abs_err']:.3g})")  # fmt: skip
                if wrong and peer:
                    raise CheckFailed(f"{wrong}; not timed")
                if wrong and impl["kind"] == "cublas":  # the baseline is timed all the same, marked inexact
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
                answer["missing"][name] = {"version": backend.peer_version(impl), "error": error}
                print(f"  {name} cannot run: {error}", file=sys.stderr)
                continue
            prepared[name] = p
            answer["checks"][name], answer["configs"][name], answer["titles"][name] = found, p.config, p.title
            if wrong:
                return out, f"{wrong}; nothing was timed"
        prepared_runs.append(prepared)
    sampler = backend.sampler()
    try:
        for prepared, answer in zip(prepared_runs, out, strict=True):
            names = list(prepared)  # in the run's order, less the peers that cannot run
            samples, clocks, power, busy = ({n: [] for n in names} for _ in range(4))
            orders = [names if r % 2 == 0 else names[::-1] for r in range(settings["rounds"])]  # no fixed neighbour
            for order in orders:
                for name in order:
                    with sampler.window(name):
                        timing = backend.time_ms(prepared[name], settings["warmup_s"], settings["repeats"])
                    samples[name].append(timing.ms)
                    busy[name].append(round(timing.busy, 4))
                    got_clocks, got_power = sampler.take(name, [timing.span])
                    if timing.busy >= BUSY_MIN:  # else the readings describe the L2 flush as much as the kernel
                        clocks[name] += got_clocks
                        power[name] += got_power
            answer.update(samples=samples, clocks=clocks, power=power, busy=busy, orders=orders)
    finally:
        sampler.close()
    return out, None


def build(spec: dict[str, Any], autotune: bool) -> dict[str, Any]:
    """One kernel built at every shape of ``spec`` (and checked there when it asks): what Tilus chose, what failed."""
    import torch

    common = kernels.load("common")
    kernel = kernels.make_kernel(spec["file"], spec["cls"], spec.get("config"), autotune)
    answer: dict[str, Any] = {"ok": True, "configs": {}, "checks": [], "error": None}
    for m, n, k in spec["shapes"]:
        if spec.get("check"):
            result = common.check(kernel, m, n, k, seed=spec.get("seed"))
            answer["checks"].append({"shape": f"{m}x{n}x{k}", "ok": result.ok, "bad": result.bad,
                                     "max_abs_err": result.max_abs_err, "report": result.describe()})  # fmt: skip
            answer["ok"] = answer["ok"] and result.ok
        else:  # M is a run-time argument: a small M builds (N, K); a per-problem rule is asked at the real M
            built = kernel.kernel_for(m, n, k) if isinstance(kernel, common.PerProblem) else kernel
            common.matmul(built, *common.random_operands(min(m, 256), n, k))
            torch.cuda.synchronize()
        answer["configs"][f"{m}x{n}x{k}"] = spec.get("config") or tuned(kernel)
    return answer


def make_backend(job: dict[str, Any]) -> CudaBackend:
    """The job's backend: "cuda", or "module:factory", a callable that makes one from the job (the CPU tests' fake
    GPU, imported from the child's PYTHONPATH)."""
    name = job.get("backend") or "cuda"
    if name == "cuda":
        return CudaBackend(bool(job.get("autotune")))
    module, _, attribute = name.partition(":")
    if not module or not attribute:
        raise ValueError(f'backend {name!r}: give "cuda" or "module:factory"')
    return getattr(importlib.import_module(module), attribute)(job)


def run_job(job: dict[str, Any]) -> tuple[dict[str, Any], int]:
    """A job's answer and this process's exit status."""
    backend = make_backend(job)
    if job["mode"] == "build":
        return backend.build(job["build"]), 0  # a wrong build is the answer, not a failure
    answer: dict[str, Any] = {"error": None, "device": backend.device(), "runs": []}
    if job["mode"] == "probe":
        answer["software"] = backend.software()
    elif job["mode"] == "profile":
        run = job["runs"][0]
        backend.profile(backend.prepare(run["impls"][0], tuple(run["shape"])))
    else:
        answer["runs"], answer["error"] = time_runs(backend, job)
    return answer, WRONG_RESULT if answer["error"] else 0


def main(argv: Sequence[str]) -> int:
    """Run the job file ``argv[0]``; write the answer to ``argv[1]`` (stdout stays the libraries')."""
    job = json.loads(Path(argv[0]).read_text(encoding="utf-8"))
    try:
        answer, status = run_job(job)
    except machine.NoHopperGPU as exc:  # the message is the whole story: no traceback
        answer, status = {"error": str(exc), "no_gpu": True}, 1
    except Exception as exc:  # reported to the parent, with the traceback on stderr
        traceback.print_exc()
        answer, status = {"error": f"{type(exc).__name__}: {exc}"}, 1
    Path(argv[1]).write_text(json.dumps(answer), encoding="utf-8")
    return status
