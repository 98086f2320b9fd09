"""GPU checks, ``python -m matmul_bench check NAME``: development checks, not the record.

Each check builds and checks every (kernel, shape) it names against float64, C poisoned by NaN, in the benchmark's
fresh workers, many at once (:func:`matmul_bench.jobs.build_all`), then times what passed next to cuBLAS in one
more worker, in the record's alternating rounds (:func:`matmul_bench.worker.time_runs`). ``sanitize`` and
``v9-menu --sanitize`` build and check in this process, so that a sanitizer wrapping it sees the kernels; ``warmup``
times every call in this process (common.timed_calls), and ``clusters`` asks the driver.

Here: the registry of checks and the command line. ``core``: the path every check shares; ``menus``: v8-menu and
v9-menu; ``correctness``: shapes, stream-k and sanitize; ``gpu_facts``: warmup and clusters.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence

from matmul_bench import jobs, machine
from matmul_bench.checks import correctness, gpu_facts, menus
from matmul_bench.checks.core import PROG, Target, Work
from matmul_bench.plan import UsageError

# name -> (what it does, its options, its run, its work or its plan in words)
Checks = dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace, Target], int],
                         Callable[[argparse.Namespace], "Work | str"]]]  # fmt: skip

CHECKS: Checks = {
    "shapes": ("every kernel file at many shapes, each (file, shape) checked in its own process",
               correctness.shapes_options, correctness.run_shapes, correctness.shapes_work),
    "v8-menu": ("every tile of V8's menu forced, checked and timed next to V7 and cuBLAS (--json: the v8 logs)",
                menus.v8_options, menus.run_v8, menus.v8_work),
    "v9-menu": ("V9's (tile, sharing) menu checked and timed next to V8 and cuBLAS (--json: the v9 log)",
                menus.v9_options, menus.run_v9, menus.v9_work),
    "stream-k": ("V7's stream-K tail checked at the shapes that exercise it",
                 correctness.stream_k_options, correctness.run_stream_k, correctness.stream_k_work),
    "sanitize": ("V8's menu at three ragged shapes in this process: run it under compute-sanitizer",
                 correctness.no_options, correctness.run_sanitize, correctness.sanitize_work),
    "warmup": ("how long a kernel's time takes to settle (plots/results/warmup/<gpu>.json.gz)",
               gpu_facts.warmup_options, gpu_facts.run_warmup, gpu_facts.warmup_text),
    "clusters": ("how many thread-block clusters of each size fit at once (the driver's answer)",
                 gpu_facts.clusters_options, gpu_facts.run_clusters, gpu_facts.clusters_text),
}  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
    """``check NAME [options]``: one subcommand per check, each with --dry-run."""
    parser = argparse.ArgumentParser(prog=PROG, description="GPU checks: kernels built and checked against float64 "
        "(NaN-poisoned C) in the benchmark's workers, then timed next to cuBLAS in its rounds; a development check, "
        "not the record. Exit status: 0 done, 1 could not run, 2 bad usage, 3 a wrong result.")  # fmt: skip
    names = parser.add_subparsers(dest="name", metavar="NAME", title="checks", required=True)
    for name, (what, options, _, _) in CHECKS.items():
        sub = names.add_parser(name, help=what, description=what)
        options(sub)
        sub.add_argument("--dry-run", action="store_true", help="print what it would build, check and time; run none")
    return parser


def main(argv: Sequence[str], target: Target | None = None) -> int:
    """Parse, then print the work (--dry-run) or run it; 1 when it cannot run, 2 on bad usage, 3 on a wrong result."""
    target = target or Target()
    parser = build_parser()
    try:
        args = parser.parse_args(list(argv))
    except SystemExit as exc:  # argparse printed the usage and the error (status 2), or --help (0)
        return int(exc.code or 0)
    _, _, run, work = CHECKS[args.name]
    prog = f"{PROG} {args.name}"
    try:
        if args.dry_run:
            planned = work(args)
            print(planned if isinstance(planned, str) else planned.describe())
            print("(dry run: nothing is built, checked or timed)")
            return 0
        failed = run(args, target)
    except UsageError as exc:
        print(f"{prog}: error: {exc}", file=sys.stderr)
        return 2
    except (machine.NoHopperGPU, jobs.BenchmarkError) as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 3 if isinstance(exc, jobs.WrongResult) else 1
    if failed:
        print(f"{prog}: {failed} failed check(s)", file=sys.stderr)
    return 3 if failed else 0
