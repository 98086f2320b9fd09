"""The command line and the plan: which runs (implementations at one shape) to time, how, and for how long.

Torch-free: a plan is made, checked and estimated (``--dry-run``) on any machine. Bad usage raises
:class:`UsageError` before anything runs; the command line turns it into exit status 2.
"""

from __future__ import annotations

import argparse
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from matmul_bench import kernels
from matmul_data import paths, versions

Shape = tuple[int, int, int]

KERNEL_DIR = paths.KERNEL_DIR
STEPS_FILE = paths.ROOT / "experiments" / "steps.py"
QUICK_DIR = paths.BUILD_DIR / "quick"

BENCH_SHAPE: Shape = (8192, 8192, 8192)  # common.BENCH_SHAPE, repeated here so that planning needs no torch
CUBLAS, TORCH_COMPILE = versions.CUBLAS, versions.TORCH_COMPILE
TRITON, QUACK, QUACK_AUTOTUNED = versions.TRITON, versions.QUACK, versions.QUACK_AUTOTUNED
# max-autotune's GEMM template search without CUDA graphs: a graph replay copies inputs it did not allocate.
TORCH_COMPILE_MODE = "max-autotune-no-cudagraphs"
# The Triton row: the same mode, with GEMM autotuning among Inductor's Triton templates only (no ATen choice,
# so never cuBLAS again) and its persistent TMA templates among them (torch._inductor.config names).
TRITON_INDUCTOR_CONFIG: dict[str, Any] = {
    "max_autotune_gemm_backends": "TRITON",
    "triton.enable_persistent_tma_matmul": True,
}
# Peers that are optional extras (pip install -e ".[peers]"), by kind, with the package that provides each:
# one that cannot run on a machine is recorded in its run's peers_missing, and the run goes on without it.
PEER_PACKAGES: dict[str, str] = {"triton": "triton", "quack": "quack-kernels"}
SWEEP_LAST = 3  # the sweep times the last three versions
# Square sizes from one that leaves SMs idle to one with 8x the work of 8192^3, and two LLM-shaped ones:
# a wide MLP projection (N = 28672) and a short-K one (K = 1024) where the epilogue weighs most.
SWEEP_SHAPES: tuple[Shape, ...] = (
    (2048, 2048, 2048),
    (4096, 4096, 4096),
    (6144, 6144, 6144),
    (8192, 8192, 8192),
    (16384, 16384, 16384),
    (8192, 28672, 4096),
    (16384, 8192, 1024),
)
QUICK_SWEEP_SHAPES: tuple[Shape, ...] = ((4096, 4096, 4096), (8192, 14336, 4096))


@dataclass(frozen=True)
class Settings:
    """How each process times: ``rounds`` rounds of ``warmup`` + ``repeats`` calls per implementation."""

    processes: int = 3
    rounds: int = 10
    repeats: int = 30
    warmup: int = 5


DEFAULT = Settings()
QUICK = Settings(processes=2, rounds=4, repeats=20, warmup=3)

# The cost model behind the printed estimate (seconds; H200, measured 2026-11-30, rounded up).
START_S = 20.0  # a fresh worker: import torch and Tilus, load the cached kernels
BUILD_S = 15.0  # nvcc for one configuration at one (N, K)
TORCH_COMPILE_S = 25.0  # max-autotune's template search at one shape, per process (8-31 s seen; cached later)
# Not measured yet, guesses to replace from the first record with --peers: QuACK's CuTe-DSL JIT of one
# configuration, and its autotuner compiling and timing every Hopper configuration (cached on disk later).
QUACK_S = 15.0
QUACK_AUTOTUNE_S = 90.0
NCU_S = 30.0  # one profiled launch in its own process
SUSTAINED_TFLOPS = 550.0


class UsageError(Exception):
    """A bad command line or spec: reported with exit status 2 before anything runs."""


