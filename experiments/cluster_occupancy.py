"""How many thread-block clusters of each size fit on the GPU at once, for a block shaped like our kernels'.

    python experiments/cluster_occupancy.py [--threads 288] [--shared-bytes 213120] [--sizes 1 2 4]

A persistent kernel hands each block a fixed list of tiles, so every block must be resident at once. With
clusters, the blocks of a cluster must share a GPC, and the H100's GPCs hold uneven numbers of SMs: fewer
clusters than SMs / cluster size may fit, and a grid of 132 blocks in clusters of two would then run its last
clusters as a second wave. (A hypothesis for V6's cluster attempt: its steps over V6 in row-major order were
0.45 to 0.74 in the recorded "round 2" table. Measured on the H200 and ruled out: all 66 clusters of two fit,
clusters of four would not; plots/results/logs/cluster-occupancy-2026-12-02.txt.)

The driver answers it (cuOccupancyMaxActiveClusters, what CUTLASS's persistent scheduler sizes its grid by)
for a kernel and a launch configuration. Only the launch matters here: an empty kernel with the same
threads per block and dynamic shared memory as ours is limited to one block per SM by shared memory, as
ours are (V7: 288 threads, 213,120 bytes; V8's 192 x 192 tile: 512 threads, 221,312 bytes). Registers do not
limit it: 288 threads x 168 registers fit in the SM's 65,536 with room to spare. Needs a GPU and
cuda-bindings (installed with Tilus).
"""

from __future__ import annotations

import argparse
import sys

# An empty kernel for sm_90a, as PTX: the driver compiles it, so no nvcc is needed.
EMPTY_KERNEL_PTX = b"""
.version 8.0
.target sm_90a
.address_size 64
.visible .entry empty()
{
    ret;
}
"""


def check(result: tuple) -> tuple:
    """A cuda-bindings call's (error, values...): the values, or RuntimeError naming the error."""
    from cuda.bindings import driver

    error, *values = result
    if error != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"CUDA driver error {error!r}")
    return tuple(values)


def max_active_clusters(threads: int, shared_bytes: int, cluster_size: int, grid: int) -> int:
    """The clusters of ``cluster_size`` blocks of ``threads`` threads and ``shared_bytes`` of dynamic shared memory
    that the driver says could be resident at once on device 0."""
    from cuda.bindings import driver

    check(driver.cuInit(0))
    (device,) = check(driver.cuDeviceGet(0))
    (context,) = check(driver.cuDevicePrimaryCtxRetain(device))
    check(driver.cuCtxSetCurrent(context))
    (module,) = check(driver.cuModuleLoadData(EMPTY_KERNEL_PTX))
    (function,) = check(driver.cuModuleGetFunction(module, b"empty"))
    attribute = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    check(driver.cuFuncSetAttribute(function, attribute, shared_bytes))
    cluster = driver.CUlaunchAttribute()
    cluster.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
    cluster.value.clusterDim.x, cluster.value.clusterDim.y, cluster.value.clusterDim.z = cluster_size, 1, 1
    config = driver.CUlaunchConfig()
    config.gridDimX, config.gridDimY, config.gridDimZ = grid - grid % cluster_size, 1, 1
    config.blockDimX, config.blockDimY, config.blockDimZ = threads, 1, 1
    config.sharedMemBytes = shared_bytes
    config.attrs = [cluster]
    config.numAttrs = 1
    (clusters,) = check(driver.cuOccupancyMaxActiveClusters(function, config))
    return int(clusters)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--threads", type=int, default=288, help="threads per block (V7: 288)")
    parser.add_argument("--shared-bytes", type=int, default=213120, help="dynamic shared memory per block (V7)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 2, 4], help="cluster sizes to ask about")
    parser.add_argument("--sms", type=int, default=132, help="the persistent grid: one block per SM")
    args = parser.parse_args(argv)
    try:
        for size in args.sizes:
            clusters = max_active_clusters(args.threads, args.shared_bytes, size, args.sms)
            wanted = args.sms // size
            verdict = "all fit" if clusters >= wanted else f"{wanted - clusters} would wait for a second wave"
            print(f"clusters of {size}: {clusters} resident at once, {clusters * size} blocks; "
                  f"a grid of {wanted * size} blocks needs {wanted}: {verdict}")  # fmt: skip
    except (ImportError, RuntimeError) as error:
        print(f"cannot ask the driver: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
