"""The runner: probe the GPU, build and check every kernel, time each section in fresh workers, record.

Order: probe (a worker reports the GPU and software; not a Hopper GPU: exit 1) -> every kernel built and
checked at every shape in parallel processes (a wrong result: exit 3, nothing written) -> per section
(ladder, sweep, steps) ``processes`` fresh workers one after the other, each timing all the section's runs
-> aggregate -> ncu for the ladder (optional) -> merge into the results file and write it atomically, with
the raw samples in logs/<run_id>.json next to it. Each section is written as soon as it is complete.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import Any

from matmul_bench import aggregate, kernels, machine, ncu, prebuild, replicate
from matmul_bench.plan import (
    BENCH_SHAPE,
    QUICK_DIR,
    Plan,
    RunSpec,
    estimate,
    format_duration,
    ncu_label,
    shape_text,
    with_configs,
)  # fmt: skip
from matmul_bench.worker import WRONG_RESULT
from matmul_data import paths, results


class BenchmarkError(Exception):
    """The benchmark cannot go on (no Hopper GPU, a worker failed, unreadable results file): exit status 1."""


class WrongResult(BenchmarkError):
    """An implementation failed its check: nothing of it is recorded; exit status 3."""


DRAFT_DIR = paths.BUILD_DIR / "draft"


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


class Progress:
    """One line per step with the time left: the plan's estimate, scaled by how fast the steps so far went."""

    def __init__(self, steps: Sequence[tuple[str, float]]) -> None:
        self.estimates = dict(steps)
        self.total = len(steps)
        self.done: list[tuple[float, float]] = []  # (estimated, actual) seconds of finished steps
        self.started = time.monotonic()
        self._current: tuple[str, float] | None = None

    def left_s(self) -> float:
        remaining = sum(self.estimates.values())
        scale = 1.0
        if self.done:
            estimated, actual = sum(e for e, _ in self.done), sum(a for _, a in self.done)
            scale = min(3.0, max(0.5, actual / max(estimated, 1e-9)))
        return remaining * scale

    @contextlib.contextmanager
    def step(self, label: str) -> Any:
        estimate_s = self.estimates.pop(label, 0.0)
        number = len(self.done) + 1
        elapsed = format_duration(time.monotonic() - self.started)
        say(f"[{number}/{self.total}] {label} (elapsed {elapsed}, about {format_duration(self.left_s())} left)")
        began = time.monotonic()
        yield
        self.done.append((estimate_s, time.monotonic() - began))


def call_worker(job: dict[str, Any], timeout_s: float, prefix: Sequence[str] = ()) -> dict[str, Any]:
    """Run one fresh worker (optionally under ncu) on a job; its answer, or an exception saying why not."""
    with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp:
        job_path, result_path = Path(tmp) / "job.json", Path(tmp) / "result.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        cmd = [*prefix, *kernels.command("worker", str(job_path), str(result_path))]
        # Its own process group, so that a timeout or Ctrl-C also ends what it started (nvcc jobs, ncu's target).
        proc = subprocess.Popen(cmd, env=dict(kernels.child_env(), PYTHONUNBUFFERED="1"), start_new_session=True)
        try:
            status = proc.wait(timeout=timeout_s)
        except BaseException as exc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise BenchmarkError(f"a worker gave no answer in {timeout_s:.0f} s (killed); raise --timeout") from exc
            raise
        if not result_path.exists():
            raise BenchmarkError(f"a worker exited with status {status} and no answer (its output is above)")
        answer = json.loads(result_path.read_text(encoding="utf-8"))
    if status == WRONG_RESULT:
        raise WrongResult(answer.get("error") or "a check failed")
    if status != 0 or answer.get("error"):
        raise BenchmarkError(f"a worker failed (status {status}): {answer.get('error')}")
    return answer


def job(plan: Plan, mode: str, runs: Sequence[RunSpec], process: int = 0) -> dict[str, Any]:
    s = plan.settings
    return {"mode": mode, "backend": plan.backend,
            "fake": {"fail_check": plan.fake_fail_check, "missing_peers": list(plan.fake_missing_peers)},
            "settings": {"rounds": s.rounds, "repeats": s.repeats, "warmup": s.warmup, "process": process},
            "runs": [r.to_json() for r in runs]}  # fmt: skip