@dataclass(frozen=True)
class ImplSpec:
    """One implementation as a worker builds it; ``config`` None lets Tilus autotune."""

    name: str
    kind: str  # "kernel", "cublas", "torch-compile", or an optional peer's (PEER_PACKAGES): "triton", "quack"
    title: str
    file: str | None = None
    cls: str | None = None
    config: dict[str, Any] | None = None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "kind": self.kind, "title": self.title, "file": self.file, "cls": self.cls,
                "config": self.config}  # fmt: skip


@dataclass(frozen=True)
class RunSpec:
    """One interleaved run: implementations at one shape (cuBLAS always among them)."""

    section: str  # "ladder", "sweep" or "steps"
    name: str
    shape: Shape
    impls: tuple[ImplSpec, ...]
    step_over: dict[str, str] = field(default_factory=dict)  # impl -> the row its step ratio is paired with
    check_shapes: tuple[Shape, ...] = ()  # checked before timing, besides the timed shape
    after: str | None = None  # steps only
    title: str | None = None  # steps only
    kept: dict[str, bool] = field(default_factory=dict)  # steps only
    profile: bool = False  # whether --ncu profiles its rows (the ladder always; a steps run if it asks)

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "shape": list(self.shape), "impls": [i.to_json() for i in self.impls],
                "check_shapes": [list(s) for s in (self.shape, *self.check_shapes)]}  # fmt: skip


@dataclass(frozen=True)
class Plan:
    runs: tuple[RunSpec, ...]
    settings: Settings
    ncu: bool
    autotune: bool
    quick: bool
    out: Path | None  # None: plots/results/<gpu>.json (build/quick/<gpu>.json with --quick)
    timeout_s: float
    git_commit: str | None
    backend: str  # "cuda"; "fake" for the CPU tests of the protocol
    build_jobs: int
    fake_fail_check: str | None = None
    fake_missing_peers: tuple[str, ...] = ()  # peers the fake backend says cannot run

    def sections(self) -> list[str]:
        return [s for s in ("ladder", "sweep", "steps") if any(r.section == s for r in self.runs)]

    def section_runs(self, section: str) -> list[RunSpec]:
        return [r for r in self.runs if r.section == section]


def shape_text(shape: Shape) -> str:
    return "x".join(str(d) for d in shape)


def parse_shapes(text: str) -> tuple[Shape, ...]:
    shapes = []
    for item in text.split(","):
        try:
            dims = tuple(int(d) for d in item.strip().lower().split("x"))
        except ValueError:
            dims = ()
        if len(dims) != 3 or min(dims) < 1:
            raise UsageError(f"bad shape {item.strip()!r}: expected MxNxK with positive integers, e.g. 4096x4096x4096")
        if dims[2] % 8:
            raise UsageError(f"shape {item.strip()}: K must be a multiple of 8 (TMA needs 16-byte rows)")
        shapes.append((dims[0], dims[1], dims[2]))
    return tuple(shapes)


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m matmul_bench record",
        description="Time the kernel versions against cuBLAS on a Hopper GPU, interleaved in rounds in a few fresh "
        "processes, and record plots/results/<gpu>.json. With no section given: --ladder --sweep --ncu.",
    )
    parser.add_argument("--ladder", action="store_true", help="every version and cuBLAS at 8192^3, one run")
    parser.add_argument(
        "--sweep", action="store_true", help=f"the last {SWEEP_LAST} versions and cuBLAS at several shapes"
    )
    parser.add_argument("--versions", metavar="vN,...", help="a partial ladder of these versions (needs --out)")
    parser.add_argument("--steps", metavar="NAMES", help='runs of experiments/steps.py to time ("all" or a,b)')
    parser.add_argument("--ncu", action="store_true", help="Nsight Compute counters for the ladder (needs --ladder)")
    parser.add_argument("--torch-compile", action="store_true", help="add torch.compile to the sweep (slow)")
    parser.add_argument(
        "--peers",
        action="store_true",
        help="add the peers to the sweep: Triton's GEMM templates (torch.compile) and QuACK, default and autotuned "
        '(pip install -e ".[peers]"; a peer that cannot run here is recorded as missing, with its error)',
    )
    parser.add_argument("--sweep-shapes", metavar="MxNxK,...", help="shapes of the sweep")
    parser.add_argument("--quick", action="store_true", help="a smoke run in under 10 minutes (see --dry-run)")
    parser.add_argument("--autotune", action="store_true", help="let Tilus pick configs (sequential builds)")
    parser.add_argument(
        "--processes", type=_count, help=f"fresh worker processes per run (default {DEFAULT.processes})"
    )
    parser.add_argument("--rounds", type=_count, help=f"interleaved rounds per process (default {DEFAULT.rounds})")
    parser.add_argument("--repeats", type=_count, help=f"timed calls per impl per round (default {DEFAULT.repeats})")
    parser.add_argument("--warmup", type=int, help=f"untimed calls before them (default {DEFAULT.warmup})")
    parser.add_argument("--out", type=Path, metavar="FILE", help="results file (default plots/results/<gpu>.json)")
    parser.add_argument("--timeout", type=_count, default=1800, help="seconds per worker process (default 1800)")
    parser.add_argument("--build-jobs", type=_count, default=8, help="kernels built in parallel (default 8)")
    parser.add_argument("--git-commit", help="record this commit instead of asking git")
    parser.add_argument("--dry-run", action="store_true", help="print the plan and its estimated duration; exit")
    parser.add_argument(
        "--steps-file", type=Path, default=STEPS_FILE,
        help="the spec --steps reads (default experiments/steps.py; the Try it runs: experiments/tryit.py)",
    )  # fmt: skip
    parser.add_argument("--backend", choices=("cuda", "fake"), default="cuda", help=argparse.SUPPRESS)
    parser.add_argument("--fake-fail-check", help=argparse.SUPPRESS)
    parser.add_argument("--fake-missing-peer", action="append", default=[], help=argparse.SUPPRESS)
    return parser


