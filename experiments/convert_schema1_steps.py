"""Rewrite a schema-1 results file as schema 2, keeping only what schema 2 can state honestly: the steps.

    python experiments/convert_schema1_steps.py            # plots/results/nvidia-h200.json, in place
    git show c3e97e0:plots/results/nvidia-h200.json > /tmp/s1.json    # again, from the schema-1 original:
    python experiments/convert_schema1_steps.py --results /tmp/s1.json --logs-base plots/results \
        --out plots/results/nvidia-h200.json

Schema 1's ladder ("entries") and sweep were stitched from separate processes and runs, with no paired
ratios: they are dropped, to be measured again by the benchmark. Its two steps rounds were one process
each, 15 rounds, every variant timed between two cuBLAS timings; their raw per-round data
(plots/results/logs/steps-round{1,2}.json) gives paired ratios, so they become steps runs: latency the
median of the per-round latencies, ratio_to_cublas the interval over rounds of the recorded per-round
ratios (cuBLAS: the mean of its two timings around the round), the step ratio paired round by round with
"v6-rows" (V6 before its steps), clocks and power null (not sampled then). Change texts and kept flags
come from schema 1's steps rows; run titles from experiments/steps.py, so that rerunning a round
(``benchmark.py --steps "round 1"``) replaces its converted record.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import statistics
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from matmul_site import paths, results, stats

HERE = Path(__file__).resolve().parent
BASELINE = "v6-rows"
GIT_COMMIT = "ed452d2"  # the commit that recorded the two rounds, holding the code they measured
LOGS = {"round 1": "logs/steps-round1.json", "round 2": "logs/steps-round2.json"}
WARMUP, REPEATS = 5, 30  # what experiments/steps.py passed to common.time_ms then

# The benchmark's method at its defaults (bench.runner.method; a test holds the two equal).
METHOD: dict[str, Any] = {
    "timer": "CUDA events around each call (torch.cuda.Event), after a check against a float64 reference "
    "with C poisoned by NaN at the timed shape",
    "warmup": 5,
    "repeats": 30,
    "statistic": "latency: median over every (process, round) of the per-round median of the timed calls",
    "interval": "95% bootstrap of the median paired ratio, resampling processes, then rounds within each "
    "(2000 resamples, fixed seed); a step pays when the whole interval lies above 1",
    "l2_flush": "512 MiB zero-fill before each timed call (several times the 50-60 MB L2)",
    "order": "a run is every impl at one shape, cuBLAS (torch.matmul) among them, in a few fresh processes; "
    "in each, rounds in alternating order (forward, reversed); ratios pair the impls of the same round",
    "clocks": "NVML SM clock and board power polled every 5 ms only while an impl's timed calls run; "
    "each row gives the medians",
    "configs": "pinned to those tuned at 8192^3 (tuned.py)",
}
EARLIER = (
    "measured before this method, 2026-11-30 (experiments/steps.py then): one process, 15 rounds in a shuffled "
    "order, each variant timed (5 warm-up + 30 calls, median) between two cuBLAS timings whose mean is the "
    "round's cuBLAS; checked at 8192^3, 1000x8192x8192 and 1100x8192x8192 first; no clock or power sampling"
)


def run_titles(spec_file: Path = HERE / "steps.py") -> dict[str, str]:
    """Each round's title from the steps spec (read by path, as the benchmark reads it)."""
    spec = importlib.util.spec_from_file_location("_steps_spec", spec_file)
    if spec is None or spec.loader is None:
        raise SystemExit(f"cannot import {spec_file}")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return {name: run["title"] for name, run in module.RUNS.items()}


def convert_round(raw: dict[str, Any], old_steps: Sequence[dict[str, Any]], title: str, log: str) -> dict[str, Any]:
    """One schema-2 steps run from a raw round log and the schema-1 rows of that round."""
    m, n, k = raw["shape"]
    label = raw["round"]
    old = {row["name"]: row for row in old_steps if row["round"] == label}
    measured = raw["results"]
    rows: dict[str, Any] = {}
    for name, got in measured.items():
        latency = float(statistics.median(got["latencies"]))
        ratios = [1.0] * len(got["latencies"]) if name == results.CUBLAS else got["ratios"]
        row: dict[str, Any] = {
            "latency_ms": latency,
            "tflops": results.tflops(m, n, k, latency),
            "ratio_to_cublas": stats.interval([ratios]),
            "sm_clock_mhz": None,
            "power_w": None,
            "config": dict(got["config"]),
            "title": "cuBLAS via torch.matmul" if name == results.CUBLAS else old[name]["change"],
        }
        if name not in (results.CUBLAS, BASELINE) and BASELINE in measured:
            paired = stats.paired_ratios(measured[BASELINE]["latencies"], got["latencies"])
            row["step"] = {"over": BASELINE, **stats.interval([paired])}
        if name != results.CUBLAS:
            row["kept"] = bool(old[name]["kept"])
        rows[name] = row
    rounds = {len(got["latencies"]) for got in measured.values()}
    if len(rounds) != 1:
        raise SystemExit(f"{label}: variants with different numbers of rounds: {sorted(rounds)}")
    return {
        "run_id": f"{raw['date']}-steps-{label.replace(' ', '')}",
        "date": raw["date"],
        "git_commit": GIT_COMMIT,
        "shape": {"m": m, "n": n, "k": k},
        "rounds": rounds.pop(),
        "processes": 1,
        "warmup": WARMUP,
        "repeats": REPEATS,
        "log": log,
        "rows": rows,
        "after": "v6",
        "title": title,
    }


def convert(old: dict[str, Any], results_dir: Path, titles: dict[str, str]) -> dict[str, Any]:
    if old.get("schema") != 1:
        raise SystemExit(f"expected a schema-1 file, got schema {old.get('schema')!r}")
    gpu = old["gpu"]
    steps = []
    for label, log in LOGS.items():
        raw = json.loads((results_dir / log).read_text(encoding="utf-8"))
        steps.append(convert_round(raw, old["steps"], titles[label], log))
    data = {
        "schema": results.SCHEMA_VERSION,
        "gpu": {
            **{key: gpu[key] for key in ("name", "sm_count", "compute_capability", "memory_gb", "driver")},
            "clocks_mhz": {"sm_max": gpu["clocks_mhz"]["sm_max"], "mem_max": gpu["clocks_mhz"]["mem_max"]},
            "power_limit_w": None,  # not recorded by schema 1; the next benchmark run fills it in
            "published_dense_fp16_tflops": gpu["published_dense_fp16_tflops"],
            "published_source": gpu["published_source"],
        },
        "software": dict(old["software"]),
        "method": {**METHOD, "earlier_runs": {run["run_id"]: EARLIER for run in steps}},
        "problem": dict(old["problem"]),
        "sweep": [],
        "steps": steps,
    }
    results.validate(data)
    return data


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results", type=Path, default=paths.RESULTS_DIR / "nvidia-h200.json", help="file to convert")
    parser.add_argument("--out", type=Path, help="where to write (default: in place)")
    parser.add_argument("--logs-base", type=Path, help="the folder holding logs/ (default: the file's folder)")
    args = parser.parse_args(argv)
    old = json.loads(args.results.read_text(encoding="utf-8"))
    data = convert(old, args.logs_base or args.results.parent, run_titles())
    results.write_atomic(args.out or args.results, data)
    print(f"wrote {args.out or args.results}: schema 2, {len(data['steps'])} steps runs, no ladder, no sweep")
    return 0


if __name__ == "__main__":
    sys.exit(main())
