"""The generator of docs/_generated/: its files are what the committed data gives, every name a page uses has
a value, values follow the data and the rule, and bad or missing input gets one line."""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import fake_results
from fake_field import with_field
from fake_results import fake_file, typed
from matmul_data import budget, field, loader, model, paths, results, stats, versions
from matmul_data.builds import BuildRecord
from matmul_data.check_log import CheckLog
from matmul_site import (
    chapter_tables,
    doc_pages,
    field_pages,
    method_tables,
    numfmt,
    page_values,
    phrases,
    render,
    v9_check,
)
from matmul_site import headline as headline_words
from matmul_site.numfmt import NOT_MEASURED

TIMES = "\u00d7"


@pytest.fixture(scope="module")
def _fake() -> dict[str, Any]:
    return fake_file()  # a few seconds of bootstrapping: made once, copied per test


@pytest.fixture
def data(_fake: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(_fake)


@pytest.fixture(scope="module")
def record() -> BuildRecord:
    return budget.load_builds()


def docs_copy(tmp_path: Path) -> Path:
    """The pages without their generated files, where a test may render other data."""
    docs = tmp_path / "docs"
    shutil.copytree(paths.DOCS_DIR, docs, ignore=shutil.ignore_patterns("gallery", "_generated"))
    return docs


def run_render(*args: str, results_path: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, paths.ENV_RESULTS: str(results_path)}
    command = [sys.executable, "-m", "matmul_site.render", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)


# ---------------------------------------------------------------------------- the committed files


def test_the_committed_generated_files_are_what_the_committed_data_gives() -> None:
    stale = render.render(check=True)
    assert stale == [], f"docs/_generated/ is stale ({stale}): run `python -m matmul_site.render` and commit"


def test_every_name_the_pages_use_has_a_value_in_the_committed_data(record: BuildRecord) -> None:
    named = page_values.values(results.read_default(), record)
    missing = {name: page for name, page in doc_pages.used_names().items() if name not in named}
    assert missing == {}, "names with no value (a typo, or data not recorded yet)"


def test_an_unchanged_file_is_not_written_again(tmp_path: Path) -> None:
    docs = docs_copy(tmp_path)
    assert "values.rst" in render.render(docs)
    stamps = {p.name: p.stat().st_mtime_ns for p in (docs / "_generated").iterdir()}
    assert render.render(docs) == []
    assert {p.name: p.stat().st_mtime_ns for p in (docs / "_generated").iterdir()} == stamps


def test_check_names_a_stale_file_and_writes_nothing(tmp_path: Path) -> None:
    docs = docs_copy(tmp_path)
    render.render(docs)
    (docs / "_generated" / "ladder.csv").write_text("edited by hand\n")
    assert render.render(docs, check=True) == ["ladder.csv"]
    assert (docs / "_generated" / "ladder.csv").read_text() == "edited by hand\n"


# ---------------------------------------------------------------------------- bad or missing input


def test_without_a_results_file_one_line_says_so_and_every_measured_value_reads_not_measured(tmp_path: Path) -> None:
    docs = docs_copy(tmp_path)
    env = {**os.environ, paths.ENV_RESULTS: paths.NO_RESULTS}
    command = [sys.executable, "-m", "matmul_site.render", "--docs", str(docs)]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "no results file" in lines[0] and "nox -s bench" in lines[0], lines
    text = (docs / "_generated" / "values.rst").read_text()
    assert f".. |method.band| replace:: {NOT_MEASURED}" in text
    assert (
        f".. |latest.headline| replace:: No version has been timed yet, so the headline figure is {NOT_MEASURED}."
        in text
    )
    assert f".. |v7.registers| replace:: {budget.load_builds().versions['v7'].registers}" in text
    assert NOT_MEASURED in (docs / "_generated" / "ladder.csv").read_text()


def test_a_truncated_results_file_is_one_line_naming_it(tmp_path: Path, data: dict[str, Any]) -> None:
    broken = tmp_path / "nvidia-h200.json"
    broken.write_text(json.dumps(data)[:2000])  # cut short, as an interrupted copy leaves it
    done = run_render("--check", results_path=broken)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert str(broken) in lines[0] and "not valid JSON" in lines[0], lines[0]


def test_a_kernel_file_that_does_not_parse_is_one_line_naming_it(tmp_path: Path) -> None:
    kernels = tmp_path / "kernels"
    shutil.copytree(paths.KERNEL_DIR, kernels)
    (kernels / "matmul_v3.py").write_text("TITLE = 'V3'\ndef broken(:\n")
    code = "import sys; from matmul_data import paths; paths.KERNEL_DIR = __import__('pathlib').Path(sys.argv[1]); " \
           "from matmul_site import render; sys.exit(render.main(['--check']))"  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code, str(kernels)], capture_output=True, text=True, timeout=120)
    lines = done.stderr.strip().splitlines()
    assert done.returncode == 1 and len(lines) == 1, done.stderr
    assert "matmul_v3.py" in lines[0] and "line 2" in lines[0], lines[0]


