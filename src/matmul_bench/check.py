"""GPU checks, ``python -m matmul_bench check NAME``: development checks, not the record.

Each check builds and checks every (kernel, shape) it names against float64, C poisoned by NaN, in the benchmark's
fresh workers, many at once (:func:`matmul_bench.jobs.build_all`), then times what passed next to cuBLAS in one
more worker, in the record's alternating rounds (:func:`matmul_bench.worker.time_runs`). ``sanitize`` and
``v9-menu --sanitize`` build and check in this process, so that a sanitizer wrapping it sees the kernels; ``warmup``
times every call in this process (common.timed_calls), and ``clusters`` asks the driver.
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import statistics
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from matmul_bench import jobs, kernels, machine, runner, worker
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
    version_spec,
)
from matmul_data import field as field_set
from matmul_data import paths, results, stats, versions
from matmul_data.schema import tflops
from matmul_data.versions import CUBLAS

PROG = "python -m matmul_bench check"
SECTION = "check"  # the timed runs' section: none of the results file's
CUBLAS_NAME = "cuBLAS"  # the baseline's name in the checks' logs
MENU_WARMUP_S = 1.0  # common.MAIN_WARMUP_S: what the menus warm up for by default

# --- shapes: the shapes issue 27 found wrong in V6 to V8 (N % 8 != 0 with many K-tiles), and two controls it found
# right; by default with the GPU suite's seeded draw over N % 8, K and M (tests/test_kernels_gpu.py).
REPORTED: tuple[Shape, ...] = ((2048, 2047, 4096), (4096, 4095, 4096), (4096, 4999, 4096), (3001, 4999, 4096),
                               (4096, 4092, 4096), (3001, 4999, 4104), (256, 4999, 512), (2049, 2047, 200),
                               (4096, 4088, 4096))  # fmt: skip

# --- v8-menu: the timed shapes; checked only, a tiny M with N % 8 != 0 (C leaves from registers) and ragged M, N
# and last K-tile; V7 as it is at 8192^3 only, to show whether V8's 128 x 256 runs as fast as V7.
V8_SHAPES: tuple[Shape, ...] = (
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (6144, 6144, 6144),
    (8192, 8192, 8192),
    (16384, 8192, 1024),  # 4096 tiles of 128 x 256: 31.03 waves
    (5120, 5120, 5120),  # 800 tiles of 128 x 256: 6.06 waves
    (3000, 5000, 4096),  # M and N multiples of no tile
)
V8_CHECK_ONLY: tuple[Shape, ...] = ((129, 257, 64), (1000, 3000, 520))
V7_SHAPE: Shape = (8192, 8192, 8192)

# --- v9-menu: the sweep's shapes and two more; the small ragged shapes of --sanitize.
V9_SHAPES: tuple[Shape, ...] = ((2048, 2048, 2048), (4096, 4096, 4096), (6144, 6144, 6144), (8192, 8192, 8192),
                                (16384, 16384, 16384), (8192, 28672, 4096), (16384, 8192, 1024), (5120, 5120, 5120),
                                (3000, 5000, 4096))  # fmt: skip
V9_SANITIZE_SHAPES: tuple[Shape, ...] = ((129, 257, 64), (1000, 3000, 520))
V9_SANITIZE_DEFAULT = "v9-128x256-b"

# --- stream-k: with 128 x 256 tiles and 132 SMs, the split tiles (streamk.stream_k_tiles) are noted per shape.
STREAM_K_SHAPES: tuple[Shape, ...] = (
    (8192, 8192, 8192),  # 2048 tiles: 200 split
    (4096, 4096, 4096),  # 512: 248 split
    (16384, 8192, 1024),  # 4096: 136 split, 16 K-tiles each
    (2304, 2048, 128),  # 144: all 144 split, 2 K-tiles each
    (4100, 4100, 64),  # 561: 165 split, one K-tile per tile (whole tiles only)
    (4100, 4100, 200),  # ragged M, N and last K-tile
    (8192, 4100, 1000),  # N % 8 != 0: C leaves from registers
    (1000, 3000, 520),  # 96 tiles: no split
)
STREAM_K_SEEDS = (1, 2)  # each shape twice on fresh inputs: an error that moves between them is a race

# --- sanitize: ragged M, N and K; a tiny M with N % 8 = 1 (C copied out by the consumers); the copy-out path again
# with 17 K-tiles. Their (N, K) are tests/test_kernels_gpu.py's MENU_SHAPES': the builds come from Tilus's cache.
SANITIZE_SHAPES: tuple[Shape, ...] = ((1000, 3000, 520), (129, 257, 64), (200, 1001, 1032))

# --- warmup: cuBLAS and V6 after 2 s of idle and after 1 s of V0's loop (a slow neighbour, about half of cuBLAS's
# speed, though it too draws about the power cap), at the chapters' shape.
WARMUP_SHAPE: Shape = (8192, 8192, 8192)
WARMUP_IMPLS = ("cublas", "v6")
WARMUP_AFTER = ("idle", "v0")
WARMUP_IDLE_S, WARMUP_SLOW_S = 2.0, 1.0

# --- clusters: an empty kernel for sm_90a, as PTX: the driver compiles it, so no nvcc is needed.
EMPTY_KERNEL_PTX = b"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry empty()
{
    ret;
}
"""


