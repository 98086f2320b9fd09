"""The results file's schema (its layout is documented in :mod:`matmul_data.results`, which re-exports what its
callers use): its constants, and the checks of what the typed model (:mod:`matmul_data.model`, which decodes the
structure) cannot say: derived numbers that must agree with what they come from, and cross-references."""

from __future__ import annotations

import math
import re
from typing import Any

from matmul_data import stats, versions
from matmul_data.decoding import ResultsError, invalid, missing
from matmul_data.model import Figure, Interval, Results, Row, Run, TryIt

SCHEMA_VERSION = 3
VERDICTS = (stats.PAYS, stats.COSTS, stats.WITHIN, stats.UNRESOLVED)
CUBLAS = "cublas"
# A steps run with this title prefix is a chapter's "Try it" (specs/tryit.py), not a step of the ladder.
TRYIT_TITLE_PREFIX = "Try it: "
PROOF_TITLE_PREFIX = "the warm-up's proof"  # steps runs that test the method (docs/method.rst), not a kernel
TRYIT_OUTCOMES = ("exact", "wrong", "hangs", "does not build", "crashes")
# The lists of figures beside the ladder, in the file's order; "field" is optional (files before it lack the key).
SECTIONS = ("sweep", "steps", "field")

# Derived numbers must agree with the ones they come from (they are computed, never typed).
_REL_TOL = 1e-3


# --- validation: the structure is decoded by matmul_data.model; what its kinds cannot say is checked here ---------


def _close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_REL_TOL)


def tflops(m: int, n: int, k: int, ms: float) -> float:
    """Dense matmul throughput: 2*M*N*K floating-point operations in ``ms`` milliseconds."""
    return 2.0 * m * n * k / (ms * 1e-3) / 1e12


def _check_interval(value: Interval, field: str, band: float | None) -> None:
    if not value.low <= value.median <= value.high:
        raise invalid(field, "must have low <= median <= high", value.to_json())
    if value.verdict is not None:
        if value.verdict not in VERDICTS:
            raise invalid(f"{field}.verdict", f"must be one of {', '.join(VERDICTS)}", value.verdict)
        rule = None if band is None else stats.band_verdict(value.low, value.high, band)
        if band is not None and (value.band != band or value.verdict != rule):
            raise invalid(f"{field}.verdict", f"does not follow the band of {band:.3f}", value.to_json())


def _check_row(impl: str, row: Row, run: Run, field: str, *, steps: bool, band: float | None) -> None:
    m, n, k = run.shape.mnk
    if not _close(row.tflops, tflops(m, n, k, row.latency_ms)):
        raise invalid(f"{field}.tflops", f"does not match latency_ms at {m}x{n}x{k}", row.to_json())
    _check_interval(row.ratio_to_cublas, f"{field}.ratio_to_cublas", band)
    ratio = row.ratio_to_cublas
    if impl == CUBLAS and any(not _close(part, 1.0) for part in (ratio.median, ratio.low, ratio.high)):
        raise invalid(f"{field}.ratio_to_cublas", "must be exactly 1 for cuBLAS itself", ratio.to_json())
    if row.step is not None:
        _check_interval(row.step, f"{field}.step", band)
        if row.step.over is None:
            raise missing(f"{field}.step.over")
        if row.step.over not in run.rows or row.step.over == impl:
            raise invalid(f"{field}.step.over", "must name another row of the same run", row.step.over)
    if steps and impl != CUBLAS and row.kept is None:  # a step's, not cuBLAS's
        raise missing(f"{field}.kept")
    if impl != CUBLAS and row.wrong_elements is not None:  # ours and the peers are never timed when wrong
        raise invalid(f"{field}.wrong_elements", "is the baseline's alone (cublas)", row.wrong_elements)


def _check_run(run: Run, field: str, *, steps: bool = False, band: float | None = None) -> None:
    if steps:
        for name in ("after", "title"):
            if getattr(run, name) is None:
                raise missing(f"{field}.{name}")
    if CUBLAS not in run.rows:
        raise ResultsError(f"field {field + '.rows'!r} has no cublas row: every ratio is paired with it")
    for impl, row in run.rows.items():
        _check_row(impl, row, run, f"{field}.rows.{impl}", steps=steps, band=band)
    for impl in run.peers_missing or {}:
        if impl in run.rows or impl == CUBLAS:
            raise invalid(
                f"{field}.peers_missing.{impl}", "names a row of the run: a peer is either timed or missing", impl
            )


def _check_figure(figure: Figure, field: str, *, steps: bool = False, band: float | None = None) -> None:
    """A figure: its merged rows (shaped like a run's), and ``runs``, the independent runs they merge; every merged
    interval must hold each run's own median (the interval a second run must fall in)."""
    _check_run(figure, field, steps=steps, band=band)
    if figure.peers_missing != figure.runs[-1].peers_missing:
        shown = None if figure.peers_missing is None else {k: v.to_json() for k, v in figure.peers_missing.items()}
        raise invalid(f"{field}.peers_missing", "must be its newest run's", shown)
    for index, run in enumerate(figure.runs):
        where = f"{field}.runs[{index}]"
        _check_run(run, where, steps=steps)
        if set(run.rows) != set(figure.rows):
            raise invalid(
                f"{where}.rows", "must time the same implementations as the figure (one rotation)", run.to_json()
            )
        if run.shape != figure.shape:
            raise invalid(f"{where}.shape", "must be the figure's shape", run.shape.to_json())
        for impl, row in run.rows.items():
            merged_row = figure.rows[impl]
            for key, own, merged in (("ratio_to_cublas", row.ratio_to_cublas, merged_row.ratio_to_cublas),
                                     ("step", row.step, merged_row.step)):  # fmt: skip
                if own is None or merged is None or merged.low <= own.median <= merged.high:
                    continue
                problem = f"lies outside the merged interval [{merged.low:.4f}, {merged.high:.4f}]"
                raise invalid(f"{where}.rows.{impl}.{key}.median", problem, own.median)


