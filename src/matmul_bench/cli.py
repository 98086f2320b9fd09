"""The one command line of the tooling: ``python -m matmul_bench <command> [options]``.

    python -m matmul_bench record             # the record on a Hopper GPU: ladder, sweep, steps, ncu counters
    python -m matmul_bench record --ladder    # one section (also --sweep, --steps NAMES, --ncu, --torch-compile)
    python -m matmul_bench quick              # a smoke run into build/quick/ (one run, not replicated)
    python -m matmul_bench plan [options]     # what `record` would run and its estimated duration; runs nothing
    python -m matmul_bench tryit              # the chapters' Try it edits: apply, build, check on the GPU
    python -m matmul_bench buildcheck         # every version built for sm_90a on the CPU (--record: the build record)
    python -m matmul_bench baseline           # which cuBLAS kernel runs at each sweep shape (torch profiler)

Each command's ``--help`` lists its options. Exit status: 0 done; 1 could not run (no Hopper GPU, a worker
failed); 2 bad usage (nothing runs); 3 a wrong result (that implementation is not recorded).
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence

PROG = "python -m matmul_bench"


def _benchmark(argv: list[str]) -> int:
    from matmul_bench import plan as planning

    parser = planning.build_parser()
    parser.prog = f"{PROG} record"
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage and the error (status 2), or --help (0)
        return int(exc.code or 0)
    try:
        plan = planning.make_plan(args)
    except planning.UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    from matmul_bench import runner

    print(planning.describe(plan, runner.describe_out(plan)), flush=True)
    if args.dry_run:
        print(last_record_text())
        print("(dry run: nothing is timed, nothing is written)")
        return 0
    try:
        return runner.run_plan(plan)
    except runner.WrongResult as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 3
    except runner.BenchmarkError as exc:
        print(f"{parser.prog}: {exc}", file=sys.stderr)
        return 1


def last_record_text() -> str:
    """What the results file says the last record took: the benchmark's own clock, never a typed number."""
    from matmul_data import results

    try:
        data = results.load_default()
    except results.ResultsError as exc:
        return f"  last record: unknown ({exc})"
    seconds = results.record_duration_s(data)
    if seconds is None:
        return "  last record: its duration was not recorded (runs made before invocation_s)"
    text = f"  last record: {seconds / 60:.1f} minutes on the GPU that made the results file (measured)"
    untimed = results.untimed_figures(data)
    figures = f"{untimed} figure{'s' if untimed != 1 else ''}"
    return text + (f", not counting {figures} whose newest run predates invocation_s" if untimed else "")


def _tryit(argv: list[str]) -> int:
    from matmul_bench import tryit

    return tryit.main(argv)


def _buildcheck(argv: list[str]) -> int:
    from matmul_bench import buildcheck

    return buildcheck.main(argv)


def _baseline(argv: list[str]) -> int:
    from matmul_bench import baseline

    return baseline.main(argv)


def _worker(argv: list[str]) -> int:
    from matmul_bench import worker

    return worker.main(argv)


def _prebuild(argv: list[str]) -> int:
    from matmul_bench import prebuild

    return prebuild.main(argv)


def _tryit_child(argv: list[str]) -> int:
    from matmul_bench import tryit

    return tryit.child_main(argv[0])


# name -> (what it does, how long it takes, the function, extra arguments put before the user's)
COMMANDS: dict[str, tuple[str, str, Callable[[list[str]], int], tuple[str, ...]]] = {
    "record": ("benchmark on a Hopper GPU and record plots/results/<gpu>.json", "`plan` estimates it", _benchmark, ()),
    "quick": ("a smoke run into build/quick/, one run, not replicated", "`plan --quick`", _benchmark, ("--quick",)),
    "plan": (
        "print what `record` would run, its estimate and the last record's time",
        "no GPU",
        _benchmark,
        ("--dry-run",),
    ),  # fmt: skip
    "tryit": ("apply, build and check the chapters' Try it edits on a GPU", "`tryit --dry-run`", _tryit, ()),
    "buildcheck": (
        "build every version for sm_90a on the CPU (--record: rewrite the build record)",
        "no GPU; builds in parallel",
        _buildcheck,
        (),
    ),
    "baseline": (
        "name cuBLAS's kernel at every sweep shape (torch profiler) on a GPU",
        "one profiled matmul per shape",
        _baseline,
        (),
    ),
}
# Started by the commands above in child processes; not for people.
INTERNAL: dict[str, Callable[[list[str]], int]] = {
    "worker": _worker,
    "prebuild": _prebuild,
    "tryit-child": _tryit_child,
}


def usage() -> str:
    lines = [f"usage: {PROG} <command> [options]   ({PROG} <command> --help for its options)", "", "commands:"]
    lines += [f"  {name:<11} {what} ({how_long})" for name, (what, how_long, _, _) in COMMANDS.items()]
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(usage(), file=sys.stdout if argv else sys.stderr)
        return 0 if argv else 2
    name, rest = argv[0], argv[1:]
    if name in INTERNAL:
        return INTERNAL[name](rest)
    if name not in COMMANDS:
        print(f"{usage()}\n\n{PROG}: error: unknown command {name!r}", file=sys.stderr)
        return 2
    _, _, run, before = COMMANDS[name]
    return run([*before, *rest])