def test_a_build_record_without_a_version_is_one_line_saying_how_to_remake_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    def stale(_record: BuildRecord, version: str) -> Any:
        raise budget.BudgetError(f"{version} is not in the build record")  # as a record older than the version says

    monkeypatch.setattr(budget, "build_of", stale)
    assert render.main(["--check"]) == 1
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and f"{versions.names()[0]} is not in the build record" in lines[0], lines
    assert "`python -m matmul_bench buildcheck --record`" in lines[0]


# ---------------------------------------------------------------------------- values follow the data


def _set_step(data: dict[str, Any], impl: str, median: float, low: float, high: float) -> None:
    step = data["ladder"]["rows"][impl]["step"]
    step.update(median=median, low=low, high=high, band=0.015)
    step["verdict"] = stats.band_verdict(low, high, 0.015)


def test_ladder_values_print_with_their_units(data: dict[str, Any], record: BuildRecord) -> None:
    named, row = page_values.values(typed(data), record), data["ladder"]["rows"]["v3"]
    assert named["v3.tflops"] == f"{row['tflops']:.0f} TFLOPS"
    assert named["v3.ms"] == f"{row['latency_ms']:.3f} ms"
    assert named["v3.sm_clock"] == f"{row['sm_clock_mhz']:.0f} MHz"
    assert named["v3.ratio"] == numfmt.ratio_text(model.Interval.from_json(row["ratio_to_cublas"]))


def test_steps_and_ratios_speak_by_the_rule(data: dict[str, Any], record: BuildRecord) -> None:
    _set_step(data, "v2", 1.04, 1.02, 1.06)
    _set_step(data, "v3", 0.99, 0.97, 1.02)
    _set_step(data, "v5", 0.93, 0.91, 0.95)
    data["ladder"]["rows"]["v6"]["ratio_to_cublas"] = {"median": 0.95, "low": 0.94, "high": 0.96}
    named = page_values.values(typed(data), record)
    assert named["v2.step"] == f"pays: 1.04{TIMES} [1.02, 1.06]"
    assert named["v3.step"] == f"unresolved at \u00b11.5%: 0.99{TIMES} [0.97, 1.02]"
    assert named["v5.step"] == f"costs: 0.93{TIMES} [0.91, 0.95]"
    assert named["v5.reversed"] == f"pays: 1.08{TIMES} [1.05, 1.10]"
    assert named["v6.vs_cublas"] == f"is behind cuBLAS: 0.95{TIMES} [0.94, 0.96]"
    assert "V5" in named["ladder.costs"].split(", ") and "V3" not in named["ladder.pays"].split(", ")


def test_a_sentence_gets_the_plain_median_and_the_word_and_the_interval_stays_in_the_table(
    data: dict[str, Any], record: BuildRecord
) -> None:
    _set_step(data, "v5", 0.93, 0.91, 0.95)
    data["ladder"]["rows"]["v6"]["ratio_to_cublas"] = {"median": 0.95, "low": 0.94, "high": 0.96}
    named = page_values.values(typed(data), record)
    assert (named["v5.step_ratio"], named["v5.verdict"]) == (f"0.93{TIMES}", "a loss")
    assert (named["v5.reversed_ratio"], named["v5.reversed_verdict"]) == (f"1.08{TIMES}", "a gain")
    assert (named["v6.cublas_ratio"], named["v6.cublas_verdict"]) == (f"0.95{TIMES}", "behind")
    _set_step(data, "v5", 1.01, 0.99, 1.03)  # across the band's edge: a word, not the rule's band
    assert page_values.values(typed(data), record)["v5.verdict"] == "not resolved"
    assert not any(
        "[" in named[f"v5.{key}"] or "±" in named[f"v5.{key}"] for key in ("step_ratio", "verdict", "reversed_ratio")
    )