class CheckFailed(jobs.WrongResult):
    """A check found a wrong result: exit status 3 (its log, if asked for, is written all the same)."""


@dataclass(frozen=True)
class Target:
    """Where a check's workers run: "cuda", or a "module:factory" backend (the CPU tests' fake GPU) and its options."""

    backend: str = "cuda"
    fake: dict[str, Any] = field(default_factory=dict)

    def job(self, mode: str, **rest: Any) -> dict[str, Any]:
        """A worker's job on this target."""
        return {"mode": mode, "backend": self.backend, "fake": self.fake, "settings": {"process": 0}, **rest}


@dataclass(frozen=True)
class Work:
    """What a check builds and checks (each spec in its own worker, or in this process), then times in one worker."""

    builds: list[dict[str, Any]]
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
            seed = "" if spec.get("seed") is None else f" seed {spec['seed']}"
            lines.append(f"  {spec['name']:<16} {' '.join(map(shape_text, spec['shapes']))}{seed}  "
                         f"{Path(spec['file']).stem} {spec['cls']} {spec['config'] or 'its own config'}")  # fmt: skip
        if self.runs and self.settings is not None:
            s = self.settings
            each = f"{s.warmup_s:g} s warm-up + {s.repeats} calls, L2 flushed"
            lines.append(f"then time in one process, {s.rounds} rounds (alternating forward/reversed) x ({each}), "
                         "what passed its checks:")  # fmt: skip
            lines += [f"  {shape_text(run.shape):<18} {', '.join(i.name for i in run.impls)}" for run in self.runs]
        return "\n".join(lines)


# ---------------------------------------------------------------------------- the path every check shares


def probe(target: Target, in_process: bool = False) -> dict[str, Any]:
    """The GPU (refused unless a Hopper GPU) and the software, from a fresh worker or from this process."""
    if in_process:
        return worker.run_job(target.job("probe"))[0]
    return jobs.call_worker(target.job("probe"), TIMEOUT_S)


def build_and_check(work: Work, target: Target) -> Iterator[dict[str, Any]]:
    """Each build spec's answer, in order: from the workers' pool, or built and checked in this process."""
    if not work.in_process:
        yield from jobs.build_all(work.builds, work.jobs, work.build_timeout_s, backend=target.backend,
                                  fake=target.fake)  # fmt: skip
        return
    for spec in work.builds:
        try:
            yield worker.run_job(target.job("build", build=spec))[0]
        except Exception as exc:  # a build or launch that fails here is that spec's answer, as a worker's would be
            yield {"ok": False, "configs": {}, "checks": [], "error": f"{type(exc).__name__}: {exc}"}


def time_runs(work: Work, target: Target) -> list[dict[str, Any]]:
    """Each run's answer from one fresh worker: every impl checked at its shape, then timed in alternating rounds."""
    if not work.runs or work.settings is None:
        return []
    made = Plan(tuple(work.runs), work.settings, ncu=False, autotune=False, quick=False, out=None,
                backend=target.backend, fake=target.fake)  # fmt: skip
    timeout_s = max(TIMEOUT_S, 2.0 * process_estimate(made, SECTION))
    return jobs.call_worker(runner.job(made, "time", work.runs), timeout_s)["runs"]


def passed(answer: dict[str, Any]) -> bool:
    """A build that ran its checks and passed them all."""
    return bool(answer["ok"] and answer["checks"])


def kernel_spec(impl: ImplSpec, shapes: Sequence[Shape], seed: int | None = None) -> dict[str, Any]:
    """A build spec (jobs.build_all's) that checks ``impl`` at ``shapes``."""
    spec = {"name": impl.name, "file": impl.file, "cls": impl.cls, "config": impl.config,
            "shapes": [list(s) for s in shapes], "check": True}  # fmt: skip
    return spec if seed is None else {**spec, "seed": seed}


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


def time_what_passed(work: Work, answers: list[dict[str, Any]], target: Target) -> list[dict[str, Any]]:
    """The timed runs' answers, each run timing only the impls whose build passed its check at its shape."""
    ok = {(spec["name"], tuple(shape)) for spec, answer in zip(work.builds, answers, strict=True) if passed(answer)
          for shape in spec["shapes"]}  # fmt: skip
    runs = [replace(run, impls=tuple(i for i in run.impls if i.kind == "cublas" or (i.name, run.shape) in ok))
            for run in work.runs]  # fmt: skip
    return time_runs(replace(work, runs=runs), target)


