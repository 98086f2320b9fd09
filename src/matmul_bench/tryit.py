"""Run the chapters' "Try it" edits (experiments/tryit.py) on a Hopper GPU and record what each one does.

    python -m matmul_bench tryit --out plots/results/nvidia-h200.json     # every edit
    python -m matmul_bench tryit --out FILE.json --only v5,v6/stages-4     # some of them
    python -m matmul_bench tryit --dry-run                                 # what would run; no GPU

Each edit is applied to a copy of the chapter's kernel file in a temporary folder (the kernel folder
stays on the import path, so ``import common`` and ``from pipeline import Pipeline`` still work), built
with the chapter's tuned configuration (its kernel file's TUNED) and the edit's overrides, in a fresh process with its
own Tilus cache, then checked several times: fresh random inputs, C poisoned with NaN, every element
against a float64 reference (the check of common.py). The outcome is one of

    exact            every check found every element within tolerance
    wrong            some check found elements outside it (how many, how many still NaN, the largest error)
    hangs            a launch gave no answer within --launch-timeout seconds; the process was killed
    does not build   Tilus or nvcc refused it (the error's line is recorded)
    crashes          a launch failed (e.g. an illegal address)

Builds run in parallel (CPU-bound nvcc); the checks take turns on the GPU (a file lock), so a hung
kernel never slows another edit's launch. Each outcome is merged into the results file (its "tryit"
section, keyed by version and edit) as soon as it is known, validated and written atomically.
Torch-free in this process: only the child processes import torch and Tilus.

Exit status: 0 every edit recorded; 1 some edit could not be run (not recorded; the reason is printed);
2 bad usage (nothing runs).
"""

from __future__ import annotations

import argparse
import collections
import datetime
import json
import math
import os
import queue
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matmul_bench import kernels
from matmul_data import paths, versions

SPEC_FILE = paths.ROOT / "experiments" / "tryit.py"
MARK = "@@tryit "
BUILD_TIMEOUT_S = 300.0  # import torch and Tilus, lower, nvcc: about 30 s alone, longer with 8 builds at once
LAUNCH_TIMEOUT_S = 20.0  # one check at 8192^3 (launch, float64 reference, comparison) takes well under 1 s
OVERALL_TIMEOUT_S = 1800.0  # a child waiting for its turn on the GPU waits at most this long in all
BUILD_ESTIMATE_S = 35.0  # one child: imports, lowering and nvcc for one configuration (H200 machine)
CHECK_ESTIMATE_S = 0.8


class UsageError(Exception):
    """Bad command line or spec: reported with exit status 2 before anything runs."""


@dataclass(frozen=True)
class Job:
    """One edit of one chapter's kernel, ready to run."""

    version: str
    name: str
    title: str
    file: Path  # the chapter's kernel file (unedited)
    cls: str
    edits: tuple[tuple[str, str], ...]
    config: dict[str, Any]  # the full pinned configuration: TUNED of the kernel file, with the edit's overrides
    checks: tuple[tuple[int, int, int], ...]

    @property
    def key(self) -> str:
        return f"{self.version}/{self.name}"


@dataclass
class Outcome:
    """What the child reported: the record to write, or why there is none."""

    job: Job
    record: dict[str, Any] | None
    problem: str | None = None
    log_tail: list[str] = field(default_factory=list)


# --- the spec ---------------------------------------------------------------------------------------


def load_spec(path: Path) -> dict[str, Any]:
    """EDITS and CHECKS of the try-it spec, imported by path; UsageError if it cannot be read."""
    try:
        module = kernels.import_spec(path, "try-it")
    except kernels.SpecError as exc:
        raise UsageError(str(exc)) from exc
    edits, checks = getattr(module, "EDITS", None), getattr(module, "CHECKS", None)
    if not isinstance(edits, dict) or not edits or not isinstance(checks, tuple) or not checks:
        raise UsageError(f"{path} must define EDITS (a dict, not empty) and CHECKS (a tuple of shapes, not empty)")
    return {"EDITS": edits, "CHECKS": checks}


