"""The V9 draft (experiments/v9_cluster.py), V8 in clusters of two with B multicast, as built for sm_90a on the CPU.

Its 128 x 256 build (at M and N multiples of no tile, a partial last K-tile) loads B by multicast, synchronises
the cluster, and has no memory fence in its K loop: the only MEMBAR.ALL.GPU are the two cluster barriers' (the
remote arrives are released at CTA scope; at cluster scope ptxas fences each one). Its results on a GPU are
checked by `python -m matmul_bench check v9-menu` until it becomes a version, which the GPU suite then covers.
"""

from __future__ import annotations

import pytest

import kernel_builds
from matmul_bench import buildcheck, kernels

FILE = kernels.EXPERIMENTS_DIR / "v9_cluster.py"
CLASS = "MatmulV9Cluster"
TILE_128X256 = {"block_m": 128, "block_n": 256, "consumers": 2, "num_stages": 3, "block_k": 64, "swizzle_size": 8}
kernel_builds.EXPERIMENT_BUILDS["v9-cluster"] = (str(FILE), CLASS, TILE_128X256, kernel_builds.BUILD_SHAPE, True)


@pytest.mark.slow
def test_v9_draft_multicasts_b_and_fences_only_at_the_cluster_barriers() -> None:
    sass = kernel_builds.built_experiment("v9-cluster").sass
    ops = [op for op, _ in buildcheck.sass_instructions(sass)]
    assert any(op.startswith("UTMALDG") and "MULTICAST" in op for op in ops)
    assert ops.count("UCGABAR_ARV") == 2  # the cluster syncs after the barriers' setup and before exit
    assert ops.count("MEMBAR.ALL.GPU") == 2  # those two syncs' releases, none in the K loop
    assert buildcheck.early_accumulator_reads(sass) == []
