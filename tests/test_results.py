"""The data layer: the schema-2 results file (validation, merging, atomic writes) and the paired statistics."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

import fake_results
from matmul_data import files, model, paths, results, stats

_DELETE = object()


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        data = data[int(key)] if isinstance(data, list) else data[key]
    if value is _DELETE:
        del data[last]
    else:
        data[last] = value


# --- names and paths ---


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H200", "nvidia-h200"),
        ("NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"),
        (" GH200 (480GB) ", "gh200-480gb"),
    ],
)
def test_slug_lowercases_and_joins_words_with_single_dashes(name: str, expected: str) -> None:
    assert results.slug(name) == expected
    assert results.path_for_gpu(name) == paths.RESULTS_DIR / f"{expected}.json"


def test_slug_rejects_a_name_with_nothing_to_name_a_file_after() -> None:
    with pytest.raises(results.ResultsError, match="no letters or digits"):
        results.slug(" -- ")


def test_results_file_follows_the_environment_variable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "other.json"
    monkeypatch.setenv(paths.ENV_RESULTS, str(path))
    with pytest.raises(results.ResultsError, match=paths.ENV_RESULTS):  # named but absent: a typo, not "none"
        results.load_default()
    results.write_atomic(path, fake_results.typed(fake_results.fake_file()))
    assert results.load_default() == fake_results.fake_file()


# --- validation ---


def test_the_fake_file_is_valid_and_round_trips_through_a_file(tmp_path: Path) -> None:
    data = fake_results.fake_file()
    path = tmp_path / "nvidia-h200.json"
    results.write_atomic(path, fake_results.typed(data))
    assert results.load(path) == data


def test_runs_are_optional_and_nullable_fields_may_be_null() -> None:
    data = fake_results.provenance()
    data["gpu"]["published_dense_fp16_tflops"] = data["gpu"]["published_source"] = None
    data["gpu"]["power_limit_w"] = None
    results.validate(data)
    data = fake_results.fake_file()
    for row in data["ladder"]["rows"].values():
        row["sm_clock_mhz"] = row["power_w"] = row["counters"] = None
    results.validate(data)


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("schema", 1, "'schema' must be 3"),
        ("gpu.name", "", "'gpu.name' must be a non-empty string"),
        ("gpu.sm_count", 0, "'gpu.sm_count' must be an integer >= 1"),
        ("gpu.power_limit_w", _DELETE, "'gpu.power_limit_w' is missing"),
        ("gpu.published_source", None, "'gpu.published_source' must be given exactly when"),
        ("software.torch", _DELETE, "'software.torch' is missing"),
        ("method.interval", "", "'method.interval' must be a non-empty string"),
        ("method.repeats", 0, "'method.repeats' must be an integer >= 1"),
        ("problem.k", 8192.0, "'problem.k' must be an integer"),
        ("problem.m", 4096, "'ladder.shape' must be the problem's shape"),
        ("ladder.date", "30/11/2026", "'ladder.date' must be a date YYYY-MM-DD"),
        ("ladder.warmup", -1, "'ladder.warmup' must be an integer >= 0"),
        ("ladder.rows.v1.latency_ms", float("nan"), "'ladder.rows.v1.latency_ms' must be a positive number"),
        ("ladder.rows.v1.tflops", 600.0, "'ladder.rows.v1.tflops' does not match latency_ms"),
        ("ladder.rows.v1.ratio_to_cublas.low", 2.0, "'ladder.rows.v1.ratio_to_cublas' must have low <= median"),
        ("ladder.rows.v1.step.over", "v99", "'ladder.rows.v1.step.over' must name another row"),
        ("ladder.rows.v1.step.over", "v1", "'ladder.rows.v1.step.over' must name another row"),
        ("ladder.rows.cublas.ratio_to_cublas.high", 1.01, "must be exactly 1 for cuBLAS itself"),
        ("ladder.rows.v1.config", [], "'ladder.rows.v1.config' must be an object"),
        ("ladder.rows.v1.counters", {"tensor_pipe_pct": "41%", "dram_throughput_pct": 2.0}, "tensor_pipe_pct"),
        ("ladder.rows.cublas", _DELETE, "has no cublas row"),
        ("sweep", {}, "'sweep' must be a list"),
        ("steps.0.rows.v6-chunks.kept", "yes", "'steps[0].rows.v6-chunks.kept' must be true or false"),
        ("steps.0.after", _DELETE, "'steps[0].after' is missing"),
    ],
)
def test_validation_names_the_first_bad_field(field: str, value: Any, message: str) -> None:
    data = fake_results.fake_file()
    _set(data, field, value)
    with pytest.raises(results.ResultsError, match=message.replace("(", r"\(").replace(".", r"\.").replace("[", r"\[")):
        results.validate(data)


def field_figure(shape: tuple[int, int, int], **info: str) -> dict[str, Any]:
    """A valid figure of the field section at ``shape``, labelled as matmul_data.field labels it."""
    (figure,) = fake_results.fake_sweep((shape,), peers=False)
    about = {"name": "made up", "source": "a layer", "kind": "forward", "half": "fitted"} | info
    figure["field"] = figure["runs"][0]["field"] = about
    return figure


def test_a_file_from_before_the_field_section_still_validates_and_reads_as_no_field() -> None:
    data = fake_results.fake_file()
    assert "field" not in data
    results.validate(data)
    assert results.field_runs(fake_results.typed(data)) == []
    assert [f.to_json() for f in fake_results.typed(data).figures] == [data["ladder"], *data["sweep"], *data["steps"]]


def test_the_field_section_is_validated_like_the_sweep_with_its_shape_s_labels() -> None:
    data = fake_results.fake_file() | {"field": [field_figure((4096, 50257, 1600), half="held-out")]}
    results.validate(data)
    read = fake_results.typed(data)
    assert results.field_runs(read, "held-out") == list(read.field) and results.field_runs(read, "fitted") == []
    data["field"].append(copy.deepcopy(data["field"][0]))
    with pytest.raises(results.ResultsError, match=r"field\[1\].*repeats the key"):
        results.validate(data)
    del data["field"][1]["field"]["half"]  # checked before the key
    with pytest.raises(results.ResultsError, match=r"'field\[1\]\.field\.half' is missing"):
        results.validate(data)


@pytest.mark.parametrize(
    ("impl", "value", "message"),
    [("cublas", -1, "must be an integer >= 0"), ("cublas", 2.5, "must be an integer >= 0"),
     ("v1", 3, "is the baseline's alone")],
)  # fmt: skip
def test_wrong_elements_marks_an_inexact_baseline_only(impl: str, value: Any, message: str) -> None:
    data = fake_results.fake_file()
    data["ladder"]["rows"]["cublas"]["wrong_elements"] = 3
    results.validate(data)
    assert results.inexact_baseline(fake_results.typed(data).ladder) == 3
    data["ladder"]["rows"][impl]["wrong_elements"] = value
    with pytest.raises(results.ResultsError, match=f"ladder.rows.{impl}.wrong_elements' {message}"):
        results.validate(data)


def test_validation_rejects_two_sweep_runs_at_one_shape() -> None:
    data = fake_results.fake_file()
    data["sweep"].append(copy.deepcopy(data["sweep"][0]))
    with pytest.raises(results.ResultsError, match=rf"sweep\[{len(data['sweep']) - 1}\].*repeats the key"):
        results.validate(data)


def test_load_of_a_missing_file_names_it(tmp_path: Path) -> None:
    with pytest.raises(results.ResultsError, match=r"nvidia-h200\.json: no results file"):
        results.load(tmp_path / "nvidia-h200.json")


def test_load_names_the_file_and_the_field_of_invalid_data(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    data = fake_results.fake_file()
    data["ladder"]["rows"]["v0"]["title"] = ""
    path.write_text(json.dumps(data))
    with pytest.raises(results.ResultsError, match=r"broken\.json.*ladder\.rows\.v0\.title"):
        results.load(path)


def test_load_names_the_file_when_it_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "truncated.json"
    path.write_text('{"schema": 2, "gpu": {')
    with pytest.raises(results.ResultsError, match=r"truncated\.json: not valid JSON"):
        results.load(path)


# --- reading ---


def test_peak_at_the_boost_clock_is_the_published_dense_fp16_peak() -> None:
    assert results.peak_tflops_at(fake_results.typed(fake_results.fake_file()), 1830) == pytest.approx(989.4, abs=0.1)


# --- merging ---


def merge_dicts(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """results.merge of two files given as dicts (the fakes'), as the dict it writes."""
    return results.merge(fake_results.typed(old), fake_results.typed(new)).to_json()


def test_merge_into_nothing_is_the_new_file() -> None:
    new = fake_results.fake_file()
    assert results.merge(None, fake_results.typed(new)).to_json() == new


def test_a_new_ladder_replaces_the_old_one_whole() -> None:
    old = fake_results.fake_file()
    new = fake_results.provenance() | {"ladder": fake_results.fake_ladder(("v0", "v1"))}
    merged = merge_dicts(old, new)
    assert set(merged["ladder"]["rows"]) == {"v0", "v1", "cublas"}  # never stitched from two sessions
    assert merged["sweep"] == old["sweep"] and merged["steps"] == old["steps"]


def test_a_file_without_a_ladder_keeps_the_old_ladder_and_takes_the_new_provenance() -> None:
    old = fake_results.fake_file()
    new = fake_results.provenance() | {"sweep": fake_results.fake_sweep(((1024, 1024, 1024),), peers=False)}
    new["software"]["torch"] = "2.12.0+cu130"
    merged = merge_dicts(old, new)
    assert merged["ladder"] == old["ladder"]
    assert merged["software"]["torch"] == "2.12.0+cu130"
    assert [r["shape"]["m"] for r in merged["sweep"]] == [2048, 4096, 8192, 2048, 1024]  # the new shape appended


def test_sweep_runs_are_replaced_by_shape_and_steps_runs_by_after_title_and_shape() -> None:
    old = fake_results.fake_file()
    sweep = fake_results.fake_sweep(((4096, 4096, 4096),), peers=False)
    sweep[0]["run_id"] = "new"
    steps = fake_results.fake_steps()
    steps[0]["run_id"] = "new"
    other = copy.deepcopy(steps[0]) | {"title": "another attempt"}
    merged = merge_dicts(old, fake_results.provenance() | {"sweep": sweep, "steps": [*steps, other]})
    assert [r["run_id"] for r in merged["sweep"]] == [
        fake_results.RUN_ID,
        "new",
        fake_results.RUN_ID,
        fake_results.RUN_ID,
    ]
    # The peers' run at 2048^3 is another rotation: a run without them replaces the figure without them only.
    peers = fake_results.fake_sweep(((2048, 2048, 2048),))[-1] | {"run_id": "with peers"}
    again = merge_dicts(merged, fake_results.provenance() | {"sweep": [peers]})
    assert [r["run_id"] for r in again["sweep"]] == [fake_results.RUN_ID, "new", fake_results.RUN_ID, "with peers"]
    assert [(r["title"], r["run_id"]) for r in merged["steps"]] == [
        (fake_results.STEPS_TITLE, "new"),
        ("another attempt", "new"),
    ]
    results.validate(merged)


def test_field_runs_are_replaced_by_shape_and_a_file_without_the_section_stays_without_it() -> None:
    old = fake_results.fake_file()
    assert "field" not in merge_dicts(old, fake_results.provenance() | {"sweep": [], "steps": []})
    first = merge_dicts(old, fake_results.provenance() | {"field": [field_figure((4096, 4096, 5000))]})
    again = field_figure((4096, 4096, 5000), name="newer")
    merged = merge_dicts(first, fake_results.provenance() | {"field": [again, field_figure((8, 8, 8))]})
    assert [f["field"]["name"] for f in merged["field"]] == ["newer", "made up"] and merged["sweep"] == old["sweep"]


def test_merge_refuses_another_gpu_and_a_kept_ladder_of_another_problem() -> None:
    old = fake_results.fake_file()
    with pytest.raises(results.ResultsError, match="one file per GPU model"):
        merge_dicts(old, fake_results.provenance("NVIDIA H100 80GB HBM3"))
    with pytest.raises(results.ResultsError, match="another problem size"):
        merge_dicts(old, fake_results.provenance(shape=(4096, 4096, 4096)))


# --- atomic writes ---


def test_invalid_data_is_not_written_and_the_old_file_stays(tmp_path: Path) -> None:
    path = tmp_path / "r.json"
    results.write_atomic(path, fake_results.typed(fake_results.fake_file()))
    before = path.read_bytes()
    bad = fake_results.fake_file()
    bad["ladder"]["rows"]["v2"]["tflops"] *= 2
    with pytest.raises(results.ResultsError, match=r"refusing to write invalid results.*ladder\.rows\.v2\.tflops"):
        results.write_atomic(path, fake_results.typed(bad))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["r.json"]


def test_a_crash_while_writing_leaves_the_old_file_whole_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.json"
    results.write_atomic(path, fake_results.typed(fake_results.fake_file()))
    before = path.read_bytes()

    def crash(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "fsync", crash)  # with the temporary file half written
    with pytest.raises(OSError, match="disk full"):
        results.write_atomic(path, fake_results.typed(fake_results.fake_file()))
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["r.json"]


def test_write_atomic_creates_the_directory_and_a_world_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "new" / "r.json"
    results.write_atomic(path, fake_results.typed(fake_results.fake_file()))
    assert path.stat().st_mode & 0o777 == 0o644


# --- paired statistics ---


def test_paired_ratios_divide_round_by_round_and_need_the_same_rounds() -> None:
    assert stats.paired_ratios([2.0, 3.0], [1.0, 1.5]) == [2.0, 2.0]
    with pytest.raises(ValueError, match="same rounds"):
        stats.paired_ratios([1.0, 2.0], [1.0])


def test_a_constant_ratio_has_a_zero_width_interval_whatever_the_clock() -> None:
    # The clock moves every round, but both impls of a round move with it: the ratio does not.
    clock = [1.0, 1.07, 0.93, 1.1, 0.95]
    ratios = stats.paired_ratios([1.5 * c for c in clock], [2.0 * c for c in clock])
    assert stats.interval([ratios, ratios]) == pytest.approx({"median": 0.75, "low": 0.75, "high": 0.75})


def test_the_interval_resamples_processes_so_two_disagreeing_processes_span_both() -> None:
    got = stats.interval([[1.0] * 5, [2.0] * 5])
    assert got == {"median": 1.5, "low": 1.0, "high": 2.0}


def test_the_interval_is_reproducible_and_contains_the_median() -> None:
    groups = [[0.9, 1.1, 1.0, 1.05], [0.97, 1.02, 1.01]]
    first, second = stats.interval(groups), stats.interval(groups)
    assert first == second
    assert first["low"] <= first["median"] == 1.01 <= first["high"]
    with pytest.raises(ValueError, match="no samples"):
        stats.interval([[], []])


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [(1.01, 1.2, stats.PAYS), (0.8, 0.99, stats.COSTS), (0.99, 1.01, stats.UNRESOLVED), (1.0, 1.0, stats.WITHIN)],
)
def test_a_step_pays_only_when_its_whole_interval_lies_above_one(low: float, high: float, verdict: str) -> None:
    assert results.verdict(model.Interval.of(median=(low + high) / 2, low=low, high=high)) == verdict


@pytest.mark.parametrize(
    ("low", "high", "verdict"),
    [
        (0.99, 1.01, stats.WITHIN),
        (0.97, 1.01, stats.UNRESOLVED),
        (1.01, 1.05, stats.UNRESOLVED),
        (1.02, 1.05, stats.PAYS),
    ],
)
def test_within_means_the_whole_interval_lies_inside_the_band(low: float, high: float, verdict: str) -> None:
    assert stats.band_verdict(low, high, 0.015) == verdict
