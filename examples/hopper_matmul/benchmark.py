"""Benchmark the kernel versions against cuBLAS on a Hopper GPU and record the results file.

    python examples/hopper_matmul/benchmark.py                      # everything: all versions, cuBLAS, sweep
    python examples/hopper_matmul/benchmark.py --versions v0,v1 --cublas
    python examples/hopper_matmul/benchmark.py --sweep --sweep-impls v6,cublas
    python examples/hopper_matmul/benchmark.py --dry-run            # the plan only; needs no GPU

Each version runs in ``--processes`` fresh processes (this script again, in a
hidden ``--worker`` mode that prints one JSON line). A process builds and
autotunes the kernel, checks it against a float64 reference at the timed shape,
times it with CUDA events (L2 flushed, median) and times cuBLAS the same way.
The entry records the median of the process medians. Where ``ncu`` works, one
more process profiles a single launch for the counters the chapters cite.

Results are merged per entry into ``plots/results/<gpu>.json`` and written
atomically after each entry, so an interrupted run keeps what it finished.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import csv
import datetime
import importlib.metadata
import importlib.util
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from matmul_site import results

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

Shape = tuple[int, int, int]

CUBLAS = "cublas"
TORCH_COMPILE = "torch-compile-max-autotune"
CUBLAS_TECHNIQUE = "cuBLAS via torch.matmul"
# max-autotune's GEMM template search without its CUDA graphs: a graph copies inputs that it did not
# allocate into its own buffers on every replay, which a matmul inside a real model would not pay.
TORCH_COMPILE_MODE = "max-autotune-no-cudagraphs"
TORCH_COMPILE_TECHNIQUE = f'torch.compile(mode="{TORCH_COMPILE_MODE}")'

# The summary chart's sweep: the later versions, cuBLAS, and the peer a user would pick instead of a kernel.
SWEEP_VERSIONS = ("v4", "v5", "v6")
SWEEP_SHAPES: tuple[Shape, ...] = (
    (1024, 1024, 1024),
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (8192, 8192, 8192),
    (16384, 16384, 16384),
    # LLM-shaped: 8192 tokens through 4096 -> 4096, 4096 -> 14336 (MLP up) and 14336 -> 4096 (MLP down).
    (8192, 4096, 4096),
    (8192, 14336, 4096),
    (8192, 4096, 14336),
)

# Nsight Compute metrics per counter. The tensor pipe has one metric per instruction family on Hopper
# (gmma = WGMMA, hmma = mma.sync); a kernel uses one of them, so the counter is the larger of the two.
NCU_METRICS: dict[str, tuple[str, ...]] = {
    "tensor_pipe_pct": (
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
    ),
    "dram_throughput_pct": ("dram__throughput.avg.pct_of_peak_sustained_elapsed",),
}

# Dense FP16/BF16 tensor-core peak (FP32 accumulate) by exact GPU name, from NVIDIA's documents.
# The datasheets print the with-sparsity figure (1,979 TFLOPS); dense is half of it. Unlisted GPUs get null.
HOPPER_WHITEPAPER = "https://resources.nvidia.com/en-us-tensor-core/gtc22-whitepaper-hopper"
PUBLISHED_PEAKS: dict[str, tuple[float, str]] = {
    "NVIDIA H200": (989.4, "https://www.nvidia.com/en-us/data-center/h200/"),
    "NVIDIA H100 80GB HBM3": (989.4, HOPPER_WHITEPAPER),  # H100 SXM5
    "NVIDIA H100 PCIe": (756.0, HOPPER_WHITEPAPER),
}

# What common.time_ms does; recorded so that a reader of the file knows how the numbers were taken.
TIMER = "CUDA events"
L2_FLUSH = "512 MiB zero-fill before each timed call (several times the 50-60 MB L2)"
DEFAULT_WARMUP = 10
DEFAULT_REPEATS = 50
DEFAULT_PROCESSES = 3
DEFAULT_TIMEOUT_S = 1800

RESULT_PREFIX = "@@benchmark-result "
WRONG_RESULT_EXIT = 3  # a worker whose kernel failed the check at some shape (the payload says which)
_VERSION_FILE = re.compile(r"matmul_v(0|[1-9][0-9]*)\.py")
_HEADER = re.compile(r"#\s*V\d+:\s*(.+?)\.?")  # the first line of every kernel file: "# V0: TMA + mma.sync"


class UsageError(Exception):
    """A bad command line: reported with exit code 2 before anything touches the GPU."""


class BenchmarkError(Exception):
    """The benchmark cannot run here (no Hopper GPU, unreadable results file...): exit code 1."""


class WorkerError(Exception):
    """A worker process failed, timed out, or its kernel gave wrong results."""


# --- versions, by convention: matmul_v<N>.py defines class MatmulV<N> -------------------------------


def discover_versions(kernel_dir: Path = HERE) -> list[str]:
    """Every "v<N>" with a kernel_dir/matmul_v<N>.py, in numeric order."""
    numbers = [int(m.group(1)) for p in kernel_dir.glob("matmul_v*.py") if (m := _VERSION_FILE.fullmatch(p.name))]
    return [f"v{n}" for n in sorted(numbers)]


def kernel_file(version: str, kernel_dir: Path = HERE) -> Path:
    return kernel_dir / f"matmul_{version}.py"


def kernel_class_name(version: str) -> str:
    return f"MatmulV{int(version[1:])}"


def defines_class(path: Path, class_name: str) -> bool:
    """Whether a Python file defines a top-level class of that name (read, not imported: no torch needed)."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    return any(isinstance(node, ast.ClassDef) and node.name == class_name for node in tree.body)


