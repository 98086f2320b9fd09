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
from typing import Any, TypeVar

from matmul_bench import kernels
from matmul_bench.protocol import Answer, BuildAnswer, BuildSpec, Job
from matmul_bench.worker import WRONG_RESULT
from matmul_data.decoding import ResultsError

Reply = TypeVar("Reply", Answer, BuildAnswer)  # what a caller reads a worker's answer as


class BenchmarkError(Exception):
    """The benchmark cannot go on (no Hopper GPU, a worker failed, an unusable results file): exit status 1."""


class WrongResult(BenchmarkError):
    """An implementation of ours failed its check: nothing of it is recorded; exit status 3."""


def call_worker(job: Job, reads: type[Reply], timeout_s: float, prefix: Sequence[str] = ()) -> Reply:
    """Run one fresh worker (``prefix``: under ncu) on a job; its answer, read as ``reads``, or an exception saying why
    there is none."""
    with tempfile.TemporaryDirectory(prefix="bench-worker-") as tmp:
        job_path, answer_path = Path(tmp) / "job.json", Path(tmp) / "answer.json"
        job_path.write_text(json.dumps(job.to_json()), encoding="utf-8")
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
        data = json.loads(answer_path.read_text(encoding="utf-8"))
    try:
        answer = read_answer(data, reads)
    except ResultsError as exc:
        raise BenchmarkError(f"a worker's answer (status {status}) does not follow the protocol: {exc}") from exc
    if status == WRONG_RESULT:
        raise WrongResult(answer.error or "a check failed")
    if isinstance(answer, Answer) and answer.no_gpu:
        raise BenchmarkError(str(answer.error))
    if status != 0 or answer.error:
        raise BenchmarkError(f"a worker failed (status {status}): {answer.error}")
    if not isinstance(answer, reads):
        raise BenchmarkError(f"a worker answered a failure with no error instead of a {reads.__name__}")
    return answer


def read_answer(data: Any, reads: type[Reply]) -> Reply | Answer:
    """A worker's answer as ``reads``, else as a failed job's (an Answer with only its error, as worker.main writes
    one); ResultsError, naming the field, for an answer of the kind asked for that breaks the protocol."""
    try:
        return reads.from_json(data)
    except ResultsError:
        if reads is not Answer and isinstance(data, dict) and set(data) <= {"error", "no_gpu"}:
            return Answer.from_json(data)
        raise


def build_all(specs: Sequence[BuildSpec], jobs: int = 8, timeout_s: float = 1800, autotune: bool = False,
              backend: str = "cuda", fake: dict[str, Any] | None = None) -> list[BuildAnswer]:  # fmt: skip
    """Every spec built (and checked) in its own process, ``jobs`` at a time, in order, on ``backend`` (a worker's;
    ``fake``: the fake's options); a failure comes back as an answer that is not ok, with its error."""

    def build(spec: BuildSpec) -> BuildAnswer:
        job = Job.of(mode="build", build=spec, autotune=autotune, backend=backend, fake=fake or {})
        try:
            return call_worker(job, BuildAnswer, timeout_s)
        except BenchmarkError as exc:
            return BuildAnswer.of(ok=False, configs={}, checks=(), error=str(exc))

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        return list(pool.map(build, specs))
