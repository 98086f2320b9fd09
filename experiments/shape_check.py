"""Check kernel files at many shapes: every (file, shape) built and checked in its own process, many at once.

    python experiments/shape_check.py [--files F ...] [--shapes MxNxK ...] [--jobs 14]

Each file runs with its TUNED configuration (V8: its config_for rule) on fresh random inputs into a NaN-poisoned C,
every element against float64 (common.check); one line per (file, shape) names the first wrong element. By default
every version at the GPU suite's drawn shapes (tests/test_kernels_gpu.py) and the shapes issue 27 reported. To see
an earlier commit's kernels fail, check copies of them: `git show <commit>:examples/hopper_matmul/matmul_v7.py >
/tmp/old/matmul_v7.py`, then `--files /tmp/old/matmul_v7.py` (they import today's helpers).
Exit status 1 if any check fails.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from matmul_bench import jobs, kernels
from matmul_data import paths, versions

# The shapes issue 27 found wrong in V6 to V8 (N % 8 != 0 with many K-tiles), and two controls it found right.
REPORTED = ((2048, 2047, 4096), (4096, 4095, 4096), (4096, 4999, 4096), (3001, 4999, 4096), (4096, 4092, 4096),
            (3001, 4999, 4104), (256, 4999, 512), (2049, 2047, 200), (4096, 4088, 4096))  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", nargs="*", type=Path, help="kernel files (default: every matmul_vN.py)")
    parser.add_argument("--shapes", nargs="*", help="MxNxK ... (default: the GPU suite's drawn shapes and REPORTED)")
    parser.add_argument("--jobs", type=int, default=max(1, (os.cpu_count() or 2) - 2))
    args = parser.parse_args()
    files = [f.resolve() for f in args.files or [versions.get(n).path for n in versions.names()]]
    if args.shapes:
        shapes = [tuple(int(x) for x in s.split("x")) for s in args.shapes]
    else:  # the suite's seeded draw over N % 8, K and M
        shapes = [*kernels.load_file(paths.ROOT / "tests" / "test_kernels_gpu.py").DRAWN_SHAPES, *REPORTED]
    # Each file's own configuration (its config_for, else its TUNED), read by the build when it imports the file.
    specs = [{"file": str(file), "cls": f"MatmulV{file.stem.removeprefix('matmul_v')}", "config": None,
              "shapes": [list(shape)], "check": True} for file in files for shape in shapes]  # fmt: skip
    failed = 0
    for spec, answer in zip(specs, jobs.build_all(specs, jobs=args.jobs), strict=True):
        name = Path(spec["file"]).stem
        if answer.get("error"):
            print(f"{name}: {spec['shapes'][0]}: {answer['error'][-400:]}", flush=True)
        for check in answer["checks"]:
            print(f"{name}: {check['report']}", flush=True)
        failed += not answer["ok"]
    print(f"{len(specs)} checks, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