def load_kernel_class(version: str, kernel_dir: Path = HERE) -> type:
    """Import matmul_v<N>.py from kernel_dir and return its MatmulV<N> class."""
    path = kernel_file(version, kernel_dir)
    if str(kernel_dir) not in sys.path:
        sys.path.insert(0, str(kernel_dir))  # the kernel files import their siblings (common, ...)
    module_name = path.stem
    spec = importlib.util.spec_from_file_location(module_name, path)
    if spec is None or spec.loader is None:
        raise BenchmarkError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # Tilus reads the class source through its module
    spec.loader.exec_module(module)
    cls = getattr(module, kernel_class_name(version), None)
    if not isinstance(cls, type):
        raise BenchmarkError(f"{path} defines no class {kernel_class_name(version)}")
    return cls


def technique_of(cls: type) -> str:
    """A version's technique: its module's TECHNIQUE, else its "# V<N>: ..." header line, else a docstring line."""
    module = sys.modules.get(cls.__module__)
    technique = getattr(module, "TECHNIQUE", None)
    if isinstance(technique, str) and technique:
        return technique
    path = getattr(module, "__file__", None)
    if path:
        for line in Path(path).read_text(encoding="utf-8").splitlines()[:5]:
            if match := _HEADER.fullmatch(line.strip()):
                return match.group(1)
    for doc in (module.__doc__ if module else None, cls.__doc__):
        if doc and doc.strip():
            return doc.strip().splitlines()[0].rstrip(".")
    return cls.__name__


