"""The recorded benchmark results, one JSON file per GPU model under ``plots/results/``: the benchmark writes them,
the charts and the Sphinx build read them (pure Python: the docs build on a machine with no torch, Tilus or GPU).

Layout (schema 3)::

    schema, gpu, software, method     provenance of the whole file (method.earlier_runs, optional:
                                      {run_id: how that run was measured} for runs that predate the method)
    problem                           the ladder's shape, dtype and accumulation
    ladder                            one run: every version and cuBLAS, interleaved (a Run, below)
    sweep                             runs at other shapes, interleaved with cuBLAS: one figure per shape, and one
                                      more where a run timed the peers too (record --peers), another rotation
    steps                             runs of attempted changes after a version, kept or not
                                      (a run titled "Try it: ..." is a chapter's try-it, not a step)
    field                             (optional) runs at the field set's shapes (matmul_data.field), keyed like the
                                      sweep's (record --field)
    tryit                             (optional) outcomes of the chapters' try-it edits (a TryIt, below)

A Run is one interleaved session at one shape::

    run_id, date, git_commit, shape {m, n, k}, rounds, processes
    warmup_s, repeats, log            (optional) seconds of warm-up and calls timed per impl and round, and the raw
                                      samples' log (relative to plots/results); runs of method 3 have warmup (calls)
    rows {impl: Row}                  impl is "v<N>", "cublas", a peer of versions.PEERS or a variant's name
    after, title                      (steps only) the version the attempts start from, and what they try
    field {name, source, kind, half}  (field only) the FieldShape the run times
    peers_missing {impl: {version, error}}   (optional) peers asked for (record --peers) that could not run on
                                      that machine: the installed version (null: not installed) and the error;
                                      on a figure, its newest run's

A TryIt is one edit of a chapter's kernel file (specs/tryit.py), checked on the GPU::

    version, name, title              the chapter ("v5"), the edit's key and what it changes
    file, edits [[old, new], ...], config     what was run: the substitutions and the pinned configuration
    outcome                           "exact", "wrong", "hangs", "does not build" or "crashes"
    checks [{shape {m, n, k}, bad, nonfinite, max_abs_err}]   every check run (NaN-poisoned C against
                                      float64): elements outside tolerance, of them still NaN/inf, and the
                                      largest finite error (null: no finite element)
    error                             (hangs, does not build, crashes) the first line of what went wrong
    timeout_s                         (hangs) seconds the launch was given before the process was killed
    run_id, date, git_commit

A Row is one implementation in that run::

    latency_ms, tflops                median over every (process, round) sample
    ratio_to_cublas {median, low, high}   paired with the cuBLAS of the same round; 95% interval
    step {over, median, low, high}    (optional) paired ratio to another row of the same run:
                                      the previous version in the ladder, the baseline in steps
    sm_clock_mhz, power_w             medians sampled during this row's loop (null: not sampled, or not its own)
    busy                              (optional) the share of the timed loop spent in the kernel (the rest: L2
                                      flush, launch gaps); a clock or power is recorded only where it is 0.8 or more
    config                            the tuned configuration ({} for library calls)
    title                             what it is (a version's TITLE, a peer's label, a variant's change)
    counters                          (ladder and steps, optional) ncu: tensor pipe and DRAM throughput, %;
                                      DRAM bytes read; L2 hit rate, %
    kept                              (steps only) whether the change went into the next version
    wrong_elements                    (cuBLAS only, optional) present when cuBLAS failed its float64 check (at the
                                      timed shape or a check shape; as at N % 8 != 0): it is still timed, as the
                                      baseline, but inexact there; the elements outside tolerance at the timed
                                      shape, the most any process found (on a figure, any run); a kernel of ours
                                      that fails is never recorded, a peer that fails is in peers_missing

:mod:`matmul_data.model` holds it as typed objects (:func:`read`), key by key; :func:`validate` checks a dict
against it, and that derived numbers agree with what they come from.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Hashable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from matmul_data import files, hopper, model, paths, schema, stats
from matmul_data.schema import ResultsError, is_peer, run_key, times_peers, tryit_key, validate

# Re-exported with the names above: the results API.
CUBLAS, SCHEMA_VERSION, TRYIT_TITLE_PREFIX = schema.CUBLAS, schema.SCHEMA_VERSION, schema.TRYIT_TITLE_PREFIX
SECTIONS = schema.SECTIONS  # the lists of figures beside the ladder: "sweep", "steps", "field"
tflops = schema.tflops
T = TypeVar("T")


def slug(gpu_name: str) -> str:
    """File stem for a GPU model: "NVIDIA H100 80GB HBM3" -> "nvidia-h100-80gb-hbm3"."""
    stem = re.sub(r"[^a-z0-9]+", "-", gpu_name.lower()).strip("-")
    if not stem:
        raise ResultsError(f"GPU name {gpu_name!r} has no letters or digits to name a results file after")
    return stem


def path_for_gpu(gpu_name: str) -> Path:
    """Where the results of a GPU model are committed: plots/results/<slug>.json."""
    return paths.RESULTS_DIR / f"{slug(gpu_name)}.json"


def _read_json(path: Path) -> Any:
    """A results file's JSON; ResultsError when it is absent, unreadable or not JSON (what is wrong, not how to make
    one: that is the caller's to say, the site's render or the benchmark, as the data core names no command)."""
    if not path.is_file():
        raise ResultsError(f"{path}: no results file")
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ResultsError(f"{path}: cannot be read ({exc})") from exc
    except json.JSONDecodeError as exc:
        raise ResultsError(f"{path}: not valid JSON ({exc})") from exc


def _decode(path: Path, data: Any) -> model.Results:
    """A file's data decoded (:mod:`matmul_data.model`) and checked (:func:`validate`); errors name the file."""
    try:
        return schema.check(model.Results.from_json(data))
    except ResultsError as exc:
        raise ResultsError(f"{path}: {exc}") from exc


