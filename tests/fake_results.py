"""The provenance sections of a results file (gpu, software, method, problem), for test fixtures."""

from __future__ import annotations

from typing import Any


def provenance(gpu_name: str, shape: tuple[int, int, int] = (8192, 8192, 8192)) -> dict[str, Any]:
    """Everything of a valid results file but its entries and sweep, as the benchmark writes it."""
    return {
        "schema": 1,
        "gpu": {
            "name": gpu_name,
            "sm_count": 132,
            "compute_capability": "9.0",
            "memory_gb": 140.4,
            "driver": "580.159.04",
            "clocks_mhz": {"sm_max": 1980, "mem_max": 3201, "sm_seen_during_run": [1755, 1980]},
            "published_dense_fp16_tflops": 989.4,
            "published_source": "https://www.nvidia.com/en-us/data-center/h200/",
        },
        "software": {"cuda": "13.0", "torch": "2.11.0+cu130", "tilus": "0.2.0", "python": "3.12.3"},
        "method": {
            "timer": "CUDA events",
            "warmup": 10,
            "repeats": 50,
            "processes": 3,
            "statistic": "median over 3 fresh processes of the per-process median",
            "l2_flush": "512 MiB zero-fill before each timed call",
            "sweep_statistic": "median of one fresh process per implementation",
        },
        "problem": {"m": shape[0], "n": shape[1], "k": shape[2], "dtype": "float16", "accumulate": "float32"},
    }