def apply_edits(text: str, edits: Sequence[Sequence[str]], where: str = "the file") -> str:
    """The text with each (old, new) substitution made; UsageError unless each old text occurs exactly once."""
    for old, new in edits:
        count = text.count(old)
        if count != 1:
            raise UsageError(f"{where}: the edit's old text occurs {count} times (must be exactly once): {old!r}")
        text = text.replace(old, new)
    return text


def plan_jobs(spec: dict[str, Any], only: str | None, kernel_dir: Path = kernels.KERNEL_DIR) -> list[Job]:
    """Every edit chosen by ``only`` ("v5,v6/stages-4"; None: all), checked to apply and to name known knobs."""
    tuned = {v.name: v.tuned for v in versions.all_versions(kernel_dir)}

    edits: dict[str, dict[str, dict[str, Any]]] = spec["EDITS"]
    wanted = [w.strip() for w in (only or "").split(",") if w.strip()]
    known = {f"{v}/{n}" for v, entries in edits.items() for n in entries}
    for item in wanted:
        if item not in edits and item not in known:
            raise UsageError(f"--only {item!r}: no such version or edit (known: {', '.join(sorted(known))})")
    checks = tuple(tuple(int(d) for d in shape) for shape in spec["CHECKS"])
    for shape in checks:
        if len(shape) != 3 or min(shape) < 1 or shape[2] % 8:
            raise UsageError(f"check shape {shape}: need positive M, N, K with K a multiple of 8")
    jobs = []
    for version, entries in edits.items():
        for name, entry in entries.items():
            if wanted and version not in wanted and f"{version}/{name}" not in wanted:
                continue
            file = kernel_dir / f"matmul_{version}.py"
            if not file.is_file():
                raise UsageError(f"{version}/{name}: {file} does not exist")
            if version not in tuned:
                raise UsageError(f"{version}/{name}: no kernel file with a TUNED configuration for {version}")
            pairs = tuple((str(old), str(new)) for old, new in entry.get("edits", []))
            overrides = dict(entry.get("config", {}))
            unknown = sorted(set(overrides) - set(tuned[version]))
            if unknown:
                raise UsageError(
                    f"{version}/{name}: config names unknown knobs {unknown} (known: {sorted(tuned[version])})"
                )
            if not pairs and not overrides:
                raise UsageError(f"{version}/{name}: changes nothing (give edits or a config)")
            apply_edits(file.read_text(encoding="utf-8"), pairs, f"{version}/{name} in {file.name}")
            jobs.append(Job(version, name, str(entry.get("title") or name), file, f"MatmulV{version[1:]}", pairs,
                            {**tuned[version], **overrides}, checks))  # fmt: skip
    if not jobs:
        raise UsageError("nothing to run")
    return jobs


def estimate_s(jobs: Sequence[Job], parallel: int) -> float:
    """Builds in waves of ``parallel``, then each edit's checks in turn on the GPU; hangs add their timeout."""
    waves = math.ceil(len(jobs) / max(1, parallel))
    return 5.0 + waves * BUILD_ESTIMATE_S + sum(len(j.checks) for j in jobs) * CHECK_ESTIMATE_S


# --- the child: one edited kernel, built and checked --------------------------------------------------


def _say(event: str, **fields: Any) -> None:
    print(MARK + json.dumps({"event": event, **fields}), flush=True)


def first_error_line(text: str) -> str:
    """The line that says what went wrong: the last "SomethingError: ..." line, else the first non-empty line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = [line for line in lines if re.match(r"^([\w.]+)?(Error|Exception)\b.*?: \S", line)]
    chosen = found[-1] if found else (lines[0] if lines else "no message")
    return chosen[:400]


def check_detail(kernel: Any, m: int, n: int, k: int) -> dict[str, Any]:
    """common.check's comparison (NaN-poisoned C against float64), also counting elements still NaN or inf."""
    import torch

    import common

    a, b = common.random_operands(m, n, k)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    common.matmul(kernel, a, b, out=c)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().T
    err = (c.double() - ref).abs()
    bad = ~(err <= common.ATOL + common.RTOL * ref.abs())  # NaN compares False, so it counts as bad
    finite = torch.isfinite(c)
    max_err = err[finite].max().item() if bool(finite.any()) else None
    return {"shape": {"m": m, "n": n, "k": k}, "bad": int(bad.sum().item()),
            "nonfinite": int((~finite).sum().item()), "max_abs_err": max_err}  # fmt: skip


