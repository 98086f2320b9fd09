"""A record: probe the GPU, build and check every kernel, time each section in fresh workers, merge, write."""

from __future__ import annotations

import gzip
import json
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path

from matmul_bench import aggregate, jobs, machine, ncu
from matmul_bench.jobs import BenchmarkError, WrongResult
from matmul_bench.plan import (
    BENCH_SHAPE,
    BUILD_JOBS,
    QUICK_DIR,
    TIMEOUT_S,
    ImplSpec,
    Plan,
    RunSpec,
    Shape,
    process_estimate,
    shape_text,
)
from matmul_bench.protocol import Answer, BuildSpec, Job, RecordSettings, SampleFile, SampleRun, Settings
from matmul_data import files, model, paths, replicate, results

DRAFT_DIR = paths.BUILD_DIR / "draft"  # a record from a tree that is not a clean commit goes here
SAMPLES = "samples"  # the raw samples of a run: <results folder>/samples/<run_id>.json.gz


def say(message: str) -> None:
    """A progress line on stderr."""
    print(message, file=sys.stderr, flush=True)


def job(plan: Plan, mode: str, runs: Sequence[RunSpec], process: int = 0) -> Job:
    """The job a worker runs."""
    s = plan.settings
    settings = Settings.of(rounds=s.rounds, repeats=s.repeats, warmup_s=s.warmup_s, process=process)
    return Job.of(mode=mode, backend=plan.backend, fake=plan.fake, autotune=plan.autotune, settings=settings,
                  runs=tuple(r.to_json() for r in runs))  # fmt: skip


def build_specs(plan: Plan) -> list[BuildSpec]:
    """One build spec per distinct kernel (file, class, config), with every shape it is timed or checked at."""
    specs: dict[str, BuildSpec] = {}
    for run in plan.runs:
        for impl in (i for i in run.impls if i.kind == "kernel"):
            key = json.dumps([impl.file, impl.cls, impl.config], sort_keys=True)
            spec = specs.setdefault(key, BuildSpec.of(file=impl.file, cls=impl.cls, config=impl.config, shapes=(),
                                                      check=True, name=impl.name))  # fmt: skip
            shapes = dict.fromkeys((*spec.shapes, run.shape, *run.check_shapes))  # each once, in the order met
            specs[key] = spec.put(shapes=tuple(shapes))
    return list(specs.values())


def build_and_check(plan: Plan) -> Plan:
    """Build and check every kernel in parallel; the plan with unpinned kernels pinned to their builds' choices."""
    specs = build_specs(plan)
    answers = jobs.build_all(specs, 1 if plan.autotune else BUILD_JOBS, TIMEOUT_S, plan.autotune)
    configs, wrong, failed = {}, [], []
    for spec, answer in zip(specs, answers, strict=True):
        wrong += [f"{spec.name} ({spec.cls}) at {shape_text(c.shape)}: {c.bad} wrong elements"
                  for c in answer.checks if not c.ok]  # fmt: skip
        if not answer.ok and not answer.checks:
            failed.append(f"{spec.name} ({spec.cls}): {answer.error}")
        if spec.config is None:  # only an unpinned kernel's choice is pinned for it; a pinned one keeps its own
            configs.update({(spec.file, spec.cls, shape): c for shape, c in answer.configs.items()})
    if wrong:
        raise WrongResult("wrong results, nothing timed or written:\n  " + "\n  ".join(wrong))
    if failed:
        raise BenchmarkError("kernels failed to build:\n  " + "\n  ".join(failed))

    def pin(impl: ImplSpec, shape: Shape) -> ImplSpec:
        found = configs.get((impl.file, impl.cls, shape_text(shape)))
        return replace(impl, config=found) if impl.config is None and found is not None else impl

    return replace(plan, runs=tuple(replace(r, impls=tuple(pin(i, r.shape) for i in r.impls)) for r in plan.runs))


