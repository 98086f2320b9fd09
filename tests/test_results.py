"""The results file contract: names, validation, merging, atomic writes, and the committed files."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from matmul_site import results
from fake_results import provenance

GPU = "NVIDIA H200"
SHAPE = (8192, 8192, 8192)


def tflops(m: int, n: int, k: int, ms: float) -> float:
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def make_entry(latency_ms: float, cublas_ms: float | None = 1.5, technique: str = "TMA + WGMMA") -> dict[str, Any]:
    """An entry whose derived numbers follow from its latency, as the benchmark computes them."""
    entry: dict[str, Any] = {
        "latency_ms": latency_ms,
        "tflops": tflops(*SHAPE, latency_ms),
        "fraction_of_cublas": 1.0 if cublas_ms is None else cublas_ms / latency_ms,
        "process_latencies_ms": [latency_ms * 0.99, latency_ms, latency_ms * 1.01],
        "config": {} if cublas_ms is None else {"block_m": 128, "block_n": 128, "block_k": 64},
        "counters": {"tensor_pipe_pct": 41.0, "dram_throughput_pct": 22.0},
        "date": "2026-11-30",
        "git_commit": "abc1234",
        "technique": technique,
    }
    if cublas_ms is not None:
        entry["cublas_latency_ms"] = cublas_ms
    return entry


def make_row(impl: str, m: int, n: int, k: int, latency_ms: float) -> dict[str, Any]:
    return {"impl": impl, "m": m, "n": n, "k": k, "latency_ms": latency_ms, "tflops": tflops(m, n, k, latency_ms),
            "date": "2026-11-30"}  # fmt: skip


def make_data(entries: dict[str, Any] | None = None, sweep: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {
        **provenance(GPU, SHAPE),
        "entries": {"v0": make_entry(3.2), "cublas": make_entry(1.5, None, "cuBLAS via torch.matmul")}
        if entries is None
        else entries,
        "sweep": [make_row("v6", 4096, 4096, 4096, 0.2)] if sweep is None else sweep,
    }


# --- names and paths ---


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("NVIDIA H200", "nvidia-h200"),
        ("NVIDIA H100 80GB HBM3", "nvidia-h100-80gb-hbm3"),
        ("NVIDIA H100 PCIe", "nvidia-h100-pcie"),
        ("  NVIDIA  GH200 (480GB) ", "nvidia-gh200-480gb"),
    ],
)
def test_slug_lowercases_and_joins_words_with_single_dashes(name: str, expected: str) -> None:
    assert results.slug(name) == expected


def test_slug_rejects_a_name_with_nothing_to_name_a_file_after() -> None:
    with pytest.raises(results.ResultsError, match="no letters or digits"):
        results.slug(" -- ")


def test_default_path_for_a_gpu_is_its_slug_under_plots_results() -> None:
    path = results.default_path("NVIDIA H200")
    assert path == results.results_dir() / "nvidia-h200.json"
    assert results.results_dir().parts[-2:] == ("plots", "results")


def test_default_path_without_a_name_needs_exactly_one_committed_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(results, "results_dir", lambda: tmp_path)
    with pytest.raises(results.ResultsError, match="nox -s bench"):
        results.default_path()
    (tmp_path / "nvidia-h200.json").write_text("{}")
    assert results.default_path() == tmp_path / "nvidia-h200.json"
    (tmp_path / "nvidia-h100-pcie.json").write_text("{}")
    with pytest.raises(results.ResultsError, match="several results files"):
        results.default_path()


# --- validation ---


def test_valid_data_passes_validation_and_round_trips_through_a_file(tmp_path: Path) -> None:
    data = make_data()
    results.validate(data)
    path = tmp_path / "nvidia-h200.json"
    results.write_atomic(path, data)
    assert results.load(path) == data


def test_counters_may_be_null_and_sweep_may_be_empty() -> None:
    data = make_data(sweep=[])
    data["entries"]["v0"]["counters"] = None
    data["gpu"]["published_dense_fp16_tflops"] = None
    data["gpu"]["published_source"] = None
    results.validate(data)


def _set(data: dict[str, Any], dotted: str, value: Any) -> None:
    *parents, last = dotted.split(".")
    for key in parents:
        data = data[key]
    if value is _DELETE:
        del data[last]
    else:
        data[last] = value


_DELETE = object()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("schema", 2, "'schema' must be 1"),
        ("gpu.name", "", "'gpu.name' must be a non-empty string"),
        ("gpu.sm_count", 0, "'gpu.sm_count' must be an integer >= 1"),
        ("gpu.clocks_mhz.sm_seen_during_run", "1980", "'gpu.clocks_mhz.sm_seen_during_run' must be a list"),
        ("gpu.published_source", None, "'gpu.published_source' must be given exactly when"),
        ("software.torch", _DELETE, "'software.torch' is missing"),
        ("method.repeats", 0, "'method.repeats' must be an integer >= 1"),
        ("problem.k", 8192.0, "'problem.k' must be an integer"),
        ("entries.v0.latency_ms", -3.2, "'entries.v0.latency_ms' must be a positive number"),
        ("entries.v0.latency_ms", float("nan"), "'entries.v0.latency_ms' must be a positive number"),
        ("entries.v0.tflops", 342.5, "'entries.v0.tflops' does not match latency_ms"),
        ("entries.v0.fraction_of_cublas", 0.9, "'entries.v0.fraction_of_cublas' must equal cublas_latency_ms"),
        ("entries.v0.cublas_latency_ms", _DELETE, "'entries.v0.cublas_latency_ms' is missing"),
        ("entries.v0.process_latencies_ms", [], "'entries.v0.process_latencies_ms' must be a non-empty list"),
        ("entries.v0.counters", {"tensor_pipe_pct": "41%", "dram_throughput_pct": 22.0}, "tensor_pipe_pct"),
        ("entries.v0.date", "30/11/2026", "'entries.v0.date' must be a date YYYY-MM-DD"),
        ("entries.cublas.fraction_of_cublas", 0.5, "must be 1.0 for cuBLAS itself"),
        ("entries.V0", make_entry(3.2), "'entries.V0' has a name that is neither"),
        ("sweep", {}, "'sweep' must be a list"),
    ],
)
def test_validation_names_the_first_bad_field(field: str, value: Any, message: str) -> None:
    data = make_data()
    _set(data, field, value)
    with pytest.raises(results.ResultsError, match=message.replace("(", r"\(").replace(".", r"\.")):
        results.validate(data)


def test_validation_rejects_a_sweep_row_whose_tflops_do_not_follow_from_its_latency() -> None:
    data = make_data()
    data["sweep"][0]["tflops"] *= 1.1
    with pytest.raises(results.ResultsError, match=r"sweep\[0\]\.tflops"):
        results.validate(data)


def test_validation_rejects_two_sweep_rows_for_one_impl_and_shape() -> None:
    data = make_data(sweep=[make_row("v6", 4096, 4096, 4096, 0.2), make_row("v6", 4096, 4096, 4096, 0.3)])
    with pytest.raises(results.ResultsError, match=r"sweep\[1\]"):
        results.validate(data)


def test_load_of_a_missing_file_says_how_to_create_it(tmp_path: Path) -> None:
    path = tmp_path / "nvidia-h200.json"
    with pytest.raises(results.ResultsError, match="nox -s bench") as info:
        results.load(path)
    assert str(path) in str(info.value)
    assert "Hopper" in str(info.value)


def test_load_names_the_file_and_the_field_of_invalid_data(tmp_path: Path) -> None:
    path = tmp_path / "broken.json"
    data = make_data()
    data["entries"]["v0"]["date"] = "yesterday"
    path.write_text(json.dumps(data))
    with pytest.raises(results.ResultsError, match=r"broken\.json.*entries\.v0\.date"):
        results.load(path)


def test_load_names_the_file_when_it_is_not_json(tmp_path: Path) -> None:
    path = tmp_path / "truncated.json"
    path.write_text('{"schema": 1, "gpu": {')
    with pytest.raises(results.ResultsError, match=r"truncated\.json: not valid JSON"):
        results.load(path)


# --- reading entries ---


def test_entry_returns_a_measured_entry_and_explains_an_absent_one() -> None:
    data = make_data()
    assert results.entry(data, "v0")["latency_ms"] == 3.2
    with pytest.raises(results.ResultsError, match=r"v3 is not in the results \(measured: cublas, v0\).*--versions v3"):
        results.entry(data, "v3")


def test_versions_lists_measured_versions_in_numeric_order_without_cublas() -> None:
    entries = {name: make_entry(3.0) for name in ("v10", "v2", "v0", "v1")}
    entries["cublas"] = make_entry(1.5, None)
    assert results.versions(make_data(entries=entries)) == ["v0", "v1", "v2", "v10"]


# --- merging ---


def test_merge_into_nothing_is_a_copy_of_the_new_run() -> None:
    new = make_data()
    merged = results.merge(None, new)
    assert merged == new and merged is not new
    merged["entries"]["v0"]["latency_ms"] = 9.9
    assert new["entries"]["v0"]["latency_ms"] == 3.2


def test_merge_replaces_same_named_entries_and_keeps_the_others() -> None:
    old = make_data(entries={"v0": make_entry(3.2), "v1": make_entry(2.0), "cublas": make_entry(1.5, None)})
    new = make_data(entries={"v1": make_entry(1.9)}, sweep=[])
    new["software"]["torch"] = "2.12.0+cu130"
    merged = results.merge(old, new)
    assert set(merged["entries"]) == {"v0", "v1", "cublas"}
    assert merged["entries"]["v1"]["latency_ms"] == 1.9
    assert merged["entries"]["v0"] == old["entries"]["v0"]
    assert merged["software"]["torch"] == "2.12.0+cu130"  # provenance is the latest run's
    assert merged["sweep"] == old["sweep"]
    results.validate(merged)


def test_merge_replaces_sweep_rows_by_impl_and_shape_and_keeps_the_rest() -> None:
    old_rows = [make_row("v6", 4096, 4096, 4096, 0.20), make_row("cublas", 4096, 4096, 4096, 0.19),
                make_row("v6", 1024, 1024, 1024, 0.01)]  # fmt: skip
    new_rows = [make_row("v6", 4096, 4096, 4096, 0.18), make_row("v6", 8192, 4096, 14336, 1.0)]
    merged = results.merge(make_data(sweep=old_rows), make_data(entries={}, sweep=new_rows))
    by_key = {(r["impl"], r["m"], r["n"], r["k"]): r["latency_ms"] for r in merged["sweep"]}
    assert by_key == {
        ("v6", 4096, 4096, 4096): 0.18,
        ("cublas", 4096, 4096, 4096): 0.19,
        ("v6", 1024, 1024, 1024): 0.01,
        ("v6", 8192, 4096, 14336): 1.0,
    }
    assert len(merged["sweep"]) == 4
    assert set(merged["entries"]) == {"v0", "cublas"}
    results.validate(merged)


def test_merge_refuses_another_gpu_or_another_problem() -> None:
    other_gpu = make_data()
    other_gpu["gpu"]["name"] = "NVIDIA H100 PCIe"
    with pytest.raises(results.ResultsError, match="one file per GPU model"):
        results.merge(make_data(), other_gpu)
    other_problem = make_data(entries={}, sweep=[])
    other_problem["problem"]["m"] = 4096
    with pytest.raises(results.ResultsError, match="rerun every entry"):
        results.merge(make_data(), other_problem)


# --- atomic writes ---


def _leftovers(directory: Path, keep: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name != keep)


def test_write_atomic_refuses_invalid_data_and_leaves_the_old_file(tmp_path: Path) -> None:
    path = tmp_path / "nvidia-h200.json"
    results.write_atomic(path, make_data())
    before = path.read_bytes()
    bad = make_data()
    bad["entries"]["v0"]["latency_ms"] = 0
    with pytest.raises(results.ResultsError, match=r"nvidia-h200\.json: refusing to write.*entries\.v0\.latency_ms"):
        results.write_atomic(path, bad)
    assert path.read_bytes() == before
    assert _leftovers(tmp_path, path.name) == []


def test_a_crash_while_writing_leaves_the_old_file_whole_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "nvidia-h200.json"
    results.write_atomic(path, make_data())
    before = path.read_bytes()
    real_dump = json.dump

    def dump_half_then_crash(obj: Any, f: Any, **kwargs: Any) -> None:
        text = json.dumps(obj, **kwargs)
        f.write(text[: len(text) // 2])  # half a file reaches the temp file...
        raise OSError("disk full")  # ...then the writer dies

    monkeypatch.setattr(results.json, "dump", dump_half_then_crash)
    newer = make_data(entries={"v0": make_entry(3.0), "cublas": make_entry(1.5, None)})
    with pytest.raises(OSError, match="disk full"):
        results.write_atomic(path, newer)
    monkeypatch.setattr(results.json, "dump", real_dump)
    assert path.read_bytes() == before
    assert _leftovers(tmp_path, path.name) == []
    results.load(path)


def test_a_failed_rename_leaves_the_old_file_and_no_temp_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "nvidia-h200.json"
    results.write_atomic(path, make_data())
    before = path.read_bytes()

    def refuse(src: Any, dst: Any) -> None:
        raise PermissionError("read-only")

    monkeypatch.setattr(results.os, "replace", refuse)
    with pytest.raises(PermissionError):
        results.write_atomic(path, make_data(sweep=[]))
    assert path.read_bytes() == before
    assert _leftovers(tmp_path, path.name) == []


def test_write_atomic_creates_the_directory_and_a_world_readable_file(tmp_path: Path) -> None:
    path = tmp_path / "plots" / "results" / "nvidia-h200.json"
    results.write_atomic(path, make_data())
    assert json.loads(path.read_text()) == make_data()
    assert path.read_text().endswith("\n")
    assert os.stat(path).st_mode & 0o644 == 0o644


def test_write_atomic_does_not_change_the_caller_s_data(tmp_path: Path) -> None:
    data = make_data()
    snapshot = copy.deepcopy(data)
    results.write_atomic(tmp_path / "x.json", data)
    assert data == snapshot


# --- committed results ---

COMMITTED = sorted(results.results_dir().glob("*.json"))


@pytest.mark.skipif(not COMMITTED, reason="no results committed yet under plots/results/")
@pytest.mark.parametrize("path", COMMITTED, ids=[p.name for p in COMMITTED])
def test_committed_results_file_follows_the_schema_and_is_named_after_its_gpu(path: Path) -> None:
    data = results.load(path)
    assert path.name == f"{results.slug(data['gpu']['name'])}.json"


def make_step(name: str, fraction: float = 0.95, kept: bool = False) -> dict[str, Any]:
    return dict(impl="v6", name=name, change="a change", round="round 1", rounds=15, config={}, tflops=650.0,
                fraction_of_cublas=fraction, fraction_range=[fraction - 0.05, fraction + 0.05], kept=kept,
                date="2026-11-30")  # fmt: skip


def test_steps_are_optional_and_validated_row_by_row() -> None:
    data = make_data()
    results.validate(data)  # no "steps" key at all
    data["steps"] = [make_step("v6-a"), make_step("v6-b", kept=True)]
    results.validate(data)
    data["steps"][1]["fraction_range"] = [0.99, 1.0]
    with pytest.raises(results.ResultsError, match=r"steps\[1\]\.fraction_of_cublas.*outside"):
        results.validate(data)
    data["steps"][1] = make_step("v6-a")
    with pytest.raises(results.ResultsError, match=r"steps\[1\].*repeats"):
        results.validate(data)
    data["steps"][1] = {**make_step("v6-b"), "kept": "yes"}
    with pytest.raises(results.ResultsError, match=r"steps\[1\]\.kept"):
        results.validate(data)


def test_a_benchmark_run_merged_into_a_file_keeps_its_recorded_steps() -> None:
    existing = make_data()
    existing["steps"] = [make_step("v6-a")]
    merged = results.merge(existing, make_data())
    assert merged["steps"] == existing["steps"]
    newer = make_data()
    newer["steps"] = [make_step("v6-z")]
    assert [s["name"] for s in results.merge(existing, newer)["steps"]] == ["v6-z"]
