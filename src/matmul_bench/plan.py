"""The record's options and plan: which runs (implementations at one shape) to time, how, and for how long."""

from __future__ import annotations

import argparse
import math
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from matmul_bench import kernels
from matmul_data import paths, versions
from matmul_data.decoding import Config
from matmul_data.field import FIELD, FieldShape
from matmul_data.schema import SECTIONS
from matmul_data.versions import CUBLAS, QUACK, QUACK_AUTOTUNED, TRITON

Shape = tuple[int, int, int]

STEPS_FILE = kernels.SPECS_DIR / "steps.py"
QUICK_DIR = paths.BUILD_DIR / "quick"
BENCH_SHAPE: Shape = (8192, 8192, 8192)  # common.BENCH_SHAPE (a test holds them equal); planning imports no torch
TORCH_COMPILE_MODE = "max-autotune-no-cudagraphs"  # a graph replay would copy inputs it did not allocate
# The Triton row: GEMM autotuning among Inductor's Triton templates only (never cuBLAS), persistent TMA ones included.
TRITON_INDUCTOR_CONFIG: dict[str, Any] = {"max_autotune_gemm_backends": "TRITON",
                                          "triton.enable_persistent_tma_matmul": True}  # fmt: skip
PEER_PACKAGES: dict[str, str] = {"triton": "triton", "quack": "quack-kernels"}  # optional peers: kind -> package
SWEEP_LAST = 3  # the sweep times the last three versions
SWEEP_SHAPES: tuple[Shape, ...] = ((2048, 2048, 2048), (4096, 4096, 4096), (6144, 6144, 6144), (8192, 8192, 8192),
                                   (16384, 16384, 16384), (8192, 28672, 4096), (16384, 8192, 1024))  # fmt: skip
QUICK_SWEEP_SHAPES: tuple[Shape, ...] = ((4096, 4096, 4096), (8192, 14336, 4096))
FIELD_LAST = 2  # the field times the last two versions, at every shape of matmul_data.field (--quick: the first 3)
QUICK_FIELD = 3
# The cost model of the printed estimate, in seconds (H200, measured 2026-11-30, rounded up; QuACK's are guesses).
START_S, BUILD_S, NCU_S, TORCH_COMPILE_S, QUACK_S, QUACK_AUTOTUNE_S = 20.0, 15.0, 30.0, 25.0, 15.0, 90.0
SUSTAINED_TFLOPS = 550.0
BUILD_JOBS = 8  # kernels built in parallel processes
TIMEOUT_S = 1800.0  # per worker process


@dataclass(frozen=True)
class Settings:
    """How each process times: ``rounds`` rounds in which each implementation runs ``warmup_s`` seconds of its
    timed loop, then ``repeats`` timed calls.

    The warm-up is long because the H200 runs at its 700 W cap under these kernels: after a slow neighbour (or
    idle) a kernel runs up to 20% faster for its first calls, and its time settles within 1% only after 0.65-0.9 s
    of calls at 8192^3 (docs/method.rst, "Warm-up"). Replication comes from independent runs, one process each.
    """

    processes: int = 1
    rounds: int = 4
    repeats: int = 30
    warmup_s: float = 1.0


DEFAULT = Settings()
QUICK = Settings(processes=1, rounds=2, repeats=20, warmup_s=0.3)


class UsageError(Exception):
    """A bad command line or spec: reported with exit status 2 before anything runs."""


@dataclass(frozen=True)
class ImplSpec:
    """One implementation as a worker builds it; ``config`` None: the file's own (config_for, else TUNED)."""

    name: str
    kind: str  # "kernel", "cublas", or an optional peer's kind (PEER_PACKAGES)
    title: str | None = None  # None: the kernel file's TITLE, read by the worker that imports it
    file: str | None = None
    cls: str | None = None
    config: Config | None = None


