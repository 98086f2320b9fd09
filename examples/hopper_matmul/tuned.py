"""The configuration the Tilus autotuner picked for each version at 8192^3 on the H200 (2026-11-30).

Torch-free, so that the benchmark's plan and the tests can read it anywhere. The benchmark and the GPU
test suite pin these (``common.pinned``): one build per problem size instead of one per configuration
in the autotune space, and the same configuration in every process. ``benchmark.py --autotune`` lets
Tilus choose again instead. A test holds every entry to lie in its kernel's ``@tilus.autotune`` lists.
"""

from __future__ import annotations

from typing import Any

TUNED: dict[str, dict[str, Any]] = {
    "v0": {"block_m": 64, "block_n": 128, "block_k": 64},
    "v1": {"block_m": 128, "block_n": 128, "block_k": 64},
    "v2": {"block_m": 128, "block_n": 128, "block_k": 64, "num_stages": 3},
    "v3": {"block_m": 128, "block_n": 128, "block_k": 64, "num_stages": 3},
    "v4": {"block_m": 128, "block_n": 256, "block_k": 64, "num_stages": 3, "swizzle_size": 1},
    "v5": {"block_m": 128, "block_n": 256, "block_k": 64, "num_stages": 3, "swizzle_size": 1},
    "v6": {"block_m": 128, "block_n": 256, "block_k": 64, "num_stages": 3, "swizzle_size": 16},
    "v7": {"block_m": 128, "block_n": 256, "block_k": 64, "num_stages": 3, "swizzle_size": 16},
}