def child_main(job_path: str) -> int:
    job = json.loads(Path(job_path).read_text(encoding="utf-8"))
    # The edited copy's folder first: its kernel module shadows the unedited one; its siblings come from the kernels'.
    sys.path[:0] = [job["dir"], str(kernels.KERNEL_DIR)]
    import fcntl

    import tilus
    import torch

    import common
    from matmul_bench import prebuild

    common.require_hopper()
    _say("device", name=torch.cuda.get_device_name())
    tilus.option.cache_dir(job["cache"])  # a fresh cache: an edited kernel must never load the unedited build
    first = job["checks"][0]
    try:
        kernel = prebuild.make_kernel(job["file"], job["cls"], job["config"])
        # Build without launching (Tilus compiles per (N, K); M is a run-time argument), so that a launch that
        # never returns is told apart from a slow build. _jit_instance_for is Tilus 0.2.0's own build path.
        build = getattr(kernel, "_jit_instance_for", None)
        if build is not None:
            m, n, k = 1, first[1], first[2]
            a = torch.empty(m, k, dtype=torch.float16, device="cuda")
            b = torch.empty(n, k, dtype=torch.float16, device="cuda")
            c = torch.empty(m, n, dtype=torch.float16, device="cuda")
            build(m, n, k, a, b, c)._build_programs()
    except Exception as exc:  # the build's failure is the outcome, not a crash of this runner
        text = f"{type(exc).__name__}: {exc}"
        _say("error", stage="build", error=first_error_line(text), detail=text[-4000:])
        return 0
    _say("built", prebuilt=build is not None)
    with open(job["lock"], "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one edit at a time on the GPU; released when this process ends
        for index, (m, n, k) in enumerate(job["checks"]):
            _say("launch", index=index)
            try:
                result = check_detail(kernel, m, n, k)
            except Exception as exc:
                text = f"{type(exc).__name__}: {exc}"
                _say("error", stage="run", index=index, error=first_error_line(text), detail=text[-4000:])
                return 0
            _say("check", index=index, **result)
    _say("done")
    return 0


# --- the parent: run children, classify, record ------------------------------------------------------------


def _kill(proc: subprocess.Popen[str]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)  # its own session (start_new_session): this child and nothing else
    except ProcessLookupError:
        pass
    proc.wait()


def _shape_text(shape: Sequence[int]) -> str:
    return "x".join(str(d) for d in shape)


def run_job(job: Job, workdir: Path, lock: Path, build_timeout: float, launch_timeout: float) -> Outcome:
    """Apply the edit to a copy, run the child, and turn what it said into an outcome."""
    work = Path(tempfile.mkdtemp(dir=workdir, prefix=f"{job.version}-{job.name}-"))
    edited = work / job.file.name
    edited.write_text(apply_edits(job.file.read_text(encoding="utf-8"), job.edits), encoding="utf-8")
    spec = {"dir": str(work), "file": str(edited), "cls": job.cls, "config": job.config, "lock": str(lock),
            "cache": str(work / "tilus-cache"), "checks": [list(s) for s in job.checks]}  # fmt: skip
    (work / "job.json").write_text(json.dumps(spec), encoding="utf-8")
    env = dict(kernels.child_env(), PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        kernels.command("tryit-child", str(work / "job.json")),
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True, env=env,
    )  # fmt: skip
    lines: queue.Queue[str | None] = queue.Queue()

    def pump() -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            lines.put(line.rstrip("\n"))
        lines.put(None)

    threading.Thread(target=pump, daemon=True).start()
    events: list[dict[str, Any]] = []
    tail: collections.deque[str] = collections.deque(maxlen=30)
    started = time.monotonic()
    deadline, state, timed_out = started + build_timeout, "build", None
    while True:
        now = time.monotonic()
        wait = (started + OVERALL_TIMEOUT_S if state == "queued" else deadline) - now
        try:
            line = lines.get(timeout=max(0.0, wait))
        except queue.Empty:
            timed_out = state
            _kill(proc)
            break
        if line is None:
            break
        if not line.startswith(MARK):
            tail.append(line)
            continue
        event = json.loads(line[len(MARK) :])
        events.append(event)
        now = time.monotonic()
        if event["event"] == "built":
            # Waiting for the GPU lock has no launch deadline; without a prebuild the first launch also builds.
            state = "queued" if event.get("prebuilt") else "unbuilt"
        elif event["event"] == "launch":
            first_unbuilt = state == "unbuilt"
            state, deadline = "launch", now + (build_timeout if first_unbuilt else launch_timeout)
        elif event["event"] == "check":
            state, deadline = "launch", now + launch_timeout  # the next launch follows at once
    proc.wait()
    return classify(job, events, timed_out, launch_timeout, list(tail), proc.returncode)


def classify(
    job: Job,
    events: list[dict[str, Any]],
    timed_out: str | None,
    launch_timeout: float,
    tail: list[str],
    returncode: int | None,
) -> Outcome:
    """The outcome the events show; a record only for what the edit did, never for a failure of the runner."""
    checks = [{k: e[k] for k in ("shape", "bad", "nonfinite", "max_abs_err")} for e in events if e["event"] == "check"]
    errors = [e for e in events if e["event"] == "error"]
    device = next((e["name"] for e in events if e["event"] == "device"), None)
    base: dict[str, Any] = {"version": job.version, "name": job.name, "title": job.title,
                            "file": f"examples/hopper_matmul/{job.file.name}",
                            "edits": [list(p) for p in job.edits], "config": dict(job.config), "checks": checks,
                            "error": None, "timeout_s": None, "device": device}  # fmt: skip
    launches = [e for e in events if e["event"] == "launch"]
    if any(c["bad"] for c in checks):
        return Outcome(job, base | {"outcome": "wrong"}, log_tail=tail)
    if errors and errors[0]["stage"] == "build":
        return Outcome(job, base | {"outcome": "does not build", "error": errors[0]["error"]}, log_tail=tail)
    if errors:
        return Outcome(job, base | {"outcome": "crashes", "error": errors[0]["error"]}, log_tail=tail)
    if timed_out == "launch" and launches:
        index = launches[-1]["index"]
        shape = _shape_text(job.checks[index])
        error = (f"no answer {launch_timeout:.0f} s after launch {index + 1} of {len(job.checks)} ({shape}); "
                 "the process was killed")  # fmt: skip
        return Outcome(job, base | {"outcome": "hangs", "error": error, "timeout_s": launch_timeout}, log_tail=tail)
    if any(e["event"] == "done" for e in events) and len(checks) == len(job.checks):
        return Outcome(job, base | {"outcome": "exact"}, log_tail=tail)
    if timed_out:
        problem = f"no progress while {'building' if timed_out in ('build', 'unbuilt') else timed_out}; killed"
    else:
        problem = f"the child process ended (exit status {returncode}) without an outcome"
    return Outcome(job, None, problem, tail)


def git_commit() -> str:
    try:
        done = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return "unknown"
    return done.stdout.strip() or "unknown"


def record_outcome(out: Path, record: dict[str, Any]) -> None:
    """Merge one outcome into the results file (validated, atomic); ResultsError if the GPU is another model."""
    from matmul_data import results

    data = results.load(out)
    device = record.pop("device", None)
    if device is not None and device != data["gpu"]["name"]:
        raise results.ResultsError(f"{out} holds results of {data['gpu']['name']!r}, not of this {device!r}")
    data["tryit"] = results.merge_tryit(data.get("tryit", []), [record])
    results.write_atomic(out, data)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m matmul_bench tryit",
        description="Apply each try-it edit of experiments/tryit.py to a copy of its chapter's kernel, build and "
        "check it on a Hopper GPU (NaN-poisoned C against float64, several times), and record the outcome.",
    )
    parser.add_argument("--out", type=Path, metavar="FILE", help="the results file to merge the outcomes into")
    parser.add_argument("--only", metavar="vN[/EDIT],...", help="some versions or edits (default: all)")
    parser.add_argument("--jobs", type=int, default=8, help="edits built at once (default 8; checks take turns)")
    parser.add_argument("--build-timeout", type=float, default=BUILD_TIMEOUT_S, help="seconds to build one edit")
    parser.add_argument(
        "--launch-timeout",
        type=float,
        default=LAUNCH_TIMEOUT_S,
        help=f"seconds one check may take before the edit counts as hung (default {LAUNCH_TIMEOUT_S:.0f})",
    )
    parser.add_argument("--git-commit", help="record this commit instead of asking git")
    parser.add_argument("--dry-run", action="store_true", help="list what would run and how long; exit")
    parser.add_argument("--spec-file", type=Path, default=SPEC_FILE, help=argparse.SUPPRESS)
    return parser