def load(path: Path) -> dict[str, Any]:
    """Read and validate a results file, as the dict it holds; ResultsError names the file and what is wrong."""
    path = Path(path)
    data = _read_json(path)
    _decode(path, data)
    return data


def read(path: Path, *, fresh: bool = False) -> model.Results:
    """Read and validate a results file as typed objects (:mod:`matmul_data.model`); read once per path, mtime and
    size, so every caller shares the same frozen objects (``fresh``: read it anew, as a writer does)."""
    path = Path(path)
    if fresh or not path.is_file():
        return _decode(path, _read_json(path))  # the error that says how to create one
    stat = path.stat()
    return _read_cached(str(path.resolve()), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4)
def _read_cached(path: str, mtime_ns: int, size: int) -> model.Results:
    return _decode(Path(path), _read_json(Path(path)))


def default_path() -> Path | None:
    """The results file the site shows (:func:`matmul_data.paths.results_file`), None when there is none yet; when
    it is not clear which, ResultsError says how to choose."""
    try:
        return paths.results_file()
    except paths.ResultsFileError as exc:
        raise ResultsError(str(exc)) from exc


def read_default() -> model.Results | None:
    """The results the site shows, as typed objects (:func:`read`: once per path, mtime and size, as a docs build
    asks on every page), or None when there are none yet."""
    path = default_path()
    return None if path is None else read(path)


def load_default() -> dict[str, Any] | None:
    """The results the site shows, as the dict the file holds (a fresh copy, encoded from :func:`read_default`'s
    cached objects), or None when there are none yet."""
    found = read_default()
    return None if found is None else found.to_json()


def merge(existing: model.Results | None, new: model.Results) -> model.Results:
    """Fold a new run into an existing file: provenance (gpu, software, method) from the new file; a new ladder
    replaces the old one whole (one session, never stitched from two); sweep and field runs are replaced by shape
    and whether they timed the peers (:func:`schema.run_key`), steps runs by (after, title, shape) and try-it
    outcomes by (version, name); what the new file did not measure is kept, and a list neither file has stays
    absent."""
    if existing is None:
        return new
    if existing.gpu.name != new.gpu.name:
        raise ResultsError(
            f"cannot merge results of {new.gpu.name!r} into a file for {existing.gpu.name!r}: one file per GPU model"
        )
    merged = new
    if new.ladder is None and existing.ladder is not None:
        if existing.problem != new.problem:
            raise ResultsError("cannot keep a ladder measured at another problem size: rerun the ladder")
        merged = merged.put(ladder=existing.ladder)
    keys = {section: functools.partial(run_key, section) for section in SECTIONS} | {"tryit": tryit_key}
    for section, key in keys.items():
        if existing.has(section) or new.has(section):
            merged = merged.put(**{section: merge_entries(getattr(existing, section), getattr(new, section), key)})
    return merged


