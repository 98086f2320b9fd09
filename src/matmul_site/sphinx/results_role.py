"""The pages' one way to the results file: the ``fact`` role and directive (docutils work only).

::

    :fact:`v3.tflops`          an inline fact: "601 TFLOPS" (:mod:`matmul_site.facts`)
    .. fact:: v3.performance   a table or chart fact (:mod:`matmul_site.sphinx.fact_blocks`)
       :alt: ...               (charts) the image's text alternative

docs/writing.rst lists every fact. No results file, or a value the file lacks, prints "not measured
yet"; a file that does not load stops the build with its name and the problem; an unknown name is an
error at its line.
"""

from __future__ import annotations

from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective, SphinxRole

from matmul_site import facts
from matmul_site.sphinx import fact_blocks
from matmul_site.sphinx.results_nodes import load_checked, page_data, value_node


class FactRole(SphinxRole):
    """``:fact:`name```: the value of an inline fact."""

    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        try:
            value = facts.render(self.text, page_data(self.env))
        except facts.UnknownFact as err:
            msg = self.inliner.reporter.error(str(err), line=self.lineno)
            return [self.inliner.problematic(self.rawtext, self.rawtext, msg)], [msg]
        if self.text.endswith(".config") and value != facts.NOT_MEASURED:
            return [nodes.literal(value, value, classes=["result"])], []
        return [value_node(value)], []


class FactDirective(SphinxDirective):
    """``.. fact:: name``: a table or chart fact."""

    required_arguments = 1
    option_spec = {"alt": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        try:
            found, args = fact_blocks.find(self.arguments[0])
        except facts.UnknownFact as err:
            raise self.error(str(err)) from err
        return found.render(self, page_data(self.env), **args)


def check_at_start(app: Sphinx) -> None:
    load_checked()  # fail at the start of the build, with the file's name, not in the middle of a page


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", check_at_start)
    app.add_role("fact", FactRole())
    app.add_directive("fact", FactDirective)
    return {"version": "3", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 3}
