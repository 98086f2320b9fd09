"""The timed try-it with the most shared memory builds for sm_90a on a CPU machine, as the steps mode times it.

Only V5 with 4 stages of 48 KB: every other timed try-it is held to the shared-memory budget by arithmetic in
test_tryit.py, since each sm_90a build costs about 20 CPU-seconds (CI has two cores). The build runs in the
background with the versions' (tests/kernel_builds.py).
"""

from __future__ import annotations

from typing import Any

import pytest

import kernel_builds
from matmul_bench import buildcheck, kernels
from matmul_data import paths

pytestmark = pytest.mark.slow

SPECS = paths.ROOT / "specs"
KERNELS = paths.ROOT / "examples" / "hopper_matmul"
# M and N multiples of no tile, a partial last K-tile.
RAGGED = (1000, 3000, 520)
BUILT = ("try-v5-s4",)


def _spec() -> Any:
    return kernels.import_spec(SPECS / "tryit.py", "tryit")


def ring_bytes(config: dict[str, Any]) -> int:
    """The fp16 ring of A and B tiles a configuration allocates: stages x (block_m + block_n) x block_k x 2 bytes."""
    return config.get("num_stages", 1) * (config["block_m"] + config["block_n"]) * config["block_k"] * 2


SPEC = _spec()
for _variant in BUILT:  # registered at import, so that conftest starts them with the versions' builds
    _file, _cls, _config, _ = SPEC.VARIANTS[_variant]
    kernel_builds.EXPERIMENT_BUILDS[_variant] = (str(KERNELS / _file), _cls, dict(_config), RAGGED)


def test_the_built_try_it_is_the_timed_one_with_the_deepest_ring() -> None:
    timed = sorted({v for run in SPEC.RUNS.values() for v in run["variants"]},
                   key=lambda v: ring_bytes(SPEC.VARIANTS[v][2]), reverse=True)  # fmt: skip
    deepest, runner_up = (ring_bytes(SPEC.VARIANTS[v][2]) for v in timed[:2])
    assert deepest > runner_up, f"two timed try-its share the deepest ring: {timed[:2]}"
    assert BUILT == (timed[0],), f"build {timed[0]} ({deepest} bytes of ring), the deepest timed try-it"


@pytest.mark.parametrize("variant", BUILT)
def test_deepest_timed_try_its_build_without_spills_within_shared_memory(variant: str) -> None:
    report = kernel_builds.built_experiment(variant)
    assert (report.spill_stores, report.spill_loads, report.stack_bytes) == (0, 0, 0), report.ptxas_report
    facts = buildcheck.launch_facts(report.source)
    ring = ring_bytes(SPEC.VARIANTS[variant][2])
    assert ring <= facts["shared_bytes"] <= 227 * 1024  # the most one block may use on Hopper
    assert "wgmma.mma_async.sync.aligned" in report.ptx