def write_log(path: Path, log: dict[str, Any], indent: int | None = None) -> None:
    """A check's --json log, written atomically."""
    results.write_bytes_atomic(path, json.dumps(log, indent=indent).encode("utf-8"))
    print(f"written: {path}", flush=True)


def spread(values: Sequence[float]) -> str:
    """The median [min-max]."""
    return f"{statistics.median(values):.3f} [{min(values):.3f}-{max(values):.3f}]"


# ---------------------------------------------------------------------------- shapes


def shapes_work(args: argparse.Namespace) -> Work:
    """Each kernel file with its own configuration (its config_for, else its TUNED) at each shape, in a worker each."""
    files = [f.resolve() for f in args.files or [versions.get(n).path for n in versions.names()]]
    if args.shapes:
        shapes = args.shapes
    else:  # the GPU suite's seeded draw over N % 8, K and M
        shapes = [*kernels.load_file(paths.ROOT / "tests" / "test_kernels_gpu.py").DRAWN_SHAPES, *REPORTED]
    impls = [ImplSpec(f.stem, "kernel", None, str(f), f"MatmulV{f.stem.removeprefix('matmul_v')}") for f in files]
    builds = [kernel_spec(impl, [shape]) for impl in impls for shape in shapes]
    return Work(builds, jobs=args.jobs, build_timeout_s=args.build_timeout)


def run_shapes(args: argparse.Namespace, target: Target) -> int:
    """One line per (file, shape): its check, or why it has none."""
    probe(target)
    work, failed = shapes_work(args), 0
    for spec, answer in zip(work.builds, build_and_check(work, target), strict=True):
        if answer.get("error"):
            print(f"{spec['name']}: {spec['shapes'][0]}: {answer['error'][-400:]}", flush=True)
        for check in answer["checks"]:
            print(f"{spec['name']}: {check['report']}", flush=True)
        failed += not answer["ok"]
    print(f"{len(work.builds)} checks, {failed} failed")
    return failed


# ---------------------------------------------------------------------------- v8-menu


def v8_impls() -> dict[str, ImplSpec]:
    """Every tile of tile_model.CANDIDATES forced on V8 (named by its tile, "128x256"), and V7 as it is ("V7")."""
    tile_model, v8 = kernels.load("tile_model"), str(kernels.KERNEL_DIR / "matmul_v8.py")
    impls = {t.name: ImplSpec(t.name, "kernel", f"V8 {t.name}", v8, "MatmulV8",
                              {**t.config, "block_k": tile_model.BLOCK_K, "swizzle_size": 16})
             for t in tile_model.CANDIDATES}  # fmt: skip
    impls["V7"] = replace(version_spec("v7"), name="V7")
    return impls


def v8_work(args: argparse.Namespace) -> Work:
    """Every tile at every timed shape and the check-only ones; V7 at 8192^3 only, if it is timed."""
    shapes = list(args.shapes or V8_SHAPES)
    checked = [*shapes, *(s for s in V8_CHECK_ONLY if s not in shapes)]
    impls = v8_impls()
    timed = {name: shapes for name in impls if name != "V7"}
    timed["V7"] = [V7_SHAPE] if V7_SHAPE in shapes else []
    return menu_work(impls, timed, {name: checked for name in impls if name != "V7"}, args)


def run_v8(args: argparse.Namespace, target: Target) -> int:
    """Check every tile, time each shape's tiles that passed next to cuBLAS, print each shape's table, log it."""
    device = probe(target)
    work, started = v8_work(args), time.perf_counter()
    print(f"{device['device']['name']} ({device['device']['sm_count']} SMs), torch {device['software']['torch']}, "
          f"tilus {device['software']['tilus']}; {args.rounds} rounds x ({args.warmup_s:g} s warm-up, "
          f"{args.repeats} calls), L2 flushed", flush=True)  # fmt: skip
    answers, checks, failed = list(build_and_check(work, target)), [], 0
    for spec, answer in zip(work.builds, answers, strict=True):
        name, shape = spec["name"], spec["shapes"][0]
        label = f"{name:>8} {shape_text(shape):>16}"
        if not answer["checks"]:  # the build failed (or hung): no check ran
            print(f"  build {label}: FAILED: {(answer.get('error') or '')[-800:]}", flush=True)
            checks.append({"impl": name, "shape": shape, "ok": False, "error": answer.get("error")})
        for check in answer["checks"]:
            status = "ok" if check["ok"] else f"FAILED ({check['bad']} bad elements)"
            print(f"  check {label}: max |err| {check['max_abs_err']:.2e} {status}", flush=True)
            checks.append({"impl": name, "shape": shape, "ok": check["ok"], "bad": check["bad"],
                           "max_abs_err": check["max_abs_err"]})  # fmt: skip
        failed += not passed(answer)
    print(f"built and checked in {time.perf_counter() - started:.0f} s", flush=True)
    timings = [{"shape": list(run.shape), "ms": answer["samples"]}
               for run, answer in zip(work.runs, time_what_passed(work, answers, target), strict=True)]  # fmt: skip
    tile_model, num_sms = kernels.load("tile_model"), device["device"]["sm_count"]
    for timing in timings:
        print(v8_table(tuple(timing["shape"]), timing["ms"], num_sms), flush=True)
    if args.json:
        write_log(args.json, {"gpu": device["device"]["name"], "num_sms": num_sms, "tilus": device["software"]["tilus"],
                              "torch": device["software"]["torch"], "operand_byte_cost": tile_model.OPERAND_BYTE_COST,
                              "checks": checks, "timings": timings}, indent=1)  # fmt: skip
    print(f"done in {time.perf_counter() - started:.0f} s; {failed} failed check(s)")
    return failed


