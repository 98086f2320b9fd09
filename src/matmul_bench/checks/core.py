"""The path every GPU check shares: where its workers run, what it builds, checks and times, how it builds and checks
in a pool of fresh workers (or in this process) and times what passed next to cuBLAS, its log, and the command-line
pieces the checks' options are made of."""

from __future__ import annotations

import argparse
import json
import statistics
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from matmul_bench import jobs, protocol, runner, worker
from matmul_bench.plan import (
    PEER_SPECS,
    TIMEOUT_S,
    ImplSpec,
    Plan,
    RunSpec,
    Settings,
    Shape,
    process_estimate,
    shape_text,
)
from matmul_bench.protocol import Answer, BuildAnswer, BuildSpec, Device, Job, RunAnswer
from matmul_data import files
from matmul_data.model import Software
from matmul_data.versions import CUBLAS

PROG = "python -m matmul_bench check"
SECTION = "check"  # the timed runs' section: none of the results file's
CUBLAS_NAME = "cuBLAS"  # the baseline's name in the checks' logs
MENU_WARMUP_S = 1.0  # common.MAIN_WARMUP_S: what the menus warm up for by default


class CheckFailed(jobs.WrongResult):
    """A check found a wrong result: exit status 3 (its log, if asked for, is written all the same)."""


@dataclass(frozen=True)
class Target:
    """Where a check's workers run: "cuda", or a "module:factory" backend (the CPU tests' fake GPU) and its options."""

    backend: str = "cuda"
    fake: dict[str, Any] = field(default_factory=dict)

    def job(self, mode: str, build: BuildSpec | None = None) -> Job:
        """A worker's job on this target (``build``: a build job's spec)."""
        job = Job.of(mode=mode, backend=self.backend, fake=self.fake, settings=protocol.Settings.of(process=0))
        return job if build is None else job.put(build=build)


@dataclass(frozen=True)
class Probe:
    """What a probe found: the GPU and the software."""

    device: Device
    software: Software


@dataclass(frozen=True)
class Work:
    """What a check builds and checks (each spec in its own worker, or in this process), then times in one worker."""

    builds: list[BuildSpec]
    runs: list[RunSpec] = field(default_factory=list)
    settings: Settings | None = None
    jobs: int = 8
    build_timeout_s: float = TIMEOUT_S
    in_process: bool = False

    def describe(self) -> str:
        """The work in words, in the order it runs."""
        pool = f"each in its own process, {self.jobs} at a time, each ended after {self.build_timeout_s:g} s"
        where = "in this process, one after another" if self.in_process else pool
        lines = [f"build and check {len(self.builds)} ({where}):"]
        for spec in self.builds:
            seed = "" if spec.seed is None else f" seed {spec.seed}"
            lines.append(f"  {spec.name:<16} {' '.join(map(shape_text, spec.shapes))}{seed}  "
                         f"{Path(spec.file).stem} {spec.cls} {spec.config or 'its own config'}")  # fmt: skip
        if self.runs and self.settings is not None:
            s = self.settings
            each = f"{s.warmup_s:g} s warm-up + {s.repeats} calls, L2 flushed"
            lines.append(f"then time in one process, {s.rounds} rounds (alternating forward/reversed) x ({each}), "
                         "what passed its checks:")  # fmt: skip
            lines += [f"  {shape_text(run.shape):<18} {', '.join(i.name for i in run.impls)}" for run in self.runs]
        return "\n".join(lines)


# ---------------------------------------------------------------------------- the path every check shares


def probe(target: Target, in_process: bool = False) -> Probe:
    """The GPU (refused unless a Hopper GPU) and the software, from a fresh worker or from this process."""
    job = target.job("probe")
    if in_process:
        answer, _ = worker.measure(worker.make_backend(job), job)
    else:
        answer = jobs.call_worker(job, Answer, TIMEOUT_S)
    if answer.device is None or answer.software is None:
        raise jobs.BenchmarkError("the probe's answer names no device or software")
    return Probe(answer.device, answer.software)


def build_and_check(work: Work, target: Target) -> Iterator[BuildAnswer]:
    """Each build spec's answer, in order: from the workers' pool, or built and checked in this process."""
    if not work.in_process:
        yield from jobs.build_all(work.builds, work.jobs, work.build_timeout_s, backend=target.backend,
                                  fake=target.fake)  # fmt: skip
        return
    for spec in work.builds:
        try:
            yield worker.make_backend(target.job("build", spec)).build(spec)
        except Exception as exc:  # a build or launch that fails here is that spec's answer, as a worker's would be
            yield BuildAnswer.of(ok=False, configs={}, checks=(), error=f"{type(exc).__name__}: {exc}")