@dataclass(frozen=True)
class RunSpec:
    """One interleaved run: implementations at one shape, cuBLAS always among them."""

    section: str  # "ladder", "sweep", "steps" or "field"
    name: str
    shape: Shape
    impls: tuple[ImplSpec, ...]
    step_over: dict[str, str] = field(default_factory=dict)  # impl -> the row its step ratio is paired with
    check_shapes: tuple[Shape, ...] = ()  # checked before timing, besides the timed shape
    after: str | None = None  # steps only
    title: str | None = None  # steps only
    kept: dict[str, bool] = field(default_factory=dict)  # steps only
    profile: bool = False  # whether --ncu profiles its rows (the ladder always; a steps run if it asks)
    field_info: dict[str, str] | None = None  # field only: the FieldShape's name, source, kind and half

    def to_json(self) -> dict[str, Any]:
        """Everything the runs are computed from, for the jobs and the raw-sample file."""
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunSpec:
        """The inverse of :meth:`to_json`."""
        impls, checks = tuple(ImplSpec(**i) for i in data["impls"]), tuple(map(tuple, data["check_shapes"]))
        return cls(**{**data, "shape": tuple(data["shape"]), "impls": impls, "check_shapes": checks})


@dataclass(frozen=True)
class Plan:
    """A whole invocation: its runs, settings and where the results go."""

    runs: tuple[RunSpec, ...]
    settings: Settings
    ncu: bool
    autotune: bool
    quick: bool
    out: Path | None  # None: plots/results/<gpu>.json (build/quick/<gpu>.json with --quick)
    backend: str = "cuda"  # or "module:factory", which a worker imports: the CPU tests' fake GPU (tests/fake_gpu.py)
    fake: dict[str, Any] = field(default_factory=dict)  # the fake's fail_check and missing_peers
    git_commit: str | None = None  # None: ask git

    def sections(self) -> list[str]:
        """The sections the plan times, in order."""
        return [s for s in ("ladder", *SECTIONS) if any(r.section == s for r in self.runs)]

    def section_runs(self, section: str) -> list[RunSpec]:
        """The runs of one section."""
        return [r for r in self.runs if r.section == section]


def shape_text(shape: Shape | list[int]) -> str:
    """4096x4096x4096."""
    return "x".join(str(d) for d in shape)


def build_parser(prog: str = "python -m matmul_bench record") -> argparse.ArgumentParser:
    """The options of ``record``, ``quick`` and ``plan``."""
    parser = argparse.ArgumentParser(prog=prog, description="Time the kernel versions against cuBLAS on a "
        "Hopper GPU, interleaved in rounds in fresh processes, and record plots/results/<gpu>.json. "
        "With no section given: --ladder --sweep --ncu (--field only when asked).")  # fmt: skip
    add = parser.add_argument
    add("--ladder", action="store_true", help="every version and cuBLAS at 8192^3, one run")
    add("--sweep", action="store_true", help=f"the last {SWEEP_LAST} versions and cuBLAS at several shapes")
    add("--steps", metavar="NAMES", help='runs of the steps file to time ("all" or a,b)')
    add("--steps-file", type=Path, default=STEPS_FILE, help="the spec --steps reads (default specs/steps.py)")
    add("--ncu", action="store_true", help="Nsight Compute counters for the ladder and steps runs that ask")
    add("--versions", metavar="vN,...", help="a partial ladder of these versions (needs --ladder and --out)")
    add("--field", action="store_true", help=f"the last {FIELD_LAST} versions and cuBLAS at the field set's "
        f"{len(FIELD)} shapes from real models' layers (matmul_data.field)")  # fmt: skip
    add("--peers", action="store_true",
        help='add Triton\'s templates and QuACK to the sweep and the field (pip install -e ".[peers]")')  # fmt: skip
    add("--shapes", metavar="MxNxK,...", help="only these shapes of the sweep and the field: a run too long for "
        "one sitting (--peers) recorded in parts, each merged by shape")  # fmt: skip
    add("--quick", action="store_true", help="a smoke run: fewer processes, rounds and shapes, into build/quick/")
    add("--autotune", action="store_true", help="let Tilus pick each configuration instead of the files' own")
    add("--out", type=Path, metavar="FILE", help="results file (default plots/results/<gpu>.json)")
    add("--warmup-s", type=float, metavar="S", help=f"seconds of warm-up per implementation and round (default "
        f"{DEFAULT.warmup_s:g}; --quick {QUICK.warmup_s:g}); runs of different warm-ups are not merged")  # fmt: skip
    add("--dry-run", action="store_true", help="print the plan and its estimated duration; run nothing")
    return parser


