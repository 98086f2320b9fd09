"""The chapters' try-it edits in words: which are recorded for a chapter, and what each did on the GPU.

Torch-free and docutils-free, like :mod:`matmul_site.numbers`, which serves these through the
``tryit/<version>`` scope; the ``results-tryit`` directive tabulates them.
"""

from __future__ import annotations

from typing import Any

from matmul_site import results
from matmul_site.numfmt import shape_text


def tryit_entries(data: dict[str, Any] | None, version: str) -> list[dict[str, Any]]:
    """The recorded try-it edits of one chapter, in the file's order."""
    return [e for e in (data or {}).get("tryit", []) if e["version"] == version]


def tryit_runs(data: dict[str, Any] | None, version: str) -> list[dict[str, Any]]:
    """The steps runs that time a chapter's try-it changes (after that version, titled "Try it: ...")."""
    return [r for r in (data or {}).get("steps", []) if r["after"] == version and results.is_tryit_run(r)]


def _check_summary(checks: list[dict[str, Any]]) -> str:
    counts: dict[str, int] = {}
    for check in checks:
        counts[shape_text(check["shape"])] = counts.get(shape_text(check["shape"]), 0) + 1
    return ", ".join(f"{n} at {shape}" for shape, n in counts.items())


def tryit_outcome_text(entry: dict[str, Any]) -> str:
    """What an edit did, in words: "exact in all 5 checks (...)", "wrong in 2 of 5 checks: ...", "hangs: ..."."""
    checks, outcome = entry["checks"], entry["outcome"]
    if outcome == "exact":
        return f"exact in all {len(checks)} checks ({_check_summary(checks)})"
    if outcome == "wrong":
        wrong = [c for c in checks if c["bad"]]
        worst = max(wrong, key=lambda c: c["bad"])
        size = worst["shape"]["m"] * worst["shape"]["n"]
        still = f", {worst['nonfinite']:,} of them still NaN or inf" if worst["nonfinite"] else ""
        errs = [c["max_abs_err"] for c in wrong if c["max_abs_err"] is not None]
        largest = f"; largest finite error {max(errs):.3g}" if errs else ""
        return (
            f"wrong in {len(wrong)} of {len(checks)} checks ({_check_summary(checks)}): up to {worst['bad']:,} of "
            f"{size:,} elements outside tolerance{still}{largest}"
        )
    return f"{outcome}: {entry['error']}"


# ``.. results-when:: tryit/v5/release-before-wait.result exact``: a sentence shown only for that outcome.
TRYIT_CONDITIONS = {"exact": "exact", "wrong": "wrong", "hangs": "hangs", "does-not-build": "does not build",
                    "crashes": "crashes"}  # fmt: skip


def tryit_holds(data: dict[str, Any] | None, spec: str, condition: str) -> bool:
    """Whether a try-it edit's recorded outcome is ``condition`` (or is measured / not measured at all)."""
    from matmul_site import numbers  # numbers serves this module's texts: imported here, not at the top

    scope, name, field, _ = numbers._split(spec)
    if field != "result" or condition not in (*TRYIT_CONDITIONS, "measured", "not-measured"):
        raise numbers.SpecError(
            f"{spec} {condition}: use tryit/<version>/<edit>.result and {', '.join(TRYIT_CONDITIONS)}"
        )
    outcome = numbers.render(data, spec)
    if condition in ("measured", "not-measured"):
        return (outcome != numbers.NOT_MEASURED) == (condition == "measured")
    return outcome == TRYIT_CONDITIONS[condition]