def time_runs(work: Work, target: Target) -> list[RunAnswer]:
    """Each run's answer from one fresh worker: every impl checked at its shape, then timed in alternating rounds."""
    if not work.runs or work.settings is None:
        return []
    made = Plan(tuple(work.runs), work.settings, ncu=False, autotune=False, quick=False, out=None,
                backend=target.backend, fake=target.fake)  # fmt: skip
    timeout_s = max(TIMEOUT_S, 2.0 * process_estimate(made, SECTION))
    return list(jobs.call_worker(runner.job(made, "time", work.runs), Answer, timeout_s).runs)


def passed(answer: BuildAnswer) -> bool:
    """A build that ran its checks and passed them all."""
    return answer.ok and bool(answer.checks)


def kernel_spec(impl: ImplSpec, shapes: Sequence[Shape], seed: int | None = None) -> BuildSpec:
    """A build spec (jobs.build_all's) that checks ``impl`` at ``shapes``."""
    spec = BuildSpec.of(name=impl.name, file=impl.file, cls=impl.cls, config=impl.config, shapes=tuple(shapes),
                        check=True)  # fmt: skip
    return spec if seed is None else spec.put(seed=seed)


def menu_work(impls: dict[str, ImplSpec], timed: dict[str, list[Shape]], checked: dict[str, list[Shape]],
              args: argparse.Namespace) -> Work:  # fmt: skip
    """Each impl built and checked at each shape it is checked or timed at, one (impl, shape) per worker; then at
    each timed shape the impls timed there and cuBLAS."""
    builds = [kernel_spec(impls[name], [shape]) for name in impls
              for shape in dict.fromkeys([*checked.get(name, []), *timed.get(name, [])])]  # fmt: skip
    shapes = list(dict.fromkeys(s for name in impls for s in timed.get(name, [])))
    baseline = replace(PEER_SPECS[CUBLAS], name=CUBLAS_NAME)
    runs = [RunSpec(SECTION, f"check {shape_text(s)}", s,
                    (*(impls[n] for n in impls if s in timed.get(n, [])), baseline)) for s in shapes]  # fmt: skip
    settings = Settings(processes=1, rounds=args.rounds, repeats=args.repeats, warmup_s=args.warmup_s)
    return Work(builds, runs, settings, args.jobs, args.build_timeout)


def time_what_passed(work: Work, answers: list[BuildAnswer], target: Target) -> list[RunAnswer]:
    """The timed runs' answers, each run timing only the impls whose build passed its check at its shape."""
    ok = {(spec.name, tuple(shape)) for spec, answer in zip(work.builds, answers, strict=True) if passed(answer)
          for shape in spec.shapes}  # fmt: skip
    runs = [replace(run, impls=tuple(i for i in run.impls if i.kind == "cublas" or (i.name, run.shape) in ok))
            for run in work.runs]  # fmt: skip
    return time_runs(replace(work, runs=runs), target)


def write_log(path: Path, log: dict[str, Any], indent: int | None = None) -> None:
    """A check's --json log, written atomically."""
    files.write_atomic(path, json.dumps(log, indent=indent).encode("utf-8"))
    print(f"written: {path}", flush=True)


def spread(values: Sequence[float]) -> str:
    """The median [min-max]."""
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


# ---------------------------------------------------------------------------- the command line's pieces


def shape_arg(text: str) -> Shape:
    """MxNxK as a shape, for argparse."""
    try:
        m, n, k = (int(x) for x in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r}: give a shape as MxNxK, such as 4096x4096x4096") from None
    if min(m, n, k) <= 0:
        raise argparse.ArgumentTypeError(f"{text!r}: M, N and K must be positive")
    return m, n, k


def add_builds(parser: argparse.ArgumentParser, jobs_: int, timeout_s: float = TIMEOUT_S) -> None:
    """The options of the worker pool."""
    parser.add_argument("--jobs", type=int, default=jobs_, help="builds and checks at once (default %(default)s)")
    parser.add_argument("--build-timeout", type=float, default=timeout_s, metavar="S",
                        help="seconds per build and check (a hang ends; default %(default)g)")  # fmt: skip


def add_timing(parser: argparse.ArgumentParser) -> None:
    """The options of the timed rounds and the log."""
    parser.add_argument("--rounds", type=int, default=8, help="rounds of every implementation (default 8)")
    parser.add_argument("--repeats", type=int, default=10, help="timed calls per implementation and round")
    parser.add_argument("--warmup-s", type=float, default=MENU_WARMUP_S, metavar="S",
                        help="seconds of each one's loop before its timed calls (default %(default)g)")  # fmt: skip
    parser.add_argument("--json", type=Path, metavar="PATH", help="write every measurement here")
