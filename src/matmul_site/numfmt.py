"""How the site prints what it measured: one notation for shapes, ratios, verdicts and units, used by the facts,
tables, captions and charts alike ("1.02× [1.01, 1.03]", "8192³", "8192×28672×4096")."""

from __future__ import annotations

import re

from matmul_data import model, results

TIMES = "\u00d7"
NOT_MEASURED = "not measured yet"
NOT_RECORDED = "not recorded"
NUMBER_WORDS = "zero one two three four five six seven eight nine ten eleven twelve".split()
# A verdict in a sentence whose subject is the step ("Over V4, this step pays: ...") ...
STEP_WORDS = {results.PAYS: "pays", results.COSTS: "costs", results.WITHIN: "is within {band}",
              results.UNRESOLVED: "is unresolved at {band}"}  # fmt: skip
# ... in one whose subject is an implementation compared with cuBLAS ("V6 is behind cuBLAS: ..."); and alone.
RATIO_WORDS = {results.PAYS: "is ahead of", results.COSTS: "is behind", results.WITHIN: "is within {band} of",
               results.UNRESOLVED: "is unresolved at {band} against"}  # fmt: skip
VERDICT_WORDS = {verdict: text.removeprefix("is ") for verdict, text in STEP_WORDS.items()}
# In running prose a ratio gets a plain word; the rule's verdict, band and interval live in the tables: a step ...
PROSE_STEP_WORDS = {results.PAYS: "a gain", results.COSTS: "a loss", results.WITHIN: "parity",
                    results.UNRESOLVED: "not resolved"}  # fmt: skip
# ... and an implementation against cuBLAS.
PROSE_RATIO_WORDS = {results.PAYS: "ahead", results.COSTS: "behind", results.WITHIN: "parity",
                     results.UNRESOLVED: "not resolved"}  # fmt: skip
UNITS = {  # kind: (format, unit); a count of elements, checks or wavefronts reads 12,345
    "tflops": ("{:.0f}", " TFLOPS"), "ms": ("{:.3f}", " ms"), "mhz": ("{:.0f}", " MHz"), "watts": ("{:.0f}", " W"),
    "mb": ("{:.0f}", " MB"), "gb": ("{:.0f}", " GB"), "pct": ("{:.0f}", "%"), "count": ("{:,}", ""),
}  # fmt: skip


def shape_text(shape: model.Shape | model.Problem | tuple[int, int, int]) -> str:
    """A problem size: "8192³" when square, else "8192×28672×4096"."""
    m, n, k = shape if isinstance(shape, tuple) else (shape.m, shape.n, shape.k)
    return f"{m}\u00b3" if m == n == k else f"{m}{TIMES}{n}{TIMES}{k}"


def ratio_text(interval: model.Interval) -> str:
    """A ratio with its interval, "0.97× [0.96, 0.98]" (a verdict beside it is the rule's, not this rounding's)."""
    return f"{interval.median:.2f}{TIMES} [{interval.low:.2f}, {interval.high:.2f}]"


def band_text(interval: model.Interval) -> str:
    """The band a verdict was taken against: "±1.5%" (none stated: ±0.0%)."""
    return f"\u00b1{100 * (interval.band or 0.0):.1f}%"


def words(table: dict[str, str], interval: model.Interval) -> str:
    """An interval's verdict in one of the tables above, with its band filled in."""
    return table[results.verdict(interval)].format(band=band_text(interval))


def verdict_word(interval: model.Interval) -> str:
    """The verdict alone: "pays", "costs", "within ±1.5%" or "unresolved at ±1.5%"."""
    return words(VERDICT_WORDS, interval)


def prose_word(table: dict[str, str], interval: model.Interval) -> str:
    """The plain word a sentence gives a ratio ("a gain", "behind", "parity", "not resolved"), by the rule."""
    return table[results.verdict(interval)]


def step_text(interval: model.Interval) -> str:
    """A step by the rule, for a table: "pays: 1.04× [1.02, 1.06]", "costs: ...", "within ±1.5%: ..." or
    "unresolved at ±1.5%: ..."."""
    return f"{words(VERDICT_WORDS, interval)}: {ratio_text(interval)}"


def vs_cublas_text(interval: model.Interval) -> str:
    """A ratio to cuBLAS by the rule: "is behind cuBLAS: 0.97× [0.96, 0.98]", "is within ±1.5% of cuBLAS: ..."."""
    return f"{words(RATIO_WORDS, interval)} cuBLAS: {ratio_text(interval)}"


def config_text(config: model.Config) -> str:
    """A tuned configuration: "block_m=128, block_n=256, ..."."""
    return ", ".join(f"{k}={v}" for k, v in config.items()) if config else "defaults (no tuning knobs)"


def kb_text(nbytes: int) -> str:
    """A size in shared memory: "48 KB" when a whole number of KB (1024 bytes), else "208.1 KB"."""
    return f"{nbytes // 1024} KB" if nbytes % 1024 == 0 else f"{nbytes / 1024:.1f} KB"


def unit_text(kind: str, value: float | None) -> str:
    """A value with its unit ("601 TFLOPS", "1755 MHz", "45%"), or "not recorded" for None."""
    return NOT_RECORDED if value is None else UNITS[kind][0].format(value) + UNITS[kind][1]


def number_word(n: int) -> str:
    """A small count as a word ("three"), a larger one in digits."""
    return NUMBER_WORDS[n] if 0 <= n < len(NUMBER_WORDS) else str(n)


def escape(text: str) -> str:
    """Plain text made safe inside reStructuredText (no stray emphasis, literal or reference)."""
    return re.sub(r"([\\*`|])", r"\\\1", text).replace("_ ", "\\_ ")


def shape_name(shape: tuple[int, int, int]) -> str:
    """A shape as names spell it: "4096" for 4096³, else "16384x8192x1024"."""
    return str(shape[0]) if len(set(shape)) == 1 else "x".join(map(str, shape))


def shape_of(token: str) -> tuple[int, int, int]:
    sizes = tuple(int(s) for s in token.split("x"))
    return sizes * 3 if len(sizes) == 1 else sizes  # type: ignore[return-value]


# A shape as the results file's free text may write it ("4096^3", "8192x8192x8192", "3000x5000x4096"), not inside
# a name ("v8:5000x3000x4096", ``...``): the generator prints every one as shape_text does.
SHAPE_IN_TEXT = re.compile(r"(?<![\w:.\-])(\d+)(?:\^3|x(\d+)x(\d+))(?![\w.]*\w)")


def shapes_in_text(text: str) -> str:
    """Free text with its shapes printed one way ("4096³", "3000×5000×4096"); ``literal`` spans are left alone."""
    parts = re.split(r"(``.*?``)", text, flags=re.S)
    for i in range(0, len(parts), 2):
        parts[i] = SHAPE_IN_TEXT.sub(lambda m: shape_text((int(m[1]), int(m[2] or m[1]), int(m[3] or m[1]))), parts[i])
    return "".join(parts)