def v8_table(shape: Shape, ms: dict[str, list[float]], num_sms: int) -> str:
    """One shape's table: each tile's ratio to cuBLAS over rounds, the model's numbers, the measured per-FLOP cost
    relative to 128 x 256 once the model's wave arithmetic is taken out (the model predicts Tile.cost_per_flop)."""
    tile_model, (m, n, k) = kernels.load("tile_model"), shape
    ratios = {name: stats.paired_ratios(ms[CUBLAS_NAME], ms[name]) for name in ms if name != CUBLAS_NAME}
    pick = tile_model.choose(m, n, k, num_sms)
    tiles = {e.tile.name: e for e in tile_model.estimates(m, n, k, num_sms)}
    measured = {name: statistics.median(ratio) for name, ratio in ratios.items() if name in tiles}
    best = max(measured, key=measured.__getitem__) if measured else None
    cublas = statistics.median(ms[CUBLAS_NAME])
    lines = [f"\n{m}x{n}x{k}: cuBLAS {cublas:.3f} ms ({tflops(m, n, k, cublas):.0f} TFLOPS); "
             f"model picks {pick.name}, fastest measured {best}",
             f"  {'tile':>8} {'ratio':>6} {'[min-max]':>13} {'TFLOPS':>7} {'tiles':>6} {'waves':>6} {'eff':>5} "
             f"{'model t':>8} {'cost/FLOP measured':>19} {'model':>6}"]  # fmt: skip
    reference = tiles[tile_model.REFERENCE.name]
    ref_ms = statistics.median(ms[reference.tile.name]) if reference.tile.name in ms else None
    for name, ratio in ratios.items():
        line = (f"  {name:>8} {statistics.median(ratio):6.3f} [{min(ratio):.3f}-{max(ratio):.3f}] "
                f"{tflops(m, n, k, statistics.median(ms[name])):7.0f}")  # fmt: skip
        if name in tiles:
            est = tiles[name]
            line += f" {est.tiles:6d} {est.waves:6.2f} {est.wave_efficiency:5.2f} {est.time:8.3f}"
            if ref_ms is not None:  # measured time over the time the wave arithmetic alone predicts
                quantization = (est.rounds * est.tile.block_m * est.tile.block_n) / (
                    reference.rounds * reference.tile.block_m * reference.tile.block_n)  # fmt: skip
                cost = statistics.median(ms[name]) / ref_ms / quantization
                line += f" {cost:19.3f} {est.tile.cost_per_flop / reference.tile.cost_per_flop:6.3f}"
            line += "  <- model" if name == pick.name else ""
        lines.append(line)
    return "\n".join(lines)


# ---------------------------------------------------------------------------- v9-menu


def v9_menu() -> dict[str, ImplSpec]:
    """Every (tile, sharing) of V9's menu, pinned: "v9-128x192-b" is 128 x 192 in pairs along M sharing B."""
    tile_model, v9 = kernels.load("tile_model"), version_spec("v9")
    swizzle = kernels.load("matmul_v9").SWIZZLE
    return {f"v9-{e.tile.name}-{e.share}": replace(v9, name=f"v9-{e.tile.name}-{e.share}", config={
        **e.tile.config, "block_k": tile_model.BLOCK_K, "swizzle_size": swizzle[e.share], "share": e.share})
        for e in tile_model.estimates_shared(4096, 4096, 4096)}  # fmt: skip


def v9_extras(args: argparse.Namespace) -> dict[str, ImplSpec]:
    """The pinned configurations --extra (or --menu, narrowed by --tiles) names; a UsageError for an unknown one."""
    known = v9_menu()
    unknown = [e for e in [*(() if args.menu else args.extra), *(args.check or [])] if e not in known]
    if unknown:
        raise UsageError(f"unknown configuration {', '.join(unknown)}; known: {', '.join(known)}")
    if args.menu:
        return {name: impl for name, impl in known.items() if not args.tiles or name.split("-")[1] in args.tiles}
    return {name: known[name] for name in args.extra}


