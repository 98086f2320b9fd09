"""sitemap.xml: every page of the site at its published address (html_baseurl + page), for search engines.

Not sphinx-sitemap: its newest release (2.9.0, with the pinned Sphinx 9.0.4) keeps its state on ``env.app``, which
Sphinx 9 deprecates (an error under the docs test's warnings filter), and lists only the pages the current build
wrote (its issue #13): after an incremental build, two URLs. This lists every page in ``env.found_docs``.
"""

from __future__ import annotations

from pathlib import Path
from xml.sax.saxutils import escape

from sphinx.application import Sphinx
from sphinx.util.typing import ExtensionMetadata

from matmul_data import files

# Pages that are not content: the search page, the index of terms and the 404 page. A page marked ``:nosearch:``
# (the contributors' page) is left out too: it is for whoever writes the site, not for its readers.
EXCLUDED = ("search", "genindex", "404")


def write_sitemap(app: Sphinx, exception: BaseException | None) -> None:
    """One <url> per page, sorted, under html_baseurl; nothing when the build failed or is not HTML."""
    if exception is not None or app.builder.format != "html" or not app.config.html_baseurl:
        return
    base = app.config.html_baseurl.rstrip("/") + "/"
    pages = sorted(doc for doc in app.env.found_docs
                   if doc not in EXCLUDED and "nosearch" not in app.env.metadata.get(doc, {}))  # fmt: skip
    urls = "".join(f"  <url><loc>{escape(base + app.builder.get_target_uri(doc))}</loc></url>\n" for doc in pages)
    text = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n{urls}</urlset>\n'
    files.write_atomic(Path(app.outdir, "sitemap.xml"), text.encode("utf-8"))


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("build-finished", write_sitemap)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