PEER_SPECS = {
    CUBLAS: ImplSpec(CUBLAS, "cublas", "cuBLAS via torch.matmul", config={}),
    TRITON: ImplSpec(TRITON, "triton", f'torch.compile(mode="{TORCH_COMPILE_MODE}"), Triton GEMM templates only',
                     config={"mode": TORCH_COMPILE_MODE, "inductor": dict(TRITON_INDUCTOR_CONFIG)}),
    QUACK: ImplSpec(QUACK, "quack", "QuACK gemm(A, B.T, tuned=False): its default configuration",
                    config={"tuned": False}),
    QUACK_AUTOTUNED: ImplSpec(QUACK_AUTOTUNED, "quack", "QuACK gemm(A, B.T, tuned=True): autotuned at each shape",
                              config={"tuned": True}),
}  # fmt: skip
OPTIONAL_PEERS = (TRITON, QUACK, QUACK_AUTOTUNED)  # what --peers adds to the sweep, in this order


def version_spec(name: str) -> ImplSpec:
    """A version as the ladder and the sweep time it: its file's own configuration."""
    version = versions.get(name)
    return ImplSpec(name, "kernel", None, str(version.path), version.class_name)


def ladder_run(only: tuple[str, ...] = ()) -> RunSpec:
    """Every version (or those in ``only``) and cuBLAS at the chapters' shape, each step over the one before."""
    names = versions.names()
    unknown = sorted(set(only) - set(names))
    if unknown:
        raise UsageError(f"--versions: unknown {', '.join(unknown)} (known: {', '.join(names)})")
    names = tuple(n for n in names if not only or n in only)
    step_over = {later: earlier for earlier, later in zip(names, names[1:], strict=False)}
    impls = (*map(version_spec, names), PEER_SPECS[CUBLAS])
    return RunSpec("ladder", "ladder", BENCH_SHAPE, impls, step_over, profile=True)


def last_versions(last: int, extra: tuple[str, ...]) -> tuple[ImplSpec, ...]:
    """The ``last`` versions, cuBLAS and the ``extra`` peers: the rotation of the sweep and the field."""
    return (*map(version_spec, versions.names()[-last:]), *(PEER_SPECS[n] for n in (CUBLAS, *extra)))


def sweep_runs(shapes: tuple[Shape, ...], extra: tuple[str, ...] = ()) -> tuple[RunSpec, ...]:
    """The last versions, cuBLAS and the ``extra`` peers at each shape."""
    impls = last_versions(SWEEP_LAST, extra)
    return tuple(RunSpec("sweep", f"sweep {shape_text(s)}", s, impls) for s in shapes)


def field_runs(shapes: tuple[FieldShape, ...] = FIELD, extra: tuple[str, ...] = ()) -> tuple[RunSpec, ...]:
    """The last two versions, cuBLAS and the ``extra`` peers at each field shape, each run labelled with it."""
    impls = last_versions(FIELD_LAST, extra)
    return tuple(RunSpec("field", f"field {f.name}", f.shape, impls, field_info={
        "name": f.name, "source": f.source, "kind": f.kind, "half": f.half}) for f in shapes)  # fmt: skip


def steps_runs(names: str, path: Path) -> tuple[RunSpec, ...]:
    """The steps runs ``names`` chooses ("all" or a,b) from the spec at ``path``; UsageError says what is wrong."""
    try:
        module = kernels.import_spec(path, "steps")
    except kernels.SpecError as exc:
        raise UsageError(str(exc)) from exc
    variants, runs = getattr(module, "VARIANTS", None), getattr(module, "RUNS", None)
    if not isinstance(variants, dict) or not isinstance(runs, dict) or not runs:
        raise UsageError(f"{path} must define VARIANTS and RUNS (dicts; RUNS not empty)")
    chosen = list(runs) if names.strip().lower() == "all" else [n.strip() for n in names.split(",") if n.strip()]
    unknown = [n for n in chosen if n not in runs]
    if unknown or not chosen:
        raise UsageError(f"unknown steps run(s) {', '.join(unknown) or '(none)'}; {path} defines: {', '.join(runs)}")
    out = []
    for name in chosen:
        run, impls = runs[name], []
        missing = [v for v in run["variants"] if v not in variants]
        if missing:
            raise UsageError(f"steps run {name!r} names unknown variants: {', '.join(missing)}")
        for variant in run["variants"]:
            file, cls, config, change = variants[variant]
            folders = (path.parent, kernels.EXPERIMENTS_DIR, kernels.KERNEL_DIR)  # beside the spec, drafts, kernels
            found = [d / file for d in folders if (d / file).is_file()]
            if not found:
                raise UsageError(f"variant file {file!r} is in none of {', '.join(map(str, dict.fromkeys(folders)))}")
            impls.append(ImplSpec(variant, "kernel", change, str(found[0].resolve()), cls, config and dict(config)))
        over = {v: run.get("over", {}).get(v, run.get("baseline")) for v in run["variants"]}
        if any(o is not None and o not in run["variants"] for o in over.values()):
            raise UsageError(f"steps run {name!r}: its baseline and 'over' must name its own variants")
        shape = tuple(run.get("shape", BENCH_SHAPE))
        out.append(RunSpec("steps", name, shape, (*impls, PEER_SPECS[CUBLAS]),
                           step_over={v: o for v, o in over.items() if o and v != o},
                           check_shapes=tuple((m, shape[1], shape[2]) for m in (1000, 1100)),  # ragged, odd tile rows
                           after=run["after"], title=run["title"], profile=bool(run.get("profile")),
                           kept={v: v in run.get("kept", ()) for v in run["variants"]}))  # fmt: skip
    return tuple(out)


