"""Docutils helpers of the results extension: the data for a page, inline values, tables, links."""

from __future__ import annotations

from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

from matmul_site import captions, numbers, paths, results, versions

NOT_MEASURED = numbers.NOT_MEASURED
NOT_RECORDED = numbers.NOT_RECORDED


# ---------------------------------------------------------------------------- the data, per build


def load_checked() -> dict[str, Any] | None:
    """The results the site shows (cached by path and mtime in numbers.load); ExtensionError when unusable."""
    try:
        return numbers.load_default()
    except results.ResultsError as err:
        raise ExtensionError(f"the results file cannot be used: {err}") from err


def check_at_start(app: Sphinx) -> None:
    load_checked()  # fail at the start of the build, with the file's name, not in the middle of a page


def page_data(env: Any) -> dict[str, Any] | None:
    path = paths.results_file()
    env.note_dependency(str(path if path is not None else paths.RESULTS_DIR))
    return load_checked()


def value_node(value: str) -> nodes.inline:
    classes = ["result", "not-measured"] if value in (NOT_MEASURED, NOT_RECORDED) else ["result"]
    return nodes.inline(value, value, classes=classes)


# ---------------------------------------------------------------------------- tables


def cell(content: str | nodes.Node) -> nodes.entry:
    cell = nodes.entry()
    cell += nodes.paragraph("", "", value_node(content) if isinstance(content, str) else content)
    return cell


def table(header: list[str], rows: list[list[str | nodes.Node]], widths: list[int], kind: str) -> nodes.table:
    table = nodes.table(classes=["results-table", kind])
    group = nodes.tgroup(cols=len(header))
    table += group
    for width in widths:
        group += nodes.colspec(colwidth=width)
    head = nodes.thead()
    group += head
    row = nodes.row()
    for title in header:
        row += cell(nodes.Text(title))
    head += row
    body = nodes.tbody()
    group += body
    for values in rows:
        row = nodes.row()
        for value in values:
            row += cell(value)
        body += row
    return table


def doc_link(env: Any, name: str, text: str) -> nodes.Node:
    ref = addnodes.pending_xref(
        "", refdomain="std", reftype="doc", reftarget=f"/chapters/{name}", refexplicit=True, refdoc=env.docname
    )
    ref += nodes.inline(text, text)
    return ref


def impl_cell(env: Any, impl: str) -> nodes.Node:
    if versions.is_version_name(impl) and impl in versions.names():
        return doc_link(env, impl, versions.get(impl).heading)
    return value_node(versions.label(impl))


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
