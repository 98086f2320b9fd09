"""The tooling's one command line, ``python -m matmul_bench <command> [options]``; exit status 0 done, 1 could not
run, 2 bad usage (nothing runs), 3 a wrong result (nothing of it recorded)."""

from __future__ import annotations

import argparse
import functools
import importlib
import sys
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matmul_bench.plan import Plan

PROG = "python -m matmul_bench"


def record(argv: list[str], name: str = "record") -> int:
    """``record``, ``quick`` and ``plan`` (``name``, for the usage lines): parse, plan, and run unless a dry run."""
    from matmul_bench import plan as planning

    parser = planning.build_parser(f"{PROG} {name}")
    try:
        args = parser.parse_args(argv)
        plan = planning.make_plan(args)
    except SystemExit as exc:  # argparse printed the usage and the error (status 2), or --help (0)
        return int(exc.code or 0)
    except planning.UsageError as exc:
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 2
    if not args.dry_run:  # no GPU is one line, before any plan
        from matmul_bench import machine

        try:
            machine.require_hopper()
        except machine.NoHopperGPU as exc:
            print(f"{parser.prog}: {exc}", file=sys.stderr)
            return 1
    out = str(plan.out or (f"{planning.QUICK_DIR}/<gpu>.json" if plan.quick else "plots/results/<gpu>.json"))
    print(planning.describe(plan, out), flush=True)
    if args.dry_run:
        print(f"{measured_text()}\n(dry run: nothing is timed, nothing is written)")
        return 0
    return execute(plan)


def measured_text() -> str:
    """The measured cost of a record beside the estimate: what the newest invocations took (their ``invocation_s``),
    or why they are not known when the results file cannot be read."""
    from matmul_data import paths, results  # torch- and numpy-free: `plan` runs on a bare install

    # The site's results file ($HOPPER_MATMUL_RESULTS, else plots/results/) gives only this line: the plan is what was
    # asked for and needs none of it, and a record never reads that variable (it writes --out or <gpu>.json, and
    # refuses a broken one itself). So a file that cannot be read costs this line, which says why, not the plan.
    try:
        path = paths.results_file()
        figures = results.read(path).figures if path is not None else []
    except (results.ResultsError, paths.ResultsFileError) as exc:
        return f"  measured: not known, the results file cannot be read: {exc}"
    took = sorted({run.run_id: run.invocation_s for f in figures for run in f.runs if run.invocation_s}.items())
    if not took:
        return "  measured: no recorded invocation says how long it took"
    newest = ", ".join(f"{run_id} {seconds:.0f} s" for run_id, seconds in took[-3:])
    return f"  measured, the newest recorded invocations (each one run of what it timed): {newest}"


def execute(plan: Plan) -> int:
    """Run a plan; 1 when it cannot go on, 3 on a wrong result, each with its reason on stderr."""
    from matmul_bench import jobs, runner

    try:
        return runner.run_plan(plan)
    except jobs.BenchmarkError as exc:
        print(f"{PROG} record: {exc}", file=sys.stderr)
        return 3 if isinstance(exc, jobs.WrongResult) else 1


def command(module: str, function: str = "main") -> Callable[[list[str]], int]:
    """A command that imports its module only when it runs."""
    return lambda argv: getattr(importlib.import_module(f"matmul_bench.{module}"), function)(argv)


# name -> (what it does and how long it takes, the function, arguments put before the user's)
COMMANDS: dict[str, tuple[str, Callable[[list[str]], int], tuple[str, ...]]] = {
    "record": ("benchmark on a Hopper GPU, merged into plots/results/<gpu>.json (`plan` estimates it)", record, ()),
    "quick": (
        "a smoke run into build/quick/, one run, not replicated (`plan --quick`)",
        functools.partial(record, name="quick"),
        ("--quick",),
    ),
    "plan": (
        "print what `record` would run, with its estimated duration (no GPU)",
        functools.partial(record, name="plan"),
        ("--dry-run",),
    ),
    "tryit": ("apply, build and check the chapters' Try it edits on a GPU (`tryit --dry-run`)", command("tryit"), ()),
    "buildcheck": ("build every version for sm_90a on the CPU (--record: the build record)", command("buildcheck"), ()),
    "baseline": ("name cuBLAS's kernel at each sweep and field shape (profiler) on a GPU", command("baseline"), ()),
    "check": ("GPU checks by NAME: kernels built, checked and timed as the record does them", command("checks"), ()),
}
# Started by the commands above in child processes; not for people.
INTERNAL = {"worker": command("worker"), "tryit-child": command("tryit", "child_main")}


def parser() -> argparse.ArgumentParser:
    """The command line's first word: one subcommand per entry of COMMANDS (the internal ones work, unlisted)."""
    top = argparse.ArgumentParser(
        prog=PROG,
        usage=f"{PROG} <command> [options]",
        description="The tooling's one command line. Exit status: 0 done, 1 could not run, 2 bad usage (nothing "
        "runs), 3 a wrong result (nothing of it recorded).",
        epilog=f"{PROG} <command> --help lists a command's options.",
        formatter_class=lambda prog: argparse.HelpFormatter(prog, max_help_position=18, width=120),  # as the code
    )
    commands = top.add_subparsers(dest="command", metavar="<command>", title="commands", required=True)
    for name, (what, _, _) in COMMANDS.items():
        commands.add_parser(name, help=what, add_help=False)  # its options are its own parser's
    for name in INTERNAL:
        commands.add_parser(name, add_help=False)  # no help: left out of the list
    return top


def main(argv: Sequence[str] | None = None) -> int:
    """Run a command on the rest of the line; no command, or an unknown one, is a usage error (status 2)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    top = parser()
    if not argv:
        top.print_help(sys.stderr)
        return 2
    if argv[0] not in {"-h", "--help", *COMMANDS, *INTERNAL}:  # argparse's own message would name the internal ones
        top.print_usage(sys.stderr)
        print(f"{PROG}: error: unknown command {argv[0]!r} ({PROG} --help lists them)", file=sys.stderr)
        return 2
    try:
        name = top.parse_args(argv[:1]).command  # the first word only: the rest is the command's to parse
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    if name in INTERNAL:
        return INTERNAL[name](argv[1:])
    _, run, before = COMMANDS[name]
    return run([*before, *argv[1:]])
