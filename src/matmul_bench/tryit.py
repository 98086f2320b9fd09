"""The chapters' Try it edits (specs/tryit.py) applied to copies, built, checked on a Hopper GPU, and recorded.

Each edit is built in parallel in a fresh process with its own Tilus cache, then checked in turn on the GPU, in
another fresh process: NaN-poisoned C against float64, at every CHECKS shape. Its outcome (exact, wrong, hangs,
does not build, crashes) is merged into the results file's "tryit" section as soon as it is known.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from matmul_bench import kernels, machine
from matmul_bench.plan import UsageError
from matmul_data import model, results, versions
from matmul_data.decoding import Config

SPEC_FILE = kernels.SPECS_DIR / "tryit.py"
MARK = "@@tryit "
BUILD_TIMEOUT_S = 300.0  # imports, lowering and nvcc: about 30 s alone, longer with 8 builds at once
START_S = 60.0  # a checking process: import torch and Tilus, load the build from its cache
LAUNCH_TIMEOUT_S = 20.0  # one check at 8192^3 (launch, float64 reference, comparison) takes well under 1 s
BUILD_JOBS = 8


@dataclass(frozen=True)
class Job:
    """One edit of one chapter's kernel, ready to run."""

    version: str
    name: str
    title: str
    file: Path  # the chapter's kernel file (unedited)
    cls: str
    edits: tuple[tuple[str, str], ...]
    config: Config  # the kernel file's TUNED, with the edit's overrides
    checks: tuple[tuple[int, int, int], ...]

    @property
    def key(self) -> str:
        """version/name."""
        return f"{self.version}/{self.name}"


@dataclass
class Outcome:
    """What a child reported: the record to write, or why there is none."""

    job: Job
    record: dict[str, Any] | None
    problem: str | None = None
    log_tail: list[str] = field(default_factory=list)


def load_spec(path: Path) -> dict[str, Any]:
    """EDITS and CHECKS of the try-it spec; UsageError if it cannot be read."""
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
        if text.count(old) != 1:
            raise UsageError(f"{where}: the edit's old text occurs {text.count(old)} times (must be once): {old!r}")
        text = text.replace(old, new)
    return text


def plan_jobs(spec: dict[str, Any], only: str | None) -> list[Job]:
    """Every edit ``only`` chooses ("v5,v6/stages-4"; None: all), checked to apply and to name known knobs."""
    edits: dict[str, dict[str, dict[str, Any]]] = spec["EDITS"]
    wanted = [w.strip() for w in (only or "").split(",") if w.strip()]
    known = {f"{v}/{n}" for v, entries in edits.items() for n in entries}
    for item in wanted:
        if item not in edits and item not in known:
            raise UsageError(f"--only {item!r}: no such version or edit (known: {', '.join(sorted(known))})")
    checks = tuple(tuple(int(d) for d in shape) for shape in spec["CHECKS"])
    if any(len(shape) != 3 or min(shape) < 1 or shape[2] % 8 for shape in checks):
        raise UsageError(f"check shapes {checks}: need positive M, N, K with K a multiple of 8")
    jobs = []
    for version, entries in edits.items():
        for name, entry in entries.items():
            if wanted and not {version, f"{version}/{name}"} & set(wanted):
                continue
            if version not in versions.names():
                raise UsageError(f"{version}/{name}: no kernel file matmul_{version}.py")
            file, tuned = versions.get(version).path, versions.get(version).tuned
            pairs = tuple((str(old), str(new)) for old, new in entry.get("edits", []))
            overrides = dict(entry.get("config", {}))
            if set(overrides) - set(tuned):
                raise UsageError(f"{version}/{name}: config names unknown knobs {sorted(set(overrides) - set(tuned))} "
                                 f"(known: {sorted(tuned)})")  # fmt: skip
            if not pairs and not overrides:
                raise UsageError(f"{version}/{name}: changes nothing (give edits or a config)")
            apply_edits(file.read_text(encoding="utf-8"), pairs, f"{version}/{name} in {file.name}")
            jobs.append(Job(version, name, str(entry.get("title") or name), file, f"MatmulV{version[1:]}", pairs,
                            {**tuned, **overrides}, checks))  # fmt: skip
    if not jobs:
        raise UsageError("nothing to run")
    return jobs


def say(event: str, **fields: Any) -> None:
    """One event line for the parent."""
    print(MARK + json.dumps({"event": event, **fields}), flush=True)


def first_error_line(text: str) -> str:
    """The line that says what went wrong: the last "SomethingError: ..." line, else the first non-empty line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    found = [line for line in lines if re.match(r"^([\w.]+)?(Error|Exception)\b.*?: \S", line)]
    return (found[-1] if found else (lines[0] if lines else "no message"))[:400]


def check_detail(kernel: Any, m: int, n: int, k: int) -> dict[str, Any]:
    """common.check's comparison (NaN-poisoned C against float64), also counting elements still NaN or inf."""
    import torch

    common = kernels.load("common")
    a, b = common.random_operands(m, n, k)
    c = torch.full((m, n), float("nan"), dtype=torch.float16, device="cuda")
    common.matmul(kernel, a, b, out=c)
    torch.cuda.synchronize()
    ref = a.double() @ b.double().T
    err = (c.double() - ref).abs()
    bad = ~(err <= common.ATOL + common.RTOL * ref.abs())  # NaN compares False, so it counts as bad
    finite = torch.isfinite(c)
    return {"shape": {"m": m, "n": n, "k": k}, "bad": int(bad.sum().item()), "nonfinite": int((~finite).sum().item()),
            "max_abs_err": err[finite].max().item() if bool(finite.any()) else None}  # fmt: skip


