"""How the site prints what it measured: one notation for shapes, ratios, verdicts and units.

Pages (through :mod:`matmul_site.facts`), tables, captions and charts all print through here, so a
ratio reads "1.02× [1.01, 1.03]" and a shape "8192³" or "8192×28672×4096" wherever it appears.
"""

from __future__ import annotations

from typing import Any

from matmul_site import results

TIMES = "\u00d7"
NOT_MEASURED = "not measured yet"
NOT_RECORDED = "not recorded"
# A verdict in a sentence whose subject is the step ("Over V4, this step pays: ...") ...
STEP_WORDS = {results.PAYS: "pays", results.COSTS: "costs", results.PARITY: "is at parity"}
# ... and in one whose subject is an implementation compared with cuBLAS ("V6 is behind cuBLAS: ...").
RATIO_WORDS = {
    results.PAYS: "is ahead of cuBLAS",
    results.COSTS: "is behind cuBLAS",
    results.PARITY: "is at parity with cuBLAS",
}


def shape_text(shape: dict[str, int] | tuple[int, int, int]) -> str:
    """A problem size: "8192³" when square, else "8192×28672×4096"."""
    m, n, k = (shape["m"], shape["n"], shape["k"]) if isinstance(shape, dict) else shape
    return f"{m}\u00b3" if m == n == k else f"{m}{TIMES}{n}{TIMES}{k}"


def _digits(interval: dict[str, Any]) -> int:
    """The fewest decimals (two to four) at which the printed interval agrees with its verdict."""
    rule = results.verdict(interval)
    for digits in (2, 3):
        low, high = round(interval["low"], digits), round(interval["high"], digits)
        if (rule == results.PAYS and low > 1) or (rule == results.COSTS and high < 1):
            return digits
        if rule == results.PARITY and low <= 1 <= high:
            return digits
    return 4


def ratio_text(interval: dict[str, Any]) -> str:
    """A ratio with its interval: "0.97× [0.96, 0.98]"."""
    d = _digits(interval)
    return f"{interval['median']:.{d}f}{TIMES} [{interval['low']:.{d}f}, {interval['high']:.{d}f}]"


def step_text(interval: dict[str, Any]) -> str:
    """A step by the rule: "pays: 1.04× [1.02, 1.06]", "costs: ...", "is at parity: ..."."""
    return f"{STEP_WORDS[results.verdict(interval)]}: {ratio_text(interval)}"


def vs_cublas_text(interval: dict[str, Any]) -> str:
    """A ratio to cuBLAS by the rule: "is behind cuBLAS: 0.97× [0.96, 0.98]"."""
    return f"{RATIO_WORDS[results.verdict(interval)]}: {ratio_text(interval)}"


def config_text(config: dict[str, Any]) -> str:
    """A tuned configuration: "block_m=128, block_n=256, ..."."""
    return ", ".join(f"{k}={v}" for k, v in config.items()) if config else "defaults (no tuning knobs)"


UNITS = {  # kind: (format, unit)
    "tflops": ("{:.0f}", " TFLOPS"),
    "ms": ("{:.3f}", " ms"),
    "mhz": ("{:.0f}", " MHz"),
    "watts": ("{:.0f}", " W"),
    "mb": ("{:.0f}", " MB"),
    "gb": ("{:.0f}", " GB"),
    "pct": ("{:.0f}", "%"),
    "count": ("{:,}", ""),  # elements, checks, wavefronts: 12,345
}


def kb_text(nbytes: int) -> str:
    """A size in shared memory: "48 KB" when a whole number of KB (1024 bytes), else "208.1 KB"."""
    return f"{nbytes // 1024} KB" if nbytes % 1024 == 0 else f"{nbytes / 1024:.1f} KB"


def unit_text(kind: str, value: float | None) -> str:
    """A value with its unit ("601 TFLOPS", "1755 MHz", "45%"), or "not recorded" for None."""
    if value is None:
        return NOT_RECORDED
    pattern, unit = UNITS[kind]
    return pattern.format(value) + unit
