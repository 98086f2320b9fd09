"""V7 and the stream-K attempt after it build for sm_90a on a CPU machine and hold what the V7 chapter says.

V7's build comes from the versions' background pool; the stream-K variant (experiments/v7_streamk.py) is one
more background build, at a shape whose 8 x 8 tiles (64 < 132 SMs) need no split: the code is the same for
every shape, only the schedule's numbers change at run time.
"""

from __future__ import annotations

import re

import pytest

import kernel_builds
from matmul_bench import buildcheck, kernels
from matmul_data import paths

pytestmark = pytest.mark.slow

V7 = kernels.load("matmul_v7")
# A TMA store of C: shared memory (a staging chunk) to global memory, in a bulk group (not an mbarrier).
TMA_STORE = re.compile(r"cp\.async\.bulk\.tensor\.2d\.global\.shared::cta\.tile\.bulk_group ")

STREAMK = "v7-streamk"
kernel_builds.EXPERIMENT_BUILDS[STREAMK] = (
    str(paths.ROOT / "experiments" / "v7_streamk.py"),
    "MatmulV7StreamK",
    {**V7.TUNED, "stream_k": True},  # V7's configuration with the tail split
    (1000, 1800, 520),
)


def test_v7_stages_c_in_swizzled_chunks_that_four_tma_stores_take_out() -> None:
    report = kernel_builds.built("v7")
    # stmatrix writes C at addresses that go through the 128-byte swizzle (Swizzle<3, 4, 3>: 8 rows of 16 bytes).
    assert re.search(r"tilus_cuda_stmatrix_x4_shared\(\(\(uint32_t\)\(\(tilus_swizzle\([^;]*, 4, 3, 3\)", report.source)
    # Every tensor map (A, B and the staging chunks of C) is built with the 128-byte swizzle; none without.
    assert "CU_TENSOR_MAP_SWIZZLE_128B" in report.source and "CU_TENSOR_MAP_SWIZZLE_NONE" not in report.source
    assert (report.spill_stores, report.spill_loads) == (0, 0), report.ptxas_report
    # One bulk-store group per tile and group, read before the chunks are rewritten.
    assert "cp.async.bulk.wait_group.read 0" in report.ptx and "fence.proxy.async.shared::cta" in report.ptx
    # block_n // 64 stores per consumer warp group and tile, one per 64-column chunk (256 // 64 = 4), committed as
    # one bulk group. The chunk loop has a constant trip count and unrolls; each group's epilogue is its own code
    # (consumer(0, ...) and consumer(1, ...)), so the PTX holds CONSUMERS runs of 4 stores, each before a commit.
    chunks = kernel_builds.build_config("v7")["block_n"] // V7.CHUNK
    assert (chunks, V7.CONSUMERS) == (4, 2)
    per_commit = [len(TMA_STORE.findall(part)) for part in report.ptx.split("cp.async.bulk.commit_group;")]
    assert [n for n in per_commit if n] == [chunks] * V7.CONSUMERS, per_commit
    # ...and ptxas keeps each as one UTMASTG: no store merged, dropped or duplicated.
    assert buildcheck.sass_facts(report.sass)["sass"]["UTMASTG"] == chunks * V7.CONSUMERS


def test_v6_stages_c_in_plain_rows_the_step_v7_removes() -> None:
    source = kernel_builds.built("v6").source
    assert "CU_TENSOR_MAP_SWIZZLE_NONE" in source
    assert not re.search(r"tilus_cuda_stmatrix_x4_shared\(\(\(uint32_t\)\(\(tilus_swizzle", source)


def test_stream_k_variant_hands_partial_sums_over_with_release_and_acquire() -> None:
    report = kernel_builds.built_experiment(STREAMK)
    # The flag protocol: a release store raises it, an acquire load waits for it, both at GPU scope.
    assert re.search(r"st\.release\.gpu(\.global)?\.(b32|s32|u32)", report.ptx), "no release store in the PTX"
    assert re.search(r"ld\.acquire\.gpu(\.global)?\.(b32|s32|u32)", report.ptx), "no acquire load in the PTX"
    # The fix-up never reads the accumulator while WGMMAs run: ptxas serialises nothing (C7510-C7515).
    assert not re.search(r"C751\d", report.ptxas_report), report.ptxas_report
    facts = buildcheck.launch_facts(report.source)
    assert facts["threads"] == 288 and facts["persistent_blocks"] == 132
    assert facts["shared_bytes"] <= 227 * 1024
