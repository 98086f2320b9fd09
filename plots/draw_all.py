"""Draw every chart (plots/plot_*.py) into SVG files; ``nox -s plots`` runs this.

    python plots/draw_all.py                 # redraw from the recorded results into build/charts/
    python plots/draw_all.py --rerun         # on a Hopper GPU: rerun the benchmark first, then redraw
    python plots/draw_all.py --rerun --quick --charts-dir build/quick-charts   # benchmark flags pass through
    HOPPER_MATMUL_RERUN=1 python plots/draw_all.py   # the same as --rerun
    HOPPER_MATMUL_RERUN_CHARTS=1 python plots/draw_all.py   # each chapter chart reruns its own version (quick)

Arguments that this script does not know are passed on to the benchmark with --rerun.
The site does not need these files: Sphinx's plot directive runs the same scripts at
build time. Without --rerun nothing here imports torch or CUDA code; with it, the
benchmark runs in its own process and refuses, with its own message, a machine that
has no Hopper GPU, in which case nothing is redrawn and the exit status is non-zero.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path

PLOTS = Path(__file__).resolve().parent
ROOT = PLOTS.parent
ENV_RERUN = "HOPPER_MATMUL_RERUN"
# What `nox -s plots` needs in the current environment: this project (matmul_site) and the docs stack (matplotlib).
MISSING_STACK = 'the charts need this project and matplotlib: run `pip install -e ".[docs]"` in {root}, then retry'

try:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from matmul_data import paths, versions
    from matmul_site import chartkit, numfmt, rerun
except ImportError as missing:
    sys.exit(f"cannot draw the charts ({missing}): {MISSING_STACK.format(root=ROOT)}")


def scripts() -> dict[str, str]:
    """Every chart by name, with the code that draws it: the scripts here, then each version's chart (by convention)."""
    found = {path.stem: path.read_text(encoding="utf-8") for path in sorted(PLOTS.glob("plot_*.py"))}
    return found | {version.chart_name: rerun.chart_code(version.name) for version in versions.all_versions()}


def draw(name: str, out_dir: Path) -> Path:
    """Run one chart's code as the plot directive does and save its figure as <out_dir>/<name>.svg."""
    plt.close("all")
    exec(compile(scripts()[name], name, "exec"), {"__name__": name})  # noqa: S102  (our own chart code)
    figures = [plt.figure(num) for num in plt.get_fignums()]
    if len(figures) != 1:
        raise RuntimeError(f"{name} drew {len(figures)} figures; a chart draws exactly one")
    return chartkit.save(figures[0], out_dir / f"{name}.svg")


def rerun_benchmark(extra: list[str]) -> int:
    """Run the benchmark in a fresh process (it checks for a Hopper GPU itself); return its exit status."""
    command = rerun.benchmark("record", *extra)
    print(f"rerunning the benchmark: python {' '.join(command[1:])}", flush=True)
    return subprocess.call(command, cwd=ROOT, env=paths.child_env())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rerun", action="store_true", help=f"rerun the benchmark first (or set {ENV_RERUN}=1)")
    # Not --out: that is the benchmark's results file, passed through with --rerun.
    parser.add_argument("--charts-dir", type=Path, default=ROOT / "build" / "charts", help="where the SVGs go")
    args, extra = parser.parse_known_args(argv)
    if extra and not args.rerun and os.environ.get(ENV_RERUN) != "1":
        parser.error(f"unknown arguments {' '.join(extra)} (they are only passed on to the benchmark with --rerun)")
    if args.rerun or os.environ.get(ENV_RERUN) == "1":
        status = rerun_benchmark(extra)
        if status != 0:
            print(f"the benchmark failed (exit status {status}); the charts were not redrawn", file=sys.stderr)
            return status
    try:
        source = paths.results_file()
    except paths.ResultsFileError as exc:  # $HOPPER_MATMUL_RESULTS names no file, or several files to choose from
        print(f"draw_all: {exc}", file=sys.stderr)
        return 1
    print(f"results: {source if source else numfmt.NOT_MEASURED}")
    for script in scripts():
        print(f"  {draw(script, args.charts_dir)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