def test_a_steps_rows_per_clock_figure_divides_out_its_reference_rows_clock_in_the_same_run(
    data: dict[str, Any], record: BuildRecord
) -> None:
    named = page_values.values(typed(data), record)
    run = next(r for r in data["steps"] if any(row.get("step") for row in r["rows"].values()))
    impl, row = next((i, r) for i, r in run["rows"].items() if r.get("step"))
    over = run["rows"][row["step"]["over"]]
    slug = f"{phrases.run_slug(model.Figure.from_json(run))}.{impl}"
    expected = row["step"]["median"] * over["sm_clock_mhz"] / row["sm_clock_mhz"]
    assert named[f"{slug}.per_clock"] == f"{expected:.2f}{TIMES}"
    assert named[f"{slug}.over_clock"] == f"{over['sm_clock_mhz']:.0f} MHz"
    assert named[f"{slug}.reversed_per_clock"] == f"{1 / expected:.2f}{TIMES}"


def test_every_ratio_prints_with_two_decimals() -> None:
    plain = model.Interval(median=1.0277, low=1.0113, high=1.0475)
    assert numfmt.ratio_text(plain) == f"1.03{TIMES} [1.01, 1.05]"
    recorded = model.Interval(median=1.0277, low=1.0113, high=1.0475, verdict="within", band=0.015)
    assert numfmt.step_text(recorded) == f"within \u00b11.5%: 1.03{TIMES} [1.01, 1.05]"


def test_steps_rows_are_named_alone_and_with_their_runs_shape(data: dict[str, Any], record: BuildRecord) -> None:
    named = page_values.values(typed(data), record)
    for run in data["steps"]:
        shape = numfmt.shape_name(tuple(run["shape"][d] for d in "mnk"))
        for impl, row in run["rows"].items():
            assert named[f"{impl}:{shape}.tflops"] == f"{row['tflops']:.0f} TFLOPS"
            assert f"{impl}.tflops" in named


def test_latest_is_the_newest_measured_version(data: dict[str, Any], record: BuildRecord) -> None:
    newest = versions.names()[-1]
    assert page_values.values(typed(data), record)["latest.label"] == versions.label(newest)
    del data["ladder"]["rows"][newest]
    assert page_values.values(typed(data), record)["latest.label"] == versions.label(versions.names()[-2])


def test_build_values_and_sizes_come_from_the_record_and_tuned(record: BuildRecord) -> None:
    named, v7 = page_values.values(None, record), record.versions["v7"]
    assert named["v7.registers"] == str(v7.registers)
    assert named["v7.spills"] == "no spills" or "spill stores" in named["v7.spills"]
    c = versions.get("v6").tuned
    assert named["v6.stage"] == numfmt.kb_text((c["block_m"] + c["block_n"]) * c["block_k"] * 2)
    assert "v7.tflops" not in named


def test_the_build_table_shows_what_moved_and_names_the_rest(record: BuildRecord) -> None:
    table, unchanged = chapter_tables.build_table("v7", record)
    assert table[0] == ["Build fact", "V6", "V7"]
    moved = {row[0] for row in table[1:]}
    assert all(row[1] != row[2] for row in table[1:]) and unchanged.startswith("Unchanged: ")
    assert not any(label in unchanged for label in moved)
    first, note = chapter_tables.build_table(versions.names()[0], record)
    assert len(first[0]) == 2 and note == ""


def test_the_tile_table_gives_v7s_tile_and_the_models_pick_at_each_shape() -> None:
    rows = chapter_tables.tile_choices_table()
    assert len(rows) == 1 + len(chapter_tables.TILE_CHOICE_SHAPES)
    model = loader.load("tile_model")
    for row, token in zip(rows[1:], chapter_tables.TILE_CHOICE_SHAPES, strict=True):
        m, n, k = numfmt.shape_of(token)
        assert row[2] == model.choose(m, n, k, model.H100_SMS).name.replace("x", f" {TIMES} ")


def test_no_extra_build_is_stale(record: BuildRecord) -> None:
    stale = [name for name, e in record.extras.items() if e.files is None or e.source != budget.files_hash([*e.files])]
    assert stale == [], "files changed since the record: run `python -m matmul_bench buildcheck --record`"


def test_a_suspect_rows_clock_and_power_are_not_printed_and_no_share_of_the_peak_rests_on_them(
    data: dict[str, Any],
) -> None:
    row = data["ladder"]["rows"]["v7"]
    row.update(sm_clock_mhz=1965.0, power_w=662.0, efficiency=0.62, suspect=True)
    named = page_values.values(typed(data), None)
    assert named["v7.sm_clock"].startswith("not shown (") and "1965" not in named["v7.sm_clock"]
    assert named["v7.power"] == "not shown" and "v7.peak_fraction" not in named
    row.update(suspect=False)
    named = page_values.values(typed(data), None)
    assert (named["v7.sm_clock"], named["v7.power"]) == ("1965 MHz", "662 W")


