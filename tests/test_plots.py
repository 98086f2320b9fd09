"""The charts: drawn from a results file with one cuBLAS baseline, byte-for-byte the same twice, honest when empty.

The results used here are tests/fake_results.py's made-up schema-2 file, written into a temporary
directory; never committed as data.
"""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import draw_all
import matplotlib.pyplot as plt
import pytest
from chart_text import layout_problems
from matplotlib.colors import to_rgb

from fake_field import with_field
from fake_results import fake_file, provenance, typed
from matmul_data import model, paths, results, versions
from matmul_site import chart_parts, chartkit, charts, numfmt, rerun, table_captions


@pytest.fixture(scope="session")
def fake() -> dict[str, Any]:
    return fake_file()


@pytest.fixture
def data(fake: dict[str, Any]) -> dict[str, Any]:
    return copy.deepcopy(fake)


@pytest.fixture(autouse=True)
def close_figures(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.delenv(rerun.ENV, raising=False)
    yield
    plt.close("all")


def use_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, data: dict[str, Any] | None) -> Path:
    path = tmp_path / "results.json"
    if data is not None:
        path.write_text(json.dumps(data))
    monkeypatch.setenv(paths.ENV_RESULTS, str(path) if data is not None else paths.NO_RESULTS)
    return path


def texts(fig: Any) -> list[str]:
    return [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]


def test_every_chart_script_draws_one_figure_the_same_bytes_twice(data: Any, tmp_path: Path, monkeypatch: Any) -> None:
    use_file(tmp_path, monkeypatch, data)
    expected = {"plot_summary", "plot_sweep", "plot_steps", "plot_replication", "plot_field"}
    expected |= {f"plot_{v}" for v in versions.names()}
    assert set(draw_all.scripts()) == expected
    for script in draw_all.scripts():
        first = draw_all.draw(script, tmp_path / "a")
        second = draw_all.draw(script, tmp_path / "b").read_bytes()
        assert first.stat().st_size > 5000, f"{first.name} looks empty"
        assert first.read_bytes() == second, f"{script.name} drew different bytes twice"
        assert b"<dc:date>" not in second, f"{script.name} embeds a date"


def method_words(data: dict[str, Any]) -> list[str]:
    """The method's own text in the results file: said on the method page, nowhere else."""
    return [data["method"][key] for key in ("timer", "l2_flush", "order", "statistic", "interval")]


def test_no_caption_or_method_text_is_drawn_into_a_chart(data: dict[str, Any]) -> None:
    read = typed(data)
    drawn = [charts.version_chart("v2", read), charts.summary_chart(read), charts.sweep_chart(read)]
    drawn += [charts.steps_chart(read), charts.replication_chart(typed(replicated(data)))]
    for fig in drawn:
        words = " ".join(texts(fig) + [t.get_text() for t in fig.legends[0].get_texts()] if fig.legends else texts(fig))
        assert table_captions.ladder_caption(read) not in words and table_captions.sweep_caption(read) not in words
        assert not [m for m in method_words(data) if m in words], words


@pytest.mark.parametrize("case", ["no file", "no ladder"])
def test_empty_charts_say_not_measured_yet_and_show_no_number(case: str, tmp_path: Path, monkeypatch: Any) -> None:
    bare = None if case == "no file" else provenance() | {"steps": []}
    use_file(tmp_path, monkeypatch, bare)
    for script in draw_all.scripts():
        draw_all.draw(script, tmp_path)
    figures = [charts.version_chart("v3"), charts.summary_chart(), charts.sweep_chart(), charts.steps_chart()]
    figures += [charts.replication_chart(), charts.field_chart()]
    for fig in figures:
        words = texts(fig)
        assert any(charts.NOT_MEASURED in w for w in words), words
        # No placeholder numbers: nothing but version and GPU names may carry a digit ("V0-V6", "H200").
        names = r"V\d|" + re.escape(provenance()["gpu"]["name"])
        assert not [w for w in words if re.search(r"\d", re.sub(names, "", w))], words


def test_unmeasured_version_chart_says_so(data: dict[str, Any]) -> None:
    del data["ladder"]["rows"]["v5"]
    fig = charts.version_chart("v5", typed(data))
    assert [t.get_text() for t in fig.axes[0].texts] == [f"V5: {charts.NOT_MEASURED}"]


