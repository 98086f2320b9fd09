"""V4-V6 build for sm_90a on a CPU machine and hold the instructions their chapters describe."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

import kernel_builds
from matmul_bench import buildcheck

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def builds() -> dict[str, buildcheck.BuildReport]:
    return {f"matmul_{v}": kernel_builds.built(v) for v in ("v4", "v5", "v6")}


@pytest.fixture(params=["matmul_v4", "matmul_v5", "matmul_v6"])
def build(request: pytest.FixtureRequest, builds: dict[str, buildcheck.BuildReport]) -> buildcheck.BuildReport:
    return builds[request.param]


def _thread_groups(source: str) -> set[tuple[int, int]]:
    return {(int(b), int(e)) for b, e in re.findall(r"ThreadGroup\(thread_begin=(\d+), thread_end=(\d+)", source)}


def test_v4_plus_has_two_consumer_warp_groups_and_a_producer_warp(build: buildcheck.BuildReport) -> None:
    groups = _thread_groups(build.source)
    assert {(0, 128), (128, 256), (256, 288)} <= groups, groups
    assert "__launch_bounds__(288)" in build.source  # 9 warps
    # Both consumer warp groups issue WGMMA on a 64-row slab of the 128 x 256 tile.
    assert "wgmma.mma_async.sync.aligned.m64n256k16.f32.f16.f16" in build.ptx
    assert "cp.async.bulk.tensor.2d.shared::cta.global" in build.ptx
    # Empty barriers expect one elected arrival per consumer warp group.
    assert re.search(r"mbarrier_init_shared\([^;]*uint32_t\(2u\)\)", build.source)


def test_v4_plus_builds_without_spills_or_cta_group(build: buildcheck.BuildReport) -> None:
    assert ".cta_group" not in build.ptx
    assert 0 < build.registers <= 224, build.ptxas_report  # 65536 registers / 288 threads, rounded down to 8
    assert (build.spill_stores, build.spill_loads) == (0, 0), build.ptxas_report


@pytest.mark.parametrize("version", ["matmul_v5", "matmul_v6"])
def test_v5_plus_keeps_one_wgmma_group_in_flight(builds: dict[str, buildcheck.BuildReport], version: str) -> None:
    ptx = builds[version].ptx
    assert "wgmma.wait_group.sync.aligned 1;" in ptx  # in the K loop: the previous K-tile's MMA retired
    assert "wgmma.wait_group.sync.aligned 0;" in ptx  # before the epilogue: all of them


def test_v4_waits_for_every_wgmma_group(builds: dict[str, buildcheck.BuildReport]) -> None:
    assert "wgmma.wait_group.sync.aligned 1;" not in builds["matmul_v4"].ptx


def test_v6_is_persistent_with_a_tma_store_epilogue(builds: dict[str, buildcheck.BuildReport]) -> None:
    source = builds["matmul_v6"].source
    # One block per SM (132 where no GPU is visible), each looping over tiles with a stride of the grid size.
    assert "<<<dim3(132, 1, 1), dim3(288, 1, 1)" in source
    trip_count = r"\(\(\(\w+ - \(int\)blockIdx\.x\) \+ 131\) / 132\)"  # tiles left for this block, stride 132
    tile_loops = re.findall(rf"for \(int32_t tile_\w* = 0; \(tile_\w* < {trip_count}\)", source)
    assert len(tile_loops) == 3, tile_loops  # the producer warp and both consumer warp groups
    ptx = builds["matmul_v6"].ptx
    # C goes out through shared memory by TMA, in bulk groups that overlap the next tile.
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
    assert "cp.async.bulk.commit_group" in ptx
    assert "cp.async.bulk.wait_group.read 0" in ptx  # staging buffer reused only once TMA has read it
    assert "fence.proxy.async.shared::cta" in ptx
    assert "st.global" not in ptx  # no direct stores of C from registers


def test_v4_and_v5_launch_one_block_per_tile(builds: dict[str, buildcheck.BuildReport]) -> None:
    # 1000 x 1800 with 128 x 256 tiles: 8 x 8 tiles (the last column ragged) on a 1-D grid.
    for version in ("matmul_v4", "matmul_v5"):
        assert "(((m_size + 127) / 128) * 8), 1, 1), dim3(288, 1, 1)" in builds[version].source


def _function(source: str, name: str) -> str:
    """The text of a C++ function in the generated source (signature to its closing brace)."""
    start = re.search(rf"^static [^\n]*\b{name}\(", source, re.MULTILINE)
    assert start, f"{name} not found in the generated source"
    depth, i = 0, source.index("{", start.start())
    for j in range(i, len(source)):
        depth += {"{": 1, "}": -1}.get(source[j], 0)
        if depth == 0:
            return source[start.start() : j + 1]
    raise AssertionError(f"unbalanced braces in {name}")


def test_fast_divmod_magic_numbers_are_exact(builds: dict[str, buildcheck.BuildReport], tmp_path: Path) -> None:
    """The raster's fast_divmod: the host's magic numbers, run through the device's mul.hi + shr, divide exactly."""
    source = builds["matmul_v4"].source
    # The launch code computes each divisor's multiplier and shift with two host functions.
    magic = re.search(r"fast_div_m(?:_\d+)? = \(\(int32_t\)\((\w+)\(", source).group(1)
    shift = re.search(r"fast_div_s(?:_\d+)? = \(\(int32_t\)\((\w+)\(", source).group(1)
    runtime = _function(source, "tilus_cuda_fastdiv_runtime")
    assert "mul.hi.u32 %0, %1, %2; shr.u32 %0, %0, %3;" in runtime and "(a >> shift)" in runtime
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        pytest.skip("no host C++ compiler")
    harness = tmp_path / "fastdiv.cc"
    harness.write_text(
        "#include <stdint.h>\n#include <stdio.h>\n#define __forceinline__ inline\n"
        + _function(source, magic)
        + "\n"
        + _function(source, shift)
        + f"""
static int32_t device_div(int32_t a, int32_t m, int32_t s) {{  // what tilus_cuda_fastdiv_runtime computes
  if (m == 0) return a >> s;
  return (int32_t)((uint32_t)(((uint64_t)(uint32_t)a * (uint32_t)m) >> 32) >> s);
}}
int main() {{
  int bad = 0;
  for (int32_t b = 1; b <= 4096; b++) {{
    int32_t m = (int32_t){magic}(b), s = (int32_t){shift}(b);
    for (int32_t a = 0; a < 64 * b; a++) if (device_div(a, m, s) != a / b) {{ printf("%d/%d\\n", a, b); bad++; break; }}
    for (int32_t a = 0x7fffffff; a > 0x7fffffff - 4 * b; a--)
      if (device_div(a, m, s) != a / b) {{ printf("%d/%d\\n", a, b); bad++; break; }}
  }}
  return bad != 0;
}}
"""
    )
    subprocess.run([compiler, "-O2", str(harness), "-o", str(tmp_path / "fastdiv")], check=True)
    done = subprocess.run([str(tmp_path / "fastdiv")], capture_output=True, text=True)
    wrong = sorted({int(line.split("/")[1]) for line in done.stdout.split()})
    assert done.returncode == 0, f"fast_divmod divides wrongly by {len(wrong)} of 4096 divisors, e.g. {wrong[:8]}"