def child_main(argv: Sequence[str]) -> int:
    """``tryit-child JOB build|check``: build the edited copy without launching it, or check it on the GPU."""
    import tilus
    import torch

    job, phase = json.loads(Path(argv[0]).read_text(encoding="utf-8")), argv[1]
    kernels.load("common").require_hopper()
    say("device", name=torch.cuda.get_device_name())
    tilus.option.cache_dir(job["cache"])  # its own cache: an edited kernel never loads the unedited build
    try:  # the copy's module name is the kernel's: it shadows the unedited file in this fresh process
        kernel = kernels.make_kernel(job["file"], job["cls"], job["config"])
        if phase == "build":  # Tilus 0.2.0's own build path, with no launch (M is a run-time argument)
            n, k = job["checks"][0][1:]
            a, b, c = (torch.empty(*s, dtype=torch.float16, device="cuda") for s in ((1, k), (n, k), (1, n)))
            if hasattr(kernel, "_jit_instance_for"):  # else the first check builds it
                kernel._jit_instance_for(1, n, k, a, b, c)._build_programs()
            say("built")
            return 0
    except Exception as exc:  # the build's failure is the outcome, not a crash of this runner
        say("error", stage="build", error=first_error_line(f"{type(exc).__name__}: {exc}"))
        return 0
    for index, (m, n, k) in enumerate(job["checks"]):
        say("launch", index=index)
        try:
            say("check", index=index, **check_detail(kernel, m, n, k))
        except Exception as exc:
            say("error", stage="run", index=index, error=first_error_line(f"{type(exc).__name__}: {exc}"))
            return 0
    say("done")
    return 0


def run_child(job: Job, job_file: Path, phase: str, timeout_s: float) -> tuple[list[dict[str, Any]], Outcome]:
    """One child in its own session (``phase``: build or check): its events, and the outcome they show."""
    command = kernels.command("tryit-child", str(job_file), phase)
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, env=kernels.child_env())  # fmt: skip
    try:
        output, timed_out = proc.communicate(timeout=timeout_s)[0], False
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # this child and what it started (nvcc), nothing else
        output, timed_out = proc.communicate()[0], True
    lines = output.splitlines()
    events = [json.loads(line[len(MARK) :]) for line in lines if line.startswith(MARK)]
    tail = [line for line in lines if not line.startswith(MARK)][-30:]
    return events, classify(job, events, phase if timed_out else None, tail, proc.returncode)


def build_job(job: Job, workdir: Path) -> tuple[Path, Outcome | None]:
    """Apply the edit to a copy and build it; an outcome already when it does not build."""
    work = Path(tempfile.mkdtemp(dir=workdir, prefix=f"{job.version}-{job.name}-"))
    edited = work / job.file.name
    edited.write_text(apply_edits(job.file.read_text(encoding="utf-8"), job.edits), encoding="utf-8")
    job_file = work / "job.json"
    job_file.write_text(json.dumps({"file": str(edited), "cls": job.cls, "config": job.config, "cache": str(
        work / "tilus-cache"), "checks": [list(s) for s in job.checks]}), encoding="utf-8")  # fmt: skip
    events, outcome = run_child(job, job_file, "build", BUILD_TIMEOUT_S)
    return job_file, None if any(e["event"] == "built" for e in events) else outcome


def classify(job: Job, events: list[dict[str, Any]], timed_out: str | None, tail: list[str],
             returncode: int | None) -> Outcome:  # fmt: skip
    """The outcome the events show; a record only for what the edit did, never for a failure of the runner."""
    checks = [{k: e[k] for k in ("shape", "bad", "nonfinite", "max_abs_err")} for e in events if e["event"] == "check"]
    errors = [e for e in events if e["event"] == "error"]
    launches = [e for e in events if e["event"] == "launch"]
    base: dict[str, Any] = {"version": job.version, "name": job.name, "title": job.title,
                            "file": f"examples/hopper_matmul/{job.file.name}", "edits": [list(p) for p in job.edits],
                            "config": dict(job.config), "checks": checks, "error": None, "timeout_s": None,
                            "device": next((e["name"] for e in events if e["event"] == "device"), None)}  # fmt: skip
    if any(c["bad"] for c in checks):
        return Outcome(job, base | {"outcome": "wrong"}, log_tail=tail)
    if errors:
        outcome = "does not build" if errors[0]["stage"] == "build" else "crashes"
        return Outcome(job, base | {"outcome": outcome, "error": errors[0]["error"]}, log_tail=tail)
    if timed_out and launches and len(checks) <= launches[-1]["index"]:
        index = launches[-1]["index"]
        error = (f"no answer {LAUNCH_TIMEOUT_S:.0f} s after launch {index + 1} of {len(job.checks)} "
                 f"({'x'.join(map(str, job.checks[index]))}); the process was killed")  # fmt: skip
        return Outcome(job, base | {"outcome": "hangs", "error": error, "timeout_s": LAUNCH_TIMEOUT_S}, log_tail=tail)
    if any(e["event"] == "done" for e in events) and len(checks) == len(job.checks):
        return Outcome(job, base | {"outcome": "exact"}, log_tail=tail)
    if timed_out:  # "build" or "check"
        return Outcome(job, None, f"no progress while {timed_out}ing; killed", tail)
    return Outcome(job, None, f"the child process ended (exit status {returncode}) without an outcome", tail)