def test_try_it_outcomes_read_from_the_file() -> None:
    data = fake_results.provenance() | {"tryit": fake_results.fake_tryit()}
    named = page_values.values(typed(data), None)
    assert named["v5-release-before-wait.result"] == "correct"  # within tolerance: fp16 output is never bit-exact
    checks = f"(2 at 8192\u00b3, 1 at 1000{TIMES}8192{TIMES}8192; largest error 0.0009)"
    assert named["v5-release-before-wait.outcome"] == f"correct in all 3 checks {checks}"
    wrong = named["v6-no-sync-after-store.outcome"]
    assert wrong.startswith("wrong in 1 of 3 checks") and "4,096 of 67,108,864" in wrong and "still NaN" in wrong
    assert named["v6-no-sync-after-store.wrong_checks"] == "1 of 3"
    assert named["v3-producer-phase-0.outcome"].startswith("hangs: no answer")
    assert named["v6-stages-4.outcome"].startswith("does not build: RuntimeError")


def test_a_try_it_table_quotes_the_steps_rows_the_try_it_spec_records(data: dict[str, Any]) -> None:
    quoted = 0
    for version, entries in chapter_tables.tryit_spec().RECORDED.items():
        text = render.csv_text(chapter_tables.tryit_table(version, typed(data)))
        for title, variant, _ in entries:
            runs = [r for r in results.steps_runs(typed(data)) if r.title == title and variant in r.rows]
            assert variant in text, (version, variant)
            if runs:
                assert f"{runs[-1].rows[variant].tflops:.0f} TFLOPS" in text and f"recorded ({title})" in text
                quoted += 1
    assert quoted, "the fake file holds none of the recorded rows: the test checks nothing"


def test_a_try_it_table_names_each_change_its_spec_asks_for_before_any_is_measured() -> None:
    spec = chapter_tables.tryit_spec()
    nothing = fake_results.provenance()  # no steps runs, no try-it outcomes
    for version in versions.names():
        text = "\n".join(cell for row in chapter_tables.tryit_table(version, typed(nothing)) for cell in row)
        timed = [n for run in spec.RUNS.values() if run["after"] == version for n in run["variants"][1:]]
        edits = spec.EDITS.get(version, {})
        for name in timed:
            assert f"{spec.VARIANTS[name][3]} ``{name}``" in text, (version, name)
        for edit in edits.values():
            assert edit["title"] in text and all(f"- {old.splitlines()[0]}" in text for old, _ in edit["edits"])
        recorded = spec.RECORDED.get(version, [])
        if timed or edits or recorded:
            assert text.count(NOT_MEASURED) == len(timed) + len(edits) + len(recorded), version


def test_a_steps_table_words_each_variant_as_its_spec_does_now() -> None:
    variants = chapter_tables.steps_spec().VARIANTS
    shown = 0
    for run in results.steps_runs(results.read_default()):
        rows = {row[0].strip("`"): row[1] for row in chapter_tables.attempts_table(run)[1:]}
        for name, described in rows.items():
            if name in variants:
                assert described == numfmt.escape(variants[name][3]), (run.title, name)
                shown += 1
            else:
                assert described == numfmt.escape(run.rows[name].title or ""), (run.title, name)
    assert shown, "no recorded steps row is in specs/steps.py: the test checks nothing"


def test_every_table_the_pages_read_comes_from_the_committed_data(record: BuildRecord) -> None:
    written = render.files(results.read_default(), record)
    empty = [name for name, text in written.items() if f"This table is {NOT_MEASURED}" in text]
    assert empty == [], "tables a page reads that no data fills (a typo in the file name, or data not recorded)"


def test_the_peak_at_a_clock_is_the_product_of_the_printed_clock(data: dict[str, Any]) -> None:
    row = data["ladder"]["rows"]["v2"]
    row["sm_clock_mhz"] = 1417.6  # prints as 1418 MHz
    named = page_values.values(typed(data), None)
    assert named["v2.sm_clock"] == "1418 MHz"
    assert named["v2.peak_at_clock"] == f"{data['gpu']['sm_count'] * 4096 * 1418e6 / 1e12:.0f} TFLOPS"


# ---------------------------------------------------------------------------- V9's page: the field set, the check


def test_without_data_a_value_that_is_not_measured_says_so_once_in_a_whole_sentence(record: BuildRecord) -> None:
    named = page_values.values(None, record)
    twice = {name: text for name, text in named.items() if text.count(NOT_MEASURED) > 1}
    assert twice == {}, "a sentence that says 'not measured yet' more than once"
    for name in ("field.summary", "field.held_out", "v9.ladder_sentence", "latest.headline", "latest.peak_sentence"):
        assert NOT_MEASURED in named[name] and named[name][0].isupper() and named[name].endswith("."), named[name]


