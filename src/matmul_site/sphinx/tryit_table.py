"""The ``results-tryit`` directive: a chapter's "Try it" table, from the results file (docutils work only).

Its timed try-it runs (steps runs after the chapter's version, titled "Try it: ..."), the recorded steps
rows that ``:recorded:`` names, and the edits with what the float64 check saw on the GPU.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.util.docutils import SphinxDirective

from matmul_site import captions, numbers, results, versions
from matmul_site.sphinx.results_nodes import caption_para, page_data, pending, table

NOT_MEASURED = numbers.NOT_MEASURED


class ResultsTryit(SphinxDirective):
    """A chapter's "Try it" outcomes: its timed try-it runs, recorded steps rows it points at, and its edits."""

    required_arguments = 1
    option_spec = {"recorded": directives.unchanged}

    def _timed_row(self, impl: str, row: dict[str, Any], kind: str) -> list[str | nodes.Node]:
        if row.get("step"):
            seen = f"{row['tflops']:.0f} TFLOPS; {numbers.verdict_text(row['step'])} over {row['step']['over']}"
        else:
            seen = f"{row['tflops']:.0f} TFLOPS: the baseline the other rows are paired with"
        change = nodes.inline()
        change += nodes.Text(f"{row['title']} ")
        change += nodes.literal(impl, impl)
        return [change, kind, seen]

    def run(self) -> list[nodes.Node]:
        version = self.arguments[0].lower()
        if version not in versions.names():
            raise self.error(f"results-tryit: unknown version {version!r}; known: {', '.join(versions.names())}")
        data = page_data(self.env)
        rows: list[list[str | nodes.Node]] = []
        runs = numbers.tryit_runs(data, version)
        for run in runs:
            for impl, row in run["rows"].items():
                if impl != results.CUBLAS:
                    rows.append(self._timed_row(impl, row, "timed"))
        for item in [s.strip() for s in self.options.get("recorded", "").split(",") if s.strip()]:
            scope, _, impl = item.rpartition("/")
            try:
                run = numbers.run_for(data, scope, impl)
            except numbers.SpecError as err:
                raise self.error(f"results-tryit: :recorded: {item}: {err}") from err
            except numbers.Missing:
                rows.append([nodes.literal(impl, impl), "recorded", NOT_MEASURED])
                continue
            if impl not in run["rows"]:
                rows.append([nodes.literal(impl, impl), "recorded", NOT_MEASURED])
                continue
            runs.append(run)
            rows.append(self._timed_row(impl, run["rows"][impl], f"recorded ({run['title']})"))
        for entry in numbers.tryit_entries(data, version):
            change = nodes.container()
            change += nodes.paragraph(text=entry["title"])
            diff = "\n".join(
                "\n".join([*(f"- {line}" for line in old.splitlines()), *(f"+ {line}" for line in new.splitlines())])
                for old, new in entry["edits"]
            )
            if diff:
                change += nodes.literal_block(diff, diff, language="diff")
            config = ", ".join(f"{k}={v}" for k, v in entry["config"].items())
            change += nodes.paragraph(text=f"with {config}")
            rows.append([change, "edit, checked", numbers.tryit_outcome_text(entry)])
        if not rows:
            return [pending(f"The try-its of {version.upper()} are {NOT_MEASURED}.")]
        result = table(["Change", "Kind", "What it did on the GPU"], rows, [40, 12, 38], "tryit")
        nodes_out: list[nodes.Node] = [result]
        if runs:
            nodes_out.append(caption_para(captions.steps_caption(data, runs)))
        return nodes_out