def v9_work(args: argparse.Namespace) -> Work:
    """--sanitize: the named configurations at two small ragged shapes, here; else V8, V9 and the extras at every
    timed shape, and the --check configurations (default: every extra) at common.CHECK_SHAPES."""
    extras = v9_extras(args)
    if args.sanitize:
        named = extras or {V9_SANITIZE_DEFAULT: v9_menu()[V9_SANITIZE_DEFAULT]}
        builds = [{**kernel_spec(impl, V9_SANITIZE_SHAPES), "seed": 0} for impl in named.values()]
        return Work(builds, in_process=True)
    shapes = list(args.shapes or (tuple(f.shape for f in field_set.half(field_set.FITTED)) if args.fitted
                                  else V9_SHAPES))  # fmt: skip
    impls = {"V8": replace(version_spec("v8"), name="V8"), "V9": replace(version_spec("v9"), name="V9"), **extras}
    known = v9_menu() if args.check else extras
    check_shapes = list(kernels.load("common").CHECK_SHAPES)
    checked = {name: check_shapes for name in (args.check if args.check is not None else extras)}
    impls.update({name: known[name] for name in checked if name not in impls})  # checked, not timed
    return menu_work(impls, {name: shapes for name in ("V8", "V9", *extras)}, checked, args)


def v9_label(spec: dict[str, Any]) -> str:
    """A build's label in the log: its file's stem and its pinned configuration (or config_for)."""
    return f"{Path(spec['file']).stem} {spec['config'] or 'config_for'}"


def run_v9(args: argparse.Namespace, target: Target) -> int:
    """Check, time each shape's implementations that passed next to V8 and cuBLAS, print the ratios, log them."""
    work = v9_work(args)
    device, started = probe(target, work.in_process), time.perf_counter()
    answers, checks, failed = [], [], 0
    for spec, answer in zip(work.builds, build_and_check(work, target), strict=True):
        answers.append(answer)
        if work.in_process:  # --sanitize
            for check in answer["checks"]:
                print(f"{spec['name']}: {check['report']}", flush=True)
        else:
            if answer.get("error"):
                print(f"{v9_label(spec)} {spec['shapes'][0]}: {answer['error'][-600:]}", flush=True)
            for check in answer["checks"]:
                print(f"{v9_label(spec)}: {check['report']}", flush=True)
                checks.append({"label": v9_label(spec), **check})
        failed += not passed(answer)
    if work.in_process:
        return failed
    print(f"{len(work.builds)} builds and checks in {time.perf_counter() - started:.0f} s, {failed} failed", flush=True)
    records = []
    for run, answer in zip(work.runs, time_what_passed(work, answers, target), strict=True):
        records.append({"shape": list(run.shape), "ms": answer["samples"],
                        "configs": {name: answer["configs"][name] for name in answer["samples"] if
                                    name != CUBLAS_NAME}})  # fmt: skip
        print(v9_table(run.shape, records[-1]), flush=True)
    if args.json:
        write_log(args.json, {"gpu": device["device"]["name"], "checks": checks, "timings": records})
    print(f"done in {time.perf_counter() - started:.0f} s; {failed} failed")
    return failed


def v9_table(shape: Shape, record: dict[str, Any]) -> str:
    """One shape's lines: each implementation's tile and its ratios to cuBLAS and to V8, round by round."""
    (m, n, k), ms = shape, record["ms"]
    cublas = statistics.median(ms[CUBLAS_NAME])
    lines = [f"\n{m}x{n}x{k}: cuBLAS {cublas:.3f} ms ({tflops(m, n, k, cublas):.0f} TFLOPS)"]
    for name, config in record["configs"].items():
        tile = f"{config.get('block_m')}x{config.get('block_n')}/{config.get('num_stages')}/{config.get('share', '-')}"
        to_v8 = f"  x V8 {spread(stats.paired_ratios(ms['V8'], ms[name]))}" if "V8" in ms else ""
        lines.append(f"  {name:>12} {tile:>11} x cuBLAS {spread(stats.paired_ratios(ms[CUBLAS_NAME], ms[name]))}"
                     + to_v8)  # fmt: skip
    return "\n".join(lines)


# ---------------------------------------------------------------------------- stream-k


def stream_k_work(args: argparse.Namespace) -> Work:
    """V7 with its tail split (experiments/v7_streamk.py, V7's tile and order) at each shape, twice, a worker each."""
    config = {**kernels.load("matmul_v7").TUNED, "stream_k": True}
    impl = ImplSpec("v7-stream-k", "kernel", None, str(kernels.EXPERIMENTS_DIR / "v7_streamk.py"), "MatmulV7StreamK",
                    config)  # fmt: skip
    builds = [kernel_spec(impl, [shape], seed) for shape in STREAM_K_SHAPES for seed in STREAM_K_SEEDS]
    return Work(builds, jobs=args.jobs, build_timeout_s=args.build_timeout)


