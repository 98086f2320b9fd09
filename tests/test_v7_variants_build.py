"""The V7 candidates (experiments/v7_variants.py) build for sm_90a on a CPU machine, as the steps run times them.

Each tiling of the "v7 round 1" run is built once (the raster-group knob changes no code), at M and N that
are multiples of no tile and a partial last K-tile, with N % 8 == 0 so that C still leaves by TMA; the PTX
holds the ping-pong schedule. The builds run in the background with the versions' (tests/kernel_builds.py).
"""

from __future__ import annotations

import re
from typing import Any

import pytest

import kernel_builds
from matmul_bench import buildcheck, kernels
from matmul_data import paths

pytestmark = pytest.mark.slow

EXPERIMENTS = paths.ROOT / "experiments"
SPECS = paths.ROOT / "specs"
RAGGED = (1000, 3000, 520)


def _steps() -> Any:
    return kernels.import_spec(SPECS / "steps.py", "steps")


STEPS = _steps()
V7_VARIANTS = [v for v in STEPS.RUNS["v7 round 1"]["variants"] if STEPS.VARIANTS[v][0] == "v7_variants.py"]


def _code_config(variant: str) -> tuple[Any, ...]:
    """What changes the generated code: every knob but the raster group size (a runtime divisor)."""
    return tuple(sorted((k, v) for k, v in STEPS.VARIANTS[variant][2].items() if k != "swizzle_size"))


# One build per distinct tiling, registered at import so that conftest starts it with the versions' builds.
BUILT = list({_code_config(v): v for v in reversed(V7_VARIANTS)}.values())
for _variant in BUILT:
    _file, _cls, _config, _ = STEPS.VARIANTS[_variant]
    kernel_builds.EXPERIMENT_BUILDS[_variant] = (str(EXPERIMENTS / _file), _cls, dict(_config), RAGGED)


def built(variant: str) -> buildcheck.BuildReport:
    return kernel_builds.built_experiment(variant)


def test_run_compares_with_v6_as_it_is_now() -> None:

    run = STEPS.RUNS["v7 round 1"]
    assert run["after"] == "v6" and run["baseline"] == "v6" and run["kept"] == []
    file, cls, config, _ = STEPS.VARIANTS["v6"]
    assert (file, cls, config) == ("matmul_v6.py", "MatmulV6", kernels.load("matmul_v6").TUNED)
    assert V7_VARIANTS, run


@pytest.mark.parametrize("variant", BUILT)
def test_builds_without_spills_in_shared_memory(variant: str) -> None:
    report = built(variant)
    assert ".cta_group" not in report.ptx
    assert 0 < report.registers <= 224, report.ptxas_report  # 288 threads
    assert (report.spill_stores, report.spill_loads, report.stack_bytes) == (0, 0, 0), report.ptxas_report
    facts = buildcheck.launch_facts(report.source)
    assert facts["threads"] == 288 and facts["persistent_blocks"] == 132
    assert facts["shared_bytes"] <= 227 * 1024  # the most one block may use on Hopper


@pytest.mark.parametrize("variant", BUILT)
def test_ping_pong_schedule_is_in_the_ptx(variant: str) -> None:
    config = STEPS.VARIANTS[variant][2]
    ptx = built(variant).ptx
    wgmma = "m64n128k16" if config["block_n"] == 128 else "m64n256k16"
    assert f"wgmma.mma_async.sync.aligned.{wgmma}.f32.f16.f16" in ptx
    assert "wgmma.wait_group.sync.aligned 1;" in ptx and "wgmma.wait_group.sync.aligned 0;" in ptx
    # The turn handoff: each group waits (barrier.sync) on one named barrier and arrives, without waiting, on the
    # other's; hidet 0.2.0's barrier_arrive would print barrier.sync here.
    assert len(re.findall(r"^\s*barrier\.sync %r\d+, %r\d+;", ptx, re.MULTILINE)) == 2
    assert len(re.findall(r"^\s*barrier\.arrive %r\d+, %r\d+;", ptx, re.MULTILINE)) == 2
    source = built(variant).source
    assert set(re.findall(r"tilus_barrier_sync\((\d+), 256\)", source)) == {"14", "15"}
    assert set(re.findall(r"tilus_hopper_matmul_barrier_arrive\((\d+), 256\)", source)) == {"14", "15"}
    # Tilus's own per-group syncs keep ids 1 and 2, clear of the turn barriers.
    assert {int(i) for i in re.findall(r"bar\.cta\.sync (\d+), 128;", ptx)} == {1, 2}
    # C leaves by TMA from a staging buffer reused only once TMA has read it.
    assert "cp.async.bulk.tensor.2d.global.shared::cta" in ptx
    assert "cp.async.bulk.wait_group.read 0" in ptx and "fence.proxy.async.shared::cta" in ptx
    # Each stage has one reader: its empty barrier expects one arrival.
    assert not re.search(r"mbarrier_init_shared\([^;]*uint32_t\(2u\)\)", source)
