"""Time the attempts after V6 against cuBLAS, and record them for the V6 chapter's "Every step, measured".

    python experiments/steps.py --round "round 2" --out raw.json    # on a Hopper GPU: build, check, time
    python experiments/steps.py --record raw.json                    # anywhere: merge into the results file

Each variant is one pinned configuration of a kernel class (a V4-V6 version or an
experiment in this folder). All variants are built in parallel subprocesses, checked
against a float64 reference (NaN-poisoned C) at 8192^3 and at M = 1000 and 1100
(ragged, and an odd number of tile rows), then timed in one process: in each of
``--rounds`` rounds, in a shuffled order, every variant is timed (CUDA events, L2
flushed, median of 30 calls) between two cuBLAS timings. A variant's fraction of
cuBLAS is the median over rounds of cuBLAS's mean time that round over the variant's.
Interleaving puts every variant under the same clocks and power state, which
separate processes (the benchmark's method) do not; the fractions are comparable
within a round, and the benchmark's entries remain the site's headline numbers.
"""

from __future__ import annotations

import argparse
import datetime
import importlib
import json
import random
import statistics
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "examples" / "hopper_matmul"))
sys.path.insert(0, str(HERE))

from matmul_site import results  # noqa: E402

SHAPE = (8192, 8192, 8192)
CHECK_M = (8192, 1000, 1100)


def cfg(bm: int, bn: int, bk: int, stages: int, swizzle: int, **extra: str) -> dict[str, Any]:
    return dict(block_m=bm, block_n=bn, block_k=bk, num_stages=stages, swizzle_size=swizzle, **extra)


V = ("v6_variants", "MatmulV6Variants")
C = ("v6_cluster", "MatmulV6Cluster")
# name: (module, class, pinned config, what changed from the row it is compared with)
VARIANTS: dict[str, tuple[str, str, dict[str, Any], str]] = {
    "v4": ("matmul_v4", "MatmulV4", cfg(128, 256, 64, 3, 1), "V4 as recorded, for reference"),
    "v5-s3": ("matmul_v5", "MatmulV5", cfg(128, 256, 64, 3, 1), "V5 as recorded, 3 stages"),
    "v5-s4": ("matmul_v5", "MatmulV5", cfg(128, 256, 64, 4, 1), "V5 with 4 stages: more producer lead"),
    "v6-rows": (*V, cfg(128, 256, 64, 3, 1, epilogue="rows"), "V6 before its steps (row-major tile order)"),
    "v6-chunks": (*V, cfg(128, 256, 64, 3, 1, epilogue="chunks"), "swizzled 64-column chunks of C: no bank conflicts"),
    "v6-chunks-sw4": (*V, cfg(128, 256, 64, 3, 4, epilogue="chunks"), "chunks + swizzle groups of 4 tile rows"),
    "v6-chunks-sw8": (*V, cfg(128, 256, 64, 3, 8, epilogue="chunks"), "chunks + swizzle groups of 8"),
    "v6-chunks-sw16": (*V, cfg(128, 256, 64, 3, 16, epilogue="chunks"), "chunks + swizzle groups of 16"),
    "v6-regs-s3": (*V, cfg(128, 256, 64, 3, 1, epilogue="registers"), "C from registers, no staging buffer"),
    "v6-regs-s4": (*V, cfg(128, 256, 64, 4, 1, epilogue="registers"), "C from registers; its 64 KB buys a 4th stage"),
    "v6-chunks-256x128": (*V, cfg(256, 128, 64, 3, 1, epilogue="chunks"), "chunks at the 256 x 128 tile"),
    "v6-chunks-k32s6": (*V, cfg(128, 256, 32, 6, 1, epilogue="chunks"), "chunks, block_k 32 with 6 stages"),
    "v6-chunks-k32s6-sw8": (*V, cfg(128, 256, 32, 6, 8, epilogue="chunks"), "chunks, block_k 32, 6 stages, swizzle 8"),
    "v6-rows-sw16": (*V, cfg(128, 256, 64, 3, 16, epilogue="rows"), "swizzle groups of 16 tile rows: V6 now"),
    "v6-chunks-sw32": (*V, cfg(128, 256, 64, 3, 32, epilogue="chunks"), "chunks + swizzle groups of 32"),
    "v6-chunks-k32s6-sw16": (*V, cfg(128, 256, 32, 6, 16, epilogue="chunks"), "chunks, block_k 32, 6 stages, sw 16"),
    "v6c-chunks-sw1": (*C, cfg(128, 256, 64, 3, 1, epilogue="chunks"), "clusters of 2 + TMA multicast of B, chunks"),
    "v6c-chunks-sw4": (*C, cfg(128, 256, 64, 3, 4, epilogue="chunks"), "clusters of 2 + multicast, swizzle 4"),
    "v6c-chunks-sw8": (*C, cfg(128, 256, 64, 3, 8, epilogue="chunks"), "clusters of 2 + multicast, swizzle 8"),
    "v6c-chunks-k32s6-sw8": (*C, cfg(128, 256, 32, 6, 8, epilogue="chunks"), "clusters + multicast, block_k 32"),
}
# The variant that V6 now is; every other row is an attempt that was not kept.
KEPT = "v6-rows-sw16"


def make(name: str) -> Any:
    import common

    module, cls, config, _ = VARIANTS[name]
    return common.pinned(getattr(importlib.import_module(module), cls), config)()