def test_the_ladder_sentence_is_a_number_and_a_word_not_an_interval(data: dict[str, Any], record: BuildRecord) -> None:
    _set_step(data, "v5", 0.93, 0.91, 0.95)
    row = data["ladder"]["rows"]["v5"]
    text = page_values.values(typed(data), record)["v5.ladder_sentence"]
    assert f"V5 runs at {row['ratio_to_cublas']['median']:.2f} of cuBLAS's speed and 0.93 times V4's" in text
    assert text.endswith("a step that costs.") and "[" not in text
    del data["ladder"]["rows"]["v5"]
    assert page_values.values(typed(data), record)["v5.ladder_sentence"] == \
        f"The ladder has not timed V5 yet: its step over V4 is {NOT_MEASURED}."  # fmt: skip


def test_the_field_sentences_give_each_halfs_range_and_mean_at_even_n_and_the_ragged_k_range(
    data: dict[str, Any],
) -> None:
    data = with_field(data)
    newest, before = versions.names()[-1], versions.names()[-2]
    named = page_values.values(typed(data), None)
    kinds = field.by_shape()

    def ratios(impl: str, keep: Callable[[field.FieldShape], bool], half: str | None = None) -> list[float]:
        return [r.rows[impl].ratio_to_cublas.median for r in results.field_runs(typed(data), half)
                if keep(kinds[r.shape.mnk])]  # fmt: skip

    even = ratios(newest, lambda s: s.kind != field.ODD_N, field.HELD_OUT)
    said = field_pages.range_text(min(even), max(even))  # "0.98 to 1.01", or "0.99" where both round alike
    mean = f"(geometric mean {statistics.geometric_mean(even):.2f})"
    assert f"{versions.label(newest)} ran at {said} of cuBLAS's speed {mean}" in named["field.held_out"]
    assert f"its {numfmt.number_word(len(even))} shapes" in named["field.held_out"]
    held_out = named["field.summary"].split("; on the held-out half ")[1]
    assert held_out.startswith(f"{versions.label(newest)} ran at {said} ({statistics.geometric_mean(even):.2f})")
    ragged = ratios(before, lambda s: s.kind == field.RAGGED_K)
    assert f"{versions.label(before)} at {field_pages.range_text(min(ragged), max(ragged))}." in named["field.ragged"]
    slowest = min(ratios(newest, lambda s: s.kind != field.ODD_N))
    assert named["field.slowest"].endswith(f": {slowest:.2f}.")
    for name in ("field.summary", "field.held_out", "field.ragged", "field.slowest"):
        assert NOT_MEASURED not in named[name] and "[" not in named[name], named[name]
    one_half = data | {"field": [r for r in data["field"] if r["field"]["half"] == field.FITTED]}
    assert named["field.summary"].startswith("With :math:`N` a multiple of 8, on the fitted half")
    assert page_values.values(typed(one_half), None)["field.summary"].endswith(f"the held-out half is {NOT_MEASURED}.")


def test_where_cublas_passes_its_check_at_every_field_shape_the_caption_says_so_and_no_column_does(
    data: dict[str, Any],
) -> None:
    data = with_field(data)
    for found in data["field"]:
        for figure in [found, *found["runs"]]:
            figure["rows"]["cublas"].pop("wrong_elements", None)
    table = field_pages.field_table(typed(data))
    assert "cuBLAS's check" not in table[0] and all(len(row) == len(table[0]) for row in table)
    named = page_values.values(typed(data), None)
    assert "cuBLAS passed its float64 check at every shape" in named["field.caption"]
    assert named["field.odd_n"].endswith("and passes its float64 check there.")


def test_the_field_table_lists_every_shape_with_the_models_tiles_then_v8_and_v9_once_recorded(
    data: dict[str, Any],
) -> None:
    model = loader.load("tile_model")
    bare = field_pages.field_table(None)
    assert bare[0] == ["Shape", "Kind", "V8's tile", "V9's tile"] and len(bare) == 1 + len(field.FIELD)
    by_name = {row[0].split(", ")[0]: row for row in bare[1:]}
    dw = by_name["L3-8B out dW"]
    pick = model.choose_shared(4096, 4096, 5000)
    assert dw[3] == f"{pick.tile.block_m}{TIMES}{pick.tile.block_n}, B shared" and pick.share == "b"
    data = with_field(data)
    table = field_pages.field_table(typed(data))
    ours = [versions.label(v) for v in versions.names()[-2:]]
    assert table[0] == ["Shape", "Kind", "V9's tile", *(f"{v} {TIMES} cuBLAS" for v in ours), "cuBLAS's check"]
    inexact = [row[0] for row in table[1:] if row[-1].startswith("inexact: 96 elements wrong")]
    assert len(inexact) == 2 and all("head" in name for name in inexact), inexact


