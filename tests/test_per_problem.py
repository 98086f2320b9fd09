"""A kernel file with ``config_for`` (V8) is built per problem: the benchmark and the tests pin the rule's choice.

CPU only: nothing here launches a kernel; it checks which configuration each problem gets and that each
configuration is pinned once.
"""

from __future__ import annotations

from matmul_bench import kernels
from matmul_data import versions

matmul_v8 = kernels.load("matmul_v8")
common = kernels.load("common")

V8 = str(versions.get("v8").path)


def test_v8_with_nothing_pinned_is_its_rule_and_with_a_config_is_that_one_build() -> None:
    ruled = kernels.make_kernel(V8, "MatmulV8", None)
    assert isinstance(ruled, common.PerProblem) and ruled.rule is matmul_v8.config_for
    pinned = kernels.make_kernel(V8, "MatmulV8", matmul_v8.TUNED)
    assert not isinstance(pinned, common.PerProblem) and pinned.script_cls.debug_schedule == matmul_v8.TUNED


def test_the_rule_pins_one_kernel_per_configuration_and_remembers_the_last_it_used() -> None:
    ruled = common.PerProblem(matmul_v8.MatmulV8, matmul_v8.config_for)
    big = ruled.kernel_for(8192, 8192, 8192)
    assert ruled.last_config == matmul_v8.TUNED  # V7's tile at the chapter's shape
    assert ruled.kernel_for(16384, 16384, 16384) is big  # the same tile again: the same pinned kernel
    other = ruled.kernel_for(5120, 5120, 5120)
    assert other is not big and ruled.last_config["block_m"] == ruled.last_config["block_n"] == 192
    assert common.tuned_config(ruled) == ruled.last_config
    assert other.script_cls.debug_schedule == matmul_v8.config_for(5120, 5120, 5120)


def test_every_recorded_v8_row_ran_the_configuration_the_rule_picks_now() -> None:
    """A change to the rule that moves a recorded shape's tile must come with that shape measured again."""
    from matmul_data import results

    data = results.load_default()
    assert data is not None
    figures = [data["ladder"], *data["sweep"], *data["steps"]]
    checked = 0
    for figure in figures:
        shape = (figure["shape"]["m"], figure["shape"]["n"], figure["shape"]["k"])
        for run in [figure, *figure["runs"]]:
            if "v8" in run["rows"]:
                assert run["rows"]["v8"]["config"] == matmul_v8.config_for(*shape), (figure.get("title"), shape)
                checked += 1
    assert checked > 0