def record_outcome(out: Path, record: dict[str, Any]) -> None:
    """Merge one outcome into the results file (validated, atomic); ResultsError if the GPU is another model."""
    data = results.read(out, fresh=True)
    device = record.pop("device", None)
    if device is not None and device != data.gpu.name:
        raise results.ResultsError(f"{out} holds results of {data.gpu.name!r}, not of this {device!r}")
    entry = model.TryIt.from_json(record, "tryit")
    results.write_atomic(out, data.put(tryit=results.merge_entries(data.tryit, [entry], results.tryit_key)))


def main(argv: Sequence[str]) -> int:
    """``python -m matmul_bench tryit``: plan the edits, then build, check and record each; 1 if one is not recorded."""
    parser = argparse.ArgumentParser(prog="python -m matmul_bench tryit", description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, metavar="FILE", help="the results file to merge the outcomes into")
    parser.add_argument("--only", metavar="vN[/EDIT],...", help="some versions or edits (default: all)")
    parser.add_argument("--dry-run", action="store_true", help="list what would run and how long; exit")
    args = parser.parse_args(argv)
    try:
        jobs = plan_jobs(load_spec(SPEC_FILE), args.only)
        if args.out is None and not args.dry_run:
            raise UsageError("--out FILE is required: the results file (e.g. plots/results/nvidia-h200.json)")
        if args.out is not None and (args.out.suffix != ".json" or not args.out.is_file()):
            raise UsageError(f"--out {args.out}: give an existing results file (.json)")
        recorded = results.read(args.out, fresh=True) if args.out is not None else None
    except (results.ResultsError, UsageError) as exc:
        where = "--out: " if isinstance(exc, results.ResultsError) else ""
        print(f"{parser.prog}: error: {where}{exc}", file=sys.stderr)
        return 2
    if not args.dry_run:  # as record: no GPU, or --out of another GPU, is one line before any plan or build
        try:  # else another GPU's file is found only by record_outcome, after the builds
            machine.require_hopper_for(recorded, f"--out {args.out}", "nothing was built")
        except machine.NoHopperGPU as exc:
            print(f"{parser.prog}: {exc}", file=sys.stderr)
            return 1
    estimate = 5.0 + math.ceil(len(jobs) / BUILD_JOBS) * 35.0 + sum(START_S / 6 + len(j.checks) for j in jobs)
    print(f"Try-it edits: {len(jobs)}, each checked at {', '.join('x'.join(map(str, s)) for s in jobs[0].checks)}")
    print("\n".join(f"  {j.key:<28} {j.title}  [{len(j.edits)} substitution(s); config {j.config}]" for j in jobs))
    print(f"  estimated duration: about {estimate:.0f} s, plus {LAUNCH_TIMEOUT_S:.0f} s per edit that hangs")
    if args.dry_run:
        print("(dry run: nothing is built, launched or written)")
        return 0
    run_id = machine.utc_now().strftime("%Y-%m-%dT%H%M%SZ")
    stamp, failed = {"run_id": run_id, "date": run_id[:10], "git_commit": machine.git_commit()}, 0
    with tempfile.TemporaryDirectory(prefix="tryit-") as tmp, ThreadPoolExecutor(BUILD_JOBS) as pool:
        built = pool.map(lambda j: build_job(j, Path(tmp)), jobs)
        for job, (job_file, outcome) in zip(jobs, built, strict=True):  # each check as soon as its build is done
            outcome = outcome or run_child(job, job_file, "check", START_S + LAUNCH_TIMEOUT_S * len(job.checks))[1]
            if outcome.record is None:
                failed += 1
                print(f"{job.key}: NOT RECORDED: {outcome.problem}\n    " + "\n    ".join(outcome.log_tail[-12:]))
                continue
            record = outcome.record | stamp
            print(f"{job.key}: {record['outcome']} (bad elements per check: {[c['bad'] for c in record['checks']]})"
                  + (f": {record['error']}" if record["error"] else ""), flush=True)  # fmt: skip
            try:
                record_outcome(args.out, record)
            except results.ResultsError as exc:  # e.g. another GPU model: nothing is written for it
                failed += 1
                print(f"{job.key}: NOT RECORDED: {exc}", flush=True)
    print(f"recorded {len(jobs) - failed} of {len(jobs)} outcomes in {args.out}")
    return 1 if failed else 0