def test_a_profiled_row_names_its_largest_stall_reasons_and_a_row_without_them_says_nothing(
    data: dict[str, Any], record: BuildRecord
) -> None:
    stalled = "smsp__average_warps_issue_stalled_{}_per_issue_active.ratio"
    named = page_values.values(typed(data), record)
    table = chapter_tables.performance_table("v3", typed(data), named, record)
    assert not any("stall" in row[0].lower() for row in table) and named["v3.stalls"] == numfmt.NOT_RECORDED
    raw = {stalled.format(r): v for r, v in (("selected", 5.0), ("barrier", 0.85), ("long_scoreboard", 1.92),
                                             ("wait", 0.4), ("sleeping", 0.01))}  # fmt: skip
    data["ladder"]["rows"]["v3"]["counters"]["ncu_metrics"] |= raw
    named = page_values.values(typed(data), record)
    table = chapter_tables.performance_table("v3", typed(data), named, record)
    stalls = [row for row in table if "stall" in row[0].lower()]
    assert stalls == [[stalls[0][0], "long scoreboard 1.92, barrier 0.85, wait 0.40"]]  # "selected" issues: no stall
    assert named["v3.stalls"] == stalls[0][1]


def test_the_odd_n_table_sets_each_head_beside_its_padded_twin_and_marks_an_inexact_cublas(
    data: dict[str, Any],
) -> None:
    heads = [f for f in field.FIELD if f.kind == field.ODD_N]
    bare = field_pages.odd_n_table(None)
    assert len(bare) == 1 + len(heads) and all(row[1] == NOT_MEASURED for row in bare[1:])
    assert NOT_MEASURED in page_values.values(None, None)["field.odd_n"]
    data = with_field(data)
    table = field_pages.odd_n_table(typed(data))
    by_shape = {(f["shape"]["m"], f["shape"]["n"], f["shape"]["k"]): f for f in data["field"]}
    for head in heads:
        twin = field.padded_twin(head)
        assert twin is not None
        start = next(i for i, row in enumerate(table) if row[0].startswith(head.name + ","))
        rows = [table[start], *itertools.takewhile(lambda row: not row[0], table[start + 1 :])]  # named once
        assert [row[1].split(" (")[0] for row in rows] == [
            *(versions.label(v) for v in versions.names()[-2:]),
            "cuBLAS",
        ]
        for row, impl in zip(rows, [*versions.names()[-2:], "cublas"], strict=True):
            odd, padded = by_shape[head.shape]["rows"][impl]["tflops"], by_shape[twin.shape]["rows"][impl]["tflops"]
            assert row[2:] == [f"{odd:.0f}", f"{padded:.0f}", f"{odd / padded:.2f}"]
        assert rows[-1][1] == "cuBLAS (inexact: 96 wrong)"
    sentence = page_values.values(typed(data), None)["field.odd_n"]
    assert "up to 96 elements" in sentence and NOT_MEASURED not in sentence


def test_the_committed_development_check_log_round_trips_byte_for_byte() -> None:
    raw = v9_check.CHECK_LOG.read_bytes()
    log = CheckLog.from_json(json.loads(raw))
    assert json.dumps(log.to_json()).encode() == raw  # as the check's --json writes it
    assert log.timings and all(len(ms) == len(log.timings[0].ms["cuBLAS"]) for ms in log.timings[0].ms.values())


