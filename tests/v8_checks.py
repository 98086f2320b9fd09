"""The V8 GPU checks' timings (``check v8-menu``), as medians, for the tests that hold claims to them.

docs/chapters/v8.rst ranks the menu's tiles by these logs and tile_model.EDGE_COST is fitted to them.
3000 x 5000 x 4096 was timed in two of the logs, so the medians keep each log's timing apart: a reader
says which one it takes, or holds a claim in all of them.
"""

from __future__ import annotations

import json
import statistics

from matmul_data import paths

# The checks of 2026-12-02: every tile at M = 3000, K = 4096 and seven values of N, at 3072 x 5000 and 5000 x 3000.
EDGE_LOGS = ("v8-check-2026-12-02.json", "v8-check-edge-2026-12-02.json", "v8-check-stride-2026-12-02.json")

Shape = tuple[int, int, int]


def medians(names: tuple[str, ...] = EDGE_LOGS) -> dict[Shape, dict[str, dict[str, float]]]:
    """shape -> log name -> implementation ("128x192", ..., "cuBLAS") -> median ms over its rounds."""
    found: dict[Shape, dict[str, dict[str, float]]] = {}
    for name in names:
        log = json.loads((paths.ROOT / "plots" / "results" / "logs" / name).read_text(encoding="utf-8"))
        for timing in log["timings"]:
            m, n, k = timing["shape"]
            by_log = found.setdefault((m, n, k), {})
            if name in by_log:
                raise ValueError(f"{name} times {m}x{n}x{k} twice")
            by_log[name] = {impl: statistics.median(ms) for impl, ms in timing["ms"].items()}
    return found