def build_specs(plan: Plan) -> list[dict[str, Any]]:
    """One prebuild spec per distinct kernel (file, class, config), with every shape it is timed or checked at."""
    specs: dict[str, dict[str, Any]] = {}
    for run in plan.runs:
        for impl in run.impls:
            if impl.kind != "kernel":
                continue
            key = json.dumps([impl.file, impl.cls, impl.config], sort_keys=True)
            spec = specs.setdefault(key, {"file": impl.file, "cls": impl.cls, "config": impl.config, "shapes": [],
                                          "check": True, "name": impl.name})  # fmt: skip
            for shape in (run.shape, *run.check_shapes):
                if list(shape) not in spec["shapes"]:
                    spec["shapes"].append(list(shape))
    return list(specs.values())


def build_and_check(plan: Plan) -> Plan:
    """Build every kernel in parallel processes and check it at its shapes; autotuned configs get pinned."""
    specs = build_specs(plan)
    if plan.backend == "fake":
        return plan  # the fake backend has nothing to build; its workers still check
    answers = prebuild.build_all(specs, plan.build_jobs, plan.timeout_s)
    configs, wrong, failed = {}, [], []
    for spec, answer in zip(specs, answers, strict=True):
        for check in answer.get("checks", []):
            if not check["ok"]:
                wrong.append(f"{spec['name']} ({spec['cls']}) at {check['shape']}: {check['bad']} wrong elements")
        if not answer["ok"] and not wrong:
            failed.append(f"{spec['name']} ({spec['cls']}): {answer.get('error')}")
        if spec["config"] is None:  # only an unpinned kernel's choice is pinned for it; a pinned one keeps its own
            for shape, config in answer.get("configs", {}).items():
                configs[(spec["file"], spec["cls"], shape)] = config
    if wrong:
        raise WrongResult("wrong results, nothing timed or written:\n  " + "\n  ".join(wrong))
    if failed:
        raise BenchmarkError("kernels failed to build:\n  " + "\n  ".join(failed))
    return with_configs(plan, configs)


def method(plan: Plan) -> dict[str, Any]:
    s = plan.settings
    configs = (
        "autotuned by Tilus at each shape"
        if plan.autotune
        else "pinned to those tuned at 8192^3 (each kernel file's TUNED)"
    )
    return {
        "timer": "CUDA events around each call (torch.cuda.Event), after a check against a float64 reference "
        "with C poisoned by NaN at the timed shape",
        "warmup": s.warmup,
        "repeats": s.repeats,
        "statistic": "latency: median over every (process, round) of the per-round median of the timed calls",
        "interval": "percentile bootstrap of the median paired ratio that resamples runs, then processes, then "
        "rounds, widened to hold every run's median, at the Bonferroni level over the file's verdicts "
        "(method.verdicts); a step pays or costs only outside the parity band, else parity",
        "l2_flush": "512 MiB zero-fill before each timed call (several times the 50-60 MB L2)",
        # The counts of processes and rounds are each run's own fields: runs of one file may differ in them.
        "order": "a run is every impl at one shape, cuBLAS (torch.matmul) among them, in a few fresh processes; "
        "in each, rounds in alternating order (forward, reversed); ratios pair the impls of the same round",
        "clocks": "NVML SM clock and board power polled every 5 ms; a reading counts only when it falls inside "
        "one of the timed kernels (CUDA events placed in host time); each row gives the medians, null when none "
        "fell inside",
        "configs": configs,
    }


