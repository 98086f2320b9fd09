"""Sphinx configuration. The build runs `sphinx-build -c . docs build/html` from the repository root.

Nothing here needs torch, Tilus, CUDA or the network: charts and numbers come from
plots/results/*.json (docs/_ext/results_role.py), kernel code from examples/hopper_matmul/.
"""

import html
import os
import re
import runpy
import sys
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent
sys.path[:0] = [str(ROOT / "docs" / "_ext"), str(ROOT / "plots"), str(ROOT / "examples" / "hopper_matmul")]

import kernel_source  # noqa: E402
from docutils import nodes  # noqa: E402

project = "Fast matmul on Hopper with Tilus"
author = "The hopper-matmul-tutorial authors"
copyright = "2026, " + author

extensions = [
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # serves MathJax from _static: the site needs no network to show formulas
    "sphinx_copybutton",
    "sphinx_gallery.gen_gallery",
    "matplotlib.sphinxext.plot_directive",
    "results_role",  # :result:`v3.tflops`, results-ladder/-performance/-provenance/-chart
    "kernel_source",  # .. kernel-source:: v3 (literalinclude of examples/hopper_matmul/matmul_v3.py)
    "notfound.extension",  # 404.html with absolute links, served by GitHub Pages for any missing page
    "sphinx_sitemap",  # sitemap.xml of every page under html_baseurl
    "sphinxext.opengraph",  # og: tags: link previews show the chapter's chart and first sentence
]

root_doc = "index"
exclude_patterns = ["_build", "_ext", "gallery/*.ipynb", "sg_execution_times.rst"]
nitpicky = True
language = "en"
intersphinx_mapping: dict[str, tuple[str, None]] = {}  # no network at build time

# Theme: furo gives search, light/dark mode, prev/next links; our CSS puts charts on a white rounded panel.
html_theme = "furo"
html_title = project
html_static_path = ["docs/_static"]
html_css_files = ["hopper.css"]
html_last_updated_fmt = None

# Charts: one script per chart in plots/, drawn as SVG with fixed ids and no date (see plots/chartlib.py).
plot_basedir = str(ROOT / "plots")
plot_formats = [("svg", 100)]
plot_html_show_source_link = False
plot_html_show_formats = False
plot_include_source = False
plot_rcparams = {"svg.hashsalt": "hopper-matmul", "svg.fonttype": "path"}

# Gallery of the kernel files; GPU code never runs here (plot_gallery False, nothing matches filename_pattern).
sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "build" / "gallery_src"),
    "gallery_dirs": "gallery",
    "filename_pattern": r"^$",
    "plot_gallery": "False",
    "download_all_examples": False,
    "notebook_extensions": set(),  # a notebook of a GPU kernel helps nobody; the .py download is the file
    "image_scrapers": (),
    "write_computation_times": False,
    "show_signature": False,
    "remove_config_comments": True,
}
kernel_source.stage_gallery(ROOT / "build" / "gallery_src")

# Copy buttons skip prompts so that pasted commands run as they are.
copybutton_prompt_text = r"\$ |>>> "
copybutton_prompt_is_regexp = True

# Where the site is published, set once: .github/workflows/pages.yml passes actions/configure-pages' base_url
# (https://<owner>.github.io/<repo>/); a local build assumes `python3 -m http.server -d build/html` (port 8000).
LOCAL_BASEURL = "http://localhost:8000/"
html_baseurl = (os.environ.get("HOPPER_MATMUL_BASEURL", "").strip() or LOCAL_BASEURL).rstrip("/") + "/"

# The 404 page may be served at any depth, so its links are absolute paths under the base URL's path.
notfound_urls_prefix = urlsplit(html_baseurl).path
notfound_context = {
    "title": "Page not found",
    "body": "<h1>Page not found</h1>\n<p>There is no page at this address. "
    f'Start from the <a href="{notfound_urls_prefix}index.html">first page</a> or search the site.</p>',
}

# One language, one version: page URLs are html_baseurl + page (no /en/ that sphinx-sitemap adds by default).
sitemap_url_scheme = "{link}"
sitemap_excludes = ["search.html", "genindex.html", "404.html"]

# Link previews: absolute URLs under html_baseurl; the image and description are set per page by link_preview().
ogp_site_url = html_baseurl
ogp_social_cards = {"enable": False}  # the preview shows our chart, not a generated card
ogp_custom_meta_tags = ['<meta name="twitter:card" content="summary_large_image" />']
OG_CHARTS = "_static/og"  # PNG copies of the charts: link-preview consumers often refuse SVG
OG_DPI = 170  # a 7-inch-wide chart becomes about 1200 px, the size previews ask for
LADDER = "plot_summary"


def og_chart(pagename: str) -> str:
    """The chart a link to this page previews: version N's chart (plots/plot_vN.py) for its chapter and its
    gallery file, the ladder for every other page."""
    match = re.fullmatch(r"(?:chapters/|gallery/matmul_)(v\d+)", pagename)
    if match and (ROOT / "plots" / f"plot_{match[1]}.py").is_file():
        return f"plot_{match[1]}"
    return LADDER


def first_sentence(doctree: nodes.document) -> str:
    """The first sentence of the page's first paragraph of body text (not a note, caption or table)."""
    for paragraph in doctree.findall(nodes.paragraph):
        text = " ".join(paragraph.astext().split())
        if isinstance(paragraph.parent, nodes.section) and text:
            return re.split(r"(?<=[.!?])\s+(?=[A-Z])", text, maxsplit=1)[0]
    return ""


def link_preview(app: Any, pagename: str, templatename: str, context: dict[str, Any], doctree: Any) -> None:
    """Give sphinxext-opengraph this page's chart and first sentence (it reads og: fields from the page meta)."""
    if doctree is None:
        return
    chart = og_chart(pagename)
    alts = [node.get("alt", "") for node in doctree.findall(nodes.image) if node["uri"].endswith(f"/{chart}.svg")]
    description = first_sentence(doctree)
    meta = dict(context.get("meta") or {})  # a copy: opengraph pops og:image from it, and it is the env's own dict
    meta.setdefault("og:image", f"{OG_CHARTS}/{chart}.png")
    alt = alts[0] if alts else "Bar chart of TFLOPS for V0 to V6 next to cuBLAS"
    meta.setdefault("og:image:alt", html.escape(alt, quote=False))  # opengraph escapes only quotes
    if description:
        meta.setdefault("og:description", html.escape(description, quote=False))
        context["metatags"] += f'<meta name="description" content="{html.escape(description)}" />\n'
    context["meta"] = meta


def write_og_charts(app: Any, exception: BaseException | None) -> None:
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
        runpy.run_path(str(ROOT / "plots" / f"{chart}.py"), run_name=chart)
        (number,) = plt.get_fignums()
        plt.figure(number).savefig(out / f"{chart}.png", format="png", dpi=OG_DPI)
        plt.close("all")


def setup(app: Any) -> None:
    app.connect("html-page-context", link_preview, priority=400)  # before sphinxext-opengraph's (500) reads meta
    app.connect("build-finished", write_og_charts)