def method(plan: Plan) -> model.Method:
    """The results file's description of how it was measured."""
    s = plan.settings
    return model.Method.of(**{
        "timer": "CUDA events around each call (torch.cuda.Event), after a check against a float64 reference "
        "with C poisoned by NaN at the timed shape",
        "warmup_s": s.warmup_s,
        "repeats": s.repeats,
        "warmup": "before its timed calls in each round, an implementation runs the same loop (L2 flush, call) for "
        "warmup_s seconds, so that the GPU's power and clock state is its own, not its neighbour's",
        "statistic": "latency: median over every (process, round) of the per-round median of the timed calls",
        "interval": "percentile bootstrap of the median paired ratio that resamples runs, then processes, then "
        "rounds, widened to hold every run's median, at the Bonferroni level over the file's verdicts "
        "(method.verdicts); against the band 1 +/- method.verdicts.band a step pays (interval wholly above), "
        "costs (wholly below), is within (wholly inside) or is unresolved (across an edge)",
        "l2_flush": "512 MiB zero-fill before each timed call (several times the 50-60 MiB L2)",
        "order": f"a run is every impl at one shape, cuBLAS (torch.matmul) among them, in {s.processes} fresh "
        f"process{'' if s.processes == 1 else 'es'}; in each, rounds in alternating order (forward, reversed); "
        "ratios pair the impls of the same round",
        "clocks": "NVML SM clock and board power polled every 5 ms from halfway through the warm-up to the last "
        "timed call, when only this implementation's loop has run for half a second or more; counted only where "
        "the kernel fills at least 80% of its timed loop (the rest is the L2 flush); each row gives the medians, "
        "null where none counted",
        "configs": "autotuned by Tilus at each shape" if plan.autotune
        else "pinned to those tuned at 8192^3 (each kernel file's TUNED)",
    })  # fmt: skip


def document(plan: Plan, probe: Answer, section: str | None = None,
             runs: Sequence[model.Run] = ()) -> model.Results:  # fmt: skip
    """A results file holding one section's new runs (or none), with this machine's provenance."""
    m, n, k = BENCH_SHAPE
    figures = tuple(aggregate.as_figure(run) for run in runs)
    problem = model.Problem.of(m=m, n=n, k=k, dtype="float16", accumulate="float32")
    doc = model.Results.of(schema=results.SCHEMA_VERSION, gpu=machine.gpu_record(probe.device),
                           software=probe.software, method=method(plan), problem=problem,
                           **{s: figures if section == s else () for s in results.SECTIONS})  # fmt: skip
    return doc.put(ladder=figures[0]) if section == "ladder" and figures else doc


def merged_with(existing: model.Results | None, new: model.Results) -> model.Results:
    """The new runs joined to their figures, keeping the notes on earlier runs that are still there."""
    merged = replicate.merge_file(existing, new)
    notes = (existing.method.earlier_runs if existing is not None else None) or {}
    kept_ids = {run.run_id for figure in merged.figures for run in figure.runs}
    kept = {run_id: note for run_id, note in notes.items() if run_id in kept_ids}
    return merged.put(method=merged.method.put(earlier_runs=kept)) if kept else merged


def read_samples(path: Path) -> SampleFile:
    """A raw-sample file as :func:`run_plan` writes it: gzip-compressed JSON."""
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return SampleFile.from_json(json.load(f))


def format_table(runs: Sequence[model.Run]) -> str:
    """The recorded runs as text: latency, TFLOPS, ratio to cuBLAS and step with their intervals, SM clock."""
    lines = []
    for run in runs:
        lines.append(f"{run.title or ''} {shape_text(run.shape.mnk)}".strip())
        lines.append(f"  {'impl':<24} {'ms':>8} {'TFLOPS':>7} {'x cuBLAS [95%]':>22} {'step [95%]':>24} {'MHz':>6}")
        for name, row in run.rows.items():
            ratio, step = (f"{r.median:.3f} [{r.low:.3f},{r.high:.3f}]" if r else ""
                           for r in (row.ratio_to_cublas, row.step))  # fmt: skip
            mhz = f"{row.sm_clock_mhz:.0f}" if row.sm_clock_mhz else "-"
            lines += [f"  {name:<24} {row.latency_ms:>8.3f} {row.tflops:>7.1f} {ratio:>22} {step:>24} {mhz:>6}"]
        lines += [f"  {name:<24} not run here: {missing_text(e)}" for name, e in (run.peers_missing or {}).items()]
        lines += [f"  {name:<24} inexact: {row.wrong_elements} elements outside tolerance, timed as the baseline"
                  for name, row in run.rows.items() if row.wrong_elements is not None]  # fmt: skip
    return "\n".join(lines)


def missing_text(entry: model.PeerMissing) -> str:
    """A missing peer's version and error."""
    return f"{entry.version or 'not installed'}; {entry.error}"