def run_stream_k(args: argparse.Namespace, target: Target) -> int:
    """One line per (shape, seed): its tiles, how many the tail splits, its check."""
    num_sms, streamk = probe(target)["device"]["sm_count"], kernels.load("streamk")
    work, failed = stream_k_work(args), 0
    for spec, answer in zip(work.builds, build_and_check(work, target), strict=True):
        (m, n, k), config = spec["shapes"][0], spec["config"]
        tiles = -(-m // config["block_m"]) * -(-n // config["block_n"])
        head = f"{m}x{n}x{k} seed {spec['seed']}: {tiles} tiles, {streamk.stream_k_tiles(tiles, num_sms)} split"
        if not answer["checks"]:
            print(f"{head}; FAILED to build: {(answer.get('error') or '')[-400:]}", flush=True)
        for check in answer["checks"]:
            status = "ok" if check["ok"] else f"FAILED ({check['bad']} bad elements)"
            print(f"{head}; max |err| {check['max_abs_err']:.2e} {status}", flush=True)
        failed += not passed(answer)
    return failed


# ---------------------------------------------------------------------------- sanitize


def sanitize_work(args: argparse.Namespace) -> Work:
    """Every tile of V8's menu pinned over V8's TUNED, checked at the three ragged shapes, in this process."""
    tile_model, tuned = kernels.load("tile_model"), kernels.load("matmul_v8").TUNED
    v8 = version_spec("v8")
    builds = [{**kernel_spec(replace(v8, name=t.name, config={**tuned, **t.config}), SANITIZE_SHAPES), "seed": 0}
              for t in tile_model.CANDIDATES]  # fmt: skip
    return Work(builds, in_process=True)


def run_sanitize(args: argparse.Namespace, target: Target) -> int:
    """One line per (tile, shape); the sanitizer wrapping this process prints its own summary."""
    probe(target, in_process=True)
    work, failed = sanitize_work(args), 0
    for spec, answer in zip(work.builds, build_and_check(work, target), strict=True):
        if not answer["checks"]:
            print(f"{spec['name']:>8}: FAILED: {(answer.get('error') or '')[-400:]}", flush=True)
        for check in answer["checks"]:
            print(f"{spec['name']:>8} {check['shape']}: max |err| {check['max_abs_err']:.2e}, {check['bad']} bad",
                  flush=True)  # fmt: skip
        failed += not passed(answer)
    return failed


# ---------------------------------------------------------------------------- warmup


def warmup_text(args: argparse.Namespace) -> str:
    """What ``warmup`` runs, in words."""
    return (f"at {shape_text(WARMUP_SHAPE)}, {' and '.join(WARMUP_IMPLS)} each checked, then {args.block_s:g} s of "
            f"the timed loop (L2 flush, call; every call timed) after {WARMUP_IDLE_S:g} s of idle and after "
            f"{WARMUP_SLOW_S:g} s of V0's loop, {args.reps} times; written to "
            f"{paths.RESULTS_DIR / 'warmup'}/<gpu>.json.gz")  # fmt: skip


def run_warmup(args: argparse.Namespace, target: Target) -> int:
    """Every call of each block timed (common.timed_calls: the benchmark's loop with no warm-up, the settling being
    what is measured); each block's slices of time against its last second printed; the record written."""
    if target.backend != "cuda":
        raise UsageError("warmup times in this process on CUDA only")
    cuda = worker.CudaBackend()
    device, common = cuda.device(), kernels.load("common")
    specs = {"cublas": PEER_SPECS[CUBLAS], "v6": version_spec("v6"), "v0": version_spec("v0")}
    prepared = {name: cuda.prepare(asdict(spec), WARMUP_SHAPE) for name, spec in specs.items()}  # built, one input
    wrong = [f"{name}: {c['bad']} wrong elements" for name, p in prepared.items()
             if not (c := p.check(WARMUP_SHAPE))["ok"]]  # fmt: skip
    if wrong:
        raise CheckFailed(f"wrong at {shape_text(WARMUP_SHAPE)}, nothing timed: {'; '.join(wrong)}")
    timer = common.CudaTimer()

    def period_ms(call: Callable[[], Any]) -> float:  # one turn of the timed loop, from a short settled run of it
        timed = common.time_loop(call, 0.5, 50, timer)
        return (timed.starts[-1] + timed.times[-1]) / len(timed.times)

    periods = {name: period_ms(prepared[name].call) for name in WARMUP_IMPLS}
    slow = prepared["v0"].call
    common.warm_up(slow, 0.0, timer)
    blocks = []
    for rep in range(args.reps):
        for name in WARMUP_IMPLS:
            for after in WARMUP_AFTER:
                if after == "idle":
                    time.sleep(WARMUP_IDLE_S)
                else:
                    common.warm_up(slow, WARMUP_SLOW_S, timer)  # the benchmark's loop, untimed
                count = max(1, math.ceil(args.block_s * 1e3 / periods[name]))
                timed = common.timed_calls(prepared[name].call, count, timer)
                calls = [[round(at, 2), round(ms, 4)] for at, ms in zip(timed.starts, timed.times, strict=True)]
                blocks.append({"impl": name, "after": after, "rep": rep, "calls": calls})
                slices = " ".join(f"{x:.3f}" for x in stats.warmup_slices(calls) if x is not None)
                print(f"{name:>7} after {after:<5}: each slice's time over the end's: {slices}", flush=True)
    out = paths.RESULTS_DIR / "warmup" / f"{results.slug(device['name'])}.json.gz"
    record = {"gpu": device["name"], "date": machine.utc_now().strftime("%Y-%m-%d"), "git_commit": machine.git_commit(),
              "shape": list(WARMUP_SHAPE), "block_s": args.block_s, "blocks": blocks}  # fmt: skip
    results.write_bytes_atomic(out, gzip.compress(json.dumps(record).encode("utf-8"), mtime=0))
    print(f"written: {out}")
    return 0


# ---------------------------------------------------------------------------- clusters


def driver_values(result: tuple) -> tuple:
    """A cuda-bindings call's (error, values...): the values, or RuntimeError naming the error."""
    from cuda.bindings import driver

    error, *values = result
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver error {error!r}")
    return tuple(values)


def max_active_clusters(threads: int, shared_bytes: int, cluster_size: int, grid: int) -> int:
    """The clusters of ``cluster_size`` blocks of ``threads`` threads and ``shared_bytes`` of dynamic shared memory
    that the driver says could be resident at once on device 0 (cuOccupancyMaxActiveClusters, what CUTLASS's
    persistent scheduler sizes its grid by), for an empty kernel launched like ours."""
    from cuda.bindings import driver

    driver_values(driver.cuInit(0))
    (device,) = driver_values(driver.cuDeviceGet(0))
    (context,) = driver_values(driver.cuDevicePrimaryCtxRetain(device))
    driver_values(driver.cuCtxSetCurrent(context))
    (module,) = driver_values(driver.cuModuleLoadData(EMPTY_KERNEL_PTX))
    (function,) = driver_values(driver.cuModuleGetFunction(module, b"empty"))
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    driver_values(driver.cuFuncSetAttribute(function, attribute, shared_bytes))
    cluster = driver.CUlaunchAttribute()
    cluster.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    cluster.value.clusterDim.x, cluster.value.clusterDim.y, cluster.value.clusterDim.z = cluster_size, 1, 1
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid - grid % cluster_size, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = threads, 1, 1
    config.sharedMemBytes = shared_bytes
    config.attrs = [cluster]
    config.numAttrs = 1
    (clusters,) = driver_values(driver.cuOccupancyMaxActiveClusters(function, config))
    return int(clusters)


def clusters_text(args: argparse.Namespace) -> str:
    """What ``clusters`` asks the driver, in words."""
    return (f"clusters of {', '.join(map(str, args.sizes))} blocks of {args.threads} threads and {args.shared_bytes} "
            f"bytes of dynamic shared memory: how many fit at once, against a grid of {args.sms} blocks")  # fmt: skip


def run_clusters(args: argparse.Namespace, target: Target) -> int:
    """One line per cluster size: how many are resident at once, and whether the persistent grid's all fit."""
    try:
        for size in args.sizes:
            clusters = max_active_clusters(args.threads, args.shared_bytes, size, args.sms)
            wanted = args.sms // size
            verdict = "all fit" if clusters >= wanted else f"{wanted - clusters} would wait for a second wave"
            print(f"clusters of {size}: {clusters} resident at once, {clusters * size} blocks; "
                  f"a grid of {wanted * size} blocks needs {wanted}: {verdict}")  # fmt: skip
    except (ImportError, RuntimeError) as error:
        raise jobs.BenchmarkError(f"cannot ask the driver: {error}") from error
    return 0


# ---------------------------------------------------------------------------- the command line


class UsageError(Exception):
    """A bad command line: exit status 2, nothing runs."""


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


# name -> (what it does, its options, its run, its work or its plan in words)
Checks = dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace, Target], int],
                         Callable[[argparse.Namespace], "Work | str"]]]  # fmt: skip


