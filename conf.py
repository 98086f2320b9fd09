"""Sphinx configuration. The build runs `sphinx-build -c . docs build/html` from the repository root.

Nothing here needs torch, Tilus, CUDA or the network. Numbers and tables come from docs/_generated/, which
`python -m matmul_site.render` writes from plots/results/ (`nox -s docs` runs it first); charts are plot
directives that draw from the results file; kernels come from examples/.
"""

import os
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent

# Builds are incremental: a build with nothing changed reads no page (tests/test_docs.py). Sphinx still says "The
# configuration has changed (3 options: 'html_static_path', 'pygments_dark_style', 'sphinx_gallery_conf')" each
# time, because it compares this file's values with those of the last build before the builder starts, and then
# furo registers pygments_dark_style (as the theme loads; furo refuses to be listed in `extensions`),
# sphinx-copybutton appends to html_static_path and sphinx-gallery adds its own keys to sphinx_gallery_conf. None of
# them makes Sphinx read pages again: it does so only for a changed value that affects reading ("env") and is
# registered when it compares; the other two affect only the HTML output, whose hash Sphinx takes before they change.

project = "Fast matmul on Hopper with Tilus"
author = "The hopper-matmul-tutorial authors"
copyright = "2026, " + author

extensions = [
    "sphinx.ext.mathjax",
    "sphinx-mathjax-offline",  # serves MathJax from _static: the site needs no network to show formulas
    "sphinx_copybutton",
    "sphinx_gallery.gen_gallery",
    "matplotlib.sphinxext.plot_directive",
    "sphinxext.opengraph",  # og: tags: link previews show the page's opening words (and chart: link_preview)
    "notfound.extension",  # 404.html with absolute links, served by GitHub Pages for any missing page
    # Ours, after the maintained ones (two of them patch one of those, so they load after it):
    "matmul_site.sphinx.chapters_toc",  # .. chapters-toc:: (the index's chapters, one per kernel file)
    "matmul_site.sphinx.values",  # |v7.tflops| on any page: the values matmul_site.render writes
    "matmul_site.sphinx.kernel_source",  # .. kernel-source:: v3 (literalinclude of examples/hopper_matmul/matmul_v3.py)
    "matmul_site.sphinx.kernel_diff",  # .. kernel-diff:: v3 (the whole diff against matmul_v2.py, collapsible)
    "matmul_site.sphinx.chart_files",  # each chart drawn once; drawn again when the results file changes
    "matmul_site.sphinx.link_preview",  # the page's chart as og:image, the PNG the plot directive drew
    "matmul_site.sphinx.notfound_compat",  # notfound 1.1.0 on Sphinx 9: pass the tags Sphinx 11 will require
    "matmul_site.sphinx.sitemap",  # sitemap.xml of every page under html_baseurl (why not sphinx-sitemap: there)
]

root_doc = "index"
exclude_patterns = ["_build", "_generated", "gallery/*.ipynb", "sg_execution_times.rst"]
nitpicky = True
language = "en"
intersphinx_mapping: dict[str, tuple[str, None]] = {}  # no network at build time

# Theme: furo gives search, light/dark mode, prev/next links; our CSS puts charts on a white rounded panel.
html_theme = "furo"
html_title = project
html_static_path = ["docs/_static"]
# The priority is the one Sphinx gives a user's CSS; written out because Sphinx writes it into this very list.
html_css_files = [("hopper.css", {"priority": 800})]
html_last_updated_fmt = None
# A small matrix glyph of our own (four tiles), so that browsers find an icon instead of a 404.
html_favicon = "docs/_static/favicon.svg"

# Charts: one script per chart in plots/, drawn as SVG with fixed ids and no date (see src/matmul_site/charts.py).
plot_basedir = str(ROOT / "plots")
# Each chart is drawn once: the SVG on the page, and from the same figure a PNG (765 px wide: every chart is drawn
# 4.5 in wide, for a phone) that the gallery's cards reuse and the link previews lay on a 1200x630 landscape
# (matmul_site.sphinx.chart_files, link_preview).
plot_formats = [("svg", 100), ("png", 170)]
plot_html_show_source_link = False
plot_html_show_formats = False
plot_include_source = False
plot_rcparams = {"svg.hashsalt": "hopper-matmul", "svg.fonttype": "path"}

# Gallery of the kernel files; GPU code never runs here (plot_gallery False, nothing matches filename_pattern).
# matmul_site.sphinx.kernel_source stages its input in examples_dirs when the build starts.
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
    "within_subsection_order": "matmul_site.sphinx.kernel_source.VersionOrder",  # V0, V1, ... not by length
}

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

# Link previews: absolute URLs under html_baseurl; the image per page: matmul_site.sphinx.link_preview.
ogp_site_url = html_baseurl
ogp_social_cards = {"enable": False}  # the preview shows our chart, not a generated card
ogp_custom_meta_tags = ['<meta name="twitter:card" content="summary_large_image" />']
