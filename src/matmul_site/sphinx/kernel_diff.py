"""What changed, as code: the whole diff of a version's kernel file against the previous version's.

``.. kernel-diff:: v3`` renders a collapsed ``<details>`` whose summary names the two files and counts the lines
added and removed, and whose body is the unified diff as a ``diff`` code block (it scrolls in its own box on a
narrow screen). The previous version is found by convention; the page is rebuilt when either file changes.
"""

from __future__ import annotations

import difflib

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective
from sphinx.util.typing import ExtensionMetadata
from sphinx.writers.html5 import HTML5Translator

from matmul_data import paths, versions


class details(nodes.General, nodes.Element):  # noqa: N801 (docutils names node classes in lower case)
    """A collapsible block: ``<details>`` with its first child, a :class:`summary`, always shown."""


class summary(nodes.TextElement):  # noqa: N801
    """The line that a :class:`details` shows while collapsed."""


def kernel_diff(version: str) -> tuple[str, str, int, int]:
    """The unified diff of ``version``'s kernel file against the previous version's: (previous version, diff text,
    lines added, lines removed). VersionError for the first version or an unknown one."""
    before = versions.previous(version)
    if before is None:
        raise versions.VersionError(f"{version} is the first version: there is nothing to compare it with")
    after = versions.get(version)
    old, new = (v.path.read_text(encoding="utf-8").splitlines(keepends=True) for v in (before, after))
    names = [v.path.relative_to(paths.ROOT).as_posix() for v in (before, after)]
    lines = list(difflib.unified_diff(old, new, fromfile=names[0], tofile=names[1], n=3))
    added = sum(1 for line in lines[2:] if line.startswith("+"))  # past the ---/+++ header
    removed = sum(1 for line in lines[2:] if line.startswith("-"))
    text = "".join(line if line.endswith("\n") else line + "\n" for line in lines)
    return before.name, text, added, removed


class KernelDiff(SphinxDirective):
    """``.. kernel-diff:: v3``: the whole diff of matmul_v3.py against matmul_v2.py, collapsed."""

    required_arguments = 1

    def run(self) -> list[nodes.Node]:
        version = self.arguments[0]
        try:
            before, text, added, removed = kernel_diff(version)
        except versions.VersionError as err:
            raise self.error(f"kernel-diff: {err}") from err
        for name in (before, version):
            self.env.note_dependency(str(versions.get(name).path))
        files = f"matmul_{version}.py against matmul_{before}.py"
        line = f"The whole diff of {files}: {added} lines added, {removed} removed"
        block = nodes.literal_block(text, text, language="diff", classes=["kernel-diff"])
        self.set_source_info(block)
        return [details("", summary(line, line), block, classes=["kernel-diff"])]


def visit_html(self: HTML5Translator, node: nodes.Element) -> None:
    """``<details>`` on a line of its own, ``<summary>`` followed by its text."""
    self.body.append(self.starttag(node, node.tagname, suffix="" if isinstance(node, summary) else "\n"))


def depart_html(self: HTML5Translator, node: nodes.Element) -> None:
    self.body.append(f"</{node.tagname}>\n")


def setup(app: Sphinx) -> ExtensionMetadata:
    app.add_node(details, html=(visit_html, depart_html))
    app.add_node(summary, html=(visit_html, depart_html))
    app.add_directive("kernel-diff", KernelDiff)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