def shapes_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--files", nargs="*", type=Path, help="kernel files (default: every matmul_vN.py)")
    parser.add_argument("--shapes", nargs="*", type=shape_arg, metavar="MxNxK",
                        help="default: the GPU suite's drawn shapes and those issue 27 reported")  # fmt: skip
    add_builds(parser, max(1, (os.cpu_count() or 2) - 2))


def v8_options(parser: argparse.ArgumentParser) -> None:
    add_timing(parser)
    parser.add_argument("--shapes", nargs="*", type=shape_arg, metavar="MxNxK", help="default: the built-in list")
    add_builds(parser, min(12, max(1, (os.cpu_count() or 2) - 2)))


def v9_options(parser: argparse.ArgumentParser) -> None:
    add_timing(parser)
    add_builds(parser, 14, 300.0)
    add = parser.add_argument
    add("--extra", nargs="*", default=[], metavar="NAME", help="also time these pinned configurations (v9-TILE-SHARE)")
    add("--menu", action="store_true", help="--extra every (tile, sharing) of V9's menu")
    add("--tiles", nargs="*", help="with --menu: only these tiles (e.g. 128x256 128x192)")
    add("--shapes", nargs="*", type=shape_arg, metavar="MxNxK", help="timed shapes (default: the sweep and two more)")
    add("--fitted", action="store_true", help="time the field set's fitted half")
    add("--check", nargs="*", metavar="NAME", help="pinned configs to check at CHECK_SHAPES (default: every --extra)")
    add("--sanitize", action="store_true", help="only each --extra (default v9-128x256-b) at two small ragged shapes, "
        "in this process, for a sanitizer")  # fmt: skip


