"""From the workers' raw per-round samples to the results file's runs: medians, paired ratios and their intervals."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from matmul_bench.plan import RunSpec
from matmul_bench.protocol import RunAnswer, SampleFile
from matmul_data import model, results, stats

CUBLAS = results.CUBLAS
RowCounters = dict[str, model.Counters | None]  # impl -> ncu's counters of its row, None where it measured none


def pooled(per_process: Iterable[Mapping[str, Sequence[float]] | None], impl: str) -> list[float]:
    """Every process's values of one impl, in one list (none where a process has no such values: older samples)."""
    return [x for values in per_process for x in (values or {}).get(impl, ())]


def timed(answer: RunAnswer) -> dict[str, tuple[float, ...]]:
    """A process's per-round times, per impl; ValueError for an answer that stopped before timing."""
    if answer.samples is None:
        raise ValueError(f"{answer.name}: a process's answer has no samples (it stopped before timing)")
    return answer.samples


def paired(per_process: Sequence[RunAnswer], over: str, impl: str) -> list[list[float]]:
    """Per process, round by round: ``over``'s time divided by ``impl``'s (>1: impl is faster)."""
    return [stats.paired_ratios(timed(p)[over], timed(p)[impl]) for p in per_process]


def make_row(spec: RunSpec, impl: str, per_process: Sequence[RunAnswer], counters: RowCounters | None) -> model.Row:
    """One row: latency from every (process, round) sample, ratios paired within each round."""
    latency = float(statistics.median(pooled(map(timed, per_process), impl)))
    clocks, power, busy = (stats.median_of(pooled(values, impl)) for values in
                           ([p.clocks for p in per_process], [p.power for p in per_process],
                            [p.busy for p in per_process]))  # fmt: skip
    title = next(i.title for i in spec.impls if i.name == impl) or per_process[0].titles.get(impl)
    to_cublas = paired(per_process, CUBLAS, impl)  # the per-round samples are what runs merge from
    values = {"latency_ms": latency, "tflops": results.tflops(*spec.shape, latency),
              "ratio_to_cublas": model.Interval.of(**stats.interval(to_cublas)), "sm_clock_mhz": clocks,
              "power_w": power, "busy": busy, "config": dict(per_process[0].configs.get(impl) or {}),
              "title": title, "samples": model.Samples.of(ratio_to_cublas=rounded(to_cublas))}  # fmt: skip
    over = spec.step_over.get(impl)
    if over is not None:
        to_over = paired(per_process, over, impl)
        values["step"] = model.Interval.of(over=over, **stats.interval(to_over))
        values["samples"] = values["samples"].put(step=rounded(to_over))
    if spec.section == "ladder" or counters:  # the ladder always has the key; a steps run when profiled
        values["counters"] = (counters or {}).get(impl)  # ncu's answer for this row, null where it measured none
    if spec.section == "steps" and impl != CUBLAS:
        values["kept"] = bool(spec.kept.get(impl, False))
    checks = [c for p in per_process for c in p.checks.get(impl, ())]
    if any(not c.ok for c in checks):  # only the baseline is timed when wrong (worker.py): marked inexact
        values["wrong_elements"] = max((c.bad for c in checks if tuple(c.shape) == spec.shape), default=0)
    return model.Row.of(**values)


def rounded(groups: list[list[float]]) -> tuple[tuple[float, ...], ...]:
    """Per-round ratios as the file keeps them, to six decimals."""
    return tuple(tuple(round(x, 6) for x in g) for g in groups)


def make_run(spec: RunSpec, per_process: Sequence[RunAnswer], *, run_id: str, date: str, git_commit: str,
             warmup_s: float, repeats: int, log: str | None,
             counters: RowCounters | None = None) -> model.Run:  # fmt: skip
    """The results file's run of one RunSpec; a peer some process could not run is in ``peers_missing``, no row."""
    missing: dict[str, model.PeerMissing] = {}
    for p in per_process:
        for name, entry in p.missing.items():
            missing.setdefault(name, entry)
    spec = replace(spec, impls=tuple(i for i in spec.impls if i.name not in missing))
    rounds = {len(timed(p)[i.name]) for p in per_process for i in spec.impls}
    if len(rounds) != 1 or 0 in rounds:
        raise ValueError(f"{spec.name}: every impl needs the same number of rounds in every process, got {rounds}")
    m, n, k = spec.shape
    values = {"run_id": run_id, "date": date, "git_commit": git_commit, "shape": model.Shape.of(m=m, n=n, k=k),
              "rounds": rounds.pop(), "processes": len(per_process), "warmup_s": warmup_s, "repeats": repeats,
              "log": log, "method": results.METHOD_VERSION,
              "rows": {i.name: make_row(spec, i.name, per_process, counters) for i in spec.impls}}  # fmt: skip
    if spec.section == "steps":
        values["after"], values["title"] = spec.after, spec.title
    if spec.field_info is not None:
        values["field"] = model.FieldInfo.from_json(spec.field_info)
    if missing:
        values["peers_missing"] = missing
    return model.Run.of(**values)


def as_figure(run: model.Run) -> model.Figure:
    """A new figure holding one run; :func:`matmul_data.replicate.remerge` gives it its merged rows."""
    keys = ("run_id", "date", "git_commit", "shape", "rounds", "processes", "after", "title", "field", "peers_missing")
    return model.Figure.of(**{key: getattr(run, key) for key in keys if run.has(key)}, rows=run.rows, runs=(run,))


def runs_from_samples(data: SampleFile, log: str | None) -> list[model.Run]:
    """Every run of a raw-sample file recomputed: the numbers the results file got (``log``: the file's path)."""
    settings = data.settings
    return [make_run(RunSpec.from_json(entry.spec), entry.processes, run_id=data.run_id, date=data.date,
                     git_commit=data.git_commit, warmup_s=settings.warmup_s, repeats=settings.repeats, log=log,
                     counters=entry.counters) for entry in data.runs]  # fmt: skip