def _check_tryit(entry: TryIt, field: str) -> None:
    if not re.fullmatch(r"v\d+", entry.version):
        raise invalid(f"{field}.version", "must be a version name v<N>", entry.version)
    outcome = entry.outcome
    if outcome not in TRYIT_OUTCOMES:
        raise invalid(f"{field}.outcome", f"must be one of {', '.join(TRYIT_OUTCOMES)}", outcome)
    if not entry.edits and not entry.config:
        raise invalid(field, "changes nothing: give edits or a config", entry.to_json())
    for i, one in enumerate(entry.checks):
        where, elements = f"{field}.checks[{i}]", one.shape.m * one.shape.n
        if not one.nonfinite <= one.bad <= elements:
            raise invalid(where, "must have nonfinite <= bad <= m * n", one.to_json())
        if one.max_abs_err is None and one.nonfinite < elements:
            raise invalid(f"{where}.max_abs_err", "may be null only when no element is finite", one.to_json())
    # The outcome must follow from the checks (it is derived, never typed).
    wrong = any(c.bad for c in entry.checks)
    if outcome == "exact" and (not entry.checks or wrong):
        raise invalid(f"{field}.outcome", "is exact only when checks ran and none found a bad element", outcome)
    if outcome == "wrong" and not wrong:
        raise invalid(f"{field}.outcome", "is wrong only when a check found bad elements", outcome)
    if outcome in ("hangs", "does not build", "crashes"):
        if entry.error is None:
            raise invalid(f"{field}.error", f"must say what went wrong when the outcome is {outcome}", None)
        if wrong:
            raise invalid(f"{field}.outcome", f"cannot be {outcome} when a check already found bad elements", outcome)
    if outcome == "does not build" and entry.checks:
        raise invalid(f"{field}.checks", "must be empty when the kernel did not build", entry.to_json()["checks"])
    if outcome == "hangs" and entry.timeout_s is None:
        raise invalid(f"{field}.timeout_s", "must give the seconds the launch was allowed when it hangs", None)


def tryit_key(entry: TryIt) -> tuple[str, str]:
    """What identifies a try-it entry: (version, name); a newer entry with the same key replaces it."""
    return (entry.version, entry.name)


def validate(data: dict[str, Any]) -> None:
    """Check a results dict against the schema; ResultsError names the first bad field."""
    check(Results.from_json(data))


def check(results: Results) -> Results:
    """Check what the structure cannot say (derived numbers, cross-references) of a decoded file; returns it."""
    if results.schema != SCHEMA_VERSION:
        raise invalid("schema", f"must be {SCHEMA_VERSION}, the only schema this code reads", results.schema)
    gpu = results.gpu
    if (gpu.published_dense_fp16_tflops is None) != (gpu.published_source is None):
        raise invalid(
            "gpu.published_source", "must be given exactly when published_dense_fp16_tflops is", gpu.to_json()
        )
    method = results.method
    if isinstance(method.warmup, str) and method.warmup_s is None:  # what the warm-up is, and its seconds
        raise missing("method.warmup_s")
    band = None if method.verdicts is None else method.verdicts.band
    if results.ladder is not None:
        _check_figure(results.ladder, "ladder", band=band)
        problem = results.problem
        if results.ladder.shape.mnk != (problem.m, problem.n, problem.k):
            raise invalid("ladder.shape", "must be the problem's shape", results.ladder.shape.to_json())
    for name in SECTIONS:
        seen: set[tuple[Any, ...]] = set()
        for index, figure in enumerate(getattr(results, name)):
            _check_figure(figure, f"{name}[{index}]", steps=name == "steps", band=band)
            key = run_key(name, figure)
            if key in seen:
                raise invalid(f"{name}[{index}]", "repeats the key of an earlier run", key)
            seen.add(key)
    entries: set[tuple[str, str]] = set()
    for index, entry in enumerate(results.tryit):
        _check_tryit(entry, f"tryit[{index}]")
        if tryit_key(entry) in entries:
            raise invalid(f"tryit[{index}]", "repeats the (version, name) of an earlier entry", tryit_key(entry))
        entries.add(tryit_key(entry))
    return results


def is_peer(impl: str) -> bool:
    """Whether an implementation is a peer that record --peers adds (cuBLAS, the baseline, is not)."""
    return impl in versions.PEERS and impl != versions.CUBLAS


def times_peers(figure: Run) -> bool:
    """Whether a run times peers beside our versions (record --peers): a rotation of its own."""
    return any(is_peer(impl) for impl in figure.rows)


def run_key(section: str, figure: Run) -> tuple[Any, ...]:
    """What identifies a run in its section: (after, title, shape) (steps); its shape and whether it times peers
    (sweep, field), so that a run with the peers, another rotation, stands beside the replicated runs without them
    instead of replacing them."""
    return (
        (figure.after, figure.title, figure.shape.mnk)
        if section == "steps"
        else (figure.shape.mnk, times_peers(figure))
    )
