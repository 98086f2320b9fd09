"""V9 (matmul_v9.py) as built for sm_90a on the CPU: clusters and multicast where it shares, V8's kernel where not.

Each sharing is built at a shape with ragged M and N and a partial last K-tile. A shared build loads by multicast and
synchronises the cluster twice (after the barriers' setup, before exit); its remote arrives are released at CTA
scope, so its memory fences are those two cluster barriers' and the epilogue's proxy fences (as V8's), none in the
K loop. Without a cluster the build
has neither. On a GPU, the every-shape suite (tests/test_kernels_gpu.py) runs V9's own rule at every shape.
"""

from __future__ import annotations

import pytest

import kernel_builds
from matmul_bench import buildcheck, kernels

FILE = str(kernels.KERNEL_DIR / "matmul_v9.py")
# Without a cluster: V9's own build, which every build test shares (its first configuration: 128 x 256, no sharing).
ALONE = {"block_m": 128, "block_n": 256, "consumers": 2, "num_stages": 3, "share": "none"}
BUILDS = {
    "v9-128x192-b": {"block_m": 128, "block_n": 192, "consumers": 2, "num_stages": 4, "share": "b"},
    "v9-256x128-a": {"block_m": 256, "block_n": 128, "consumers": 2, "num_stages": 3, "share": "a"},
}
for _name, _config in BUILDS.items():
    _swizzle = 8 if _config["share"] == "b" else 16
    kernel_builds.EXPERIMENT_BUILDS[_name] = (
        FILE, "MatmulV9", {**_config, "block_k": 64, "swizzle_size": _swizzle}, kernel_builds.BUILD_SHAPE, True
    )  # fmt: skip


def opcodes(name: str) -> list[str]:
    return [op for op, _ in buildcheck.sass_instructions(kernel_builds.built_experiment(name).sass)]


@pytest.mark.slow
@pytest.mark.parametrize("name", ["v9-128x192-b", "v9-256x128-a"])
def test_a_shared_operand_is_multicast_and_fenced_only_at_the_two_cluster_barriers(name: str) -> None:
    ops = opcodes(name)
    assert any(op.startswith("UTMALDG") and "MULTICAST" in op for op in ops)
    assert ops.count("UCGABAR_ARV") == 2
    # Every memory fence sits at a cluster barrier (MEMBAR.ALL.CTA, MEMBAR.ALL.GPU, then the arrive) or is the
    # epilogue's proxy fence (MEMBAR.ALL.CTA, FENCE.VIEW.ASYNC.S), as in V8: none in the K loop.
    for i, op in enumerate(ops):
        if op == "MEMBAR.ALL.GPU":
            assert "UCGABAR_ARV" in ops[i + 1 : i + 4], ops[i - 2 : i + 5]  # after ERRBAR, CGAERRBAR
        elif op == "MEMBAR.ALL.CTA":
            assert ops[i + 1] in ("MEMBAR.ALL.GPU", "FENCE.VIEW.ASYNC.S"), ops[i - 2 : i + 3]
    assert ops.count("MEMBAR.ALL.GPU") == 2
    assert buildcheck.early_accumulator_reads(kernel_builds.built_experiment(name).sass) == []


@pytest.mark.slow
def test_without_a_cluster_v9_builds_no_multicast_and_no_cluster_barrier() -> None:
    assert kernel_builds.build_config("v9").items() >= ALONE.items()
    ops = [op for op, _ in buildcheck.sass_instructions(kernel_builds.built("v9").sass)]
    assert not any("MULTICAST" in op for op in ops)
    assert "UCGABAR_ARV" not in ops and "MEMBAR.ALL.GPU" not in ops