def only_shapes(runs: tuple[RunSpec, ...], shapes: str) -> tuple[RunSpec, ...]:
    """The runs with the sweep and the field cut to ``shapes`` ("8192x8192x8192,4096x4096x5000"); UsageError names a
    shape that neither times."""
    offered = {run.shape for run in runs if run.section in ("sweep", "field")}
    try:
        wanted = {tuple(int(d) for d in token.strip().split("x")) for token in shapes.split(",") if token.strip()}
    except ValueError:
        raise UsageError(f"--shapes {shapes}: give shapes as MxNxK, separated by commas") from None
    unknown = sorted(shape_text(s) for s in wanted - offered)
    if unknown or not wanted:
        raise UsageError(f"--shapes: {', '.join(unknown) or 'none given'} is not a shape of the sections asked for "
                         f"(they time {', '.join(sorted(shape_text(s) for s in offered))})")  # fmt: skip
    return tuple(run for run in runs if run.section not in ("sweep", "field") or run.shape in wanted)


def make_plan(args: argparse.Namespace) -> Plan:
    """Turn parsed arguments into a Plan; UsageError says what is wrong."""
    chosen = args.ladder or args.sweep or args.field or args.steps is not None
    ladder, sweep = (args.ladder, args.sweep) if chosen else (True, True)
    ncu = args.ncu or (not chosen and not args.quick)
    if ncu and not (ladder or args.steps is not None):
        raise UsageError("--ncu profiles the rows of the ladder and of steps runs that ask: add --ladder or --steps")
    if args.peers and not (sweep or args.field):
        raise UsageError("--peers adds to the sweep and the field: add --sweep or --field")
    if args.out is not None and (args.out.is_dir() or args.out.suffix != ".json"):
        raise UsageError(f"--out {args.out}: give a .json file path, such as plots/results/nvidia-h200.json")
    only = tuple(n.strip() for n in args.versions.split(",") if n.strip()) if args.versions else ()
    if only and (not ladder or args.out is None):  # a ladder replaces the recorded one whole: never a partial one
        raise UsageError("--versions times part of the ladder: it needs --ladder and a file of its own (--out)")
    runs: tuple[RunSpec, ...] = (ladder_run(only),) if ladder else ()
    if sweep:
        runs += sweep_runs(QUICK_SWEEP_SHAPES if args.quick else SWEEP_SHAPES, OPTIONAL_PEERS if args.peers else ())
    if args.steps is not None:
        runs += steps_runs(args.steps, args.steps_file)
    if args.field:
        runs += field_runs(FIELD[:QUICK_FIELD] if args.quick else FIELD, OPTIONAL_PEERS if args.peers else ())
    if args.shapes is not None:
        if not (args.sweep or args.field):  # else the default record (the whole ladder, with ncu) would run too
            raise UsageError("--shapes picks shapes of the sweep and the field: add --sweep or --field")
        runs = only_shapes(runs, args.shapes)
    settings = QUICK if args.quick else DEFAULT
    if args.warmup_s is not None:
        if not 0.0 <= args.warmup_s <= 10.0:
            raise UsageError(f"--warmup-s {args.warmup_s:g}: give seconds from 0 to 10")
        settings = replace(settings, warmup_s=args.warmup_s)
    return Plan(runs, settings, ncu, args.autotune, args.quick, args.out)


