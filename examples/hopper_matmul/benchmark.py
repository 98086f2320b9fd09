"""Benchmark the kernel versions against cuBLAS on a Hopper GPU and record plots/results/<gpu>.json.

    python examples/hopper_matmul/benchmark.py                  # the record: --ladder --sweep --ncu (~15 min)
    python examples/hopper_matmul/benchmark.py --quick          # a smoke run (< 10 min) into build/quick/
    python examples/hopper_matmul/benchmark.py --ladder         # every version and cuBLAS at 8192^3
    python examples/hopper_matmul/benchmark.py --sweep --torch-compile   # v4-v6, cuBLAS, torch.compile
    python examples/hopper_matmul/benchmark.py --steps all      # the attempts of experiments/steps.py
    python examples/hopper_matmul/benchmark.py --dry-run        # the plan and its estimated duration

Numbers that drift with the clock are compared only within one run: every implementation of a run
is timed in the same few fresh processes, interleaved in rounds with cuBLAS, and each ratio is paired
round by round (bench.runner tells the whole method). Exit status: 0 recorded; 1 could not run (no
Hopper GPU, a worker failed); 2 bad usage (nothing runs); 3 a wrong result (that impl is not recorded).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from bench import plan as planning


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["--worker"]:
        from bench import worker

        return worker.main(argv[1:])
    parser = planning.build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # argparse printed the usage and the error (status 2), or --help (0)
        return int(exc.code or 0)
    try:
        plan = planning.make_plan(args)
    except planning.UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"benchmark.py: error: {exc}", file=sys.stderr)
        return 2
    from bench import runner

    print(planning.describe(plan, runner.describe_out(plan)), flush=True)
    if args.dry_run:
        print("(dry run: nothing is timed, nothing is written)")
        return 0
    try:
        return runner.run_plan(plan)
    except runner.WrongResult as exc:
        print(f"benchmark.py: {exc}", file=sys.stderr)
        return 3
    except runner.BenchmarkError as exc:
        print(f"benchmark.py: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
