"""The charts: they draw from a results file, byte-for-byte the same twice, and say so when nothing is measured.

The results used here are a fixture written into a temporary directory; they are
made-up numbers shaped like the real file, never committed as data.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import draw_all
import matplotlib.pyplot as plt
import pytest

from matmul_site import charts as chartlib
from matmul_site import results
from fake_results import provenance

FIXTURE_GPU = "Fixture GPU X900"


def fixture_results(versions: tuple[str, ...] = ("v0", "v1", "v2", "v3"), sweep: bool = True) -> dict[str, Any]:
    """A results dict in the documented shape with recognisable made-up numbers."""
    cublas_ms = 2 * 8192**3 / 747.3e12 * 1e3

    def row(name: str, tflops: float, technique: str, config: dict[str, int]) -> dict[str, Any]:
        ms = 2 * 8192**3 / (tflops * 1e12) * 1e3
        return {
            "latency_ms": ms,
            "tflops": tflops,
            "fraction_of_cublas": cublas_ms / ms,
            "cublas_latency_ms": cublas_ms,
            "process_latencies_ms": [ms * 0.999, ms, ms * 1.002],
            "config": config,
            "counters": {"tensor_pipe_pct": 37.25, "dram_throughput_pct": 21.75},
            "date": "2031-02-03",
            "git_commit": "f1x7ure",
            "technique": technique,
        }

    made_up = {
        "v0": 311.7,
        "v1": 523.3,
        "v2": 547.9,
        "v3": 601.1,
        "v4": 653.3,
        "v5": 688.1,
        "v6": 744.9,
        "cublas": 747.3,
    }
    entries = {
        name: row(name, made_up[name], chartlib.TECHNIQUES[name], {"block_m": 128, "block_n": 128, "block_k": 64})
        for name in (*versions, "cublas")
    }
    entries["cublas"]["config"] = {}
    entries["cublas"]["counters"] = None
    rows = []
    if sweep:
        for impl, scale in (("v4", 0.87), ("v6", 0.99), ("cublas", 1.0), ("torch-compile-max-autotune", 0.93)):
            for m, n, k in ((1024, 1024, 1024), (4096, 4096, 4096), (8192, 14336, 4096), (8192, 8192, 8192)):
                t = scale * (200 + 60 * (m * n * k) ** (1 / 9))
                rows.append({"impl": impl, "m": m, "n": n, "k": k, "latency_ms": 2 * m * n * k / t / 1e9,
                             "tflops": t, "date": "2031-02-04"})  # fmt: skip
    return {**provenance(FIXTURE_GPU), "entries": entries, "sweep": rows}


def write_fixture(directory: Path, data: dict[str, Any] | None = None) -> Path:
    path = directory / "fixture-gpu-x900.json"
    path.write_text(json.dumps(fixture_results() if data is None else data, indent=1))
    return path


@pytest.fixture(autouse=True)
def close_figures() -> Any:
    yield
    plt.close("all")


@pytest.fixture
def fixture_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = write_fixture(tmp_path)
    monkeypatch.setenv(chartlib.ENV_RESULTS, str(path))
    return path


@pytest.fixture
def no_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(chartlib.ENV_RESULTS, str(tmp_path / "absent.json"))


def svg_text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def test_fixture_satisfies_the_results_contract() -> None:
    results.validate(fixture_results())


def test_every_chart_script_draws_one_figure_from_the_fixture(fixture_file: Path, tmp_path: Path) -> None:
    out = tmp_path / "charts"
    drawn = [draw_all.draw(script, out) for script in draw_all.scripts()]
    assert {p.stem for p in drawn} == {"plot_summary", "plot_sweep", *(f"plot_v{i}" for i in range(7))}
    for path in drawn:
        assert path.stat().st_size > 5000, f"{path.name} looks empty"


def test_charts_are_byte_identical_on_two_draws(fixture_file: Path, tmp_path: Path) -> None:
    for script in draw_all.scripts():
        first = draw_all.draw(script, tmp_path / "a").read_bytes()
        second = draw_all.draw(script, tmp_path / "b").read_bytes()
        assert first == second, f"{script.name} drew different bytes twice"
        assert b"<dc:date>" not in first, f"{script.name} embeds a date"


def test_caption_names_gpu_size_dtype_method_and_date_from_the_file(fixture_file: Path) -> None:
    text = chartlib.caption(chartlib.load())
    for expected in (FIXTURE_GPU, "8192\u00d78192\u00d78192", "float16", "float32", "CUDA events", "2031-02-03"):
        assert expected in text, f"caption lacks {expected!r}: {text}"
    assert "median over 3 fresh processes" in text


def test_caption_follows_the_file_not_a_template(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    data = fixture_results()
    data["gpu"]["name"] = "Another Board"
    data["method"]["timer"] = "a stopwatch"
    for e in data["entries"].values():
        e["date"] = "2040-01-01"
    monkeypatch.setenv(chartlib.ENV_RESULTS, str(write_fixture(tmp_path, data)))
    text = chartlib.caption(chartlib.load())
    assert "Another Board" in text and "a stopwatch" in text and "2040-01-01" in text
    assert FIXTURE_GPU not in text


def test_caption_is_drawn_into_the_chart(fixture_file: Path) -> None:
    fig = chartlib.version_chart("v2")
    texts = [t.get_text() for t in fig.texts]
    assert chartlib.caption(chartlib.load()) in texts


def test_no_results_file_draws_not_measured_yet_panels(no_results: None, tmp_path: Path) -> None:
    assert chartlib.load() is None
    for script in draw_all.scripts():
        draw_all.draw(script, tmp_path)
    for fig_fn in (lambda: chartlib.version_chart("v3"), chartlib.summary_chart, chartlib.sweep_chart):
        fig = fig_fn()
        words = [t.get_text() for ax in fig.axes for t in ax.texts] + [t.get_text() for t in fig.texts]
        assert any(chartlib.NOT_MEASURED in w for w in words), words


def test_unmeasured_version_chart_says_so(fixture_file: Path) -> None:
    fig = chartlib.version_chart("v5")  # the fixture measures v0-v3 only
    words = [t.get_text() for t in fig.axes[0].texts]
    assert words == [f"V5: {chartlib.NOT_MEASURED}"]


def test_version_chart_highlights_this_version_and_fades_later_ones(tmp_path: Path) -> None:
    data = fixture_results(versions=tuple(chartlib.VERSIONS))
    fig = chartlib.version_chart("v3", data)
    bars = {round(p.get_width(), 3): p.get_facecolor() for p in fig.axes[0].patches}
    colour = {name: bars[round(data["entries"][name]["tflops"], 3)] for name in chartlib.VERSIONS}
    assert len({colour["v0"], colour["v1"], colour["v2"]}) == 1
    assert colour["v3"] != colour["v2"] and colour["v4"] != colour["v3"]
    assert colour["v4"][:3] == pytest.approx(matplotlib_rgb(chartlib.LATER))


def matplotlib_rgb(colour: str) -> tuple[float, ...]:
    from matplotlib.colors import to_rgb

    return to_rgb(colour)


def test_summary_chart_draws_cublas_and_published_peak_lines() -> None:
    data = fixture_results()
    fig = chartlib.summary_chart(data)
    levels = sorted(line.get_ydata()[0] for line in fig.axes[0].lines)
    assert levels == sorted([data["entries"]["cublas"]["tflops"], data["gpu"]["published_dense_fp16_tflops"]])


def test_sweep_chart_with_empty_sweep_says_not_measured_yet() -> None:
    fig = chartlib.sweep_chart(fixture_results(sweep=False))
    assert [t.get_text() for t in fig.axes[0].texts] == [f"Shape sweep: {chartlib.NOT_MEASURED}"]


def test_sweep_chart_has_one_line_per_implementation_ordered_by_flops() -> None:
    data = fixture_results()
    fig = chartlib.sweep_chart(data)
    ax = fig.axes[0]
    assert sorted(line.get_label() for line in ax.lines) == sorted(
        ["V4", "V6", "cuBLAS", "torch.compile (max-autotune)"]
    )
    ticks = [t.get_text() for t in ax.get_xticklabels()]
    assert ticks[0] == "1024\u00d71024\u00d71024" and ticks[-2] == "8192\u00d714336\u00d74096"


def test_corrupt_results_file_raises_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text("{ not json")
    monkeypatch.setenv(chartlib.ENV_RESULTS, str(bad))
    with pytest.raises(results.ResultsError, match="broken.json"):
        chartlib.load()


def test_unknown_version_is_a_value_error() -> None:
    with pytest.raises(ValueError, match="v7"):
        chartlib.version_chart("v7", fixture_results())


def test_draw_all_without_rerun_never_imports_torch(no_results: None, tmp_path: Path) -> None:
    program = (
        "import sys, draw_all\n"
        f"rc = draw_all.main(['--out', {str(tmp_path)!r}])\n"
        "bad = [m for m in ('torch', 'tilus', 'cuda') if m in sys.modules]\n"
        "sys.exit(f'imported {bad}' if bad else rc)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(draw_all.PLOTS)}
    done = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr + done.stdout
    assert len(list(tmp_path.glob("plot_*.svg"))) == len(draw_all.scripts())


def test_rerun_flag_and_variable_run_the_benchmark_first(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    calls: list[list[str]] = []
    monkeypatch.setattr(draw_all, "rerun_benchmark", lambda extra: calls.append(extra) or 3)
    assert draw_all.main(["--rerun", "--out", str(tmp_path), "--versions", "v1"]) == 3
    monkeypatch.setenv(draw_all.ENV_RERUN, "1")
    assert draw_all.main(["--out", str(tmp_path)]) == 3
    assert calls == [["--versions", "v1"], []]
    assert not list(tmp_path.glob("*.svg")), "charts were redrawn although the benchmark failed"


def test_plot_scripts_do_not_guard_on_main() -> None:
    # The plot directive runs a script as __main__ when the text "__main__" appears in it; ours draw unconditionally.
    for script in draw_all.scripts():
        assert "__main__" not in script.read_text(), script.name


def test_chart_title_numbers_come_from_the_file() -> None:
    data = fixture_results()
    data["entries"]["v1"]["tflops"] = 432.1
    data["entries"]["v1"]["fraction_of_cublas"] = 0.5
    fig = chartlib.version_chart("v1", data)
    assert fig.axes[0].get_title(loc="left") == "V1: 432 TFLOPS, 50% of cuBLAS"


def test_sweep_caption_states_the_sweeps_own_statistic_not_the_ladders() -> None:
    data = fixture_results()
    caption = chartlib.sweep_caption(data)
    assert "median of one fresh process per implementation" in caption
    assert data["method"]["statistic"] not in caption
    del data["method"]["sweep_statistic"]
    assert "statistic not recorded" in chartlib.sweep_caption(data)