def process_estimate(plan: Plan, section: str) -> float:
    """The estimated seconds of one timed worker process over a section's runs: checks, compiles, rounds."""
    settings, process_s = plan.settings, START_S
    for run in plan.section_runs(section):
        for m, n, k in (run.shape, *run.check_shapes):  # float64 reference and the element-wise comparison
            process_s += (0.5 + 2.0 * m * n * k / 40e12 + m * n * 4e-9) * len(run.impls)
        m, n, k = run.shape
        call_s = 2.0 * m * n * k / (SUSTAINED_TFLOPS * 1e12) + 2e-4  # plus the L2 flush and the launch
        process_s += settings.rounds * len(run.impls) * (settings.warmup_s + settings.repeats * call_s)
        for impl in run.impls:  # a peer compiles in the process; QuACK's tuned row autotunes there too
            quack_s = QUACK_AUTOTUNE_S if (impl.config or {}).get("tuned") else QUACK_S
            process_s += {"triton": TORCH_COMPILE_S, "quack": quack_s}.get(impl.kind, 0.0)
    return process_s


def section_estimate(plan: Plan, section: str) -> float:
    """A section's estimated seconds: its processes and its ncu rows."""
    ncu_s = NCU_S * sum(len(run.impls) for run in plan.section_runs(section) if run.profile) if plan.ncu else 0.0
    return plan.settings.processes * process_estimate(plan, section) + ncu_s


def estimate(plan: Plan) -> float:
    """The plan's estimated duration in seconds: the probe, the builds, each section's processes, the ncu rows."""
    total = 10.0
    if plan.backend == "cuda":  # Tilus compiles once per (file, class, config, N, K); autotuning one at a time
        builds = {(i.file, i.cls, repr(i.config), s[1], s[2]) for r in plan.runs for s in (r.shape, *r.check_shapes)
                  for i in r.impls if i.kind == "kernel"}  # fmt: skip
        total += math.ceil(len(builds) / (1 if plan.autotune else BUILD_JOBS)) * BUILD_S
    return total + sum(section_estimate(plan, section) for section in plan.sections())


def duration_text(seconds: float) -> str:
    """12m05s, or 45s."""
    minutes, rest = divmod(max(0, int(round(seconds))), 60)
    return f"{minutes}m{rest:02d}s" if minutes else f"{rest}s"


def describe(plan: Plan, out: str) -> str:
    """The plan in words, with its estimated duration."""
    s = plan.settings
    peers = sorted({i.name for r in plan.runs for i in r.impls if i.kind in PEER_PACKAGES}, key=OPTIONAL_PEERS.index)
    lines = [
        f"Benchmark plan{' (--quick)' if plan.quick else ''}",
        f"  each run: {s.processes} fresh processes x {s.rounds} rounds (order alternating forward/reversed); "
        f"per impl and round {s.warmup_s:g} s of warm-up + {s.repeats} timed calls (CUDA events, L2 flushed before "
        "each), median kept",
        f"  configs: {'autotuned by Tilus' if plan.autotune else 'each file pinned (its TUNED, or config_for)'}; "
        "every impl checked against float64 (NaN-poisoned C) before timing (cuBLAS, the baseline, timed even when it "
        "misses the tolerance, its row marked with wrong_elements)",
        *(f"  {r.name:<28} {shape_text(r.shape):<18} {', '.join(i.name for i in r.impls)}" for r in plan.runs),
        f"  ncu counters: {'yes, the ladder and steps runs with profile' if plan.ncu else 'no'}",
        f"  peers: {', '.join(peers) + ' (a peer that cannot run is recorded in peers_missing)' if peers else 'none'}",
        f"  results: {out} (merged, written atomically); raw samples: samples/<run_id>.json.gz next to it",
        f"  estimated duration: about {duration_text(estimate(plan))} (of it "
        + ", ".join(f"{section} {duration_text(section_estimate(plan, section))}" for section in plan.sections())
        + "; the rest is the probe and the builds)",
    ]
    return "\n".join(lines)