def test_version_chart_highlights_this_version_and_draws_the_same_runs_cublas(data: dict[str, Any]) -> None:
    fig = charts.version_chart("v3", typed(data))
    ax = fig.axes[0]
    rows = data["ladder"]["rows"]
    bars = {round(p.get_width(), 3): p.get_facecolor()[:3] for p in ax.patches}
    colour = {v: bars[round(rows[v]["tflops"], 3)] for v in versions.names()}
    assert colour["v0"] == colour["v2"] != colour["v3"] != colour["v4"]
    assert colour["v4"] == pytest.approx(to_rgb(chartkit.LATER))
    assert [line.get_xdata()[0] for line in ax.lines] == [rows["cublas"]["tflops"]]  # one baseline
    assert ax.get_title(loc="left").replace("\n", " ") == (
        f"V3: {rows['v3']['tflops']:.0f} TFLOPS, "
        f"{numfmt.ratio_text(model.Interval.from_json(rows['v3']['ratio_to_cublas']))} cuBLAS"
    )


def test_summary_chart_marks_cublas_the_datasheet_and_the_peak_at_each_rows_clock(data: dict[str, Any]) -> None:
    data["ladder"]["rows"]["v2"]["sm_clock_mhz"] = 1500.0
    fig = charts.summary_chart(typed(data))
    ax = fig.axes[0]
    levels = sorted(line.get_xdata()[0] for line in ax.lines if len(line.get_xdata()))
    assert levels == sorted([data["ladder"]["rows"]["cublas"]["tflops"], 989.4])
    peaks = sorted({round(seg[0][0], 3) for c in ax.collections for seg in c.get_segments()})
    assert peaks == sorted({round(results.peak_tflops_at(typed(data), c), 3) for c in (1500.0, 1755.0)})


# In the ladder of clocked(): a row with its clock, one whose clock was not sampled, one whose clock is suspect.
CLOCKED, UNCLOCKED, SUSPECT = versions.names()[2], versions.names()[1], versions.names()[-3]


def clocked(data: dict[str, Any]) -> dict[str, Any]:
    """The made-up ladder and sweep with a clock of its own for every row, but in the ladder UNCLOCKED's is not
    sampled and SUSPECT's is suspect, and in the sweep the first version's is suspect at the first shape and the
    second's is missing at the second."""
    for run in [data["ladder"], *data["sweep"]]:
        for index, row in enumerate(run["rows"].values()):
            row["sm_clock_mhz"] = 1500.0 + 45.0 * index
    data["ladder"]["rows"][UNCLOCKED]["sm_clock_mhz"] = None
    data["ladder"]["rows"][SUSPECT].update(efficiency=0.45, suspect=True)
    swept = [v for v in versions.names() if v in data["sweep"][0]["rows"]]
    data["sweep"][0]["rows"][swept[0]].update(efficiency=0.45, suspect=True)
    data["sweep"][1]["rows"][swept[1]]["sm_clock_mhz"] = None
    return data


def peak_marks_at(fig: Any) -> list[float]:
    """The x of every peak mark a chart drew (a line across a bar, or a point's marker), in TFLOPS."""
    xs = []
    for ax in fig.axes:
        xs += [seg[0][0] for c in ax.collections if c.get_gid() == chart_parts.PEAK_GID for seg in c.get_segments()]
        xs += [x for line in ax.lines if line.get_gid() == chart_parts.PEAK_GID for x in line.get_xdata()]
    return sorted(xs)


def sms_x_4096_x_clock(data: dict[str, Any], rows: list[dict[str, Any]]) -> list[float]:
    """The tensor-core peak of each row with a clock that is not suspect: SMs x 4096 FLOP per clock x the clock."""
    sms = data["gpu"]["sm_count"]
    return sorted(
        sms * 4096 * r["sm_clock_mhz"] * 1e6 / 1e12 for r in rows if r["sm_clock_mhz"] and not r.get("suspect")
    )


