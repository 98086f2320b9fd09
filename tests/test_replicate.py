"""Verdicts that replicate: independent runs merge into one figure whose interval holds every run's median.

The fake GPU (tests/fake_gpu.py) drives whole records on the CPU; the recorded file is held to it too.
"""

from __future__ import annotations

import copy
import json
import time
from pathlib import Path
from typing import Any

import pytest
from test_benchmark import fake

from matmul_bench import baseline, machine
from matmul_data import model, replicate, results, versions


def test_a_second_record_adds_a_run_to_each_figure_it_measures_again(tmp_path: Path) -> None:
    for _ in range(3):
        assert fake(tmp_path, "--ladder", "--sweep") == 0
    data = results.read(tmp_path / "res" / "nvidia-h200.json")
    assert [len(f.runs) for f in data.figures] == [3, 3]
    assert data.ladder is not None and data.ladder.replicated
    assert data.method.verdicts is not None and data.method.verdicts.band >= replicate.MIN_BAND
    for figure in data.figures:
        for impl, row in figure.rows.items():
            for run in figure.runs:
                assert row.ratio_to_cublas.low <= run.rows[impl].ratio_to_cublas.median <= row.ratio_to_cublas.high


def test_a_run_of_another_rotation_starts_the_figure_anew(tmp_path: Path) -> None:
    assert fake(tmp_path, "--ladder") == 0
    assert fake(tmp_path, "--ladder", "--versions", "v3", "--out", str(tmp_path / "res" / "nvidia-h200.json")) == 0
    data = results.load(tmp_path / "res" / "nvidia-h200.json")
    assert len(data["ladder"]["runs"]) == 1 and set(data["ladder"]["rows"]) == {"v3", "cublas"}


NVJET = "nvjet_sm90_hsh_256x128_64x4_2x1_v_bz_coopB_TNN"


def another_rotation(data: dict[str, Any]) -> dict[str, Any]:
    """The record's sweep as if it had timed one version fewer: another rotation, not merged with the first."""
    dropped = versions.names()[-3]
    for figure in data["sweep"]:
        for rows in (figure["rows"], *(run["rows"] for run in figure["runs"])):
            rows.pop(dropped)
    return data


def test_a_sweep_figure_started_anew_keeps_the_cublas_kernel_named_at_its_shape(tmp_path: Path) -> None:
    out, new_path = tmp_path / "res" / "nvidia-h200.json", tmp_path / "new.json"
    assert fake(tmp_path, "--sweep") == 0
    assert baseline.record(out, {"4096x4096x4096": {"kernel": NVJET}}) == 1
    assert fake(tmp_path, "--sweep", "--out", str(new_path)) == 0
    new = model.Results.from_json(another_rotation(results.load(new_path)))
    (figure,) = replicate.merge_file(model.Results.from_json(results.load(out)), new).sweep
    assert len(figure.runs) == 1 and versions.names()[-3] not in figure.rows  # started anew
    assert figure.cublas_kernel is not None and figure.cublas_kernel.name == NVJET
    assert fake(tmp_path, "--sweep", "--peers") == 0  # the peers: a figure beside the first, which stays
    plain, with_peers = results.load(out)["sweep"]
    assert len(plain["runs"]) == 1 and versions.QUACK in with_peers["rows"] and versions.QUACK not in plain["rows"]


def test_a_sweep_figure_started_anew_by_another_cublas_drops_the_kernel_the_old_one_named(tmp_path: Path) -> None:
    old_path, new_path = tmp_path / "old.json", tmp_path / "new.json"
    assert fake(tmp_path, "--sweep", "--out", str(old_path)) == 0
    assert baseline.record(old_path, {"4096x4096x4096": {"kernel": NVJET}}) == 1
    assert fake(tmp_path, "--sweep", "--out", str(new_path)) == 0
    old, new = results.load(old_path), another_rotation(results.load(new_path))
    old["software"]["cublas"], new["software"]["cublas"] = "13.1.0.3", "13.2.0.1"
    (figure,) = replicate.merge_file(model.Results.from_json(old), model.Results.from_json(new)).sweep
    assert len(figure.runs) == 1 and figure.cublas_kernel is None


def test_validation_fails_when_one_run_s_median_leaves_the_merged_interval(tmp_path: Path) -> None:
    for _ in range(2):
        assert fake(tmp_path, "--ladder") == 0
    data = results.load(tmp_path / "res" / "nvidia-h200.json")
    results.validate(data)
    broken = copy.deepcopy(data)
    ratio = broken["ladder"]["runs"][0]["rows"]["v3"]["ratio_to_cublas"]
    ratio.update(median=ratio["median"] * 1.5, high=ratio["median"] * 1.6)
    with pytest.raises(results.ResultsError, match=r"runs\[0\]\.rows\.v3\.ratio_to_cublas\.median.*outside the merged"):
        results.validate(broken)


def test_the_recorded_file_holds_every_run_s_median_inside_its_figure_s_interval() -> None:
    data = results.load_default()
    assert data is not None
    results.validate(data)  # the containment check is part of the schema (see the test above)
    checked = sum(len(f.runs) * len(f.rows) for f in model.Results.from_json(data).figures)
    assert checked > 0