def version_spec(version: versions.Version, autotune: bool) -> ImplSpec:
    config = None if autotune else version.fixed_config  # None: Tilus's autotuner, or the file's config_for
    return ImplSpec(version.name, "kernel", version.title, str(version.path), version.class_name, config)


PEER_SPECS = {
    CUBLAS: ImplSpec(CUBLAS, "cublas", "cuBLAS via torch.matmul", config={}),
    TORCH_COMPILE: ImplSpec(TORCH_COMPILE, "torch-compile", f'torch.compile(mode="{TORCH_COMPILE_MODE}")', config={}),
    TRITON: ImplSpec(TRITON, "triton", f'torch.compile(mode="{TORCH_COMPILE_MODE}"), Triton GEMM templates only',
                     config={"mode": TORCH_COMPILE_MODE, "inductor": dict(TRITON_INDUCTOR_CONFIG)}),
    QUACK: ImplSpec(QUACK, "quack", "QuACK gemm(A, B.T, tuned=False): its default configuration",
                    config={"tuned": False}),
    QUACK_AUTOTUNED: ImplSpec(QUACK_AUTOTUNED, "quack", "QuACK gemm(A, B.T, tuned=True): autotuned at each shape",
                              config={"tuned": True}),
}  # fmt: skip
OPTIONAL_PEERS = (TRITON, QUACK, QUACK_AUTOTUNED)  # what --peers adds to the sweep, in this order


def ladder_run(autotune: bool, kernel_dir: Path = KERNEL_DIR, only: tuple[str, ...] = ()) -> RunSpec:
    found = versions.all_versions(kernel_dir)
    if not found:
        raise UsageError(f"no matmul_v<N>.py in {kernel_dir}: nothing to put in the ladder")
    unknown = sorted(set(only) - {v.name for v in found})
    if unknown:
        raise UsageError(f"--versions: unknown {', '.join(unknown)} (known: {', '.join(v.name for v in found)})")
    found = tuple(v for v in found if not only or v.name in only)
    impls = tuple(version_spec(v, autotune) for v in found) + (PEER_SPECS[CUBLAS],)
    step_over = {later.name: earlier.name for earlier, later in zip(found, found[1:], strict=False)}
    return RunSpec("ladder", "ladder", BENCH_SHAPE, impls, step_over, profile=True)