def stream_k_options(parser: argparse.ArgumentParser) -> None:
    add_builds(parser, 8)


def no_options(parser: argparse.ArgumentParser) -> None:
    """A check with no options of its own."""


def warmup_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--block-s", type=float, default=2.0, help="seconds each block runs (default 2)")
    parser.add_argument("--reps", type=int, default=2, help="times each (kernel, predecessor) pair runs (default 2)")


def clusters_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=int, default=288, help="threads per block (V7: 288)")
    parser.add_argument("--shared-bytes", type=int, default=213120, help="dynamic shared memory per block (V7)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4], help="cluster sizes to ask about")
    parser.add_argument("--sms", type=int, default=132, help="the persistent grid: one block per SM")


CHECKS: Checks = {
    "shapes": ("every kernel file at many shapes, each (file, shape) checked in its own process",
               shapes_options, run_shapes, shapes_work),
    "v8-menu": ("every tile of V8's menu forced, checked and timed next to V7 and cuBLAS (--json: the v8 logs)",
                v8_options, run_v8, v8_work),
    "v9-menu": ("V9's (tile, sharing) menu checked and timed next to V8 and cuBLAS (--json: the v9 log)",
                v9_options, run_v9, v9_work),
    "stream-k": ("V7's stream-K tail checked at the shapes that exercise it", stream_k_options, run_stream_k,
                 stream_k_work),
    "sanitize": ("V8's menu at three ragged shapes in this process: run it under compute-sanitizer", no_options,
                 run_sanitize, sanitize_work),
    "warmup": ("how long a kernel's time takes to settle (plots/results/warmup/<gpu>.json.gz)", warmup_options,
               run_warmup, warmup_text),
    "clusters": ("how many thread-block clusters of each size fit at once (the driver's answer)", clusters_options,
                 run_clusters, clusters_text),
}  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """``check NAME [options]``: one subcommand per check, each with --dry-run."""
    parser = argparse.ArgumentParser(prog=PROG, description="GPU checks: kernels built and checked against float64 "
        "(NaN-poisoned C) in the benchmark's workers, then timed next to cuBLAS in its rounds; a development check, "
        "not the record. Exit status: 0 done, 1 could not run, 2 bad usage, 3 a wrong result.")  # fmt: skip
    names = parser.add_subparsers(dest="name", metavar="NAME", title="checks", required=True)
    for name, (what, options, _, _) in CHECKS.items():
        sub = names.add_parser(name, help=what, description=what)
        options(sub)
        sub.add_argument("--dry-run", action="store_true", help="print what it would build, check and time; run none")
    return parser


def main(argv: Sequence[str], target: Target | None = None) -> int:
    """Parse, then print the work (--dry-run) or run it; 1 when it cannot run, 2 on bad usage, 3 on a wrong result."""
    target = target or Target()
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse printed the usage and the error (status 2), or --help (0)
        return int(exc.code or 0)
    _, _, run, work = CHECKS[args.name]
    prog = f"{PROG} {args.name}"
    try:
        if args.dry_run:
            planned = work(args)
            print(planned if isinstance(planned, str) else planned.describe())
            print("(dry run: nothing is built, checked or timed)")
            return 0
        failed = run(args, target)
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except (machine.NoHopperGPU, jobs.BenchmarkError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 3 if isinstance(exc, jobs.WrongResult) else 1
    if failed:
        print(f"{prog}: {failed} failed check(s)", file=sys.stderr)
    return 3 if failed else 0