def test_a_file_without_the_field_section_remerges_to_the_same_bytes(tmp_path: Path) -> None:
    assert fake(tmp_path, "--ladder", "--sweep", processes=1) == 0
    recorded = results.load(tmp_path / "res" / "nvidia-h200.json")
    assert recorded["field"] == []  # a record writes every section, empty where it measured nothing
    old = {key: value for key, value in recorded.items() if key != "field"}  # as written before the field existed
    committed = results.load_default()
    for data in (old, copy.deepcopy(committed)):
        remerged = replicate.remerge(model.Results.from_json(data)).to_json()
        assert json.dumps(remerged, indent=2) == json.dumps(data, indent=2)


@pytest.mark.parametrize(
    ("low", "high", "word"),
    [
        (1.011, 1.03, "pays"),
        (1.005, 1.03, "unresolved"),
        (0.95, 0.989, "costs"),
        (0.95, 0.995, "unresolved"),
        (0.992, 1.008, "within"),
    ],
)
def test_a_step_pays_or_costs_only_outside_the_band(low: float, high: float, word: str) -> None:
    interval = {"median": (low + high) / 2, "low": low, "high": high}
    judged = replicate.verdict(model.Interval.of(**interval), 0.01)
    assert judged.to_json() == interval | {"verdict": word, "band": 0.01}


def test_the_bonferroni_level_tightens_with_the_number_of_verdicts() -> None:
    data = results.load_default()
    assert data is not None
    count = data["method"]["verdicts"]["count"]
    assert count == replicate.verdict_count(model.Results.from_json(data)) > 10
    assert data["method"]["verdicts"]["confidence_each"] == pytest.approx(1 - 0.05 / count)


def test_a_peers_run_beside_a_figure_states_only_its_peers_verdicts() -> None:
    import fake_results

    data = fake_results.fake_file()
    with_peers = model.Results.from_json(data)
    without = model.Results.from_json(
        data | {"sweep": [f for f in data["sweep"] if versions.TORCH_COMPILE not in f["rows"]]}
    )
    assert replicate.verdict_count(with_peers) == replicate.verdict_count(without) + 1  # torch.compile's only


def test_the_runs_first_interval_is_wider_when_runs_disagree_than_when_they_agree() -> None:
    agree = [[[1.00, 1.01, 0.99, 1.00]] * 2] * 3
    disagree = [[[x + shift for x in (1.00, 1.01, 0.99, 1.00)]] * 2 for shift in (-0.03, 0.0, 0.03)]
    low_a, high_a = replicate.bootstrap(agree, 0.95, resamples=replicate.RESAMPLES, seed=replicate.SEED)
    low_d, high_d = replicate.bootstrap(disagree, 0.95, resamples=replicate.RESAMPLES, seed=replicate.SEED)
    assert high_d - low_d > 2 * (high_a - low_a)


def test_a_clock_reading_counts_only_inside_a_timed_kernel() -> None:
    readings = iter([(1965.0, 100.0), (1755.0, 690.0), (1980.0, 120.0)])
    sampler = machine.WindowSampler(lambda: next(readings), interval_s=10.0)  # only the reads below happen
    with sampler.window("v7"):
        sampler._take()  # noqa: SLF001  (an idle GPU before the kernels start)
        began = time.perf_counter()
        sampler._take()  # noqa: SLF001  (inside the kernel)
        ended = time.perf_counter()
    clocks, power = sampler.take("v7", [(began, ended)])
    sampler.close()
    assert (clocks, power) == ([1755.0], [690.0])


def test_an_efficiency_above_the_peak_at_the_sampled_clock_marks_the_row_suspect() -> None:
    shape = model.Shape.of(m=8192, n=8192, k=8192)
    # cuBLAS at 663 TFLOPS "at 1965 MHz" (62% of that clock's peak) and a row above the peak are both suspect.
    assert replicate.is_suspect("cublas", shape, replicate.efficiency(663.0, 1965.0, 132))
    assert replicate.is_suspect("v0", shape, replicate.efficiency(700.0, 1200.0, 132))
    assert not replicate.is_suspect("cublas", shape, replicate.efficiency(663.0, 1425.0, 132))
    assert replicate.efficiency(663.0, None, 132) is None


def test_a_record_from_a_dirty_tree_goes_to_a_draft_the_site_does_not_show(tmp_path: Path, monkeypatch) -> None:
    from matmul_bench import runner

    monkeypatch.setattr(runner, "DRAFT_DIR", tmp_path / "draft")
    monkeypatch.setattr(runner.paths, "RESULTS_DIR", tmp_path / "res")
    out = str(tmp_path / "res" / "nvidia-h200.json")
    assert fake(tmp_path, "--ladder", "--versions", "v3", "--out", out, commit="abc1234-dirty") == 0
    assert (tmp_path / "draft" / "nvidia-h200.json").exists()
    assert not (tmp_path / "res" / "nvidia-h200.json").exists()


def test_each_run_carries_how_long_its_invocation_took(tmp_path: Path) -> None:
    assert fake(tmp_path, "--ladder", "--sweep") == 0
    data = results.read(tmp_path / "res" / "nvidia-h200.json")
    spent = {run.invocation_s for figure in data.figures for run in figure.runs}
    assert len(spent) == 1 and spent.pop() > 0  # one invocation: one measured duration, on each of its runs