def merge_entries(existing: Sequence[T], new: Sequence[T], key: Callable[[T], Hashable]) -> tuple[T, ...]:
    """A new entry replaces the one with its ``key``, in place; the rest are kept, the other new ones appended."""
    fresh = {key(entry): entry for entry in new}
    kept = [fresh.pop(key(entry), entry) for entry in existing]
    return (*kept, *fresh.values())


def map_figures(data: model.Results, change: Callable[[model.Figure], model.Figure]) -> model.Results:
    """The file with ``change`` made to every figure (the ladder, then each section's); a list it lacks stays so."""
    if data.ladder is not None:
        data = data.put(ladder=change(data.ladder))
    for section in (s for s in SECTIONS if data.has(s)):
        data = data.put(**{section: tuple(change(figure) for figure in getattr(data, section))})
    return data


def write_atomic(path: Path, data: model.Results) -> None:
    """Validate, then replace ``path`` in one step: readers see the old file or the new one, never half."""
    path = Path(path)
    encoded = data.to_json()
    try:
        validate(encoded)
    except ResultsError as exc:
        raise ResultsError(f"{path}: refusing to write invalid results: {exc}") from exc
    files.write_atomic(path, (json.dumps(encoded, indent=2, allow_nan=False) + "\n").encode("utf-8"))


# --- reading: everything outside the benchmark reads runs and rows through these (a row's own fields from the row
# they return), so that a change of layout is made here.

PAYS, COSTS, WITHIN, UNRESOLVED = stats.PAYS, stats.COSTS, stats.WITHIN, stats.UNRESOLVED
# The method version from which each implementation warms up for seconds of its own loop (docs/method.rst): runs
# before it neither quote a clock nor read as one kernel, one number.
WARMUP_METHOD = 4
METHOD_VERSION = 4  # the benchmark's method now; runs merge into a figure only with runs of the same method


Data = model.Results | None  # a results file, or None where there is none yet (the site says "not measured yet")


def is_proof_run(run: model.Run) -> bool:
    """Whether a steps run is the warm-up's proof (one kernel beside different neighbours), not an attempt."""
    return (run.title or "").startswith(schema.PROOF_TITLE_PREFIX)


def is_tryit_run(run: model.Run) -> bool:
    """Whether a steps run times a chapter's try-it changes (titled "Try it: ...") rather than attempted steps."""
    return (run.title or "").startswith(TRYIT_TITLE_PREFIX)


def verdict(ratio: model.Interval) -> str:
    """A ratio's verdict, PAYS, COSTS, WITHIN or UNRESOLVED: the one the file states (taken against the interval's
    ``band``), else the rule against 1.0 itself."""
    return ratio.verdict or stats.band_verdict(ratio.low, ratio.high, 0.0)


def ladder(data: Data) -> model.Figure | None:
    """The ladder run (every version and cuBLAS at the problem size), or None when it is not measured yet."""
    return None if data is None else data.ladder


def ladder_row(data: Data, impl: str) -> model.Row | None:
    """One implementation's row of the ladder, or None when it is not measured yet."""
    run = ladder(data)
    return None if run is None else run.rows.get(impl)


def ladder_steps(data: Data) -> list[tuple[str, model.Interval]]:
    """(version, step over the previous version) for every ladder row that has one, in version order."""
    run = ladder(data)
    rows = {} if run is None else run.rows
    ours = sorted((i for i in rows if re.fullmatch(r"v\d+", i)), key=lambda i: int(i[1:]))
    return [(i, step) for i in ours if (step := rows[i].step) is not None]


def shape_figures(data: Data, section: str) -> list[model.Figure]:
    """A section's ("sweep", "field") figure for each shape, in the file's order: the one without peers, or, at a
    shape only a run with the peers timed, that one."""
    figures = () if data is None else getattr(data, section)
    plain = {f.shape for f in figures if not times_peers(f)}
    return [f for f in figures if not times_peers(f) or f.shape not in plain]