@pytest.mark.parametrize("chart", ["version", "summary", "steps", "sweep"])
def test_every_tflops_chart_marks_the_peak_at_each_rows_clock_and_none_for_a_suspect_one_and_says_so(
    chart: str, data: dict[str, Any]
) -> None:
    data = clocked(data)
    read, rows = typed(data), data["ladder"]["rows"]
    drawn, shown = {
        "version": (lambda: charts.version_chart("v3", read), [rows[v] for v in versions.names()]),
        "summary": (lambda: charts.summary_chart(read), list(rows.values())),
        "steps": (lambda: charts.steps_chart(read), [rows[v] for v, _ in results.ladder_steps(read)]),
        "sweep": (
            lambda: charts.sweep_chart(read),
            [
                row
                for run in data["sweep"]
                for impl, row in run["rows"].items()
                if versions.TORCH_COMPILE not in run["rows"] or impl == versions.TORCH_COMPILE
            ],
        ),  # peers: their own run
    }[chart]
    fig = drawn()
    expected = sms_x_4096_x_clock(data, shown)
    assert len(expected) == len(shown) - 2  # no mark for the suspect row, nor for the one without a clock
    assert peak_marks_at(fig) == pytest.approx(expected)
    assert chart_parts.SUSPECT_KEY in [t.get_text() for legend in fig.legends for t in legend.get_texts()]
    assert not layout_problems(fig), layout_problems(fig)


@pytest.mark.parametrize("chart", ["version", "summary", "steps"])
def test_each_bars_label_gives_its_share_of_the_peak_or_says_its_clock_is_suspect(
    chart: str, data: dict[str, Any]
) -> None:
    data = clocked(data)
    read = typed(data)
    drawn = {"version": lambda: charts.version_chart("v3", read), "summary": lambda: charts.summary_chart(read),
             "steps": lambda: charts.steps_chart(read)}[chart]  # fmt: skip
    words = [w.strip() for w in texts(drawn())]  # inside a bar or beside it
    rows = data["ladder"]["rows"]
    row, suspect = rows[CLOCKED], rows[SUSPECT]
    share = 100 * row["tflops"] / (data["gpu"]["sm_count"] * 4096 * row["sm_clock_mhz"] / 1e6)
    assert f"{row['tflops']:.0f} ({share:.0f}%)" in words
    assert f"{suspect['tflops']:.0f} ({chart_parts.SUSPECT_CLOCK})" in words
    assert f"{rows[UNCLOCKED]['tflops']:.0f}" in words  # no clock: its TFLOPS alone


def test_a_chart_without_any_clock_draws_no_peak_and_no_peak_legend(data: dict[str, Any]) -> None:
    for run in [data["ladder"], *data["sweep"]]:
        for row in run["rows"].values():
            row["sm_clock_mhz"] = None
    read = typed(data)
    for fig in (charts.version_chart("v3", read), charts.steps_chart(read), charts.sweep_chart(read)):
        assert peak_marks_at(fig) == []
        legend = [t.get_text() for legend in fig.legends for t in legend.get_texts()]
        assert not [t for t in legend if "peak" in t], legend


def test_sweep_chart_shows_ratios_with_their_intervals_and_tflops(data: dict[str, Any]) -> None:
    fig = charts.sweep_chart(typed(data))
    top, bottom = fig.axes[:2]
    first = versions.names()[-3]  # the first of the three versions the sweep times
    own = [r for r in data["sweep"] if versions.TORCH_COMPILE not in r["rows"]]  # a peers' run stands apart
    by_size = sorted(own, key=lambda r: sum(r["shape"].values()))
    swept = [r["rows"][first]["ratio_to_cublas"] for r in by_size]
    series = {c.get_label(): c for c in top.containers}
    medians = list(series[versions.label(first)].lines[0].get_xdata())
    assert medians == pytest.approx([iv["median"] for iv in swept])
    caps = sorted(series[versions.label(first)].lines[1][0].get_xdata())  # lower caps first, then upper
    assert caps[: len(swept)] == pytest.approx(sorted(iv["low"] for iv in swept))
    assert "cuBLAS" not in series, "cuBLAS is the baseline line at 1.0, not a series"
    assert any(list(line.get_xdata()) == [1.0, 1.0] for line in top.lines)
    swept = {versions.label(v) for v in versions.names()[-3:]}
    assert {line.get_label() for line in bottom.lines} >= swept | {"cuBLAS"}  # the last three swept
    # The peer at its one shape, from its own run, beside the versions' figure there (not twice the versions).
    assert len(series[versions.label(versions.TORCH_COMPILE)].lines[0].get_xdata()) == 1
    assert len(medians) == len(own)


# A merged interval wholly above 1 but inside the file's band: the file's verdict ("within") is not the one the
# interval alone would give against 1.0 ("pays"), so a chart that ignored the file's verdicts shows another colour.
WITHIN_THE_BAND = {"median": 1.006, "low": 1.003, "high": 1.010, "band": 0.015, "verdict": "within"}


