"""How the site prints a number of each kind, and a ratio with its interval (see :mod:`matmul_site.numbers`)."""

from __future__ import annotations

from typing import Any

from matmul_site import stats

TIMES = "\u00d7"
DASH = "\u2013"


def shape_text(shape: dict[str, int] | tuple[int, int, int]) -> str:
    """A problem size as the pages print it: "8192×4096×4096"."""
    m, n, k = (shape["m"], shape["n"], shape["k"]) if isinstance(shape, dict) else shape
    return f"{m}{TIMES}{n}{TIMES}{k}"


def verdict(interval: dict[str, Any]) -> str:
    return stats.verdict(interval)


def _digits(interval: dict[str, Any], scale: float, start: int) -> int:
    """The fewest decimals (from ``start``) at which the printed interval agrees with the verdict."""
    for digits in range(start, start + 3):
        low, high = (round(interval[p] * scale, digits) for p in ("low", "high"))
        one = round(scale, digits)
        rule = verdict(interval)
        if (rule == stats.PAYS and low > one) or (rule == stats.COSTS and high < one):
            return digits
        if rule == stats.WITHIN_NOISE and low <= one <= high:
            return digits
    return start + 2


def format_interval(interval: dict[str, Any], style: str = "") -> str:
    """A ratio with its 95% interval: "0.97x (0.96-0.98)", "97% (96-98%)"; style x prints the median only."""
    if style == "pct":
        d = _digits(interval, 100.0, 0)
        low, med, high = (f"{100 * interval[p]:.{d}f}" for p in ("low", "median", "high"))
        return f"{med}% ({low}{DASH}{high}%)"
    d = _digits(interval, 1.0, 2)
    low, med, high = (f"{interval[p]:.{d}f}" for p in ("low", "median", "high"))
    if style == "num":
        return med
    return f"{med}{TIMES}" if style == "x" else f"{med}{TIMES} ({low}{DASH}{high})"


def format_value(kind: str, value: Any, style: str = "") -> str:
    """How the site prints a value of a kind (see :func:`lookup`)."""
    if kind == "missing":
        return value
    if kind == "interval":
        return format_interval(value, style)
    if kind == "config":
        return ", ".join(f"{k}={v}" for k, v in value.items()) if value else "defaults (no tuning knobs)"
    if kind in ("text",) or isinstance(value, str) or isinstance(value, bool):
        return str(value)
    if kind == "fraction":
        return f"{value:.2f}" if style == "num" else f"{value:.2f}{TIMES}" if style == "x" else f"{100 * value:.0f}%"
    units = {
        "tflops": ("{:.0f}", " TFLOPS"),
        "published": ("{:.1f}", " TFLOPS"),
        "ms": ("{:.3f}", " ms"),
        "mhz": ("{:.0f}", " MHz"),
        "watts": ("{:.0f}", " W"),
        "gb": ("{:.0f}", " GB"),
        "mb": ("{:.0f}", " MB"),
        "pct": ("{:.0f}", "%"),
        "count": ("{:,}", ""),  # elements, checks: 12,345
        "error": ("{:.3g}", ""),  # an absolute error: 0.00195, 3.2
    }
    if kind in units:
        pattern, unit = units[kind]
        return pattern.format(value) + ("" if style == "num" else unit)
    return f"{value:g}" if isinstance(value, float) else str(value)
