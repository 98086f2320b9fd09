"""``.. budget-box:: v3``: a chapter's budget, computed from its sm_90a build record and the recorded ladder.

Every number comes from :mod:`matmul_data.budget` (occupancy, intensity, waves) and from the results
file (the clock the GPU ran at while this version was timed); nothing here is typed by hand.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

from matmul_data import budget, paths, results, versions
from matmul_site import facts

NOT_MEASURED = "not measured yet"


def budget_lines(version: str, record: dict[str, Any], data: dict[str, Any] | None) -> list[tuple[str, str]]:
    """(label, text) rows of one version's budget box."""
    build, config = budget.build_of(record, version)
    shape = tuple(data["problem"][k] for k in ("m", "n", "k")) if data else tuple(record["shape"])
    sm_count = data["gpu"]["sm_count"] if data else 132
    b = budget.budget(build, config, shape, sm_count)
    bm, bn, bk = config["block_m"], config["block_n"], config["block_k"]
    allows = ", ".join(f"{name} {count}" for name, count in b.by_resource.items() if name != "the 32-block limit")
    step_bytes = (bm + bn) * bk * 2
    grid = (
        f"{build.persistent_blocks} blocks, one per SM, each looping over tiles"
        if build.persistent_blocks
        else f"one block per tile, {b.resident_blocks} resident at a time ({b.blocks_per_sm} per SM x {sm_count} SMs)"
    )
    rows = [
        ("Block", f"{build.threads} threads ({build.threads // 32} warps), {build.registers} registers per thread "
                  f"(ptxas, sm_90a), {build.shared_bytes / 1024:.1f} KB of shared memory"),
        ("Blocks per SM", f"{b.blocks_per_sm}, limited by {b.limited_by} (alone, each would allow: {allows})"),
        ("Intensity", f"each {bm}x{bn}x{bk} K-step loads {step_bytes / 1024:.0f} KB by TMA for "
                      f"{2 * bm * bn * bk / 1e6:.1f} MFLOP: {b.flop_per_byte:.0f} FLOP per byte"),
        ("Waves", f"{b.tiles} tiles of {bm}x{bn} at {'x'.join(map(str, shape))}; {grid}: {b.waves:.2f} waves, "
                  f"the last filling {round(b.last_wave_fraction * b.resident_blocks)} of the {b.resident_blocks} "
                  "slots"),
    ]  # fmt: skip
    row = ((data or {}).get("ladder") or {}).get("rows", {}).get(version)
    if row is None or row.get("sm_clock_mhz") is None:
        rows.append(("Speed of light", f"at the measured clock: {NOT_MEASURED}"))
    else:
        # The same values and formats as the :fact: role, so every figure is the file's.
        rows.append(("Speed of light", f"at {facts.render(f'{version}.sm_clock', data)}, the SM clock while it "
                     f"was timed, the tensor cores peak at {facts.render(f'{version}.peak_at_clock', data)} "
                     f"({sm_count} SMs x {results.DENSE_FP16_FLOP_PER_CLOCK_PER_SM} FLOP per clock); it ran at "
                     f"{facts.render(f'{version}.tflops', data)}, "
                     f"{facts.render(f'{version}.peak_fraction', data)} of that"))  # fmt: skip
    return rows


class BudgetBox(SphinxDirective):
    """The budget of one version as a two-column table in a titled box."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        version = self.arguments[0]
        if version not in versions.names():
            raise self.error(f"budget-box: unknown version {version!r}; known: {', '.join(versions.names())}")
        self.env.note_dependency(str(budget.BUILD_RECORD))
        results_file = paths.results_file()
        if results_file is not None:
            self.env.note_dependency(str(results_file))
        try:
            record = budget.load_builds()
            if version not in record.get("versions", {}):  # a new chapter, before its first build check
                return [
                    nodes.paragraph(
                        text=f"The budget of {versions.label(version)} is not computed yet: its kernel is not in the "
                        "build record (python -m matmul_bench buildcheck --record)."
                    )
                ]
            rows = budget_lines(version, record, results.load_default())
        except (budget.BudgetError, results.ResultsError) as exc:
            raise self.error(f"budget-box {version}: {exc}") from exc
        table = nodes.table(classes=["budget-box"])
        group = nodes.tgroup(cols=2)
        table += group
        group += nodes.colspec(colwidth=20)
        group += nodes.colspec(colwidth=80)
        body = nodes.tbody()
        group += body
        for label, text in rows:
            body += nodes.row(
                "", nodes.entry("", nodes.paragraph(text=label)), nodes.entry("", nodes.paragraph(text=text))
            )
        box = nodes.topic(classes=["budget"])
        box += nodes.title(text=f"Budget: {versions.label(version)} on an H100/H200")
        box += table
        return [box]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("budget-box", BudgetBox)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