def bench_shape(kernel_dir: Path = HERE) -> Shape:
    """common.BENCH_SHAPE, read from the source so that planning needs no torch."""
    tree = ast.parse((kernel_dir / "common.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        else:
            continue
        if any(isinstance(t, ast.Name) and t.id == "BENCH_SHAPE" for t in targets):
            m, n, k = ast.literal_eval(value)
            return int(m), int(n), int(k)
    raise BenchmarkError(f"{kernel_dir / 'common.py'} defines no BENCH_SHAPE")


# --- the command line --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Plan:
    """What one benchmark run will do, decided from the command line before any GPU is touched."""

    versions: tuple[str, ...]
    cublas: bool
    sweep_impls: tuple[str, ...]
    sweep_shapes: tuple[Shape, ...]
    shape: Shape
    processes: int
    repeats: int
    warmup: int
    out: Path | None  # None: plots/results/<slug of the GPU name>.json
    ncu: bool
    timeout_s: float
    kernel_dir: Path
    git_commit: str | None  # None: ask git


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _non_negative_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {text!r}")
    return value


def _shape_list(text: str) -> tuple[Shape, ...]:
    try:
        return tuple(parse_shapes(text))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="benchmark.py",
        description="Time the Tilus matmul versions and cuBLAS on a Hopper GPU; record plots/results/<gpu>.json. "
        "With no selection (--versions/--cublas/--sweep) it runs everything.",
    )
    parser.add_argument("--versions", help='comma-separated versions (e.g. "v0,v2") or "all"')
    parser.add_argument("--cublas", action="store_true", help="record the cuBLAS entry (its own fresh processes)")
    parser.add_argument("--sweep", action="store_true", help="time the sweep shapes for the summary chart")
    parser.add_argument(
        "--sweep-impls",
        help=f"comma-separated sweep implementations (implies --sweep); default: those of "
        f"{', '.join(SWEEP_VERSIONS)} that exist, {CUBLAS}, {TORCH_COMPILE}",
    )
    parser.add_argument(
        "--sweep-shapes",
        type=_shape_list,
        help="comma-separated MxNxK shapes to sweep (default: all of the summary chart's shapes)",
    )
    parser.add_argument("--processes", type=_positive_int, default=DEFAULT_PROCESSES, help="fresh processes per entry")
    parser.add_argument("--repeats", type=_positive_int, default=DEFAULT_REPEATS, help="timed calls per process")
    parser.add_argument("--warmup", type=_non_negative_int, default=DEFAULT_WARMUP, help="untimed calls first")
    parser.add_argument("--out", type=Path, help="results file (default: plots/results/<gpu>.json)")
    parser.add_argument("--no-ncu", action="store_true", help="skip the Nsight Compute counters")
    parser.add_argument("--timeout", type=_positive_int, default=DEFAULT_TIMEOUT_S, help="seconds per process")
    parser.add_argument("--git-commit", help="record this commit instead of asking git (for copies with no .git)")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and exit; needs no GPU")
    parser.add_argument("--kernel-dir", type=Path, default=HERE, help=argparse.SUPPRESS)
    return parser


def _split(text: str) -> list[str]:
    return [item.strip().lower() for item in text.split(",") if item.strip()]


def make_plan(args: argparse.Namespace) -> Plan:
    """Turn parsed arguments into a Plan; UsageError says what is wrong and what exists."""
    kernel_dir: Path = args.kernel_dir.resolve()
    found = discover_versions(kernel_dir)
    found_text = ", ".join(found) or "none"
    selected = args.versions is not None or args.cublas or args.sweep or args.sweep_impls is not None

    if args.versions is None:
        versions = [] if selected else found
    elif args.versions.strip().lower() == "all":
        if not found:
            raise UsageError(f"--versions all: no matmul_v<N>.py files in {kernel_dir}")
        versions = found
    else:
        versions = _split(args.versions)
        if not versions:
            raise UsageError('--versions needs at least one version, e.g. "v0,v1", or "all"')
        for name in versions:
            if name not in found:
                raise UsageError(
                    f"unknown version {name!r}: the versions are the files matmul_v<N>.py in {kernel_dir} "
                    f"(found: {found_text})"
                )
        if len(set(versions)) != len(versions):
            raise UsageError(f"--versions names a version twice: {args.versions}")
    for name in versions:
        path = kernel_file(name, kernel_dir)
        try:
            ok = defines_class(path, kernel_class_name(name))
        except (OSError, SyntaxError, ValueError) as exc:
            raise UsageError(f"cannot read {path}: {exc}") from exc
        if not ok:
            raise UsageError(f"{path} defines no class {kernel_class_name(name)}")

    sweep_choices = [*found, CUBLAS, TORCH_COMPILE]
    if args.sweep_impls is not None:
        sweep_impls = _split(args.sweep_impls)
        if not sweep_impls:
            raise UsageError("--sweep-impls needs at least one implementation")
        for name in sweep_impls:
            if name not in sweep_choices:
                raise UsageError(f"unknown sweep implementation {name!r} (choose from: {', '.join(sweep_choices)})")
    elif args.sweep or not selected:
        sweep_impls = [v for v in SWEEP_VERSIONS if v in found] + [CUBLAS, TORCH_COMPILE]
    else:
        sweep_impls = []

    if args.out is not None and args.out.is_dir():
        raise UsageError(f"--out {args.out} is a directory; give a file path such as {args.out / 'nvidia-h200.json'}")
    try:
        shape = bench_shape(kernel_dir)
    except (OSError, SyntaxError, ValueError, BenchmarkError) as exc:
        raise UsageError(f"cannot read the benchmark shape from common.py: {exc}") from exc
    return Plan(
        versions=tuple(versions),
        cublas=args.cublas or not selected,
        sweep_impls=tuple(sweep_impls),
        sweep_shapes=args.sweep_shapes or SWEEP_SHAPES,
        shape=shape,
        processes=args.processes,
        repeats=args.repeats,
        warmup=args.warmup,
        out=args.out,
        ncu=not args.no_ncu,
        timeout_s=float(args.timeout),
        kernel_dir=kernel_dir,
        git_commit=args.git_commit,
    )


def shape_text(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)


def describe_plan(plan: Plan) -> str:
    """The plan in words, for --dry-run."""
    out = str(plan.out) if plan.out else f"{results.results_dir()}/<slug of the GPU name>.json"
    lines = [
        "Benchmark plan (dry run: nothing is timed, nothing is written)",
        f"  versions: {', '.join(plan.versions) or 'none'}",
        f"  cuBLAS:   {'yes' if plan.cublas else 'no'}",
        f"  shape:    {shape_text(plan.shape)} fp16, fp32 accumulate (checked against float64 before timing)",
        f"  per entry: {plan.processes} fresh processes; each: build + autotune, check, "
        f"{plan.warmup} warm-up + {plan.repeats} timed calls (CUDA events, L2 flushed), median; "
        "cuBLAS timed the same way in each; the entry is the median of the process medians",
        f"  ncu:      {'yes, one launch per entry: ' + ', '.join(ncu_metric_names()) if plan.ncu else 'no (--no-ncu)'}",
    ]
    if plan.sweep_impls:
        shapes = ", ".join(shape_text(s) for s in plan.sweep_shapes)
        lines.append(f"  sweep:    {', '.join(plan.sweep_impls)}; one fresh process each; shapes {shapes}")
    else:
        lines.append("  sweep:    no")
    lines.append(f"  output:   {out} (merged per entry, written atomically after each)")
    return "\n".join(lines)


# --- statistics and entries ---------------------------------------------------------------------------


def median_of_medians(process_medians: Sequence[float]) -> float:
    """The recorded latency: the median over fresh processes of each process's median."""
    if not process_medians:
        raise ValueError("no process medians to summarise")
    return float(statistics.median(process_medians))


def median_index(values: Sequence[float]) -> int:
    """Index of the middle value (the lower middle for an even count): whose config we record."""
    order = sorted(range(len(values)), key=lambda i: values[i])
    return order[(len(values) - 1) // 2]


def tflops(shape: Shape, ms: float) -> float:
    m, n, k = shape
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def make_entry(
    name: str,
    shape: Shape,
    runs: Sequence[dict[str, Any]],
    counters: dict[str, Any] | None,
    date: str,
    git_commit: str,
) -> dict[str, Any]:
    """One results entry from the worker rows of each process (each row: latency_ms, cublas_latency_ms, config)."""
    latencies = [float(r["latency_ms"]) for r in runs]
    latency = median_of_medians(latencies)
    entry: dict[str, Any] = {"latency_ms": latency, "tflops": tflops(shape, latency)}
    if name == CUBLAS:
        entry["fraction_of_cublas"] = 1.0
    else:
        cublas = median_of_medians([float(r["cublas_latency_ms"]) for r in runs])
        entry["fraction_of_cublas"] = cublas / latency
        entry["cublas_latency_ms"] = cublas
    entry["process_latencies_ms"] = latencies
    entry["config"] = dict(runs[median_index(latencies)].get("config") or {})
    entry["counters"] = counters
    entry["date"] = date
    entry["git_commit"] = git_commit
    entry["technique"] = runs[0].get("technique") or (CUBLAS_TECHNIQUE if name == CUBLAS else name)
    return entry


def sweep_row(impl: str, row: dict[str, Any], date: str) -> dict[str, Any]:
    shape = (int(row["m"]), int(row["n"]), int(row["k"]))
    latency = float(row["latency_ms"])
    return {
        "impl": impl,
        "m": shape[0],
        "n": shape[1],
        "k": shape[2],
        "latency_ms": latency,
        "tflops": tflops(shape, latency),
        "date": date,
        "config": dict(row.get("config") or {}),
    }


# --- the machine: GPU, clocks, software, git ---------------------------------------------------------


@dataclass(frozen=True)
class Gpu:
    name: str
    sm_count: int
    capability: str
    memory_gb: float
    smi_id: str | None  # what nvidia-smi -i accepts for this device (its UUID)


def probe_hopper() -> Gpu:
    """The Hopper GPU the workers will use (CUDA device 0), or BenchmarkError saying what is there instead."""
    try:
        import torch
    except ImportError:
        raise BenchmarkError(
            "torch is not installed; install the kernel dependencies: pip install -e '.[kernels]'"
        ) from None
    if not torch.cuda.is_available():
        raise BenchmarkError(
            "no CUDA GPU is visible (torch.cuda.is_available() is False): "
            "the benchmark needs an NVIDIA Hopper GPU (H100/H200, sm_90)"
        )
    major, minor = torch.cuda.get_device_capability(0)
    name = torch.cuda.get_device_name(0)
    if (major, minor) != (9, 0):
        raise BenchmarkError(
            f"{name} is sm_{major}{minor}; the kernels use WGMMA and TMA and need a Hopper GPU (sm_90)"
        )
    props = torch.cuda.get_device_properties(0)
    uuid = str(getattr(props, "uuid", "") or "")
    smi_id = (uuid if uuid.startswith("GPU-") else f"GPU-{uuid}") if uuid else None
    return Gpu(name, props.multi_processor_count, f"{major}.{minor}", round(props.total_memory / 2**30, 1), smi_id)


def nvidia_smi(fields: str, smi_id: str | None) -> list[str] | None:
    """One CSV line of `nvidia-smi --query-gpu` for the device, split; None when nvidia-smi is absent or fails."""
    exe = shutil.which("nvidia-smi")
    if exe is None:
        return None
    for device in ([smi_id] if smi_id else []) + [None]:
        cmd = [exe, f"--query-gpu={fields}", "--format=csv,noheader,nounits"] + (["-i", device] if device else [])
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if proc.returncode == 0 and proc.stdout.strip():
            return [v.strip() for v in proc.stdout.strip().splitlines()[0].split(",")]
    return None


def _int_or_none(text: str | None) -> int | None:
    try:
        return int(float(text)) if text is not None else None
    except ValueError:  # "[N/A]"
        return None


class ClockSampler:
    """Samples the SM clock with nvidia-smi once a second while the benchmark runs."""

    def __init__(self, smi_id: str | None, interval_s: float = 1.0) -> None:
        self._smi_id = smi_id
        self._interval_s = interval_s
        self._seen: list[int] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="clock-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            row = nvidia_smi("clocks.sm", self._smi_id)
            if row is None:
                return  # no nvidia-smi: record no clocks rather than guess
            mhz = _int_or_none(row[0])
            if mhz:
                self._seen.append(mhz)
            self._stop.wait(self._interval_s)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=60)

    def seen_range(self) -> list[int]:
        """[lowest, highest] SM clock seen so far in MHz, or [] if none was read."""
        seen = list(self._seen)
        return [min(seen), max(seen)] if seen else []


def gpu_record(gpu: Gpu, sm_seen: list[int]) -> dict[str, Any]:
    row = nvidia_smi("driver_version,clocks.max.sm,clocks.max.mem", gpu.smi_id) or []
    driver, sm_max, mem_max = (row + [None, None, None])[:3]
    peak, source = PUBLISHED_PEAKS.get(gpu.name, (None, None))
    return {
        "name": gpu.name,
        "sm_count": gpu.sm_count,
        "compute_capability": gpu.capability,
        "memory_gb": gpu.memory_gb,
        "driver": driver or "unknown",
        "clocks_mhz": {"sm_max": _int_or_none(sm_max), "mem_max": _int_or_none(mem_max), "sm_seen_during_run": sm_seen},
        "published_dense_fp16_tflops": peak,
        "published_source": source,
    }


def software_record() -> dict[str, str]:
    import torch

    def version(package: str) -> str:
        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            return "not installed"

    return {
        "cuda": torch.version.cuda or "none",
        "torch": torch.__version__,
        "tilus": version("tilus"),
        "python": platform.python_version(),
    }


def git_commit(root: Path = ROOT) -> str:
    """Short HEAD commit, with "-dirty" if the kernel sources differ from it; "unknown" without git."""

    def git(*args: str) -> subprocess.CompletedProcess[str] | None:
        try:
            return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return None

    head = git("rev-parse", "--short", "HEAD")
    if head is None or head.returncode != 0 or not head.stdout.strip():
        return "unknown"
    status = git("status", "--porcelain", "--", "examples/hopper_matmul")
    dirty = status is not None and status.returncode == 0 and status.stdout.strip() != ""
    return head.stdout.strip() + ("-dirty" if dirty else "")


def utc_date() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")


# --- worker processes -----------------------------------------------------------------------------------


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def worker_command(plan: Plan, impl: str, shapes: Sequence[Shape], tag: str, *, with_cublas: bool) -> list[str]:
    cmd = [sys.executable, str(Path(__file__).resolve()), "--worker", "--impl", impl]
    cmd += ["--shapes", ",".join(shape_text(s) for s in shapes), "--tag", tag]
    cmd += ["--warmup", str(plan.warmup), "--repeats", str(plan.repeats), "--kernel-dir", str(plan.kernel_dir)]
    return cmd + (["--with-cublas"] if with_cublas else [])


def parse_worker_output(stdout: str) -> dict[str, Any] | None:
    """The worker's result line, if it printed one; other stdout lines are echoed to stderr."""
    found = None
    for line in stdout.splitlines():
        if line.startswith(RESULT_PREFIX):
            found = json.loads(line[len(RESULT_PREFIX) :])
        elif line.strip():
            print(line, file=sys.stderr)
    return found


def run_worker(cmd: Sequence[str], timeout_s: float) -> dict[str, Any]:
    """Run one fresh worker process; its stderr (tuning progress) streams to ours."""
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    # Its own process group, so that a timeout or Ctrl-C also ends what it started (Tilus's nvcc jobs, ncu's target).
    proc = subprocess.Popen(list(cmd), stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)
    try:
        stdout, _ = proc.communicate(timeout=timeout_s)
    except BaseException as exc:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        if isinstance(exc, subprocess.TimeoutExpired):
            raise WorkerError(
                f"no result after {timeout_s:.0f} s (killed); if it was still tuning, raise --timeout"
            ) from exc
        raise
    payload = parse_worker_output(stdout)
    if payload is None:
        raise WorkerError(f"worker exited with code {proc.returncode} and printed no result (see its output above)")
    if payload.get("error"):
        raise WorkerError(payload["error"])
    if proc.returncode not in (0, WRONG_RESULT_EXIT):  # wrong results are reported per row in the payload
        raise WorkerError(f"worker exited with code {proc.returncode}")
    return payload


# --- Nsight Compute ------------------------------------------------------------------------------------------


def ncu_metric_names() -> list[str]:
    return [metric for group in NCU_METRICS.values() for metric in group]


def find_ncu() -> str | None:
    found = shutil.which("ncu")
    if found:
        return found
    for candidate in sorted(Path("/usr/local").glob("cuda*/bin/ncu")):
        return str(candidate)
    return None


def available_ncu_metrics(ncu: str) -> list[str]:
    """The metrics of NCU_METRICS that this ncu knows for this GPU (all of them if the query fails)."""
    wanted = ncu_metric_names()
    try:
        proc = subprocess.run([ncu, "--query-metrics"], capture_output=True, text=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return wanted
    if proc.returncode != 0:
        return wanted
    known = set(re.findall(r"[a-z0-9_]+__[a-z0-9_]+", proc.stdout))
    return [metric for metric in wanted if metric.split(".")[0] in known]


def parse_ncu_csv(text: str, metrics: Sequence[str]) -> dict[str, float]:
    """Metric values of the first profiled kernel in `ncu --csv --page raw` output."""
    lines = text.splitlines()
    # The header row is the first CSV row naming a metric (ncu's own "==PROF==" lines come before it).
    start = next((i for i, line in enumerate(lines) if line.startswith('"') and any(m in line for m in metrics)), None)
    if start is None:
        return {}
    rows = list(csv.reader(lines[start:]))
    header, data = rows[0], [row for row in rows[1:] if row and row[0].strip().isdigit()]
    if not data:
        return {}
    values: dict[str, float] = {}
    for column, cell in zip(header, data[0], strict=False):
        if column in metrics:
            try:
                values[column] = float(cell.replace(",", ""))
            except ValueError:
                continue
    return values


def counters_from_metrics(values: dict[str, float]) -> dict[str, Any] | None:
    """The results file's counters from raw ncu values; None when ncu gave nothing."""
    counters: dict[str, Any] = {}
    for counter, metrics in NCU_METRICS.items():
        found = [values[m] for m in metrics if m in values]
        counters[counter] = max(found) if found else None
    if all(v is None for v in counters.values()):
        return None
    counters["ncu_metrics"] = dict(values)
    return counters


def profile_counters(plan: Plan, ncu: str, metrics: Sequence[str], impl: str) -> dict[str, Any] | None:
    """One launch of `impl` at the benchmark shape under ncu (clocks not locked); None on any failure."""
    tag = f"{impl} ncu"
    progress(f"[{tag}] profiling one launch: {', '.join(metrics)}")
    with tempfile.TemporaryDirectory(prefix="bench-ncu-") as tmp:
        log = Path(tmp) / "ncu.csv"
        cmd = [ncu, "--clock-control", "none", "--profile-from-start", "off", "--launch-count", "1"]
        cmd += ["--metrics", ",".join(metrics), "--csv", "--page", "raw", "--log-file", str(log)]
        cmd += worker_command(plan, impl, [plan.shape], tag, with_cublas=False) + ["--profile"]
        try:
            run_worker(cmd, plan.timeout_s)
        except WorkerError as exc:
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            progress(f"[{tag}] ncu run failed, counters recorded as null: {exc}\n{tail}")
            return None
        text = log.read_text(errors="replace") if log.exists() else ""
    counters = counters_from_metrics(parse_ncu_csv(text, metrics))
    if counters is None:
        progress(f"[{tag}] ncu reported none of the metrics; counters recorded as null\n{text[-2000:]}")
    return counters


# --- the parent: run the plan --------------------------------------------------------------------------------


@dataclass
class Run:
    """State shared by the steps of one benchmark run."""

    plan: Plan
    gpu: Gpu
    out: Path
    data: dict[str, Any] | None
    sampler: ClockSampler
    date: str
    commit: str
    ncu: str | None
    ncu_metrics: list[str]
    failures: list[str]

    def document(self, entries: dict[str, Any], sweep: list[dict[str, Any]]) -> dict[str, Any]:
        m, n, k = self.plan.shape
        return {
            "schema": results.SCHEMA_VERSION,
            "gpu": gpu_record(self.gpu, self.sampler.seen_range()),
            "software": software_record(),
            "method": {
                "timer": TIMER,
                "warmup": self.plan.warmup,
                "repeats": self.plan.repeats,
                "processes": self.plan.processes,
                "statistic": f"median over {self.plan.processes} fresh processes of the per-process median",
                "l2_flush": L2_FLUSH,
                "check": "every element against a float64 reference at the timed shape, C poisoned with NaN",
                "sweep_statistic": "median of one fresh process per implementation",
            },
            "problem": {"m": m, "n": n, "k": k, "dtype": "float16", "accumulate": "float32"},
            "entries": entries,
            "sweep": sweep,
        }

    def record(self, entries: dict[str, Any], sweep: list[dict[str, Any]]) -> None:
        """Merge what was just measured into the file and write it atomically."""
        merged = results.merge(self.data, self.document(entries, sweep))
        results.write_atomic(self.out, merged)
        self.data = merged
        progress(f"wrote {self.out}")


def measure_entry(run: Run, name: str) -> None:
    plan = run.plan
    rows: list[dict[str, Any]] = []
    for i in range(plan.processes):
        tag = f"{name} {i + 1}/{plan.processes}"
        progress(f"[{tag}] starting a fresh process")
        cmd = worker_command(plan, name, [plan.shape], tag, with_cublas=name != CUBLAS)
        try:
            payload = run_worker(cmd, plan.timeout_s)
        except WorkerError as exc:
            progress(f"[{tag}] FAILED: {exc}; {name} is not recorded")
            run.failures.append(name)
            return
        row = dict(payload["rows"][0], technique=payload.get("technique"))
        if row.get("error"):
            progress(f"[{tag}] FAILED: {row['error']}; {name} is not recorded")
            run.failures.append(name)
            return
        rows.append(row)
    counters = profile_counters(plan, run.ncu, run.ncu_metrics, name) if run.ncu else None
    run.record({name: make_entry(name, plan.shape, rows, counters, run.date, run.commit)}, [])


def measure_sweep(run: Run, impl: str) -> None:
    plan = run.plan
    tag = f"sweep {impl}"
    progress(f"[{tag}] starting a fresh process for {len(plan.sweep_shapes)} shapes")
    try:
        payload = run_worker(worker_command(plan, impl, plan.sweep_shapes, tag, with_cublas=False), plan.timeout_s)
    except WorkerError as exc:
        progress(f"[{tag}] FAILED: {exc}")
        run.failures.append(tag)
        return
    good = []
    for row in payload["rows"]:
        if row.get("error"):
            progress(f"[{tag}] {row['m']}x{row['n']}x{row['k']} FAILED: {row['error']}")
            run.failures.append(f"{tag} {row['m']}x{row['n']}x{row['k']}")
        else:
            good.append(sweep_row(impl, row, run.date))
    if good:
        run.record({}, good)


def format_table(data: dict[str, Any], sweep_impls: Sequence[str] = ()) -> str:
    """The entries (and the sweep rows of the given implementations) as a plain-text table."""
    lines = [f"{'entry':<8} {'ms':>8} {'TFLOPS':>8} {'% cuBLAS':>9}  config"]
    names = results.versions(data) + ([CUBLAS] if CUBLAS in data.get("entries", {}) else [])
    for name in names:
        e = data["entries"][name]
        config = " ".join(f"{k}={v}" for k, v in e["config"].items())
        pct = 100.0 * e["fraction_of_cublas"]
        lines.append(f"{name:<8} {e['latency_ms']:>8.3f} {e['tflops']:>8.1f} {pct:>8.1f}%  {config}")
    rows = [r for r in data.get("sweep", []) if r["impl"] in sweep_impls]
    if rows:
        lines += ["", f"{'sweep impl':<28} {'shape':<18} {'ms':>8} {'TFLOPS':>8}"]
        for r in rows:
            shape = f"{r['m']}x{r['n']}x{r['k']}"
            lines.append(f"{r['impl']:<28} {shape:<18} {r['latency_ms']:>8.3f} {r['tflops']:>8.1f}")
    return "\n".join(lines)


def run_plan(plan: Plan) -> int:
    gpu = probe_hopper()
    out = plan.out if plan.out is not None else results.default_path(gpu.name)
    try:
        existing = results.load(out) if out.exists() else None
    except results.ResultsError as exc:
        raise BenchmarkError(f"{exc}\n(the file was left as it is; fix or remove it, then rerun)") from exc
    ncu = find_ncu() if plan.ncu else None
    if plan.ncu and ncu is None:
        progress("ncu not found: counters will be recorded as null (pass --no-ncu to silence this)")
    metrics = available_ncu_metrics(ncu) if ncu else []
    if ncu and not metrics:
        progress(f"this ncu knows none of {', '.join(ncu_metric_names())}: counters will be null")
        ncu = None
    sampler = ClockSampler(gpu.smi_id)
    run = Run(plan, gpu, out, existing, sampler, utc_date(), plan.git_commit or git_commit(), ncu, metrics, [])
    try:  # a file for another GPU or another problem size cannot take these results: say so before measuring
        results.merge(existing, run.document({}, []))
    except results.ResultsError as exc:
        raise BenchmarkError(f"{out}: {exc}") from exc
    progress(f"benchmarking on {gpu.name} ({gpu.sm_count} SMs); results go to {out}")
    sampler.start()
    try:
        for name in (*plan.versions, *((CUBLAS,) if plan.cublas else ())):
            measure_entry(run, name)
        for impl in plan.sweep_impls:
            measure_sweep(run, impl)
    finally:
        sampler.stop()
    if run.data is not None:
        print(format_table(run.data, plan.sweep_impls))
    if run.failures:
        progress(f"not recorded: {', '.join(run.failures)}")
        return 1
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        return worker_main(argv[1:])
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse has printed the usage and the error (or --help)
        return int(exc.code or 0)
    try:
        plan = make_plan(args)
    except UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"benchmark.py: error: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        print(describe_plan(plan))
        return 0
    try:
        return run_plan(plan)
    except BenchmarkError as exc:
        print(f"benchmark.py: {exc}", file=sys.stderr)
        target = plan.out if plan.out is not None else results.results_dir()
        print(f"benchmark.py: nothing was measured; {target} is unchanged", file=sys.stderr)
        return 1


# --- inside a worker process --------------------------------------------------------------------------------


@dataclass
class Impl:
    """One implementation as the worker drives it."""

    kernel: Callable[..., Any]  # kernel(m, n, k, a, b, c): the form common.check and common.matmul call
    timed: Callable[[Any, Any, Any], Any]  # timed(a, b, c): exactly what is timed
    config: Callable[[], dict[str, Any]]
    technique: str
    ours: bool = True  # a wrong result stops our kernels; for the references (cuBLAS, torch.compile) it is a warning


def make_impl(name: str, kernel_dir: Path) -> Impl:
    import torch

    import common

    if name == CUBLAS:

        def cublas(m: int, n: int, k: int, a: Any, b: Any, c: Any) -> None:
            torch.matmul(a, b.T, out=c)

        return Impl(cublas, lambda a, b, c: torch.matmul(a, b.T, out=c), dict, CUBLAS_TECHNIQUE, ours=False)
    if name == TORCH_COMPILE:
        compiled: dict[tuple[int, ...], Callable[..., Any]] = {}

        def compiled_for(a: Any, b: Any) -> Callable[..., Any]:
            key = (*a.shape, b.shape[0])
            if key not in compiled:
                torch._dynamo.reset()  # a fresh compile (and autotune) per shape, no recompile limit
                compiled[key] = torch.compile(lambda x, y: x @ y.T, mode=TORCH_COMPILE_MODE, dynamic=False)
            return compiled[key]

        def peer(m: int, n: int, k: int, a: Any, b: Any, c: Any) -> None:
            c.copy_(compiled_for(a, b)(a, b))

        # Timed without the copy into C: the compiled function returns its own output tensor.
        return Impl(peer, lambda a, b, c: compiled_for(a, b)(a, b), dict, TORCH_COMPILE_TECHNIQUE, ours=False)
    cls = load_kernel_class(name, kernel_dir)
    kernel = cls()

    def launch(a: Any, b: Any, c: Any) -> None:
        kernel(c.shape[0], c.shape[1], a.shape[1], a, b, c)

    return Impl(kernel, launch, lambda: common.tuned_config(kernel), technique_of(cls))


def measure_shape(impl: Impl, shape: Shape, tag: str, warmup: int, repeats: int, with_cublas: bool) -> dict[str, Any]:
    import torch

    import common

    m, n, k = shape
    a, b = common.random_operands(m, n, k)
    c = torch.empty(m, n, dtype=torch.float16, device="cuda")
    progress(f"[{tag}] {shape_text(shape)}: first call (build + autotune; Tilus shows its tuning progress) ...")
    started = time.perf_counter()
    common.matmul(impl.kernel, a, b, out=c)
    torch.cuda.synchronize()
    first_call_s = time.perf_counter() - started
    config = impl.config()
    progress(f"[{tag}] {shape_text(shape)}: first call took {first_call_s:.1f} s; config {config}; checking ...")
    check = common.check(impl.kernel, m, n, k)
    verdict = f"{check.bad} of {m * n} elements outside tolerance (max |err| {check.max_abs_err:.3g})"
    if not check.ok and impl.ours:
        return {"m": m, "n": n, "k": k, "error": f"wrong result at {shape_text(shape)}: {verdict}; not timed"}
    if not check.ok:
        progress(f"[{tag}] WARNING: the reference {impl.technique} has {verdict} at {shape_text(shape)}")
    else:
        progress(f"[{tag}] {shape_text(shape)}: correct (max |err| {check.max_abs_err:.2e}); timing ...")
    latency = common.time_ms(lambda: impl.timed(a, b, c), warmup=warmup, repeats=repeats)
    row: dict[str, Any] = {"m": m, "n": n, "k": k, "latency_ms": latency, "config": config}
    row["first_call_s"] = first_call_s
    row["max_abs_err"] = check.max_abs_err
    row["check_ok"] = check.ok
    summary = f"{latency:.3f} ms, {tflops(shape, latency):.1f} TFLOPS"
    if with_cublas:
        row["cublas_latency_ms"] = common.time_ms(lambda: torch.matmul(a, b.T, out=c), warmup=warmup, repeats=repeats)
        summary += f"; cuBLAS {row['cublas_latency_ms']:.3f} ms in the same process"
    progress(f"[{tag}] {shape_text(shape)}: {summary}")
    return row


def profile_once(impl: Impl, shape: Shape, tag: str) -> None:
    """Build (tuned configs come from the Tilus cache), then one launch between cudaProfilerStart/Stop for ncu."""
    import torch

    import common

    m, n, k = shape
    a, b = common.random_operands(m, n, k)
    c = torch.empty(m, n, dtype=torch.float16, device="cuda")
    common.matmul(impl.kernel, a, b, out=c)  # any tuning launches happen here, outside the profiled range
    impl.timed(a, b, c)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    impl.timed(a, b, c)
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    progress(f"[{tag}] profiled one launch at {shape_text(shape)}")


def parse_shapes(text: str) -> list[Shape]:
    shapes = []
    for item in text.split(","):
        dims = tuple(int(d) for d in item.lower().split("x"))
        if len(dims) != 3 or min(dims) < 1:
            raise ValueError(f"bad shape {item!r}: expected MxNxK")
        shapes.append((dims[0], dims[1], dims[2]))
    return shapes


def worker_main(argv: Sequence[str]) -> int:
    """Hidden --worker mode: measure one implementation, print one result line on stdout."""
    parser = argparse.ArgumentParser(prog="benchmark.py --worker")
    parser.add_argument("--impl", required=True)
    parser.add_argument("--shapes", type=parse_shapes, required=True)
    parser.add_argument("--tag", default="worker")
    parser.add_argument("--warmup", type=_non_negative_int, default=DEFAULT_WARMUP)
    parser.add_argument("--repeats", type=_positive_int, default=DEFAULT_REPEATS)
    parser.add_argument("--kernel-dir", type=Path, default=HERE)
    parser.add_argument("--with-cublas", action="store_true")
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args(argv)
    payload: dict[str, Any] = {"impl": args.impl, "rows": []}
    code = 0
    # stdout carries only the result line; anything the libraries print goes to stderr with the progress.
    with contextlib.redirect_stdout(sys.stderr):
        try:
            impl = make_impl(args.impl, args.kernel_dir)
            payload["technique"] = impl.technique
            if args.profile:
                profile_once(impl, args.shapes[0], args.tag)
            else:
                for shape in args.shapes:
                    row = measure_shape(impl, shape, args.tag, args.warmup, args.repeats, args.with_cublas)
                    payload["rows"].append(row)
                    if row.get("error"):
                        progress(f"[{args.tag}] {row['error']}")
                        code = WRONG_RESULT_EXIT
        except Exception as exc:  # report any failure to the parent as a result, with the traceback here
            traceback.print_exc()
            payload["error"] = f"{type(exc).__name__}: {exc}"
            code = 1
    print(RESULT_PREFIX + json.dumps(payload), flush=True)
    return code


if __name__ == "__main__":
    sys.exit(main())