def document(plan: Plan, probe: dict[str, Any], section_runs: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    m, n, k = BENCH_SHAPE
    doc: dict[str, Any] = {
        "schema": results.SCHEMA_VERSION,
        "gpu": machine.gpu_record(probe["device"]),
        "software": probe["software"],
        "method": method(plan),
        "problem": {"m": m, "n": n, "k": k, "dtype": "float16", "accumulate": "float32"},
        "sweep": [aggregate.as_figure(run) for run in section_runs.get("sweep", [])],
        "steps": [aggregate.as_figure(run) for run in section_runs.get("steps", [])],
    }
    if section_runs.get("ladder"):
        doc["ladder"] = aggregate.as_figure(section_runs["ladder"][0])
    return doc


def merged_with(existing: dict[str, Any] | None, new: dict[str, Any]) -> dict[str, Any]:
    """The new runs joined to their figures (replicate.merge_file), keeping the notes on earlier runs still there."""
    merged = replicate.merge_file(existing, new)
    notes = ((existing or {}).get("method") or {}).get("earlier_runs") or {}
    kept_ids = {run["run_id"] for figure in replicate.figures(merged) for run in figure["runs"]}
    kept = {run_id: note for run_id, note in notes.items() if run_id in kept_ids}
    if kept:
        merged["method"]["earlier_runs"] = kept
    return merged


def write_json_atomic(path: Path, data: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    with os.fdopen(fd, "w", encoding="utf-8") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)


def format_table(runs: Sequence[dict[str, Any]]) -> str:
    lines = []
    for run in runs:
        shape = shape_text(run_shape(run))
        lines.append(f"{run.get('title') or ''} {shape}".strip())
        lines.append(f"  {'impl':<24} {'ms':>8} {'TFLOPS':>7} {'x cuBLAS [95%]':>22} {'step [95%]':>24} {'MHz':>6}")
        for name, row in run["rows"].items():
            r, st = row["ratio_to_cublas"], row.get("step")
            ratio = f"{r['median']:.3f} [{r['low']:.3f},{r['high']:.3f}]"
            step = f"{st['median']:.3f} [{st['low']:.3f},{st['high']:.3f}]" if st else ""
            mhz = f"{row['sm_clock_mhz']:.0f}" if row.get("sm_clock_mhz") else "-"
            lines.append(
                f"  {name:<24} {row['latency_ms']:>8.3f} {row['tflops']:>7.1f} {ratio:>22} {step:>24} {mhz:>6}"
            )
        lines += [f"  {name:<24} not run here: {missing_text(entry)}" for name, entry in missing_peers(run).items()]
    return "\n".join(lines)


def missing_peers(run: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return run.get("peers_missing") or {}


def missing_text(entry: dict[str, Any]) -> str:
    return f"{entry['version'] or 'not installed'}; {entry['error']}"


def run_plan(plan: Plan) -> int:
    progress = Progress(estimate(plan))
    with progress.step("probe the GPU"):
        probe = call_worker(job(plan, "probe", []), plan.timeout_s)
    gpu = probe["device"]["name"]
    out = plan.out or (QUICK_DIR / f"{results.slug(gpu)}.json" if plan.quick else results.path_for_gpu(gpu))
    try:
        existing = results.load(out) if out.exists() else None
        results.merge(existing, document(plan, probe, {}))  # another GPU's file: refuse before measuring
    except results.ResultsError as exc:
        raise BenchmarkError(f"{exc}\n(the file was left as it is; fix or move it, or pass --out)") from exc
    say(f"on {gpu} ({probe['device']['sm_count']} SMs); results go to {out}")
    started = machine.utc_now()
    run_id, date = started.strftime("%Y-%m-%dT%H%M%SZ"), started.strftime("%Y-%m-%d")
    commit = plan.git_commit or machine.git_commit()
    if not machine.is_clean(commit) and out.resolve().is_relative_to(paths.RESULTS_DIR.resolve()):
        draft = DRAFT_DIR / out.name  # a record is published only from a committed tree
        say(f"the tree is not a clean commit ({commit}): this run goes to {draft}, a draft the site does not show")
        existing = results.load(draft) if draft.exists() else existing
        out = draft
    log_rel = f"logs/{run_id}.json"
    log: dict[str, Any] = {"run_id": run_id, "date": date, "git_commit": commit, "gpu": probe["device"],
                           "software": probe["software"], "settings": vars(plan.settings), "runs": []}  # fmt: skip
    builds = [label for label in progress.estimates if label.startswith("build and check")]
    for label in builds:
        with progress.step(label):
            plan = build_and_check(plan)
    data, recorded = existing, []
    for section in plan.sections():
        specs = plan.section_runs(section)
        per_run: dict[str, list[dict[str, Any]]] = {spec.name: [] for spec in specs}
        for p in range(plan.settings.processes):
            with progress.step(f"{section}: process {p + 1}/{plan.settings.processes}"):
                answer = call_worker(job(plan, "time", specs, p), plan.timeout_s)
            for result in answer["runs"]:
                per_run[result["name"]].append(result)
        runs = []
        for spec in specs:
            counters = run_counters(plan, spec, progress) if plan.ncu and spec.profile else None
            entry = {"spec": aggregate.spec_to_log(spec), "processes": per_run[spec.name], "counters": counters,
                     "log": log_rel}  # fmt: skip
            log["runs"].append(entry)
            runs.append(aggregate.make_run(spec, per_run[spec.name], run_id=run_id, date=date, git_commit=commit,
                                           warmup=plan.settings.warmup, repeats=plan.settings.repeats, log=log_rel,
                                           counters=counters))  # fmt: skip
        for run in runs:
            for name, entry in missing_peers(run).items():
                say(f"{section}: {name} could not run at {shape_text(run_shape(run))}, recorded in peers_missing "
                    f"and left out: {missing_text(entry)}")  # fmt: skip
        data = merged_with(data, document(plan, probe, {section: runs}))
        write_json_atomic(out.parent / log_rel, log)
        results.write_atomic(out, data)
        recorded += runs
        say(f"{section}: recorded in {out} (raw samples: {out.parent / log_rel})")
    if data is not None:  # every run of this invocation learns how long the whole invocation took
        elapsed = round((machine.utc_now() - started).total_seconds(), 1)
        data = stamp_duration(data, run_id, elapsed)
        results.write_atomic(out, data)
        say(f"took {elapsed:.0f} s in all")
    print(format_table(recorded))
    return 0


def run_shape(run: dict[str, Any]) -> tuple[int, int, int]:
    return (run["shape"]["m"], run["shape"]["n"], run["shape"]["k"])


def stamp_duration(data: dict[str, Any], run_id: str, seconds: float) -> dict[str, Any]:
    """``invocation_s`` on every run this invocation recorded: the one measured source of how long a record takes."""
    for figure in replicate.figures(data):
        for run in figure["runs"]:
            if run["run_id"] == run_id:
                run["invocation_s"] = seconds
    return data


def run_counters(plan: Plan, spec: RunSpec, progress: Progress) -> dict[str, Any] | None:
    """ncu counters for each row of a run; null (with a warning) where ncu is missing or fails."""
    exe = ncu.find_ncu() if plan.backend == "cuda" else None
    metrics = ncu.available_metrics(exe) if exe else []
    counters: dict[str, Any] = {}
    for impl in spec.impls:
        with progress.step(ncu_label(spec, impl)):
            if not metrics:
                say("  ncu not found (or it knows none of the metrics): counters recorded as null")
                continue
            single = RunSpec(spec.section, spec.name, spec.shape, (impl,))
            with tempfile.TemporaryDirectory(prefix="bench-ncu-") as tmp:
                log = Path(tmp) / "ncu.csv"
                try:
                    profile_job = job(plan, "profile", [single])
                    run = partial(call_worker, profile_job, plan.timeout_s)  # run(prefix): the worker under ncu
                    counters[impl.name] = ncu.profile(exe, metrics, log, run)
                except BenchmarkError as exc:
                    say(f"  ncu failed for {impl.name}, counters recorded as null: {exc}")
    return counters or None


def describe_out(plan: Plan) -> str:
    if plan.out is not None:
        return str(plan.out)
    return f"{QUICK_DIR}/<gpu>.json" if plan.quick else "plots/results/<gpu>.json"


__all__ = ["BenchmarkError", "WrongResult", "run_plan", "describe_out", "shape_text"]
