"""The facts the pages state: values and words with known answers on made-up data, and the vocabulary
held to the pages (every name a page uses is defined, every definition is used, every one has a value
in the recorded file, and the verdicts the prose rests on are the recorded ones)."""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

import pytest

from fake_results import fake_file, provenance
from matmul_data import paths, results, versions
from matmul_site import facts, numfmt
from matmul_site.numfmt import NOT_MEASURED, NOT_RECORDED
from matmul_site.sphinx import fact_blocks

PAGES = sorted(p for p in paths.DOCS_DIR.glob("**/*.rst") if "gallery" not in p.relative_to(paths.DOCS_DIR).parts)
# Sentences that say more than the printed verdict ("Keeping blocks alive pays.", "On this run the check did
# not see it") were written for these recorded verdicts and outcomes; a recording that changes one must
# come with a reworded sentence on that page.
PROSE_ASSUMES: dict[str, dict[str, str]] = {
    "steps.rst": {
        "v1.step": "pays", "v2.step": "pays", "v3.step": "is at parity", "v4.step": "pays", "v5.step": "is at parity",
        "v6.step": "pays", "v7@16384x8192x1024.step": "pays", "v7-streamk@4096.step": "costs",
        "v5-s3.step": "costs", "v6-rows-sw16.step": "pays",
        "v8@5120.step": "pays", "v8@3072.step": "pays", "v8@3000x5000x4096.step": "is at parity",
        "v8@5000x3000x4096.step": "pays",
    },
    "chapters/v0.rst": {"v0-no-sync.outcome": "wrong"},
    "chapters/v1.rst": {"try-v1-64x128.step": "costs"},
    "chapters/v2.rst": {"try-v2-s2.step": "is at parity", "try-v2-s4.step": "costs"},
    "chapters/v3.rst": {"v3.step": "is at parity", "try-v3-s2.step": "is at parity"},
    "chapters/v4.rst": {"try-v4-sw16.step": "pays"},
    "chapters/v5.rst": {
        "v5.step": "is at parity", "v5-release-before-wait.outcome": "exact", "try-v5-s4.step": "is at parity",
    },
    "chapters/v6.rst": {
        "v6-no-sync-after-store.result": "exact", "v6-rows-sw16.attempt": "pays", "v6-chunks.attempt": "is at parity",
        "v6c-chunks-sw8.attempt": "costs", "v6c-chunks-k32s6-sw8.attempt": "costs",
    },
    "chapters/v7.rst": {
        "v7@8192.step": "is at parity", "v7.step": "is at parity", "v7@16384x8192x1024.step": "pays",
        "v7-streamk@4096.step": "costs",
    },
    "chapters/v8.rst": {
        "v8@5120.step": "pays", "v8@3072.step": "pays", "v8@3000x5000x4096.step": "is at parity",
        "v8@5000x3000x4096.step": "pays",
        "v8-no-setmaxnreg.outcome": "exact",
    },
}  # fmt: skip


@pytest.fixture(scope="module")
def _fake() -> dict[str, Any]:
    return fake_file()  # a few seconds of bootstrapping: made once, copied per test