def test_steps_chart_colours_each_step_by_its_verdict(data: dict[str, Any]) -> None:
    rows = data["ladder"]["rows"]
    rows["v3"]["step"].update(median=1.0, low=0.98, high=1.02)
    rows["v2"]["step"].update(WITHIN_THE_BAND)
    fig = charts.steps_chart(typed(data))
    ax = fig.axes[0]
    bars = list(ax.patches)
    steps = results.ladder_steps(typed(data))
    assert len(bars) == len(steps)
    by_version = dict(zip([i for i, _ in steps], bars, strict=True))
    for impl, bar in by_version.items():
        rule = results.verdict(model.Interval.from_json(rows[impl]["step"]))
        assert bar.get_facecolor()[:3] == pytest.approx(to_rgb(chartkit.VERDICT_COLOURS[rule])), impl
        assert bar.get_x() == pytest.approx(rows[rows[impl]["step"]["over"]]["tflops"])
        assert bar.get_x() + bar.get_width() == pytest.approx(rows[impl]["tflops"])
    assert by_version["v2"].get_facecolor()[:3] == pytest.approx(to_rgb(chartkit.VERDICT_COLOURS["within"]))
    assert by_version["v3"].get_facecolor()[:3] == pytest.approx(to_rgb(chartkit.VERDICT_COLOURS["unresolved"]))
    first = steps[0][1]
    assert ax.texts[0].get_text() == f"V0\u2192V1  {numfmt.ratio_text(first)}"


def test_field_chart_shows_each_shape_by_half_as_ratios_to_its_runs_cublas(data: dict[str, Any]) -> None:
    data = with_field(data)
    fig = charts.field_chart(typed(data))
    (ax,) = fig.axes
    series = {c.get_label(): c for c in ax.containers}
    ours = versions.names()[-2:]
    assert list(series) == [*(versions.label(v) for v in ours), "Triton (torch.compile templates)", "QuACK (CuTe DSL)"]
    ordered = results.field_runs(typed(data), "fitted") + results.field_runs(typed(data), "held-out")
    newest = [r.rows[ours[-1]].ratio_to_cublas.median for r in ordered]
    assert list(series[versions.label(ours[-1])].lines[0].get_xdata()) == pytest.approx(newest)
    quack = series["QuACK (CuTe DSL)"].lines[0].get_xdata()
    ran = [r for r in results.peer_runs(typed(data), "field") if versions.QUACK in r.rows]  # its own runs
    assert 0 < len(quack) == len(ran) < len(ordered)  # only where it ran
    assert sorted(quack) == pytest.approx(sorted(r.rows[versions.QUACK].ratio_to_cublas.median for r in ran))
    words = texts(fig)
    assert words.count("Fitted half") == words.count("Held-out half") == 1
    inexact = [w for w in words if "(cuBLAS inexact)" in w.replace("\n", " ")]
    assert len(inexact) == sum(results.inexact_baseline(r) is not None for r in ordered) == 2, inexact
    assert [line.get_xdata()[0] for line in ax.lines if line.get_linestyle() == "--"] == [1.0]  # the baseline
    assert not layout_problems(fig), layout_problems(fig)


def replicated(data: dict[str, Any], runs: int = 3) -> dict[str, Any]:
    """The made-up ladder as if merged from ``runs`` runs: each run's medians a little apart, the merged
    intervals as they are (the chart draws what the file says; merging is matmul_bench's)."""
    ladder = data["ladder"]
    ladder["runs"] = []
    for index in range(runs):
        run = copy.deepcopy({k: v for k, v in ladder.items() if k != "runs"})
        run["run_id"] = f"2026-12-0{index + 1}T100000Z"
        run["date"] = f"2026-12-0{index + 1}"
        for row in run["rows"].values():
            for key in ("step", "ratio_to_cublas"):
                if key in row:
                    row[key]["median"] *= 1 + 0.004 * (index - 1)
        ladder["runs"].append(run)
    data["method"]["verdicts"] = {"count": 1, "family_confidence": 0.95, "confidence_each": 0.95, "band": 0.015}
    return data


