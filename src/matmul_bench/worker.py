"""The worker: one fresh process that checks, then times, the implementations of its runs, interleaved.

    python -m matmul_bench worker JOB.json RESULT.json

The parent (bench.runner) writes the job, starts this process and reads the result file; progress
goes to stderr. A job::

    mode        "probe" (the GPU and software), "time" (check, then rounds), "profile" (one launch for ncu)
    backend     "cuda"; "fake" stands in for the GPU in the CPU tests (bench.fake)
    settings    rounds, repeats, warmup; process (this process's index)
    runs        [{name, shape, impls: [ImplSpec json], check_shapes}]

For each run: every implementation is built (pinned config or autotune) and checked against a float64
reference at every check shape, C poisoned with NaN; a wrong result stops the worker before any timing
(exit status 3). An optional peer (plan.PEER_PACKAGES) that cannot be built or run here, or fails its check, is
left out of the run's rounds and reported in its ``missing`` ({name: {version, error}}); the run goes on.
Then ``rounds`` rounds, the order forward in even rounds and reversed in odd ones;
in each, every implementation is timed ``warmup`` + ``repeats`` calls (CUDA events, L2 flushed) and the
median kept, while NVML samples clock and power under the implementation's tag.
"""

from __future__ import annotations

import json
import statistics
import sys
import time
import traceback
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matmul_bench import kernels, machine
from matmul_bench.backend import Backend, Prepared, Timing
from matmul_bench.plan import PEER_PACKAGES, TORCH_COMPILE_MODE