def build(name: str) -> None:
    import torch

    import common

    m, n, k = SHAPE
    a, b = common.random_operands(m, n, k, seed=0)
    c = torch.empty(m, n, dtype=torch.float16, device="cuda")
    make(name)(m, n, k, a, b, c)
    torch.cuda.synchronize()


def measure(names: list[str], rounds: int, label: str) -> dict[str, Any]:
    import torch

    import common

    common.require_hopper()
    with ThreadPoolExecutor(8) as pool:
        argv = [[sys.executable, __file__, "--build", n] for n in names]
        done = list(pool.map(lambda cmd: subprocess.run(cmd, capture_output=True, text=True), argv))
    for name, proc in zip(names, done, strict=True):
        if proc.returncode:
            raise SystemExit(f"{name} failed to build:\n{proc.stderr[-3000:]}")
    m, n, k = SHAPE
    kernels = {name: make(name) for name in names}
    for name, kernel in kernels.items():
        for check_m in CHECK_M:
            result = common.check(kernel, check_m, n, k, seed=1)
            print(f"check {name} {result}", flush=True)
            if not result.ok:
                raise SystemExit(f"{name} is wrong at {check_m}x{n}x{k}: {result}")
    a, b = common.random_operands(m, n, k, seed=2)
    c = torch.empty(m, n, dtype=torch.float16, device="cuda")
    calls = {name: (lambda kern=kernel: kern(m, n, k, a, b, c)) for name, kernel in kernels.items()}
    cublas = lambda: torch.matmul(a, b.T, out=c)  # noqa: E731
    latency: dict[str, list[float]] = {name: [] for name in names}
    ratio: dict[str, list[float]] = {name: [] for name in names}
    cublas_ms: list[float] = []
    for r in range(rounds):
        order = list(names)
        random.Random(r).shuffle(order)
        before = common.time_ms(cublas, 5, 30)
        this_round = {name: common.time_ms(calls[name], 5, 30) for name in order}
        reference = statistics.mean([before, common.time_ms(cublas, 5, 30)])
        cublas_ms.append(reference)
        for name, ms in this_round.items():
            latency[name].append(ms)
            ratio[name].append(reference / ms)
        print(f"round {r}: cuBLAS {common.tflops(m, n, k, reference):.1f} TFLOPS", flush=True)
    rows = {
        name: dict(
            config=VARIANTS[name][2],
            ms=statistics.median(latency[name]),
            tflops=common.tflops(m, n, k, statistics.median(latency[name])),
            ratio_median=statistics.median(ratio[name]),
            ratios=ratio[name],
            latencies=latency[name],
        )
        for name in names
    }
    ms = statistics.median(cublas_ms)
    rows["cublas"] = dict(config={}, ms=ms, tflops=common.tflops(m, n, k, ms), ratio_median=1.0, latencies=cublas_ms)
    for name, row in rows.items():
        print(f"{name:24s} {row['tflops']:7.1f} TFLOPS  x{row['ratio_median']:.3f}", flush=True)
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    return dict(gpu=torch.cuda.get_device_name(), date=date, round=label, shape=list(SHAPE), results=rows)


def step_rows(raw: dict[str, Any]) -> list[dict[str, Any]]:
    """The results file's "steps" rows for one raw run of this script."""
    rows = []
    for name, row in raw["results"].items():
        if name == "cublas":
            continue
        module, _, config, change = VARIANTS[name]
        ratios = row["ratios"]
        rows.append(
            dict(
                impl=module.removeprefix("matmul_").split("_")[0],
                name=name,
                change=change,
                round=raw["round"],
                rounds=len(ratios),
                config=config,
                tflops=row["tflops"],
                fraction_of_cublas=row["ratio_median"],
                fraction_range=[min(ratios), max(ratios)],
                kept=name == KEPT,
                date=raw["date"],
            )
        )
    return rows


def record(raw_paths: list[Path], out: Path) -> None:
    data = results.load(out)
    rows = [row for path in raw_paths for row in step_rows(json.loads(path.read_text()))]
    new_keys = {(row["round"], row["name"]) for row in rows}
    data["steps"] = [row for row in data.get("steps", []) if (row["round"], row["name"]) not in new_keys] + rows
    results.write_atomic(out, data)
    print(f"recorded {len(rows)} steps into {out}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build", help=argparse.SUPPRESS)
    parser.add_argument("--variants", help="comma-separated names (default: all)")
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--round", default="round", help="a label for this run, recorded with its rows")
    parser.add_argument("--out", type=Path, help="where to write the raw JSON of a run (default: stdout)")
    parser.add_argument("--record", type=Path, nargs="+", help="raw JSON files to merge into the results file")
    parser.add_argument("--results", type=Path, help="results file (default: the committed one)")
    args = parser.parse_args(argv)
    if args.build:
        build(args.build)
        return 0
    if args.record:
        record(args.record, args.results or results.default_path())
        return 0
    names = args.variants.split(",") if args.variants else list(VARIANTS)
    unknown = [n for n in names if n not in VARIANTS]
    if unknown:
        parser.error(f"unknown variants {unknown}; known: {', '.join(VARIANTS)}")
    raw = json.dumps(measure(names, args.rounds, args.round), indent=1)
    if args.out:
        args.out.write_text(raw + "\n")
    else:
        print(raw)
    return 0


if __name__ == "__main__":
    sys.exit(main())
