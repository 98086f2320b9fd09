"""What the pages may state: every number a results file holds or the site derives from it.

The docs tests compare the numbers on every built page with this list, so that no page states a
number the results file does not back.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from matmul_site.numbers import Missing, _row_field


def _walk(node: Any) -> Iterator[float]:
    if isinstance(node, dict):
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)
    elif isinstance(node, (int, float)) and not isinstance(node, bool):
        yield float(node)


def numbers_held(data: dict[str, Any] | None) -> list[float]:
    """Every number the file holds or the site derives from it (ratios and fractions also as 0-100)."""
    if data is None:
        return []
    found = list(_walk(data))
    runs = [r for r in (data.get("ladder"), *data.get("sweep", []), *data.get("steps", [])) if r]
    for run in runs:
        for row in run["rows"].values():
            for field in ("peak_at_clock", "peak_fraction", "datasheet_fraction"):
                try:
                    found.append(_row_field(data, row, field)[1])
                except Missing:
                    pass
    found += [100 * v for v in list(found) if abs(v) <= 10]
    return [v for v in found if math.isfinite(v)]