WRONG_RESULT = 3


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class CudaBackend:
    """The real thing: Tilus kernels, cuBLAS, torch.compile and the optional peers on CUDA device 0."""

    def __init__(self) -> None:
        self._kernels: dict[str, Any] = {}
        self._compiled: dict[tuple[int, int, int], Any] = {}
        self._operands: dict[tuple[int, int, int], Any] = {}
        self._uuid = ""
        self._flush: Any = None  # 512 MiB, zeroed before each timed call: several times the 50-60 MB L2

    def device(self) -> dict[str, Any]:
        found = machine.device()
        self._uuid = found.get("uuid", "")
        return found

    def software(self) -> dict[str, str]:
        return machine.software()

    def _kernel(self, impl: dict[str, Any]) -> Any:
        from matmul_bench import prebuild

        key = json.dumps(impl, sort_keys=True)
        if key not in self._kernels:  # one instance per spec: Tilus builds each (N, K) once per instance
            self._kernels[key] = prebuild.make_kernel(impl["file"], impl["cls"], impl["config"])
        return self._kernels[key]

    def peer_version(self, impl: dict[str, Any]) -> str | None:
        from matmul_bench import peers

        return peers.version(impl["kind"])

    def _torch_compiled(self, shape: tuple[int, int, int]) -> Any:
        import torch

        if shape not in self._compiled:
            from matmul_bench import peers

            peers.allow_recompiles()  # one static-shape graph per shape, all kept
            self._compiled[shape] = torch.compile(lambda x, y: x @ y.T, mode=TORCH_COMPILE_MODE, dynamic=False)
        return self._compiled[shape]

    def prepare(self, impl: dict[str, Any], shape: tuple[int, int, int]) -> Prepared:
        import torch

        import common
        from matmul_bench import prebuild

        m, n, k = shape
        if shape not in self._operands:  # every impl of a run is timed on the same inputs
            a, b = common.random_operands(m, n, k)
            self._operands[shape] = (a, b, torch.empty(m, n, dtype=torch.float16, device="cuda"))
        a, b, c = self._operands[shape]
        config = impl["config"]
        if impl["kind"] in PEER_PACKAGES:
            from matmul_bench import peers

            kernel, call, config = peers.build(impl, a, b, c)  # compiled and autotuned here, not when timed
        elif impl["kind"] == "cublas":
            kernel: Any = lambda m_, n_, k_, x, y, z: torch.matmul(x, y.T, out=z)  # noqa: E731
            call = lambda: torch.matmul(a, b.T, out=c)  # noqa: E731
        elif impl["kind"] == "torch-compile":
            fn = self._torch_compiled(shape)
            kernel = lambda m_, n_, k_, x, y, z: z.copy_(fn(x, y))  # noqa: E731
            call = lambda: fn(a, b)  # noqa: E731  (timed without the copy: it returns its own output)
        else:
            kernel = self._kernel(impl)
            call = lambda: kernel(m, n, k, a, b, c)  # noqa: E731
        common.matmul(kernel, a, b, out=c)  # build (or load from the cache) and, for a peer, compile
        torch.cuda.synchronize()
        config = config if config is not None else prebuild.tuned(kernel)

        def check(at: tuple[int, int, int]) -> dict[str, Any]:
            result = common.check(kernel, *at)
            return {"ok": result.ok, "bad": result.bad, "max_abs_err": result.max_abs_err}

        return Prepared(impl["name"], call, dict(config), check)

    def time_ms(self, prepared: Prepared, warmup: int, repeats: int) -> Timing:
        """common.time_ms's protocol (L2 flushed before each call, CUDA events, median), placed in host time.

        An event recorded on the idle GPU right after a host timestamp anchors GPU time to host time, so each
        timed call's (start, end) becomes a span the clock sampler can keep its readings to.
        """
        import torch

        if self._flush is None:
            self._flush = torch.empty(512 * 1024 * 1024 // 4, dtype=torch.int32, device="cuda")
        for _ in range(warmup):
            prepared.call()
        torch.cuda.synchronize()
        anchor = torch.cuda.Event(enable_timing=True)
        starts = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        ends = [torch.cuda.Event(enable_timing=True) for _ in range(repeats)]
        host = time.perf_counter()
        anchor.record()
        for start, end in zip(starts, ends, strict=True):
            self._flush.zero_()
            start.record()
            prepared.call()
            end.record()
        torch.cuda.synchronize()
        times = [s.elapsed_time(e) for s, e in zip(starts, ends, strict=True)]
        spans = [
            (host + anchor.elapsed_time(s) / 1e3, host + anchor.elapsed_time(e) / 1e3)
            for s, e in zip(starts, ends, strict=True)
        ]
        return Timing(statistics.median(times), spans)

    def sampler(self) -> machine.WindowSampler:
        return machine.WindowSampler(machine.nvml_reader(self._uuid))

    def profile(self, prepared: Prepared) -> None:
        import torch

        prepared.call()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()  # ncu runs with --profile-from-start off: only this launch is profiled
        prepared.call()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()


def make_backend(job: dict[str, Any]) -> Backend:
    if job["backend"] == "fake":
        from matmul_bench.fake import FakeBackend

        return FakeBackend(job.get("fake") or {}, job["settings"].get("process", 0))
    return CudaBackend()


class CheckFailed(Exception):
    """An optional peer's result is wrong: it is not timed, and the run goes on without it."""


def wrong_text(name: str, checks: list[dict[str, Any]]) -> str | None:
    """What the first failed check says, or None when every check passed."""
    bad = [c for c in checks if not c["ok"]]
    if not bad:
        return None
    first = bad[0]
    return (f"{name} is wrong at {'x'.join(map(str, first['shape']))}: {first['bad']} elements outside tolerance "
            f"(max |err| {first['max_abs_err']:.3g})")  # fmt: skip


def missing_peer(backend: Backend, impl: dict[str, Any], exc: Exception) -> dict[str, Any]:
    """What the results say of an optional peer that cannot run here: its installed version and the error."""
    lines = str(exc).strip().splitlines()
    error = f"{type(exc).__name__}: {lines[0] if lines else ''}".strip()[:400]
    if isinstance(exc, ImportError):
        error += ' (the peers are optional extras: pip install -e ".[peers]")'
    return {"version": backend.peer_version(impl), "error": error}


def time_runs(backend: Backend, job: dict[str, Any]) -> tuple[list[dict[str, Any]], str | None]:
    """Check every impl of every run, then time each run in rounds; (per-run results, error or None)."""
    settings = job["settings"]
    prepared_runs, out = [], []
    for run in job["runs"]:
        shape = tuple(run["shape"])
        prepared, checks, configs, missing = {}, {}, {}, {}
        for impl in run["impls"]:
            progress(f"  {run['name']}: building {impl['name']}")
            try:
                p = backend.prepare(impl, shape)
                found = [dict(p.check(tuple(s)), shape=s) for s in run["check_shapes"]]
                wrong = wrong_text(impl["name"], found)
                if wrong and impl["kind"] in PEER_PACKAGES:
                    raise CheckFailed(f"{wrong}; not timed")
            except Exception as exc:
                if impl["kind"] not in PEER_PACKAGES:
                    raise
                if not isinstance(exc, (ImportError, CheckFailed)):  # those say it all; a failed build needs its trace
                    traceback.print_exc()
                missing[impl["name"]] = missing_peer(backend, impl, exc)
                progress(f"  {run['name']}: {impl['name']} cannot run here, the run goes on without it: "
                         f"{missing[impl['name']]['error']}")  # fmt: skip
                continue
            prepared[impl["name"]], configs[impl["name"]], checks[impl["name"]] = p, p.config, found
            if wrong:
                return out + [{"name": run["name"], "checks": checks}], f"{wrong}; nothing was timed"
        out.append({"name": run["name"], "checks": checks, "configs": configs, "missing": missing})
        prepared_runs.append(prepared)
    sampler = backend.sampler()
    try:
        for run, prepared, result in zip(job["runs"], prepared_runs, out, strict=True):
            names = [impl["name"] for impl in run["impls"] if impl["name"] in prepared]
            samples: dict[str, list[float]] = {name: [] for name in names}
            clocks: dict[str, list[float]] = {name: [] for name in names}
            power: dict[str, list[float]] = {name: [] for name in names}
            orders = []
            started = time.perf_counter()
            for r in range(settings["rounds"]):
                order = names if r % 2 == 0 else names[::-1]  # alternating: no impl always follows the same one
                orders.append(order)
                for name in order:
                    with sampler.window(name):
                        timing = backend.time_ms(prepared[name], settings["warmup"], settings["repeats"])
                    samples[name].append(timing.ms)
                    got_clocks, got_power = sampler.take(name, timing.spans)  # readings inside the kernels only
                    clocks[name] += got_clocks
                    power[name] += got_power
            progress(f"  {run['name']}: {settings['rounds']} rounds in {time.perf_counter() - started:.1f} s")
            result.update(samples=samples, clocks=clocks, power=power, orders=orders)
    finally:
        sampler.close()
    return out, None


def run_job(job: dict[str, Any]) -> tuple[dict[str, Any], int]:
    backend = make_backend(job)
    answer: dict[str, Any] = {"error": None, "device": backend.device(), "runs": []}
    if job["mode"] == "probe":
        answer["software"] = backend.software()
        return answer, 0
    if job["mode"] == "profile":
        run = job["runs"][0]
        backend.profile(backend.prepare(run["impls"][0], tuple(run["shape"])))
        return answer, 0
    answer["runs"], error = time_runs(backend, job)
    answer["error"] = error
    return answer, (WRONG_RESULT if error else 0)


def main(argv: Sequence[str]) -> int:
    """``python -m matmul_bench worker JOB RESULT``: one worker process of a benchmark run (started by the runner)."""
    kernels.use_kernel_dir()
    job_path, result_path = Path(argv[0]), Path(argv[1])
    job = json.loads(job_path.read_text(encoding="utf-8"))
    # stdout is left to the libraries (Tilus prints tuning progress); the answer goes to the result file.
    try:
        answer, status = run_job(job)
    except Exception as exc:  # reported to the parent, with the traceback on stderr
        traceback.print_exc()
        answer, status = {"error": f"{type(exc).__name__}: {exc}", "runs": []}, 1
    result_path.write_text(json.dumps(answer), encoding="utf-8")
    return status
