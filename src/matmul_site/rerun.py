"""Opt-in, ``HOPPER_MATMUL_RERUN_CHARTS=1 nox -s docs``: each chapter's chart (its page runs :func:`chart_code`)
first reruns vN and cuBLAS, quick and interleaved, into ``build/rerun/vN.json`` on a Hopper GPU, draws from that and
says so. Where there is none (asked of ``nvidia-smi``) or the benchmark fails, one line says why and the chart draws
from the recorded file. Without the variable nothing here runs: the build never touches CUDA. The benchmark runs as
a command line in its own process; nothing of it is imported here.
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
from pathlib import Path

from matmul_data import model, paths, results

ENV = "HOPPER_MATMUL_RERUN_CHARTS"
OUT_DIR = paths.BUILD_DIR / "rerun"
TIMEOUT_S = 900


def chart_code(version: str) -> str:
    """The code that draws a chapter's chart (its page's plot directive holds the same; so does ``nox -s plots``)."""
    return (
        f"from matmul_site import rerun\nfrom matmul_site import charts\n\n"
        f'charts.version_chart("{version}", *rerun.ladder_for("{version}"))\n'
    )


def benchmark(*args: str) -> list[str]:
    """The command line of ``python -m matmul_bench <args>`` in a child process (with :func:`paths.child_env`, it
    runs this checkout's benchmark)."""
    return [sys.executable, "-m", "matmul_bench", *args]


def command(version: str, out: Path) -> list[str]:
    """The benchmark call: this version and cuBLAS, interleaved, in quick mode, into ``out``."""
    return benchmark("record", "--ladder", "--versions", version, "--quick", "--out", str(out))


def hopper_gpu() -> tuple[str | None, str | None]:
    """(name of the first Hopper GPU, None) or (None, why there is none), asked of nvidia-smi."""
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return None, "nvidia-smi is not on PATH (no NVIDIA driver here)"
    query = [smi, "--query-gpu=name,compute_cap", "--format=csv,noheader"]
    try:
        done = subprocess.run(query, capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, f"nvidia-smi failed ({exc.__class__.__name__})"
    gpus = [line.rsplit(",", 1) for line in done.stdout.strip().splitlines() if "," in line]
    for name, capability in gpus:
        if capability.strip() == "9.0":
            return name.strip(), None
    seen = ", ".join(f"{n.strip()} (sm {c.strip()})" for n, c in gpus) or "no GPU"
    return None, f"no Hopper GPU (compute capability 9.0) here: {seen}"


@functools.cache
def fresh(version: str) -> tuple[model.Results | None, str | None, str | None]:
    """Run the benchmark once per build process for ``version``; never raises: (a fresh ladder, the GPU it ran on,
    None), or (None, the GPU or None, why there is none)."""
    gpu, reason = hopper_gpu()
    if gpu is None:
        return None, None, reason
    out = OUT_DIR / f"{version}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.unlink(missing_ok=True)
    try:
        run = {"cwd": paths.ROOT, "env": paths.child_env(), "capture_output": True, "text": True, "timeout": TIMEOUT_S}
        done = subprocess.run(command(version, out), **run)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return None, gpu, f"the benchmark did not finish ({exc.__class__.__name__})"
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, gpu, f"the benchmark exited with status {done.returncode}: {last}"
    try:
        data = results.read(out)
    except results.ResultsError as exc:
        return None, gpu, f"the benchmark's file is not usable: {exc}"
    if results.ladder_row(data, version) is None:
        return None, gpu, f"the benchmark's file has no ladder row for {version}"
    return data, gpu, None


@functools.cache
def _say(version: str, reason: str) -> None:
    print(f"{ENV}=1: {version} not rerun ({reason}); its chart draws from the recorded results", file=sys.stderr)


def ladder_for(version: str) -> tuple[model.Results | None, str | None]:
    """(data the chapter chart draws from, GPU name when it was rerun at build time, else None)."""
    recorded = results.read_default()
    if os.environ.get(ENV, "") != "1":
        return recorded, None
    data, gpu, reason = fresh(version)
    if data is None:
        _say(version, reason or "no reason given")
        return recorded, None
    return data, gpu