def run_plan(plan: Plan) -> int:
    """Run a whole record; each section is merged into the results file as soon as it is complete."""
    say("probe the GPU")
    probe = jobs.call_worker(job(plan, "probe", []), Answer, TIMEOUT_S)
    if probe.device is None or probe.software is None:
        raise BenchmarkError("the probe's answer names no device or software")
    gpu = probe.device.name
    out = plan.out or (QUICK_DIR / f"{results.slug(gpu)}.json" if plan.quick else results.path_for_gpu(gpu))
    started = machine.utc_now()
    run_id, date = started.strftime("%Y-%m-%dT%H%M%SZ"), started.strftime("%Y-%m-%d")
    commit = plan.git_commit or machine.git_commit()
    draft = commit in ("", "unknown") or commit.endswith("-dirty")  # a record is published only from a committed tree
    if draft and out.resolve().is_relative_to(paths.RESULTS_DIR.resolve()):
        out = DRAFT_DIR / out.name
        say(f"the tree is not a clean commit ({commit}): this run goes to {out}, a draft the site does not show")
    try:
        data = results.read(out, fresh=True) if out.exists() else None
        results.merge(data, document(plan, probe))  # another GPU's file: refused before measuring
    except results.ResultsError as exc:
        raise BenchmarkError(f"{exc}\n(the file was left as it is; fix or move it, or pass --out)") from exc
    say(f"on {gpu} ({probe.device.sm_count} SMs); results go to {out}")
    log_rel = f"{SAMPLES}/{run_id}.json.gz"
    samples = SampleFile.of(run_id=run_id, date=date, git_commit=commit, gpu=probe.device, software=probe.software,
                            settings=RecordSettings.of(**vars(plan.settings)), runs=())  # fmt: skip
    if plan.backend == "cuda":  # the fake GPU builds nothing
        say("build and check every kernel")
        plan = build_and_check(plan)
    recorded: list[model.Run] = []
    for section in plan.sections():
        specs, answers = plan.section_runs(section), []
        timeout_s = max(TIMEOUT_S, 2.0 * process_estimate(plan, section))  # the field with peers: ~45 min
        for p in range(plan.settings.processes):
            say(f"{section}: process {p + 1}/{plan.settings.processes}")
            answers.append(jobs.call_worker(job(plan, "time", specs, p), Answer, timeout_s).runs)  # one per spec
        raw = tuple(SampleRun.of(spec=spec.to_json(), processes=tuple(runs[i] for runs in answers),
                                 counters=run_counters(plan, spec) if plan.ncu and spec.profile else None)
                    for i, spec in enumerate(specs))  # fmt: skip
        samples = samples.put(runs=(*samples.runs, *raw))
        runs = aggregate.runs_from_samples(samples.put(runs=raw), log_rel)  # what the raw samples give, exactly
        for spec, run in zip(specs, runs, strict=True):
            if run.rows[results.CUBLAS].wrong_elements is not None:
                say(f"{section}: cuBLAS failed its float64 check at {shape_text(spec.shape)} ("
                    f"{run.rows[results.CUBLAS].wrong_elements} elements outside tolerance there): timed as the "
                    "baseline all the same, its row marked with wrong_elements")  # fmt: skip
            for name, entry in (run.peers_missing or {}).items():
                say(f"{section}: {name} could not run at {shape_text(spec.shape)}, recorded in peers_missing and "
                    f"left out: {missing_text(entry)}")  # fmt: skip
        data = merged_with(data, document(plan, probe, section, runs))
        payload = gzip.compress((json.dumps(samples.to_json(), indent=1) + "\n").encode("utf-8"), mtime=0)
        files.write_atomic(out.parent / log_rel, payload)  # atomically: a temporary file, then a rename
        results.write_atomic(out, data)
        recorded += runs
        say(f"{section}: recorded in {out} (raw samples: {out.parent / log_rel})")
    if data is not None:  # every run of this invocation learns how long the whole invocation took
        elapsed = round((machine.utc_now() - started).total_seconds(), 1)
        data = results.map_figures(data, lambda figure: figure.put(runs=tuple(
            run.put(invocation_s=elapsed) if run.run_id == run_id else run for run in figure.runs)))  # fmt: skip
        results.write_atomic(out, data)
        say(f"took {elapsed:.0f} s in all")
    print(format_table(recorded))
    return 0


def run_counters(plan: Plan, spec: RunSpec) -> dict[str, model.Counters | None] | None:
    """ncu counters for each row of a run, one profiled worker each; null (with a warning) where ncu fails."""
    exe = ncu.find_ncu() if plan.backend == "cuda" else None
    metrics = ncu.available_metrics(exe) if exe else []
    counters: dict[str, model.Counters | None] = {}
    for impl in spec.impls:
        say(f"ncu {spec.name}: {impl.name}")
        if not metrics:
            say("  ncu not found (or it knows none of the metrics): counters recorded as null")
            continue
        with tempfile.TemporaryDirectory(prefix="bench-ncu-") as tmp:
            log = Path(tmp) / "ncu.csv"
            try:
                single = job(plan, "profile", [replace(spec, impls=(impl,))])
                jobs.call_worker(single, Answer, TIMEOUT_S, ncu.prefix(exe, metrics, log))
                counters[impl.name] = ncu.counters(log, metrics)
            except BenchmarkError as exc:
                say(f"  ncu failed for {impl.name}, counters recorded as null: {exc}")
    return counters or None