def test_replication_chart_shows_each_runs_median_and_the_merged_interval_by_verdict(data: dict[str, Any]) -> None:
    data = replicated(data)
    ladder = data["ladder"]
    ladder["rows"]["v2"]["step"].update(WITHIN_THE_BAND)
    fig = charts.replication_chart(typed(data))
    top, bottom = fig.axes[:2]
    steps = results.ladder_steps(typed(data))
    names = [f"{versions.label(s.over)}\u2192{versions.label(i)}" for i, s in steps]
    assert [t.get_text() for t in top.get_yticklabels()] == names
    impls = [i for i in ladder["rows"] if i != results.CUBLAS]
    assert [t.get_text() for t in bottom.get_yticklabels()] == [versions.label(i) for i in impls]
    for ax, key, shown in ((top, "step", [i for i, _ in steps]), (bottom, "ratio_to_cublas", impls)):
        (bars,) = [c for c in ax.collections if len(c.get_segments()) == len(shown)]
        for impl, segment, colour in zip(shown, bars.get_segments(), bars.get_colors(), strict=True):
            merged = ladder["rows"][impl][key]
            assert [x for x, _ in segment] == pytest.approx([merged["low"], merged["high"]]), impl
            rule = results.verdict(model.Interval.from_json(merged))
            assert tuple(colour[:3]) == pytest.approx(to_rgb(chartkit.VERDICT_COLOURS[rule]))
        dots = sorted(x for line in ax.lines if line.get_marker() == "o" for x in line.get_xdata())
        assert dots == pytest.approx(sorted(r["rows"][i][key]["median"] for r in ladder["runs"] for i in shown))
        if key == "step":
            within = bars.get_colors()[shown.index("v2")][:3]
            assert tuple(within) == pytest.approx(to_rgb(chartkit.VERDICT_COLOURS["within"]))
        (band,) = [p for p in ax.patches if p.get_width() < 1]
        assert (band.get_x(), band.get_x() + band.get_width()) == pytest.approx((0.985, 1.015))
    assert top.get_title(loc="left") == "The ladder's 3 runs at 8192\u00b3"


def test_replication_chart_with_one_run_says_there_is_nothing_to_compare(data: dict[str, Any]) -> None:
    fig = charts.replication_chart(typed(data))  # the made-up ladder is one run
    assert texts(fig) == [f"Replicated ladder: {charts.NOT_MEASURED}"]


def test_unknown_version_is_a_value_error(data: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="v99"):
        charts.version_chart("v99", typed(data))


