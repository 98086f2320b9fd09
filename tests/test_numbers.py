"""The numbers module: lookups, derived values and formats, with known answers, on made-up schema-2 data."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from fake_results import fake_file, provenance
from matmul_site import numbers, pagecheck, results, stats


@pytest.fixture(scope="module")
def _fake() -> dict[str, Any]:
    return fake_file()  # a few seconds of bootstrapping: made once, copied per test


@pytest.fixture
def data(_fake: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(_fake)


def _set_step(data: dict[str, Any], impl: str, median: float, low: float, high: float) -> None:
    data["ladder"]["rows"][impl]["step"].update(median=median, low=low, high=high)


def test_row_values_print_with_their_units(data: dict[str, Any]) -> None:
    row = data["ladder"]["rows"]["v3"]
    assert numbers.render(data, "v3.tflops") == f"{row['tflops']:.0f} TFLOPS"
    assert numbers.render(data, "v3.ms") == f"{row['latency_ms']:.3f} ms"
    assert numbers.render(data, "v3.sm_clock") == "1755 MHz"
    assert numbers.render(data, "v3.power") == "690 W"
    assert numbers.render(data, "v3.tflops:num") == f"{row['tflops']:.0f}"
    assert numbers.render(data, "v3.config") == "block_m=128, block_n=128, block_k=64, num_stages=3"
    assert numbers.render(data, "cublas.config") == "defaults (no tuning knobs)"
    assert numbers.render(data, "gpu.name") == "NVIDIA H200"
    assert numbers.render(data, "gpu.peak") == "989.4 TFLOPS"
    assert numbers.render(data, "problem.shape") == "8192\u00d78192\u00d78192"
    assert numbers.render(data, "v3.over") == "V2"


def test_a_ratio_prints_its_median_and_95_percent_interval() -> None:
    interval = {"median": 0.9712, "low": 0.9604, "high": 0.9833}
    assert numbers.format_interval(interval) == "0.97\u00d7 (0.96\u20130.98)"
    assert numbers.format_interval(interval, "pct") == "97% (96\u201398%)"
    assert numbers.format_interval(interval, "x") == "0.97\u00d7"


def test_printed_interval_never_contradicts_its_verdict() -> None:
    # 1.004 (1.001-1.008) pays; at two decimals it would print (1.00-1.01) and look like noise.
    assert numbers.format_interval({"median": 1.004, "low": 1.001, "high": 1.008}) == "1.004\u00d7 (1.001\u20131.008)"
    assert numbers.format_interval({"median": 0.996, "low": 0.992, "high": 0.9991}) == "0.996\u00d7 (0.992\u20130.999)"
    assert numbers.format_interval({"median": 1.0, "low": 0.97, "high": 1.02}) == "1.00\u00d7 (0.97\u20131.02)"


def test_verdict_roles_follow_the_rule(data: dict[str, Any]) -> None:
    _set_step(data, "v2", 1.04, 1.02, 1.06)
    _set_step(data, "v3", 0.99, 0.97, 1.02)
    _set_step(data, "v5", 0.93, 0.91, 0.95)
    assert numbers.render_verdict(data, "v2.step") == "pays: 1.04\u00d7 (1.02\u20131.06)"
    assert numbers.render_verdict(data, "v3.step") == "is within noise: 0.99\u00d7 (0.97\u20131.02)"
    assert numbers.render_verdict(data, "v5.step") == "costs: 0.93\u00d7 (0.91\u20130.95)"
    assert numbers.render(data, "v3.verdict") == "is within noise"
    assert numbers.verdict_of(data, "v5.step") == stats.COSTS


def test_ratio_verdict_is_against_the_same_runs_cublas(data: dict[str, Any]) -> None:
    row = data["ladder"]["rows"]["v6"]
    row["ratio_to_cublas"] = {"median": 0.99, "low": 0.98, "high": 1.01}
    assert numbers.render_verdict(data, "v6.ratio") == "is within noise of cuBLAS: 0.99\u00d7 (0.98\u20131.01)"
    row["ratio_to_cublas"] = {"median": 0.95, "low": 0.94, "high": 0.96}
    assert numbers.render_verdict(data, "v6.ratio:pct") == "is behind cuBLAS: 95% (94\u201396%)"


def test_ladder_lists_steps_by_verdict(data: dict[str, Any]) -> None:
    for impl in ("v1", "v2", "v4", "v6", "v7"):
        _set_step(data, impl, 1.1, 1.05, 1.15)
    _set_step(data, "v3", 1.0, 0.98, 1.02)
    _set_step(data, "v5", 0.95, 0.94, 0.96)
    assert numbers.render(data, "ladder.pays") == "V1, V2, V4, V6, V7"
    assert numbers.render(data, "ladder.within_noise") == "V3"
    assert numbers.render(data, "ladder.costs") == "V5"
    _set_step(data, "v5", 1.0, 0.98, 1.02)
    assert numbers.render(data, "ladder.costs") == "none"


def test_peak_at_the_measured_clock_is_sms_times_4096_flop_per_clock(data: dict[str, Any]) -> None:
    row = data["ladder"]["rows"]["v6"]
    row["sm_clock_mhz"] = 1500.0
    peak = 132 * 4096 * 1500e6 / 1e12  # 811.0 TFLOPS
    assert numbers.peak_at_clock(data, row) == pytest.approx(peak)
    assert numbers.render(data, "v6.peak_at_clock") == "811 TFLOPS"
    assert numbers.render(data, "v6.peak_fraction") == f"{100 * row['tflops'] / peak:.0f}%"
    assert numbers.render(data, "v6.datasheet_fraction") == f"{100 * row['tflops'] / 989.4:.0f}%"
    row["sm_clock_mhz"] = None
    assert numbers.render(data, "v6.peak_fraction") == numbers.NOT_MEASURED
    assert numbers.render(data, "v6.sm_clock") == numbers.NOT_RECORDED


def test_sweep_and_steps_values_are_addressed_by_shape_and_run(data: dict[str, Any]) -> None:
    run = data["sweep"][1]
    shape = numbers.shape_key(run["shape"])
    expected = numbers.format_interval(run["rows"]["v6"]["ratio_to_cublas"])
    assert numbers.render(data, f"sweep/{shape}/v6.ratio") == expected
    assert numbers.render(data, "sweep/1x2x3/v6.ratio") == numbers.NOT_MEASURED
    steps = data["steps"][0]
    by_after = numbers.render(data, "steps/v6/v6-rows-sw16.step")
    assert by_after == numbers.format_interval(steps["rows"]["v6-rows-sw16"]["step"])
    assert numbers.render(data, f"steps/{steps['run_id']}/v6-rows-sw16.step") == by_after
    assert numbers.render(data, "steps/v6/v6-rows-sw16.kept") == "kept"
    assert numbers.render(data, "steps/v6/v6-chunks.kept") == "not kept"
    assert numbers.render(data, "steps/v6/v6-rows.step") == numbers.NOT_MEASURED  # the baseline has no step


def test_a_row_in_two_steps_runs_resolves_to_the_run_where_it_is_a_step(data: dict[str, Any]) -> None:
    second = copy.deepcopy(data["steps"][0]) | {"run_id": "second", "title": "another try"}
    second["rows"]["v6-rows-sw16"].pop("step")
    data["steps"].append(second)
    assert numbers.render(data, "steps/v6/v6-rows-sw16.step") != numbers.NOT_MEASURED
    second["rows"]["v6-chunks"]["step"] = dict(data["steps"][0]["rows"]["v6-chunks"]["step"])
    with pytest.raises(numbers.SpecError, match="several steps runs"):
        numbers.render(data, "steps/v6/v6-chunks.step")


def test_sweep_verdicts_count_shapes_by_the_rule(data: dict[str, Any]) -> None:
    ratios = [(0.9, 0.88, 0.92), (1.0, 0.98, 1.01), (1.05, 1.02, 1.08)]
    for run, (median, low, high) in zip(data["sweep"], ratios, strict=True):
        run["rows"]["v6"]["ratio_to_cublas"] = {"median": median, "low": low, "high": high}
    assert numbers.render(data, "sweep.v6.verdicts") == "behind cuBLAS at 1 of 3 shapes, within noise at 1, ahead at 1"


def test_no_file_or_no_ladder_renders_not_measured_yet() -> None:
    bare = provenance()
    for spec in ("v3.tflops", "v3.ratio", "cublas.tflops", "ladder.pays", "ladder.date", "sweep.v6.verdicts"):
        assert numbers.render(None, spec) == numbers.NOT_MEASURED
        assert numbers.render(bare, spec) == numbers.NOT_MEASURED
    assert numbers.render_verdict(bare, "v3.step") == numbers.NOT_MEASURED
    assert numbers.render(bare, "gpu.name") == "NVIDIA H200"


def test_unknown_fields_styles_and_scopes_are_spec_errors(data: dict[str, Any]) -> None:
    for spec in ("v3.tflop", "v3.tflops:percent", "nonsense.tflops", "v3", "gpu.nonsense", "later/v3.tflops"):
        with pytest.raises(numbers.SpecError):
            numbers.render(data, spec)
    with pytest.raises(numbers.SpecError, match="step or a ratio"):
        numbers.render_verdict(data, "v3.tflops")


def test_load_rereads_a_file_only_when_it_changes(tmp_path: Path, data: dict[str, Any]) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    first = numbers.load(path)
    assert numbers.load(path) is first
    data["gpu"]["name"] = "Another Board"
    path.write_text(json.dumps(data))
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    assert numbers.load(path)["gpu"]["name"] == "Another Board"
    assert numbers.load(tmp_path / "absent.json") is None


def test_numbers_held_include_derived_values(data: dict[str, Any]) -> None:
    held = pagecheck.numbers_held(data)
    row = data["ladder"]["rows"]["v6"]
    for value in (
        row["tflops"],
        100 * row["ratio_to_cublas"]["low"],
        results.peak_tflops_at(data, 1755.0),
        100 * row["tflops"] / results.peak_tflops_at(data, 1755.0),
    ):
        assert any(v == pytest.approx(value) for v in held), value
