"""``check v8-menu`` and ``check v9-menu``: every tile of a version's menu forced, checked, and timed next to the
version before it and cuBLAS, each shape's table printed, the log written (--json)."""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

from matmul_bench import kernels
from matmul_bench.checks.core import (
    CUBLAS_NAME,
    Target,
    Work,
    add_builds,
    add_timing,
    build_and_check,
    kernel_spec,
    menu_work,
    passed,
    probe,
    shape_arg,
    spread,
    time_what_passed,
    write_log,
)
from matmul_bench.plan import BENCH_SHAPE, SWEEP_SHAPES, ImplSpec, Shape, UsageError, shape_text, version_spec
from matmul_bench.protocol import BuildSpec
from matmul_data import field as field_set
from matmul_data import stats
from matmul_data.schema import tflops

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
V7_SHAPE: Shape = BENCH_SHAPE

# --- v9-menu: the sweep's shapes and V8's two checks of waves and edges; the small ragged shapes of --sanitize.
V9_SHAPES: tuple[Shape, ...] = (*SWEEP_SHAPES, (5120, 5120, 5120), (3000, 5000, 4096))
V9_SANITIZE_SHAPES: tuple[Shape, ...] = V8_CHECK_ONLY
V9_SANITIZE_DEFAULT = "v9-128x256-b"


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
    print(f"{device.device.name} ({device.device.sm_count} SMs), torch {device.software.torch}, "
          f"tilus {device.software.tilus}; {args.rounds} rounds x ({args.warmup_s:g} s warm-up, "
          f"{args.repeats} calls), L2 flushed", flush=True)  # fmt: skip
    answers, checks, failed = list(build_and_check(work, target)), [], 0
    for spec, answer in zip(work.builds, answers, strict=True):
        name, shape = spec.name, list(spec.shapes[0])
        label = f"{name:>8} {shape_text(shape):>16}"
        if not answer.checks:  # the build failed (or hung): no check ran
            print(f"  build {label}: FAILED: {(answer.error or '')[-800:]}", flush=True)
            checks.append({"impl": name, "shape": shape, "ok": False, "error": answer.error})
        for check in answer.checks:
            status = "ok" if check.ok else f"FAILED ({check.bad} bad elements)"
            print(f"  check {label}: max |err| {check.max_abs_err:.2e} {status}", flush=True)
            checks.append({"impl": name, "shape": shape, "ok": check.ok, "bad": check.bad,
                           "max_abs_err": check.max_abs_err})  # fmt: skip
        failed += not passed(answer)
    print(f"built and checked in {time.perf_counter() - started:.0f} s", flush=True)
    timings = [{"shape": list(run.shape), "ms": answer.samples or {}}
               for run, answer in zip(work.runs, time_what_passed(work, answers, target), strict=True)]  # fmt: skip
    tile_model, num_sms = kernels.load("tile_model"), device.device.sm_count
    for timing in timings:
        print(v8_table(tuple(timing["shape"]), timing["ms"], num_sms), flush=True)
    if args.json:
        write_log(args.json, {"gpu": device.device.name, "num_sms": num_sms, "tilus": device.software.tilus,
                              "torch": device.software.torch, "operand_byte_cost": tile_model.OPERAND_BYTE_COST,
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
        builds = [kernel_spec(impl, V9_SANITIZE_SHAPES, seed=0) for impl in named.values()]
        return Work(builds, in_process=True)
    shapes = list(args.shapes or (tuple(f.shape for f in field_set.half(field_set.FITTED)) if args.fitted
                                  else V9_SHAPES))  # fmt: skip
    impls = {"V8": replace(version_spec("v8"), name="V8"), "V9": replace(version_spec("v9"), name="V9"), **extras}
    known = v9_menu() if args.check else extras
    check_shapes = list(kernels.load("common").CHECK_SHAPES)
    checked = {name: check_shapes for name in (args.check if args.check is not None else extras)}
    impls.update({name: known[name] for name in checked if name not in impls})  # checked, not timed
    return menu_work(impls, {name: shapes for name in ("V8", "V9", *extras)}, checked, args)


def v9_label(spec: BuildSpec) -> str:
    """A build's label in the log: its file's stem and its pinned configuration (or config_for)."""
    return f"{Path(spec.file).stem} {spec.config or 'config_for'}"


def run_v9(args: argparse.Namespace, target: Target) -> int:
    """Check, time each shape's implementations that passed next to V8 and cuBLAS, print the ratios, log them."""
    work = v9_work(args)
    device, started = probe(target, work.in_process), time.perf_counter()
    answers, checks, failed = [], [], 0
    for spec, answer in zip(work.builds, build_and_check(work, target), strict=True):
        answers.append(answer)
        if work.in_process:  # --sanitize
            for check in answer.checks:
                print(f"{spec.name}: {check.report}", flush=True)
        else:
            if answer.error:
                print(f"{v9_label(spec)} {list(spec.shapes[0])}: {answer.error[-600:]}", flush=True)
            for check in answer.checks:
                print(f"{v9_label(spec)}: {check.report}", flush=True)
                checks.append({"label": v9_label(spec), "shape": shape_text(check.shape), "ok": check.ok,
                               "bad": check.bad, "max_abs_err": check.max_abs_err, "report": check.report})  # fmt: skip
        failed += not passed(answer)
    if work.in_process:
        return failed
    print(f"{len(work.builds)} builds and checks in {time.perf_counter() - started:.0f} s, {failed} failed", flush=True)
    records = []
    for run, answer in zip(work.runs, time_what_passed(work, answers, target), strict=True):
        ms = answer.samples or {}
        records.append({"shape": list(run.shape), "ms": ms,
                        "configs": {name: answer.configs[name] for name in ms if name != CUBLAS_NAME}})  # fmt: skip
        print(v9_table(run.shape, records[-1]), flush=True)
    if args.json:
        write_log(args.json, {"gpu": device.device.name, "checks": checks, "timings": records})
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


# ---------------------------------------------------------------------------- options


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