def sweep_runs(shapes: tuple[Shape, ...], torch_compile: bool, autotune: bool, kernel_dir: Path = KERNEL_DIR,
               peers: bool = False) -> tuple[RunSpec, ...]:  # fmt: skip
    found = list(versions.all_versions(kernel_dir)[-SWEEP_LAST:])
    impls = tuple(version_spec(v, autotune) for v in found) + (PEER_SPECS[CUBLAS],)
    impls += (PEER_SPECS[TORCH_COMPILE],) if torch_compile else ()
    impls += tuple(PEER_SPECS[name] for name in OPTIONAL_PEERS) if peers else ()
    return tuple(RunSpec("sweep", f"sweep {shape_text(s)}", s, impls) for s in shapes)


def load_steps_file(path: Path) -> dict[str, Any]:
    """The spec module (plain data: VARIANTS and RUNS), imported by path; UsageError if it cannot be read."""
    try:
        module = kernels.import_spec(path, "steps")
    except kernels.SpecError as exc:
        raise UsageError(str(exc)) from exc
    return {"VARIANTS": getattr(module, "VARIANTS", None), "RUNS": getattr(module, "RUNS", None), "dir": path.parent}


def _variant_file(name: str, base: Path, kernel_dir: Path) -> Path:
    for folder in (base, kernel_dir):
        if (folder / name).is_file():
            return (folder / name).resolve()
    raise UsageError(f"variant file {name!r} is in neither {base} nor {kernel_dir}")


def steps_runs(names: str, path: Path, kernel_dir: Path = KERNEL_DIR) -> tuple[RunSpec, ...]:
    spec = load_steps_file(path)
    variants, runs = spec["VARIANTS"], spec["RUNS"]
    if not isinstance(variants, dict) or not isinstance(runs, dict) or not runs:
        raise UsageError(f"{path} must define VARIANTS and RUNS (dicts; RUNS not empty)")
    chosen = list(runs) if names.strip().lower() == "all" else [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in runs]
    if unknown or not chosen:
        raise UsageError(f"unknown steps run(s) {', '.join(unknown) or '(none)'}; {path} defines: {', '.join(runs)}")
    out = []
    for name in chosen:
        run = runs[name]
        impls, missing = [], [v for v in run["variants"] if v not in variants]
        if missing:
            raise UsageError(f"steps run {name!r} names unknown variants: {', '.join(missing)}")
        for variant in run["variants"]:
            file, cls, config, change = variants[variant]
            impls.append(ImplSpec(variant, "kernel", change, str(_variant_file(file, spec["dir"], kernel_dir)), cls,
                                  None if config is None else dict(config)))  # fmt: skip
        baseline = run.get("baseline")
        if baseline is not None and baseline not in run["variants"]:
            raise UsageError(f"steps run {name!r}: baseline {baseline!r} is not one of its variants")
        # Each variant's step is over the baseline, or over the variant that run["over"] names for it.
        over = {v: run.get("over", {}).get(v, baseline) for v in run["variants"]}
        if any(o is not None and o not in run["variants"] for o in over.values()):
            raise UsageError(f"steps run {name!r}: every variant in 'over' must be compared with one of its variants")
        step_over = {v: o for v, o in over.items() if o and v != o}
        kept = {v: v in run.get("kept", ()) for v in run["variants"]}
        shape = tuple(run.get("shape", BENCH_SHAPE))  # a run may time another shape (e.g. a short K)
        checks = tuple((m, shape[1], shape[2]) for m in (1000, 1100))  # ragged and odd tile rows
        out.append(RunSpec("steps", name, shape, (*impls, PEER_SPECS[CUBLAS]), step_over, checks,
                           run["after"], run["title"], kept, bool(run.get("profile"))))  # fmt: skip
    return tuple(out)


