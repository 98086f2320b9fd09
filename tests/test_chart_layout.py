"""Every chart reads on a phone: no text overlaps other text or a peak mark or leaves the figure, no label is
cut short, and nothing is smaller than 9 pt at the width a 390 px phone shows the chart
(``chartkit.PHONE_CHART_PX``, which the browser check at phone width holds).

Each chart (the scripts in plots/ and each version's chart, by convention) runs as the plot directive runs it,
from the recorded results file (and from the made-up file of tests/fake_results.py, which has other shapes and
counts, and a field section); tests/chart_text.py reads what was drawn.
"""

from __future__ import annotations

import json
from pathlib import Path

import draw_all
import matplotlib.pyplot as plt
import pytest
from chart_text import draw, layout_problems

from fake_field import with_field
from fake_results import fake_file
from matmul_data import paths
from matmul_site import chart_parts, rerun


@pytest.fixture(params=["recorded", "made-up"])
def results_source(request: pytest.FixtureRequest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.delenv(rerun.ENV, raising=False)
    if request.param == "recorded":
        monkeypatch.delenv(paths.ENV_RESULTS, raising=False)
        assert paths.results_file() is not None, "no recorded results file in plots/results/"
    else:
        made_up = tmp_path / "results.json"
        made_up.write_text(json.dumps(with_field(fake_file())))  # with a field section: V9's chart has rows
        monkeypatch.setenv(paths.ENV_RESULTS, str(made_up))
    yield request.param
    plt.close("all")


@pytest.mark.parametrize("chart", sorted(draw_all.scripts()))
def test_chart_text_is_readable_on_a_phone_and_never_overlaps_or_leaves_the_figure(
    chart: str, results_source: str
) -> None:
    problems = layout_problems(draw(chart))
    assert not problems, f"{chart} ({results_source} results):\n  " + "\n  ".join(problems)


def test_the_layout_check_sees_overlap_clipping_small_and_truncated_text() -> None:
    fig = plt.figure(figsize=(4, 3))
    fig.text(0.1, 0.5, "one label", fontsize=20)
    fig.text(0.12, 0.5, "another label", fontsize=20)
    fig.text(0.9, 0.1, "far too far to the right", fontsize=20)
    fig.text(0.1, 0.9, "V7 an epilogue without...", fontsize=20)
    fig.text(0.1, 0.2, "tiny", fontsize=4)
    ax = fig.add_axes((0.1, 0.3, 0.8, 0.15), xlim=(0, 10), ylim=(0, 1))
    ax.vlines([2.0, 9.0], 0.2, 0.8, gid=chart_parts.PEAK_GID)
    ax.text(1.0, 0.5, "a value over its mark", va="center")
    problems = "\n".join(layout_problems(fig))
    plt.close(fig)
    assert "'one label' overlaps 'another label'" in problems
    assert "'far too far to the right' leaves the figure" in problems
    assert "'V7 an epilogue without...' is cut short" in problems
    assert "'tiny' is 4 pt" in problems
    assert "'a value over its mark' lies over a peak mark" in problems
    assert problems.count("peak mark") == 1, problems  # the mark at 9 is clear of every text