@pytest.fixture
def data(_fake: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(_fake)


def _set_step(data: dict[str, Any], impl: str, median: float, low: float, high: float) -> None:
    data["ladder"]["rows"][impl]["step"].update(median=median, low=low, high=high)


def _recorded() -> dict[str, Any]:
    recorded = results.load_default()
    if recorded is None:
        pytest.skip("no results file is committed")
    return recorded


# ---------------------------------------------------------------------------- values and words


def test_ladder_values_print_with_their_units(data: dict[str, Any]) -> None:
    row = data["ladder"]["rows"]["v3"]
    assert facts.render("v3.tflops", data) == f"{row['tflops']:.0f} TFLOPS"
    assert facts.render("v3.ms", data) == f"{row['latency_ms']:.3f} ms"
    assert facts.render("v3.sm_clock", data) == "1755 MHz"
    assert facts.render("v3.power", data) == "690 W"
    assert facts.render("v3.config", data) == "block_m=128, block_n=128, block_k=64, num_stages=3"
    assert facts.render("cublas.config", data) == "defaults (no tuning knobs)"
    assert facts.render("v3.tensor_pipe", data) == "55%"
    assert facts.render("gpu.peak", data) == "989.4 TFLOPS"
    assert facts.render("gpu.power_limit", data) == "700 W"
    data["ladder"]["rows"]["v3"]["power_w"] = None
    assert facts.render("v3.power", data) == NOT_RECORDED


def test_shapes_print_as_cubes_or_as_three_sizes(data: dict[str, Any]) -> None:
    assert facts.render("problem.shape", data) == "8192\u00b3"
    assert numfmt.shape_text((8192, 28672, 4096)) == "8192\u00d728672\u00d74096"


def test_a_ratio_prints_its_median_and_interval_in_one_notation() -> None:
    assert numfmt.ratio_text({"median": 0.9712, "low": 0.9604, "high": 0.9833}) == "0.97\u00d7 [0.96, 0.98]"


def test_printed_interval_never_contradicts_its_verdict() -> None:
    # 1.004 [1.001, 1.008] pays; at two decimals it would print [1.00, 1.01] and look like parity.
    assert numfmt.ratio_text({"median": 1.004, "low": 1.001, "high": 1.008}) == "1.004\u00d7 [1.001, 1.008]"
    assert numfmt.ratio_text({"median": 0.996, "low": 0.992, "high": 0.9991}) == "0.996\u00d7 [0.992, 0.999]"
    assert numfmt.ratio_text({"median": 1.0, "low": 0.97, "high": 1.02}) == "1.00\u00d7 [0.97, 1.02]"


def test_steps_and_ratios_speak_by_the_rule(data: dict[str, Any]) -> None:
    _set_step(data, "v2", 1.04, 1.02, 1.06)
    _set_step(data, "v3", 0.99, 0.97, 1.02)
    _set_step(data, "v5", 0.93, 0.91, 0.95)
    assert facts.render("v2.step", data) == "pays: 1.04\u00d7 [1.02, 1.06]"
    assert facts.render("v3.step", data) == "is at parity: 0.99\u00d7 [0.97, 1.02]"
    assert facts.render("v5.step", data) == "costs: 0.93\u00d7 [0.91, 0.95]"
    row = data["ladder"]["rows"]["v6"]
    row["ratio_to_cublas"] = {"median": 0.99, "low": 0.98, "high": 1.01}
    assert facts.render("v6.vs_cublas", data) == "is at parity with cuBLAS: 0.99\u00d7 [0.98, 1.01]"
    row["ratio_to_cublas"] = {"median": 0.95, "low": 0.94, "high": 0.96}
    assert facts.render("v6.vs_cublas", data) == "is behind cuBLAS: 0.95\u00d7 [0.94, 0.96]"
    assert facts.render("v6.ratio", data) == "0.95\u00d7 [0.94, 0.96]"


def test_a_recorded_verdict_wins_over_the_interval() -> None:
    # The schema that records verdicts (pays, costs, parity with a band) decides them in one place.
    assert results.verdict({"median": 1.005, "low": 1.002, "high": 1.008, "verdict": "parity"}) == results.PARITY


def test_ladder_lists_steps_by_verdict(data: dict[str, Any]) -> None:
    paying = [v for v in versions.names()[1:] if v not in ("v3", "v5")]
    for impl in paying:
        _set_step(data, impl, 1.1, 1.05, 1.15)
    _set_step(data, "v3", 1.0, 0.98, 1.02)
    _set_step(data, "v5", 0.95, 0.94, 0.96)
    assert facts.render("ladder.pays", data) == ", ".join(v.upper() for v in paying)
    assert facts.render("ladder.parity", data) == "V3"
    assert facts.render("ladder.costs", data) == "V5"
    _set_step(data, "v5", 1.0, 0.98, 1.02)
    assert facts.render("ladder.costs", data) == "none"


def test_peak_at_the_measured_clock_is_sms_times_4096_flop_per_clock(data: dict[str, Any]) -> None:
    row = data["ladder"]["rows"]["v6"]
    row["sm_clock_mhz"] = 1500.0
    peak = 132 * 4096 * 1500e6 / 1e12  # 811.0 TFLOPS
    assert results.peak_tflops_at(data, 1500.0) == pytest.approx(peak)
    assert facts.render("v6.peak_at_clock", data) == "811 TFLOPS"
    assert facts.render("v6.peak_fraction", data) == f"{100 * row['tflops'] / peak:.0f}%"
    assert facts.render("v6.datasheet_fraction", data) == f"{100 * row['tflops'] / 989.4:.0f}%"
    row["sm_clock_mhz"] = None
    assert facts.render("v6.peak_fraction", data) == NOT_MEASURED
    assert facts.render("v6.sm_clock", data) == NOT_RECORDED


def test_sweep_and_steps_rows_are_named_by_row_and_shape(data: dict[str, Any]) -> None:
    first = versions.names()[-3]  # the first of the three versions the sweep times
    swept = data["sweep"][1]["rows"][first]["ratio_to_cublas"]
    assert facts.render(f"{first}.sweep_4096", data) == numfmt.vs_cublas_text(swept)
    assert facts.render(f"{first}.sweep_1024", data) == NOT_MEASURED
    rows = data["steps"][0]["rows"]
    assert facts.render("v6-rows-sw16.step", data) == numfmt.step_text(rows["v6-rows-sw16"]["step"])
    assert facts.render("v6-rows-sw16@8192.step", data) == facts.render("v6-rows-sw16.step", data)
    assert facts.render("v6-rows-sw16@4096.step", data) == NOT_MEASURED
    assert facts.render("v6-rows-sw16.attempt", data).endswith("; kept")
    attempt = facts.render("v6-chunks.attempt", data)
    assert " over v6-rows: " in attempt and attempt.endswith("; not kept")
    assert facts.render("v6-rows.step", data) == NOT_MEASURED  # the baseline has no step


def test_a_row_in_several_steps_runs_is_the_one_where_it_is_a_step_then_the_latest(data: dict[str, Any]) -> None:
    later = copy.deepcopy(data["steps"][0]) | {"run_id": "2099-01-01T000000Z", "title": "again"}
    later["rows"]["v6-rows-sw16"].pop("step")
    later["rows"]["v6-chunks"]["step"].update(median=0.5, low=0.4, high=0.6)
    data["steps"].append(later)
    assert facts.render("v6-rows-sw16.step", data).startswith(("pays", "costs", "is at parity"))
    assert facts.render("v6-chunks.step", data) == "costs: 0.50\u00d7 [0.40, 0.60]"


def test_sweep_counts_shapes_by_the_rule(data: dict[str, Any]) -> None:
    ratios = [(0.9, 0.88, 0.92), (1.0, 0.98, 1.01), (1.05, 1.02, 1.08)]
    first = versions.names()[-3]  # the first of the three versions the sweep times
    for run, (median, low, high) in zip(data["sweep"], ratios, strict=True):
        run["rows"][first]["ratio_to_cublas"] = {"median": median, "low": low, "high": high}
    assert facts.render(f"{first}.sweep", data) == "behind cuBLAS at 1 of 3 shapes, at parity at 1, ahead at 1"


def test_no_file_or_no_ladder_prints_not_measured_yet() -> None:
    bare = provenance()
    for name in ("v3.tflops", "v3.ratio", "cublas.tflops", "ladder.pays", "ladder.rounds", "v6.sweep", "v3.step"):
        assert facts.render(name, None) == NOT_MEASURED
        assert facts.render(name, bare) == NOT_MEASURED
    assert facts.render("gpu.sm_count", bare) == "132"


def test_unknown_names_are_errors_even_without_a_file() -> None:
    for name in ("v3.tflop", "v3", "nonsense.tflops", "gpu.nonsense", "v7.sweep_", "V3.tflops"):
        with pytest.raises(facts.UnknownFact):
            facts.render(name, None)
    with pytest.raises(facts.UnknownFact):
        facts.find("v3.nonsense", fact_blocks.BLOCKS)


def test_the_results_file_is_read_again_only_when_it_changes(
    tmp_path: Path, data: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    monkeypatch.setenv(paths.ENV_RESULTS, str(path))
    first = results.load_default()
    assert results.load_default() is first
    data["gpu"]["name"] = "Another Board"
    path.write_text(json.dumps(data))
    os.utime(path, ns=(1, 1))  # a different mtime even on a coarse clock
    assert results.load_default()["gpu"]["name"] == "Another Board"


# ---------------------------------------------------------------------------- the vocabulary and the pages


def _uses() -> dict[str, list[str]]:
    """Every fact name the pages use, and the pages that use it."""
    found: dict[str, list[str]] = {}
    for page in PAGES:
        for name in facts.names_in(page.read_text(encoding="utf-8")):
            found.setdefault(name, []).append(page.relative_to(paths.DOCS_DIR).as_posix())
    return found


def _definition(name: str) -> facts.Fact:
    try:
        return facts.find(name)[0]
    except facts.UnknownFact:
        return facts.find(name, fact_blocks.BLOCKS)[0]


def test_every_fact_a_page_names_is_defined() -> None:
    unknown = []
    for name, pages in _uses().items():
        try:
            _definition(name)
        except facts.UnknownFact:
            unknown.append(f"{name} ({', '.join(pages)})")
    assert not unknown, f"facts no definition matches: {unknown}"


def test_every_defined_fact_is_used_by_some_page() -> None:
    used = {_definition(name).name for name in _uses()}
    unused = [f.name for f in (*facts.FACTS, *fact_blocks.BLOCKS) if f.name not in used]
    assert not unused, f"facts no page uses (delete them, or use them): {unused}"


def test_every_fact_a_page_names_has_a_value_in_the_recorded_file() -> None:
    recorded = _recorded()
    unmeasured = [v for v in versions.names() if results.ladder_row(recorded, v) is None]  # new: "not measured yet"
    empty = [
        f"{name} ({', '.join(pages)})"
        for name, pages in _uses().items()
        if name in {n for n in _uses() if _is_inline(n)}
        and facts.render(name, recorded) == NOT_MEASURED
        and not any(name.startswith(f"{v}.") or f"chapters/{v}.rst" in pages for v in unmeasured)
    ]
    assert not empty, f"facts the recorded file cannot fill (a typo, or a row that is not measured): {empty}"


def _is_inline(name: str) -> bool:
    try:
        facts.find(name)
    except facts.UnknownFact:
        return False
    return True


def test_the_verdicts_the_prose_rests_on_are_the_recorded_ones() -> None:
    recorded = _recorded()
    uses = _uses()
    for page, assumed in PROSE_ASSUMES.items():
        for name, words in assumed.items():
            assert page in uses.get(name, []), f"{page} no longer names {name}: update PROSE_ASSUMES"
            value = facts.render(name, recorded)
            assert value.startswith(words), f"{page} was written for {name} {words!r}; now {value!r}: reword it"


def test_the_verdict_check_fails_when_a_verdict_changes() -> None:
    recorded = copy.deepcopy(_recorded())
    recorded["ladder"]["rows"]["v3"]["step"].update(median=1.05, low=1.03, high=1.07, verdict="pays")
    assert not facts.render("v3.step", recorded).startswith(PROSE_ASSUMES["steps.rst"]["v3.step"])