def make_plan(args: argparse.Namespace) -> Plan:
    """Turn parsed arguments into a Plan; UsageError says what is wrong."""
    chosen = args.ladder or args.sweep or args.steps is not None
    ladder, sweep = (args.ladder, args.sweep) if chosen else (True, True)
    ncu = args.ncu or (not chosen and not args.quick)
    if ncu and not (ladder or args.steps is not None):
        raise UsageError(
            "--ncu profiles the rows of the ladder and of steps runs that ask for it: add --ladder or --steps"
        )
    if args.torch_compile and not sweep:
        raise UsageError("--torch-compile adds a peer to the sweep: add --sweep")
    if args.peers and not sweep:
        raise UsageError("--peers adds the peers to the sweep: add --sweep")
    if args.sweep_shapes is not None and not sweep:
        raise UsageError("--sweep-shapes needs --sweep")
    if args.warmup is not None and args.warmup < 0:
        raise UsageError(f"--warmup must be >= 0, got {args.warmup}")
    if args.out is not None and (args.out.is_dir() or args.out.suffix != ".json"):
        raise UsageError(f"--out {args.out}: give a .json file path, such as plots/results/nvidia-h200.json")
    if args.backend == "fake" and args.out is None:
        raise UsageError("--backend fake needs --out: its made-up numbers must never reach plots/results/")
    base = QUICK if args.quick else DEFAULT
    settings = Settings(
        processes=args.processes or base.processes,
        rounds=args.rounds or base.rounds,
        repeats=args.repeats or base.repeats,
        warmup=base.warmup if args.warmup is None else args.warmup,
    )
    if settings.rounds < 2 and settings.processes < 2:
        raise UsageError("one process of one round gives no interval: use --rounds 2 or more")
    shapes = (
        parse_shapes(args.sweep_shapes) if args.sweep_shapes else (QUICK_SWEEP_SHAPES if args.quick else SWEEP_SHAPES)
    )
    if len(set(shapes)) != len(shapes):
        raise UsageError(f"--sweep-shapes names a shape twice: {args.sweep_shapes}")
    only = tuple(name.strip() for name in args.versions.split(",") if name.strip()) if args.versions else ()
    if only and (not ladder or args.out is None):  # a ladder replaces the recorded one whole: never a partial one
        raise UsageError("--versions times part of the ladder: it needs --ladder and a file of its own (--out)")
    runs: tuple[RunSpec, ...] = ()
    if ladder:
        runs += (ladder_run(args.autotune, only=only),)
    if sweep:
        runs += sweep_runs(shapes, args.torch_compile, args.autotune, peers=args.peers)
    if args.steps is not None:
        runs += steps_runs(args.steps, args.steps_file)
    return Plan(runs, settings, ncu, args.autotune, args.quick, args.out, float(args.timeout), args.git_commit,
                args.backend, 1 if args.autotune else args.build_jobs, args.fake_fail_check,
                tuple(args.fake_missing_peer))  # fmt: skip


def with_configs(plan: Plan, configs: dict[tuple[str, str, str], dict[str, Any]]) -> Plan:
    """The plan with the autotuned configs, keyed (file, class, shape text), pinned for the timed processes."""

    def pin(impl: ImplSpec, shape: Shape) -> ImplSpec:
        found = configs.get((impl.file or "", impl.cls or "", shape_text(shape)))
        return replace(impl, config=found) if impl.config is None and found is not None else impl

    return replace(plan, runs=tuple(replace(r, impls=tuple(pin(i, r.shape) for i in r.impls)) for r in plan.runs))


# --- how long it takes -------------------------------------------------------------------------------


def _call_s(shape: Shape) -> float:
    m, n, k = shape
    return 2.0 * m * n * k / (SUSTAINED_TFLOPS * 1e12) + 2e-4  # plus the L2 flush and the launch


def _check_s(shape: Shape) -> float:
    m, n, k = shape
    return 0.5 + 2.0 * m * n * k / 40e12 + m * n * 4e-9  # float64 reference and the element-wise comparison


