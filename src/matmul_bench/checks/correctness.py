"""``check shapes``, ``check stream-k`` and ``check sanitize``: kernels checked against float64 at the shapes that
have broken them, one line per check, no timing."""

from __future__ import annotations

import argparse
import os
from dataclasses import replace
from pathlib import Path

from matmul_bench import kernels
from matmul_bench.checks.core import Target, Work, add_builds, build_and_check, kernel_spec, passed, probe, shape_arg
from matmul_bench.plan import ImplSpec, Shape, shape_text, version_spec
from matmul_data import paths, versions

# --- shapes: the shapes issue 27 found wrong in V6 to V8 (N % 8 != 0 with many K-tiles), and two controls it found
# right; by default with the GPU suite's seeded draw over N % 8, K and M (tests/test_kernels_gpu.py).
REPORTED: tuple[Shape, ...] = ((2048, 2047, 4096), (4096, 4095, 4096), (4096, 4999, 4096), (3001, 4999, 4096),
                               (4096, 4092, 4096), (3001, 4999, 4104), (256, 4999, 512), (2049, 2047, 200),
                               (4096, 4088, 4096))  # fmt: skip

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
        if answer.error:
            print(f"{spec.name}: {list(spec.shapes[0])}: {answer.error[-400:]}", flush=True)
        for check in answer.checks:
            print(f"{spec.name}: {check.report}", flush=True)
        failed += not answer.ok
    print(f"{len(work.builds)} checks, {failed} failed")
    return failed


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
    num_sms, streamk = probe(target).device.sm_count, kernels.load("streamk")
    work, failed = stream_k_work(args), 0
    for spec, answer in zip(work.builds, build_and_check(work, target), strict=True):
        (m, n, k), config = spec.shapes[0], spec.config or {}  # stream-k's builds are pinned
        tiles = -(-m // config["block_m"]) * -(-n // config["block_n"])
        head = f"{m}x{n}x{k} seed {spec.seed}: {tiles} tiles, {streamk.stream_k_tiles(tiles, num_sms)} split"
        if not answer.checks:
            print(f"{head}; FAILED to build: {(answer.error or '')[-400:]}", flush=True)
        for check in answer.checks:
            status = "ok" if check.ok else f"FAILED ({check.bad} bad elements)"
            print(f"{head}; max |err| {check.max_abs_err:.2e} {status}", flush=True)
        failed += not passed(answer)
    return failed


# ---------------------------------------------------------------------------- sanitize


def sanitize_work(args: argparse.Namespace) -> Work:
    """Every tile of V8's menu pinned over V8's TUNED, checked at the three ragged shapes, in this process."""
    tile_model, tuned = kernels.load("tile_model"), kernels.load("matmul_v8").TUNED
    v8 = version_spec("v8")
    builds = [kernel_spec(replace(v8, name=t.name, config={**tuned, **t.config}), SANITIZE_SHAPES, seed=0)
              for t in tile_model.CANDIDATES]  # fmt: skip
    return Work(builds, in_process=True)


def run_sanitize(args: argparse.Namespace, target: Target) -> int:
    """One line per (tile, shape); the sanitizer wrapping this process prints its own summary."""
    probe(target, in_process=True)
    work, failed = sanitize_work(args), 0
    for spec, answer in zip(work.builds, build_and_check(work, target), strict=True):
        if not answer.checks:
            print(f"{spec.name:>8}: FAILED: {(answer.error or '')[-400:]}", flush=True)
        for check in answer.checks:
            print(f"{spec.name:>8} {shape_text(check.shape)}: max |err| {check.max_abs_err:.2e}, {check.bad} bad",
                  flush=True)  # fmt: skip
        failed += not passed(answer)
    return failed


# ---------------------------------------------------------------------------- options


def shapes_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--files", nargs="*", type=Path, help="kernel files (default: every matmul_vN.py)")
    parser.add_argument("--shapes", nargs="*", type=shape_arg, metavar="MxNxK",
                        help="default: the GPU suite's drawn shapes and those issue 27 reported")  # fmt: skip
    add_builds(parser, max(1, (os.cpu_count() or 2) - 2))


def stream_k_options(parser: argparse.ArgumentParser) -> None:
    add_builds(parser, 8)


def no_options(parser: argparse.ArgumentParser) -> None:
    """A check with no options of its own."""