def test_the_development_check_table_reads_the_log_with_todays_rule_and_never_the_logs_v9_row() -> None:
    log = v9_check.check_log()
    assert log is not None, f"{v9_check.CHECK_LOG} is missing"
    model = loader.load("tile_model")
    table = v9_check.check_table(log)
    assert len(table) == 1 + len(log.timings)
    for row, timing in zip(table[1:], log.timings, strict=True):
        shape, ms = timing.shape, timing.ms
        chosen = model.choose_shared(*shape)
        pick = f"v9-{chosen.tile.name}-{chosen.share}"
        ratio = sorted(c / o for c, o in zip(ms["cuBLAS"], ms[pick], strict=True))
        median = (ratio[len(ratio) // 2 - 1] + ratio[len(ratio) // 2]) / 2 if len(ratio) % 2 == 0 else \
            ratio[len(ratio) // 2]  # fmt: skip
        assert row[table[0].index("Fitted model's pick")].endswith(f": {median:.2f}"), (row, pick)
        assert row[0].startswith(field.by_shape()[shape].name)
    named = dict(v9_check.check_values(log))
    assert named["v9-check.rounds"] == numfmt.number_word(len(log.timings[0].ms["cuBLAS"]))
    assert float(named["v9-check.pair_low"]) <= float(named["v9-check.pair_high"])
    # The paired column is what the prose quotes: its lowest and highest over the aligned shapes are pair_low, _high.
    paired = table[0].index("Pair ÷ alone")
    aligned = [float(row[paired]) for row, t in zip(table[1:], log.timings, strict=True)
               if t.shape[2] % 16 == 0 and t.shape[1] % 8 == 0]  # fmt: skip
    assert f"{min(aligned):.2f}" == named["v9-check.pair_low"]
    assert f"{max(aligned):.2f}" == named["v9-check.pair_high"]
    ragged = [float(row[paired]) for row, t in zip(table[1:], log.timings, strict=True) if t.shape[2] % 16]
    assert len(ragged) >= 2 and f"{min(ragged):.2f}" == named["v9-check.ragged_pair_low"]
    assert f"{max(ragged):.2f}" == named["v9-check.ragged_pair_high"]
    assert "not the replicated record" in v9_check.check_caption(log)
    assert v9_check.check_table(None)[1][0] == f"The development check is {NOT_MEASURED}."


def test_the_pair_margin_is_how_far_the_models_best_pair_lies_from_its_best_tile_alone() -> None:
    model = loader.load("tile_model")
    named = dict(field_pages.field_values(None))
    for shape in field_pages.MODEL_SHAPES:
        found = model.estimates_shared(*shape)
        alone = min(e.time for e in found if e.share == "none")
        pair = min(e.time for e in found if e.share != "none")
        told = named[f"v9-model:{numfmt.shape_name(shape)}.pair_margin"]
        number, word = told.split("% ")
        assert float(number) == pytest.approx(abs(100 * (pair / alone - 1)), abs=0.05)
        assert (word == "behind") == (model.choose_shared(*shape).share == "none"), shape  # the word is the choice
    # At 8192³ the pair's saving at c falls short of kappa: the whole reason clusters stay off there.
    assert float(named["v9-model.pair_saving"]) == pytest.approx(model.OPERAND_BYTE_COST / 256, abs=5e-4)
    assert float(named["v9-model.pair_saving"]) < model.CLUSTER_COST


def test_the_first_pages_headline_is_a_number_and_a_plain_word_against_cubLAS(
    data: dict[str, Any], record: BuildRecord
) -> None:
    named = page_values.values(typed(data), record)
    newest = [v for v in versions.names() if v in data["ladder"]["rows"]][-1]
    headline = named["latest.headline"]
    assert versions.label(newest) in headline and named["latest.tflops"] in headline, headline
    assert "[" not in headline and "±" not in headline, f"an interval or the rule's band in the headline: {headline}"
    assert any(f"rounds: {word} (" in headline for word in headline_words.PLAIN.values()), headline  # a plain word


def test_the_headline_says_when_the_newest_version_ran_the_version_befores_tile(
    data: dict[str, Any], record: BuildRecord
) -> None:
    newest, before = [v for v in versions.names() if v in data["ladder"]["rows"]][-2:][::-1]
    same = copy.deepcopy(data)
    same["ladder"]["rows"][newest]["config"] = {**same["ladder"]["rows"][before]["config"], "consumers": 2}
    told = f"(here with {versions.label(before)}'s tile: the same kernel)"
    assert told in page_values.values(typed(same), record)["latest.headline"]
    other = copy.deepcopy(data)
    other["ladder"]["rows"][newest]["config"] = {**other["ladder"]["rows"][before]["config"], "block_n": 192}
    assert "the same kernel" not in page_values.values(typed(other), record)["latest.headline"]


def test_the_runs_table_has_one_row_per_set_of_runs_with_short_commits() -> None:
    data = results.read_default()
    rows = method_tables.runs_table(data)[1:]
    ids = [row[1] for row in rows]
    assert len(ids) == len(set(ids)) and len(rows) <= 10, rows
    commits = [c.strip("` ") for row in rows for c in row[3].split(",")]
    assert commits and all(len(c) == method_tables.COMMIT_CHARS for c in commits), commits


def test_a_run_with_the_peers_is_listed_as_a_set_of_its_own_and_its_peers_reach_the_charts(
    data: dict[str, Any],
) -> None:
    read = typed(with_field(data))
    named = " ".join(row[0] for row in method_tables.runs_table(read)[1:]).lower()
    with_peers = len(results.peer_runs(read, "field"))
    assert (
        "the sweep, with the peers (1 shape)" in named
        and f"the field set, with the peers ({with_peers} shapes)" in named
    )
    (peer_figure,) = results.peer_runs(read, "sweep")
    assert peer_figure not in results.sweep_runs(read) and peer_figure.shape in [
        r.shape for r in results.sweep_runs(read)
    ]
    rows = results.peer_rows(read, "sweep", peer_figure.shape)
    assert list(rows) == [versions.TORCH_COMPILE]  # the peer alone: the versions come from their own figure
    named = page_values.values(read, None)
    assert all("The peers: 1 run of their own, " in named[f"{s}.chart_caption"] for s in ("sweep", "field"))
    alone = copy.deepcopy(data)
    alone["sweep"] = [f for f in alone["sweep"] if versions.TORCH_COMPILE not in f["rows"]]
    assert "The peers" not in page_values.values(typed(alone), None)["sweep.chart_caption"]  # none timed: no words
    # A shape only a run with the peers timed: that figure stands for it, versions and peers alike.
    only = copy.deepcopy(data)
    only["sweep"] = [f for f in only["sweep"] if f["shape"] != only["sweep"][-1]["shape"] or versions.TORCH_COMPILE
                     in f["rows"]]  # fmt: skip
    (lone,) = [f for f in results.sweep_runs(typed(only)) if f.shape == peer_figure.shape]
    assert versions.TORCH_COMPILE in lone.rows and not results.beside(typed(only), "sweep", lone)
    assert results.beside(read, "sweep", peer_figure)
    assert results.peer_rows(read, "sweep", results.sweep_runs(read)[-1].shape) == {}


def test_the_generator_prints_shapes_one_way_and_fills_in_the_methods_field_names() -> None:
    assert numfmt.shapes_in_text("at 4096^3 (3.9 waves)") == "at 4096\u00b3 (3.9 waves)"
    assert numfmt.shapes_in_text("launch 1 of 5 (8192x8192x8192)") == "launch 1 of 5 (8192\u00b3)"
    assert numfmt.shapes_in_text("at 3000x5000x4096 (M") == f"at 3000{TIMES}5000{TIMES}4096 (M"
    assert (
        numfmt.shapes_in_text("v8:5000x3000x4096 and ``8192x8192x8192``") == "v8:5000x3000x4096 and ``8192x8192x8192``"
    )
    generated = "".join(p.read_text(encoding="utf-8") for p in (paths.DOCS_DIR / "_generated").glob("*.csv"))
    assert "^3" not in generated and "method.verdicts" not in generated


def test_a_whole_sentence_reads_with_its_values_or_says_it_is_not_measured() -> None:
    from matmul_site import whole

    page = {"p.rst": ".. whole v8.whole-sweep\n   Over the sweep V7 is |v7.sweep|;\n   V8 is |latest.sweep|.\n"
                     "   unmeasured: The sweep is\n   not measured yet.\n\nText |v8.whole-sweep|\n"}  # fmt: skip
    both = {"v7.sweep": "level", "latest.sweep": "ahead"}
    assert dict(whole.whole_values(page, both)) == {"v8.whole-sweep": "Over the sweep V7 is level; V8 is ahead."}
    for named in ({"v7.sweep": "level"}, {**both, "latest.sweep": NOT_MEASURED}):
        assert dict(whole.whole_values(page, named)) == {"v8.whole-sweep": "The sweep is not measured yet."}


def test_each_budget_box_s_intensity_has_the_l2_yardstick_its_cap_the_rate_times_the_intensity(
    data: dict[str, Any], record: BuildRecord
) -> None:
    rate = budget.l2_rate()
    assert rate is not None
    for version in record.versions:
        rows = dict(chapter_tables.budget_table(version, record, typed(data)))
        intensity = float(rows["Intensity"].split(": ")[1].split()[0])
        found = re.search(
            r"(\d+) TFLOPS at L2's fastest measured feed, ([\d.]+) TB/s \(a yardstick, not a bound\)$",
            rows["Intensity"],
        )
        assert found and found[2] == f"{rate.bytes_per_second / 1e12:.1f}", (version, rows["Intensity"])
        cap = float(found[1])
        assert abs(cap - rate.bytes_per_second * intensity / 1e12) <= 0.01 * cap, (version, cap)
