"""Link previews: each page's og:image is its chapter's chart (or the ladder chart), its description the first sentence.

sphinxext-opengraph writes the og: tags; this extension only chooses what goes in them and draws PNG copies
of the charts (link-preview consumers often refuse SVG) from the same plot scripts the pages use.
"""

from __future__ import annotations

import html
import re
import runpy
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx

from matmul_site import paths

OG_CHARTS = "_static/og"  # where the PNG copies of the charts go in the built site
OG_SIZE = (1200, 630)  # px: the landscape image link previews ask for; the chart (drawn for a phone) sits centred
LADDER = "plot_summary"


def og_chart(pagename: str) -> str:
    """The chart a link to this page previews: version N's chart for its chapter and gallery file, else the ladder."""
    match = re.fullmatch(r"(?:chapters/|gallery/matmul_)(v\d+)", pagename)
    if match and (paths.PLOTS_DIR / f"plot_{match[1]}.py").is_file():
        return f"plot_{match[1]}"
    return LADDER


def first_sentence(doctree: nodes.document) -> str:
    """The first sentence of the page's first paragraph of body text (not a note, caption or table)."""
    for paragraph in doctree.findall(nodes.paragraph):
        text = " ".join(paragraph.astext().split())
        if isinstance(paragraph.parent, nodes.section) and text:
            return re.split(r"(?<=[.!?])\s+(?=[A-Z])", text, maxsplit=1)[0]
    return ""


def link_preview(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Give sphinxext-opengraph this page's chart and first sentence (it reads og: fields from the page meta)."""
    if doctree is None:
        return
    chart = og_chart(pagename)
    alts = [node.get("alt", "") for node in doctree.findall(nodes.image) if node["uri"].endswith(f"/{chart}.svg")]
    description = first_sentence(doctree)
    meta = dict(context.get("meta") or {})  # a copy: opengraph pops og:image from it, and it is the env's own dict
    meta.setdefault("og:image", f"{OG_CHARTS}/{chart}.png")
    alt = alts[0] if alts else "Bar chart of TFLOPS for every version next to cuBLAS"
    meta.setdefault("og:image:alt", html.escape(alt, quote=False))  # opengraph escapes only quotes
    if description:
        meta.setdefault("og:description", html.escape(description, quote=False))
        context["metatags"] += f'<meta name="description" content="{html.escape(description)}" />\n'
    context["meta"] = meta


def write_og_charts(app: Sphinx, exception: BaseException | None) -> None:
    """Draw the charts that previews link to as PNG into the site, from the same scripts as the SVGs on the pages."""
    if exception is not None or app.builder.format != "html":
        return
    import matplotlib
    import matplotlib.pyplot as plt

    out = Path(app.outdir) / OG_CHARTS
    out.mkdir(parents=True, exist_ok=True)
    for chart in sorted({og_chart(doc) for doc in app.env.found_docs} | {LADDER}):
        plt.close("all")
        matplotlib.rc_file_defaults()  # as the plot directive does before each script
        runpy.run_path(str(paths.PLOTS_DIR / f"{chart}.py"), run_name=chart)
        (number,) = plt.get_fignums()
        landscape(plt.figure(number), out / f"{chart}.png")
        plt.close("all")


def landscape(chart: Any, path: Path) -> None:
    """The chart, scaled to the preview's height, centred on a white preview-sized PNG."""
    import io

    import matplotlib.image
    import matplotlib.pyplot as plt

    width, height = OG_SIZE
    drawn = io.BytesIO()
    chart.savefig(drawn, format="png", dpi=height / chart.get_figheight())
    drawn.seek(0)
    pixels = matplotlib.image.imread(drawn, format="png")
    canvas = plt.figure(figsize=(width / 100, height / 100), dpi=100, facecolor="white")
    canvas.figimage(pixels, xo=max(0, (width - pixels.shape[1]) // 2), yo=0)
    canvas.savefig(path, format="png", dpi=100, facecolor="white")
    plt.close(canvas)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", link_preview, priority=400)  # before sphinxext-opengraph's (500) reads meta
    app.connect("build-finished", write_og_charts)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
