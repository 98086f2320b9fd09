"""The parent's side of the job protocol: each job runs in a fresh worker process (see :mod:`.worker`)."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from matmul_bench import kernels
from matmul_bench.worker import WRONG_RESULT


class BenchmarkError(Exception):
    """The benchmark cannot go on (no Hopper GPU, a worker failed, an unusable results file): exit status 1."""


class WrongResult(BenchmarkError):
    """An implementation of ours failed its check: nothing of it is recorded; exit status 3."""


def call_worker(job: dict[str, Any], timeout_s: float, prefix: Sequence[str] = ()) -> dict[str, Any]:
    """Run one fresh worker (``prefix``: under ncu) on a job; its answer, or an exception saying why there is none."""
    with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp:
        job_path, answer_path = Path(tmp) / "job.json", Path(tmp) / "answer.json"
        job_path.write_text(json.dumps(job), encoding="utf-8")
        cmd = [*prefix, *kernels.command("worker", str(job_path), str(answer_path))]
        # Its own process group, so that a timeout or Ctrl-C also ends what it started (nvcc, ncu's target).
        proc = subprocess.Popen(cmd, env=kernels.child_env(), start_new_session=True)
        try:
            status = proc.wait(timeout=timeout_s)
        except BaseException as exc:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
            if isinstance(exc, subprocess.TimeoutExpired):
                raise BenchmarkError(f"a worker gave no answer in {timeout_s:.0f} s and was killed") from exc
            raise
        if not answer_path.exists():
            raise BenchmarkError(f"a worker exited with status {status} and no answer (its output is above)")
        answer = json.loads(answer_path.read_text(encoding="utf-8"))
    if status == WRONG_RESULT:
        raise WrongResult(answer.get("error") or "a check failed")
    if answer.get("no_gpu"):
        raise BenchmarkError(answer["error"])
    if status != 0 or answer.get("error"):
        raise BenchmarkError(f"a worker failed (status {status}): {answer.get('error')}")
    return answer


def build_all(specs: Sequence[dict[str, Any]], jobs: int = 8, timeout_s: float = 1800, autotune: bool = False,
              backend: str = "cuda", fake: dict[str, Any] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Every spec ({file, cls, config, shapes, check, seed}) built (and checked) in its own process, ``jobs`` at a
    time, in order, on ``backend`` (a worker's; ``fake``: the fake's options); a failure comes back as
    {"ok": False, "error": ...}."""

    def build(spec: dict[str, Any]) -> dict[str, Any]:
        job = {"mode": "build", "build": spec, "autotune": autotune, "backend": backend, "fake": fake or {}}
        try:
            return call_worker(job, timeout_s)
        except BenchmarkError as exc:
            return {"ok": False, "configs": {}, "checks": [], "error": str(exc)}

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return list(pool.map(build, specs))
