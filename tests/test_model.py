"""The typed results model (matmul_data.model): files decode to frozen objects and encode back to the same JSON, and
every structural rule names the dotted path of the field that breaks it."""

from __future__ import annotations

import copy
import dataclasses
import json
import os
import re
from pathlib import Path
from typing import Any

import pytest

import fake_field
import fake_results
from matmul_data import model, paths, results

COMMITTED = paths.RESULTS_DIR / "nvidia-h200.json"
_DELETE = object()


def _set(data: Any, dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for part in parents:
        data = data[int(part)] if isinstance(data, list) else data[part]
    if value is _DELETE:
        del data[last]
    elif isinstance(data, list):
        data[int(last)] = value
    else:
        data[last] = value


def _text(data: dict[str, Any]) -> str:
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def _every_section() -> dict[str, Any]:
    """A fake file with every section: ladder, sweep, steps (a try-it run among them), field and tryit."""
    data = fake_results.fake_file() | {"tryit": fake_results.fake_tryit()}
    data["steps"].append(fake_results.fake_tryit_run())
    data = fake_field.with_field(data)
    data["method"]["earlier_runs"] = {fake_results.RUN_ID: "timed before the warm-up was the kernel's own"}
    return data


# --- round trips ---


@pytest.mark.skipif(not COMMITTED.is_file(), reason="no committed results file")
def test_the_committed_file_round_trips_byte_for_byte() -> None:
    text = COMMITTED.read_text(encoding="utf-8")
    decoded = model.Results.from_json(json.loads(text))
    assert _text(decoded.to_json()) == text


def test_a_fake_file_with_every_section_round_trips_key_for_key_and_in_order() -> None:
    data = _every_section()
    assert _text(model.Results.from_json(data).to_json()) == _text(data)


def test_a_key_present_as_null_stays_null_and_an_absent_key_stays_absent() -> None:
    data = fake_results.fake_file()
    data["ladder"]["rows"]["v1"]["counters"] = None
    del data["ladder"]["rows"]["v2"]["counters"]
    rows = model.Results.from_json(data).to_json()["ladder"]["rows"]
    assert rows["v1"]["counters"] is None and "counters" not in rows["v2"]


def test_an_object_made_in_code_writes_its_declared_order_without_unset_optional_keys() -> None:
    ratio = model.Interval(high=1.2, low=1.0, median=1.1)
    assert list(ratio.to_json().items()) == [("median", 1.1), ("low", 1.0), ("high", 1.2)]


def test_a_replaced_field_keeps_the_order_read_and_a_newly_set_key_comes_last() -> None:
    step = model.Interval.from_json({"over": "v1", "median": 1.1, "low": 1.0, "high": 1.2})
    changed = dataclasses.replace(step, low=0.9, verdict="unresolved")
    assert list(changed.to_json()) == ["over", "median", "low", "high", "verdict"]
    assert changed.to_json()["low"] == 0.9


def test_decoded_objects_are_frozen_and_share_nothing_with_the_input() -> None:
    data = fake_results.fake_file()
    decoded = model.Results.from_json(data)
    with pytest.raises(dataclasses.FrozenInstanceError):
        decoded.gpu.name = "another"  # type: ignore[misc]
    data["ladder"]["rows"]["v3"]["config"]["stages"] = 99
    assert decoded.ladder is not None and decoded.ladder.rows["v3"].config != data["ladder"]["rows"]["v3"]["config"]


def test_the_typed_objects_read_as_attributes() -> None:
    decoded = model.Results.from_json(_every_section())
    assert decoded.ladder is not None and decoded.ladder.shape.mnk == fake_results.BENCH_SHAPE
    assert decoded.ladder.rows["v1"].step is not None and decoded.ladder.rows["v1"].step.over == "v0"
    assert [t.outcome for t in decoded.tryit] == ["exact", "wrong", "hangs", "does not build"]
    assert decoded.field[0].field is not None and decoded.field[0].field.half in ("fitted", "held-out")
    assert model.Results.from_json(fake_results.provenance()).sweep == ()  # an absent section reads as empty


# --- structure: each kind of rule names the field ---


@pytest.mark.parametrize(
    ("where", "value", "message"),
    [
        ("gpu", [], "'gpu' must be an object"),
        ("gpu.driver", _DELETE, "'gpu.driver' is missing"),
        ("gpu.driver", None, "'gpu.driver' must be a non-empty string"),  # not nullable
        ("software.python", "", "'software.python' must be a non-empty string"),
        ("gpu.sm_count", True, "'gpu.sm_count' must be an integer >= 1"),
        ("ladder.rows.cublas.wrong_elements", -1, "'ladder.rows.cublas.wrong_elements' must be an integer >= 0"),
        ("gpu.memory_gb", 0, "'gpu.memory_gb' must be a positive number"),
        ("ladder.warmup", 1.5, "'ladder.warmup' must be an integer >= 0"),
        ("ladder.rows.v2.counters.dram_throughput_pct", "20%",
         "'ladder.rows.v2.counters.dram_throughput_pct' must be a finite number"),
        ("tryit.0.checks.0.max_abs_err", -0.5, "'tryit[0].checks[0].max_abs_err' must be a finite number >= 0"),
        ("steps.0.rows.v6-chunks.kept", 1, "'steps[0].rows.v6-chunks.kept' must be true or false"),
        ("tryit.1.date", "2026-12", "'tryit[1].date' must be a date YYYY-MM-DD"),
        ("sweep.0.cublas_kernel.decoded.tile", [256], "'sweep[0].cublas_kernel.decoded.tile' must be two positive"),
        ("method.warmup", -5, "'method.warmup' must be an integer >= 0 or a non-empty string"),
        ("tryit", {}, "'tryit' must be a list"),
        ("ladder.runs", [], "'ladder.runs' must be a non-empty list of the runs merged"),
        ("tryit.0.edits", [["", "new"]], "'tryit[0].edits' must be a list of [old text, new text]"),
        ("ladder.rows.v1.config", [], "'ladder.rows.v1.config' must be an object"),
        ("ladder.runs.0.rows.v1.samples.ratio_to_cublas.0.1", "x",
         "'ladder.runs[0].rows.v1.samples.ratio_to_cublas[0][1]' must be a finite number"),
    ],
)  # fmt: skip
def test_each_rule_rejects_a_bad_value_and_names_the_field(where: str, value: Any, message: str) -> None:
    data = _every_section()
    data["sweep"][0]["cublas_kernel"] = {"name": "nvjet", "decoded": {"tile": [256, 128], "cluster": [1, 2],
                                                                      "stages": 4, "block_k": 64}}  # fmt: skip
    data["ladder"]["runs"][0]["rows"]["v1"]["samples"] = {"ratio_to_cublas": [[1.0, 1.0]]}
    model.Results.from_json(data)  # valid before the change
    _set(data, where, value)
    with pytest.raises(results.ResultsError, match=re.escape(f"field {message}")):
        model.Results.from_json(data)


def test_an_unknown_key_is_refused_with_its_path() -> None:
    data = fake_results.fake_file()
    data["ladder"]["rows"]["v1"]["latency_us"] = 1000.0
    with pytest.raises(results.ResultsError, match=r"'ladder\.rows\.v1\.latency_us' is not a key of Row"):
        model.Results.from_json(data)


def test_a_file_that_is_not_an_object_is_refused() -> None:
    with pytest.raises(results.ResultsError, match=r"'\(top level\)' must be an object"):
        model.Results.from_json([])


# --- reading a file ---


def test_read_gives_the_typed_file_of_what_load_gives_and_reads_it_once(tmp_path: Path) -> None:
    path = tmp_path / "nvidia-h200.json"
    results.write_atomic(path, fake_results.typed(fake_results.fake_file()))
    first = results.read(path)
    assert first.to_json() == results.load(path) and results.read(path) is first
    changed = fake_results.fake_file()
    changed["ladder"]["run_id"] = "later"
    results.write_atomic(path, fake_results.typed(changed))
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 1_000_000_000))
    assert results.read(path).ladder is not None and results.read(path).ladder.run_id == "later"


def test_read_names_the_file_and_the_field(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    data = copy.deepcopy(fake_results.fake_file())
    data["problem"]["dtype"] = ""
    path.write_text(json.dumps(data))
    with pytest.raises(results.ResultsError, match=r"broken\.json: field 'problem\.dtype' must be a non-empty"):
        results.read(path)
    with pytest.raises(results.ResultsError, match="no results file"):
        results.read(tmp_path / "absent.json")
