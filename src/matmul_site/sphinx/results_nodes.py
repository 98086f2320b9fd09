"""Docutils helpers of the facts extension: the data for a page, inline values, tables, links."""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.errors import ExtensionError

from matmul_site import captions, paths, results, versions
from matmul_site.numfmt import NOT_MEASURED, NOT_RECORDED

Cell = str | nodes.Node


def load_checked() -> dict[str, Any] | None:
    """The results the site shows (read once per content); ExtensionError with the file's name when unusable."""
    try:
        return results.load_default()
    except results.ResultsError as err:
        raise ExtensionError(f"the results file cannot be used: {err}") from err


def page_data(env: Any) -> dict[str, Any] | None:
    """The results, noted as a dependency of the page being read (so a new file re-renders it)."""
    path = paths.results_file()
    env.note_dependency(str(path if path is not None else paths.RESULTS_DIR))
    return load_checked()


def value_node(value: str) -> nodes.inline:
    classes = ["result", "not-measured"] if value in (NOT_MEASURED, NOT_RECORDED) else ["result"]
    return nodes.inline(value, value, classes=classes)


def table(header: list[str], rows: list[list[Cell]], widths: list[int], kind: str) -> nodes.table:
    """A table of the site's style; a str cell is a value (styled "not measured" when it says so)."""
    result = nodes.table(classes=["results-table", kind])
    group = nodes.tgroup(cols=len(header))
    result += group
    group += [nodes.colspec(colwidth=width) for width in widths]
    for section, lines in ((nodes.thead(), [[nodes.Text(t) for t in header]]), (nodes.tbody(), rows)):
        group += section
        for values in lines:
            row = nodes.row()
            for value in values:
                row += nodes.entry("", nodes.paragraph("", "", value_node(value) if isinstance(value, str) else value))
            section += row
    return result


def impl_cell(env: Any, impl: str) -> nodes.Node:
    """An implementation's name; a version's links to its chapter."""
    if impl not in versions.names():
        return value_node(versions.label(impl))
    ref = addnodes.pending_xref(
        "", refdomain="std", reftype="doc", reftarget=f"/chapters/{impl}", refexplicit=True, refdoc=env.docname
    )
    ref += nodes.inline(text=versions.get(impl).heading)
    return ref


def method_link() -> nodes.Node:
    """The link that ends every caption: the method is explained on the method page, and only there."""
    ref = addnodes.pending_xref("", refdomain="std", reftype="doc", reftarget="/method", refexplicit=True)
    ref += nodes.inline(captions.METHOD_LINK, captions.METHOD_LINK)
    return ref


def caption_para(text: str) -> nodes.paragraph:
    """A table's caption (matmul_site.captions: what and which run), then the link to the method page."""
    para = nodes.paragraph("", "", classes=["results-caption"])
    para += nodes.Text(f"{text} ")
    para += method_link()
    para += nodes.Text(".")
    return para


def pending(text: str) -> nodes.paragraph:
    return nodes.paragraph(text, text, classes=["chart-pending"])