def check_out(out: Path | None) -> None:
    """--out must be an existing, valid results file: outcomes are merged into it, next to its provenance."""
    from matmul_data import results

    if out is None:
        raise UsageError("--out FILE is required: the results file (e.g. plots/results/nvidia-h200.json) to merge into")
    if out.suffix != ".json" or not out.is_file():
        raise UsageError(f"--out {out}: give an existing results file (.json); copy plots/results/<gpu>.json first")
    try:
        results.load(out)
    except results.ResultsError as exc:
        raise UsageError(f"--out: {exc}") from exc


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m matmul_bench tryit``: apply, build and check every try-it edit; merge the outcomes."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.jobs < 1 or args.build_timeout <= 0 or args.launch_timeout <= 0:
            raise UsageError("--jobs, --build-timeout and --launch-timeout must be positive")
        jobs = plan_jobs(load_spec(args.spec_file), args.only)
        if not args.dry_run or args.out is not None:
            check_out(args.out)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"matmul_bench tryit: error: {exc}", file=sys.stderr)
        return 2
    shapes = ", ".join(_shape_text(s) for s in jobs[0].checks)
    print(f"Try-it edits: {len(jobs)}; each built with its own Tilus cache, then checked at {shapes}")
    for job in jobs:
        change = f"{len(job.edits)} substitution(s)" if job.edits else "no text change"
        print(f"  {job.key:<28} {job.title}  [{change}; config {job.config}]")
    print(f"  estimated duration: about {estimate_s(jobs, args.jobs):.0f} s, plus {args.launch_timeout:.0f} s per "
          "edit that hangs")  # fmt: skip
    if args.dry_run:
        print("(dry run: nothing is built, launched or written)")
        return 0
    run_id = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H%M%SZ")
    stamp = {"run_id": run_id, "date": run_id[:10], "git_commit": args.git_commit or git_commit()}
    failed = 0
    with tempfile.TemporaryDirectory(prefix="tryit-") as tmp:
        lock = Path(tmp) / "gpu.lock"
        with ThreadPoolExecutor(args.jobs) as pool:
            futures = [pool.submit(run_job, j, Path(tmp), lock, args.build_timeout, args.launch_timeout) for j in jobs]
            for future in as_completed(futures):
                try:
                    outcome = future.result()
                except Exception:  # a bug of this runner for one edit: report it, keep the others
                    failed += 1
                    traceback.print_exc()
                    continue
                if outcome.record is None:
                    failed += 1
                    print(f"{outcome.job.key}: NOT RECORDED: {outcome.problem}", flush=True)
                    print("    " + "\n    ".join(outcome.log_tail[-12:]), flush=True)
                    continue
                record = outcome.record | stamp
                bad = [c["bad"] for c in record["checks"]]
                print(f"{outcome.job.key}: {record['outcome']}" + (f" (bad elements per check: {bad})" if bad else "")
                      + (f": {record['error']}" if record["error"] else ""), flush=True)  # fmt: skip
                try:
                    record_outcome(args.out, record)
                except Exception as exc:  # e.g. another GPU model: nothing is written for it
                    failed += 1
                    print(f"{outcome.job.key}: NOT RECORDED: {exc}", flush=True)
    print(f"recorded {len(jobs) - failed} of {len(jobs)} outcomes in {args.out}")
    return 1 if failed else 0