def sweep_runs(data: Data) -> list[model.Figure]:
    """The sweep: one figure per shape (:func:`shape_figures`); the peers' runs beside them: :func:`peer_runs`."""
    return shape_figures(data, "sweep")


def field_runs(data: Data, half: str | None = None) -> list[model.Figure]:
    """The field set's figure per shape (:func:`shape_figures`), of one half ("fitted" or "held-out") or all."""
    return [r for r in shape_figures(data, "field") if half is None or (r.field is not None and r.field.half == half)]


def peer_runs(data: Data, section: str) -> list[model.Figure]:
    """The figures of a section ("sweep", "field") whose runs timed the peers too, a rotation of their own, that
    stand beside the shape's figure without them (where there is none, one stands for the shape: shape_figures)."""
    figures = () if data is None else getattr(data, section)
    return [f for f in figures if times_peers(f) and f not in shape_figures(data, section)]


def beside(data: Data, section: str, figure: model.Figure) -> bool:
    """Whether a figure is one of :func:`peer_runs`: then only its peers' rows are shown (the versions' come from
    the figure without peers)."""
    return figure in peer_runs(data, section)


def peer_rows(data: Data, section: str, shape: model.Shape) -> dict[str, model.Row]:
    """The peers' rows at a shape of a section from the run beside its figure, each against that run's cuBLAS (none
    where no such run exists): what a chart shows beside the versions' replicated figure."""
    found = [r for r in peer_runs(data, section) if r.shape == shape]
    return {} if not found else {i: row for i, row in found[0].rows.items() if is_peer(i)}


def inexact_baseline(run: model.Run) -> int | None:
    """How many elements cuBLAS got wrong at a run's shape when it failed its float64 check, else None."""
    return run.rows[CUBLAS].wrong_elements


def steps_runs(data: Data, after: str | None = None, *, tryit: bool = False) -> list[model.Figure]:
    """The steps runs (after one version, or all), either the ladder's attempts or the chapters' timed try-its."""
    runs = [r for r in (() if data is None else data.steps) if not is_proof_run(r)]
    return [r for r in runs if (after is None or r.after == after) and is_tryit_run(r) == tryit]


def proof_runs(data: Data) -> list[model.Figure]:
    """The warm-up's proof: the steps runs that time one kernel and cuBLAS beside different neighbours."""
    return [r for r in (() if data is None else data.steps) if is_proof_run(r)]


def steps_row(
    data: Data, impl: str, shape: tuple[int, int, int] | None = None
) -> tuple[model.Figure, model.Row] | None:
    """(run, row) of a row of the steps runs (try-its included), by its name and optionally the run's shape; where
    several runs hold the name, the one in which it is a step wins, then the latest run."""
    found = [
        (run, run.rows[impl])
        for run in (() if data is None else data.steps)
        if impl in run.rows and (shape is None or run.shape.mnk == shape) and not is_proof_run(run)
    ]
    found.sort(key=lambda pair: (pair[1].step is not None, pair[0].run_id))
    return found[-1] if found else None


def tryit_entries(data: Data, version: str) -> list[model.TryIt]:
    """The recorded try-it edits of one chapter, in the file's order."""
    return [e for e in (() if data is None else data.tryit) if e.version == version]


def peak_tflops_at(data: model.Results, sm_clock_mhz: float) -> float:
    """The file's GPU's dense fp16 tensor-core peak at a clock (:func:`matmul_data.hopper.peak_tflops`)."""
    return hopper.peak_tflops(data.gpu.sm_count, sm_clock_mhz)


def row_peak_tflops(data: model.Results, row: model.Row) -> float | None:
    """The peak at the clock sampled inside a row's timed kernels; None when none was sampled, or when the row is
    ``suspect`` (its implied efficiency is implausible, so its clock reading is not a basis for another number)."""
    if row.suspect or row.sm_clock_mhz is None:
        return None
    return peak_tflops_at(data, round(row.sm_clock_mhz))  # at the clock as printed, so a reader's product agrees
