"""Link previews show the page's chart: version N's chart for its chapter and gallery page, else the ladder chart.

sphinxext-opengraph writes every og: tag and the description; this module only sets the ``og:image`` and
``og:image:alt`` it reads from a page's metadata, and puts the charts' PNGs where they point (link-preview consumers
often refuse SVG). Each preview is the plot directive's own PNG of its chart (:mod:`.chart_files`), scaled and
centred on the 1200 x 630 landscape that previews ask for (a chart drawn for a phone is taller than wide).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util.typing import ExtensionMetadata

from matmul_data import results, versions
from matmul_site.sphinx import chart_files

OG_CHARTS = "_static/og"  # where the PNG copies of the charts go in the built site
OG_SIZE = (1200, 630)  # px: the landscape image link previews ask for; the chart (drawn for a phone) sits centred
LADDER = "plot_summary"
LADDER_ALT = "Bar chart of TFLOPS for every version next to cuBLAS"


def og_chart(pagename: str) -> str:
    """What a link to this page previews: a version's chart on its pages once its row is measured, else the ladder."""
    match = re.fullmatch(r"(?:chapters/|gallery/matmul_)(v\d+)", pagename)
    if match and match[1] in versions.names() and results.ladder_row(results.read_default(), match[1]) is not None:
        return versions.get(match[1]).chart_name
    return LADDER


def choose_image(app: Sphinx, doctree: nodes.document) -> None:
    """The page's og:image and its alt text, as page metadata for sphinxext-opengraph (a page's own field wins)."""
    chart = og_chart(app.env.docname)
    alts = [node.get("alt", "") for node in doctree.findall(nodes.image) if node["uri"].endswith(f"/{chart}.svg")]
    metadata = app.env.metadata[app.env.docname]
    metadata.setdefault("og:image", f"{OG_CHARTS}/{chart}.png")
    # sphinxext-opengraph escapes only quotes in what it writes
    metadata.setdefault("og:image:alt", html.escape(alts[0] if alts else LADDER_ALT, quote=False))


def landscape(chart: Path, preview: Path) -> None:
    """The chart's PNG, scaled to fit the preview's size (keeping its shape), centred on a white PNG of that size."""
    from PIL import Image  # matplotlib's own dependency

    width, height = OG_SIZE
    with Image.open(chart) as drawn:
        scale = min(width / drawn.width, height / drawn.height)
        size = (round(drawn.width * scale), round(drawn.height * scale))
        scaled = drawn.convert("RGBA").resize(size, Image.Resampling.LANCZOS)
    canvas = Image.new("RGB", OG_SIZE, "white")
    canvas.paste(scaled, ((width - size[0]) // 2, (height - size[1]) // 2), scaled)
    canvas.save(preview, format="png", optimize=True)


def copy_charts(app: Sphinx, exception: BaseException | None) -> None:
    """Put the preview of every chart that a page previews into the site, when the plot directive drew it."""
    if exception is not None or app.builder.format != "html":
        return
    out = Path(app.outdir) / OG_CHARTS
    out.mkdir(parents=True, exist_ok=True)
    for chart in sorted({og_chart(doc) for doc in app.env.found_docs}):
        drawn = chart_files.chart_png(app, chart)
        if drawn.is_file():
            landscape(drawn, out / f"{chart}.png")


def setup(app: Sphinx) -> ExtensionMetadata:
    app.setup_extension("sphinxext.opengraph")
    app.connect("doctree-read", choose_image, priority=600)  # after Sphinx collects the page's own metadata
    app.connect("build-finished", copy_charts)
    return {"version": "2", "parallel_read_safe": True, "parallel_write_safe": True}