def build_keys(plan: Plan) -> set[tuple[str, str, str, int, int]]:
    """The distinct builds: (file, class, config, N, K); Tilus compiles once per (N, K) and configuration."""
    return {
        (i.file or "", i.cls or "", repr(sorted((i.config or {}).items())), s[1], s[2])
        for r in plan.runs
        for s in (r.shape, *r.check_shapes)
        for i in r.impls
        if i.kind == "kernel"
    }


def process_s(plan: Plan, runs: list[RunSpec]) -> float:
    """One timed worker process over these runs."""
    s = plan.settings
    total = START_S
    for run in runs:
        total += sum(_check_s(shape) for shape in (run.shape, *run.check_shapes)) * len(run.impls)
        total += s.rounds * len(run.impls) * (s.warmup + s.repeats) * _call_s(run.shape)
        total += TORCH_COMPILE_S * sum(i.kind in ("torch-compile", "triton") for i in run.impls)
        total += sum(QUACK_AUTOTUNE_S if (i.config or {}).get("tuned") else QUACK_S
                     for i in run.impls if i.kind == "quack")  # fmt: skip
    return total


def estimate(plan: Plan) -> list[tuple[str, float]]:
    """The steps of the plan in order, each with its estimated seconds (the runner's progress uses the same)."""
    steps = [("probe the GPU", 10.0)]
    builds = len(build_keys(plan))
    if builds:
        per_config = BUILD_S * (4 if plan.autotune else 1)  # autotuning builds and times every configuration
        steps.append((f"build and check {builds} kernel builds", math.ceil(builds / plan.build_jobs) * per_config))
    for section in plan.sections():
        runs = plan.section_runs(section)
        for p in range(plan.settings.processes):
            steps.append((f"{section}: process {p + 1}/{plan.settings.processes}", process_s(plan, runs)))
        if plan.ncu:
            steps += [(ncu_label(run, impl), NCU_S) for run in runs if run.profile for impl in run.impls]
    return steps


def ncu_label(run: RunSpec, impl: ImplSpec) -> str:
    return f"ncu {impl.name}" if run.section == "ladder" else f"ncu {run.name}: {impl.name}"


def peers_text(plan: Plan) -> str:
    """Whether the optional peers are in the plan, in words."""
    asked = [name for name in OPTIONAL_PEERS if any(i.name == name for r in plan.runs for i in r.impls)]
    if not asked:
        return "none (--peers adds Triton's templates and QuACK to the sweep)"
    return (
        f'{", ".join(asked)} (optional extras, pip install -e ".[peers]"; one that cannot run here is '
        "recorded in its run's peers_missing with its version and error, and the run goes on without it)"
    )


def format_duration(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    return f"{seconds // 60}m{seconds % 60:02d}s" if seconds >= 60 else f"{seconds}s"


def describe(plan: Plan, out: str) -> str:
    s = plan.settings
    steps = estimate(plan)
    lines = [
        f"Benchmark plan{' (--quick)' if plan.quick else ''}",
        f"  each run: {s.processes} fresh processes x {s.rounds} rounds (order alternating forward/reversed); "
        f"per impl and round {s.warmup} warm-up + {s.repeats} timed calls (CUDA events, L2 flushed), median kept",
        f"  configs: {'autotuned by Tilus (one build at a time)' if plan.autotune else 'pinned (TUNED)'}; "
        "every impl checked against float64 (NaN-poisoned C) before timing",
    ]
    for run in plan.runs:
        names = ", ".join(i.name for i in run.impls)
        lines.append(f"  {run.name:<28} {shape_text(run.shape):<18} {names}")
    lines.append(
        f"  ncu counters: {'yes, the rows of the ladder and of steps runs with profile' if plan.ncu else 'no'}"
    )
    lines.append(f"  peers: {peers_text(plan)}")
    lines.append(f"  results: {out} (merged, written atomically); raw samples: logs/<run_id>.json next to it")
    total = sum(sec for _, sec in steps)
    lines.append(f"  estimated duration: about {format_duration(total)} ({len(steps)} steps)")
    return "\n".join(lines)
