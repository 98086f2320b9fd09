"""``check warmup`` and ``check clusters``: facts of the GPU the chapters rely on, how long a kernel's time takes
to settle and how many thread-block clusters fit at once."""

from __future__ import annotations

import argparse
import gzip
import json
import math
import time
from collections.abc import Callable
from typing import Any

from matmul_bench import jobs, kernels, machine, worker
from matmul_bench.checks.core import CheckFailed, Target
from matmul_bench.plan import BENCH_SHAPE, PEER_SPECS, Shape, UsageError, shape_text, version_spec
from matmul_data import files, paths, results, stats
from matmul_data.versions import CUBLAS

# --- warmup: cuBLAS and V6 after 2 s of idle and after 1 s of V0's loop (a slow neighbour, about half of cuBLAS's
# speed, though it too draws about the power cap), at the chapters' shape.
WARMUP_SHAPE: Shape = BENCH_SHAPE
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
    prepared = {name: cuda.prepare(spec, WARMUP_SHAPE) for name, spec in specs.items()}  # built, one input
    wrong = [f"{name}: {c.bad} wrong elements" for name, p in prepared.items()
             if not (c := p.check(WARMUP_SHAPE)).ok]  # fmt: skip
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
    out = paths.RESULTS_DIR / "warmup" / f"{results.slug(device.name)}.json.gz"
    record = {"gpu": device.name, "date": machine.utc_now().strftime("%Y-%m-%d"), "git_commit": machine.git_commit(),
              "shape": list(WARMUP_SHAPE), "block_s": args.block_s, "blocks": blocks}  # fmt: skip
    files.write_atomic(out, gzip.compress(json.dumps(record).encode("utf-8"), mtime=0))
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


# ---------------------------------------------------------------------------- options


def warmup_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--block-s", type=float, default=2.0, help="seconds each block runs (default 2)")
    parser.add_argument("--reps", type=int, default=2, help="times each (kernel, predecessor) pair runs (default 2)")


def clusters_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--threads", type=int, default=288, help="threads per block (V7: 288)")
    parser.add_argument("--shared-bytes", type=int, default=213120, help="dynamic shared memory per block (V7)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4], help="cluster sizes to ask about")
    parser.add_argument("--sms", type=int, default=132, help="the persistent grid: one block per SM")
