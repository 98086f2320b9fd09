"""The captions under the tables and charts: what each shows and the runs it comes from, ending with the method
link (:func:`.captions.caption`)."""

from __future__ import annotations

import re
from collections.abc import Iterator

from matmul_data import model, results, versions
from matmul_data.builds import BuildRecord
from matmul_site import numfmt
from matmul_site.captions import Data, caption, dates, peers_text, runs_text
from matmul_site.chapter_tables import recorded
from matmul_site.numfmt import NOT_MEASURED
from matmul_site.phrases import run_slug


def ladder_caption(data: Data) -> str:
    run = results.ladder(data)
    if run is None:
        return f"The ladder is {NOT_MEASURED}."
    names = versions.names()
    timed = tuple(v for v in names if v in run.rows)
    labels = [versions.label(v) for v in timed]
    which = "every version" if timed == names else f"{labels[0]}\u2013{labels[-1]}" if timed == names[:len(timed)] \
        and len(timed) > 2 else ", ".join(labels)  # fmt: skip
    return f"{which[0].upper()}{which[1:]} and cuBLAS at {numfmt.shape_text(run.shape)}: {runs_text(data, [run])}."


def sweep_caption(data: Data) -> str:
    runs = results.sweep_runs(data)
    if data is None or not runs:
        return f"The shape sweep is {NOT_MEASURED}."
    return f"{len(runs)} shapes, each with its own cuBLAS: {runs_text(data, runs)}."


def steps_caption(data: Data, runs: list[model.Figure]) -> str:
    """The caption of a steps table: the runs its rows come from (each once)."""
    runs = list({id(r): r for r in runs}.values())
    if data is None or not runs:
        return f"These steps are {NOT_MEASURED}."
    shapes = ", ".join(sorted({numfmt.shape_text(r.shape) for r in runs}))
    return f"at {shapes}, paired within each run's rounds: {runs_text(data, runs)}."


def tryit_caption(data: Data, version: str) -> str:
    """A Try it table's caption: the runs that timed its rows, then the runs that checked its edits."""
    timed = results.steps_runs(data, version, tryit=True) + [run for _, _, run in recorded(data, version) if run]
    edits = results.tryit_entries(data, version)
    parts = [steps_caption(data, timed).rstrip(".")] if timed else []
    if edits:
        runs = sorted({e.run_id for e in edits})
        parts.append(f"edits checked on the GPU, not timed, in run{'s' if len(runs) > 1 else ''} {', '.join(runs)} "
                     f"({dates(edits)})")  # fmt: skip
    return "; ".join(parts) + "." if parts else f"These changes are {NOT_MEASURED}."


def build_caption(record: BuildRecord | None) -> str:
    if record is None:
        return "The build record is not written yet (``python -m matmul_bench buildcheck --record``)."
    nvcc = re.search(r"cuda_(\d+\.\d+)", record.nvcc)
    return (f"From the build record of ``python -m matmul_bench buildcheck --record``: the {record.arch} build "
            f"at {numfmt.shape_text(record.shape)} (Tilus {record.tilus}, nvcc "
            f"{nvcc[1] if nvcc else record.nvcc}); SASS counts are static, not executions.")  # fmt: skip


def caption_values(data: Data, record: BuildRecord | None) -> Iterator[tuple[str, str]]:
    """The captions under tables and charts: what they show, the runs they come from, the method link."""
    ladder = ladder_caption(data)
    yield "ladder.caption", caption(ladder)
    yield "ladder.chart_caption", caption(f"Every version's TFLOPS beside cuBLAS's and the tensor-core peaks. {ladder}")
    yield "steps.chart_caption", caption("What each step bought: the paired ratio over the version before, "
                                         f"coloured by its verdict. {ladder}")  # fmt: skip
    yield "sweep.caption", caption(sweep_caption(data))
    yield "sweep.chart_caption", caption(f"Each implementation against cuBLAS, shape by shape, then its TFLOPS. "
                                         f"{sweep_caption(data)}{peers_text(data, 'sweep')}")  # fmt: skip
    yield "build.caption", build_caption(record)
    for version in versions.names():
        label = versions.label(version)
        where = (f"{label} highlighted" if results.ladder_row(data, version) else
                 f"{label} not in it: the ladder has not timed it yet")  # fmt: skip
        yield f"{version}.chart_caption", caption(f"Every version's TFLOPS against the tensor-core peak at its clock, "
                                                  f"{where}. {ladder}")  # fmt: skip
        yield f"{version}.tryit_caption", caption(tryit_caption(data, version))
    for run in results.steps_runs(data):
        yield f"steps-{run_slug(run)}.caption", caption(steps_caption(data, [run]))