def test_draw_all_without_rerun_never_imports_torch(tmp_path: Path) -> None:
    program = (
        "import sys, draw_all\n"
        f"rc = draw_all.main(['--charts-dir', {str(tmp_path)!r}])\n"
        "bad = [m for m in ('torch', 'tilus', 'cuda') if m in sys.modules]\n"
        "sys.exit(f'imported {bad}' if bad else rc)\n"
    )
    search = os.pathsep.join(p for p in (str(draw_all.PLOTS), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "PYTHONPATH": search, paths.ENV_RESULTS: paths.NO_RESULTS}
    env.pop(rerun.ENV, None)
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    assert len(list(tmp_path.glob("plot_*.svg"))) == len(draw_all.scripts())


def test_rerun_flag_and_variable_run_the_benchmark_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(draw_all, "rerun_benchmark", lambda extra: calls.append(extra) or 3)
    assert draw_all.main(["--rerun", "--charts-dir", str(tmp_path), "--versions", "v1"]) == 3
    monkeypatch.setenv(draw_all.ENV_RERUN, "1")
    assert draw_all.main(["--charts-dir", str(tmp_path)]) == 3
    assert calls == [["--versions", "v1"], []]
    assert not list(tmp_path.glob("*.svg")), "charts were redrawn although the benchmark failed"


def test_plot_scripts_do_not_guard_on_main() -> None:
    # The plot directive runs a script as __main__ when the text "__main__" appears in it; ours draw unconditionally.
    for name, code in draw_all.scripts().items():
        assert "__main__" not in code, name


# ---------------------------------------------------------------------------- rerun at build time


def test_without_the_variable_a_chart_never_asks_for_a_gpu(data: Any, tmp_path: Path, monkeypatch: Any) -> None:
    use_file(tmp_path, monkeypatch, data)
    monkeypatch.setattr(rerun, "hopper_gpu", lambda: pytest.fail("asked for a GPU without the variable"))
    monkeypatch.setattr(rerun.subprocess, "run", lambda *a, **k: pytest.fail("ran a subprocess"))
    charts.version_chart("v3", *rerun.ladder_for("v3"))


def test_with_the_variable_and_no_hopper_gpu_it_says_why_and_draws_the_recorded_file(
    data: Any, tmp_path: Path, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    use_file(tmp_path, monkeypatch, data)
    monkeypatch.setenv(rerun.ENV, "1")
    monkeypatch.setattr(rerun, "hopper_gpu", lambda: (None, "no Hopper GPU here"))
    rerun.fresh.cache_clear()
    fig = charts.version_chart("v3", *rerun.ladder_for("v3"))
    v0 = f" {data['ladder']['rows']['v0']['tflops']:.0f} ("  # its TFLOPS, then its share of the peak
    assert [t for t in texts(fig) if t.startswith(v0)], "the recorded ladder is not drawn"
    lines = capsys.readouterr().err.strip().splitlines()
    assert len(lines) == 1 and "no Hopper GPU here" in lines[0] and rerun.ENV in lines[0]


def test_with_the_variable_on_hopper_it_reruns_its_version_and_says_so(
    data: Any, tmp_path: Path, monkeypatch: Any
) -> None:
    use_file(tmp_path, monkeypatch, data)
    fresh = copy.deepcopy(data)
    for figure in (fresh["ladder"], *fresh["ladder"]["runs"]):
        figure["rows"] = {k: v for k, v in figure["rows"].items() if k in ("v3", "cublas")}
        figure["rows"]["v3"].pop("step")
    source = tmp_path / "fresh.json"
    source.write_text(json.dumps(fresh))
    seen: list[list[str]] = []

    def fake_command(version: str, out: Path) -> list[str]:
        seen.append([version])
        return [sys.executable, "-c", f"import shutil; shutil.copy({str(source)!r}, {str(out)!r})"]

    monkeypatch.setenv(rerun.ENV, "1")
    monkeypatch.setattr(rerun, "hopper_gpu", lambda: ("NVIDIA H100 80GB HBM3", None))
    monkeypatch.setattr(rerun, "command", fake_command)
    monkeypatch.setattr(rerun, "OUT_DIR", tmp_path / "rerun")
    rerun.fresh.cache_clear()
    fig = charts.version_chart("v3", *rerun.ladder_for("v3"))
    assert texts(fig).count("not in this run") == len(versions.names()) - 1, texts(fig)
    assert "rerun at build time on NVIDIA H100 80GB HBM3" in " ".join(fig.axes[0].get_title(loc="left").split())
    assert seen == [["v3"]]
    rerun.fresh.cache_clear()


def test_rerun_command_runs_its_version_and_cublas_quick_into_build(tmp_path: Path) -> None:
    command = rerun.command("v4", tmp_path / "v4.json")
    out = str(tmp_path / "v4.json")
    assert command[1:] == ["-m", "matmul_bench", "record", "--ladder", "--versions", "v4", "--quick", "--out", out]
    assert rerun.OUT_DIR.is_relative_to(paths.BUILD_DIR)


def test_the_benchmarks_process_imports_this_checkouts_packages(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    code = "import matmul_bench, matmul_site; print(matmul_bench.__file__); print(matmul_site.__file__)"
    # From outside the checkout, as an installed copy elsewhere would be found first: src/ comes first.
    done = subprocess.run([sys.executable, "-c", code], env=paths.child_env(), cwd=paths.ROOT.parent,
                          capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr
    src = paths.ROOT / "src"
    assert [Path(line).parent.parent for line in done.stdout.split()] == [src, src]
    assert paths.child_env()["PYTHONPATH"].split(os.pathsep) == [str(src), "/elsewhere"]


def test_each_chapters_chart_block_is_the_code_nox_plots_runs() -> None:
    for version in versions.all_versions():
        page = (paths.CHAPTERS_DIR / f"{version.name}.rst").read_text(encoding="utf-8")
        block = re.search(r"^\.\. plot::\n(?:   :.*\n)*\n((?:   .*\n|\n)+)", page, re.M)
        assert block, f"{version.name}.rst has no plot block"
        code = "".join(line.removeprefix("   ") for line in block[1].splitlines(keepends=True)).strip() + "\n"
        assert code == rerun.chart_code(version.name), version.name


def test_draw_all_without_the_docs_stack_says_what_to_install(tmp_path: Path) -> None:
    # -S -I: no site-packages and no PYTHONPATH, so neither matplotlib nor matmul_site can be imported.
    done = subprocess.run(
        [sys.executable, "-S", "-I", str(draw_all.PLOTS / "draw_all.py")], capture_output=True, text=True
    )
    assert done.returncode != 0
    assert 'pip install -e ".[docs]"' in done.stderr and "Traceback" not in done.stderr
