"""The site as GitHub Pages publishes it (under a sub-path, a 404 page, a sitemap, link previews, search), and the
same build still whole when it is served at the root.

Budget: the full browser suite (test_site_in_browser.py) runs under the sub-path, as Pages serves the site. At
the root every link, asset and download of every page is fetched over HTTP without a browser, search runs, and
Chromium loads one page per folder (every asset must load, no failed request): the pages of a folder share their
template and their relative paths, so one of them shows what only a browser requests (the theme's scripts and
stylesheets fetch more) at that depth.
"""

from __future__ import annotations

import re
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urldefrag, urljoin
from xml.etree import ElementTree

import pytest
from support import (
    ROOT,
    SITE,
    FirstParagraph,
    PageLinks,
    Visit,
    fetch,
    gallery_pages,
    open_page,
    open_pages,
    origin,
    published_url,
    site_pages,
)

from matmul_data import results

PAGES = site_pages()
# 404.html is built for the published sub-path (absolute links, since it answers at any depth): not for the root.
CONTENT_PAGES = [p for p in PAGES if p != "404.html"]
# What Chromium loads at the root: the front page, the first page of each folder below it, and a kernel's gallery
# page (sphinx-gallery's template, not the chapters').
ONE_PER_FOLDER = sorted({"index.html", *gallery_pages()[-1:],
                         *{str(Path(p).parent): p for p in reversed(CONTENT_PAGES) if "/" in p}.values()})  # fmt: skip
SITEMAP_NS = "{http://www.sitemaps.org/schemas/sitemap/0.9}"
pytestmark = pytest.mark.browser


def page_links(path: str) -> PageLinks:
    return PageLinks((SITE / path).read_text(encoding="utf-8"))


def same_site_targets(page_url: str, links: PageLinks) -> set[str]:
    """Every URL on the page's own server that the page links to or loads, without its #fragment."""
    targets = {urldefrag(urljoin(page_url, raw)).url for raw in links.urls}
    return {t for t in targets if origin(t) == origin(page_url)}


def source_of(page: str) -> str:
    """The reStructuredText a built page comes from ("" for a generated page such as the gallery's)."""
    source = ROOT / "docs" / Path(page).with_suffix(".rst")
    return source.read_text(encoding="utf-8") if source.is_file() else ""


def on_test_server(published: str, served: str) -> str:
    """A published absolute URL, moved onto the test server that serves the same sub-path."""
    assert published.startswith(published_url()), f"{published} is not under {published_url()}"
    return served + published[len(published_url()) :]


@pytest.fixture(scope="module")
def root_context(browser: Any) -> Iterator[Any]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    yield ctx
    ctx.close()


@pytest.fixture(scope="module")
def at_the_root(root_context: Any, root_url: str) -> dict[str, Visit]:
    """ONE_PER_FOLDER's pages served at the root, loaded side by side (their loads overlap)."""
    return dict(zip(ONE_PER_FOLDER, open_pages(root_context, [root_url + p for p in ONE_PER_FOLDER]), strict=True))


def test_site_was_built_for_a_sub_path(site_path: str) -> None:
    assert site_path.startswith("/") and site_path.endswith("/") and site_path != "/", site_path


@pytest.mark.parametrize("path", ONE_PER_FOLDER)
def test_a_page_of_each_folder_and_its_assets_load_without_errors_when_served_at_the_root(
    at_the_root: dict[str, Visit], path: str
) -> None:
    problems = at_the_root[path].problems
    assert not problems, f"{path} at the root: " + "; ".join(problems)


@pytest.mark.parametrize("served", ["sub-path", "root"])
def test_every_link_asset_and_download_of_every_page_resolves(request: pytest.FixtureRequest, served: str) -> None:
    site = request.getfixturevalue("base_url" if served == "sub-path" else "root_url")
    status: dict[str, int] = {}
    broken = []
    for path in PAGES if served == "sub-path" else CONTENT_PAGES:
        for url in sorted(same_site_targets(site + path, page_links(path))):
            if url not in status:
                status[url] = fetch(url)[0]
            if status[url] != 200:
                broken.append(f"{path} -> {url} (HTTP {status[url]})")
    assert not broken, f"served at the {served}: " + "; ".join(broken)
    assert any("/_downloads/" in url for url in status), "no download link was checked"
    assert all(url.startswith(site) for url in status), "a link leaves the site's path"


@pytest.mark.parametrize("missing", ["no-such-page.html", "chapters/no/such/page.html"])
def test_a_missing_page_gets_the_404_page_whose_links_lead_back_into_the_site(
    browser: Any, base_url: str, missing: str
) -> None:
    status, body = fetch(base_url + missing)
    assert status == 404, f"{missing}: HTTP {status}, not 404"
    links = PageLinks(body.decode())
    targets = same_site_targets(base_url + missing, links) - {base_url + missing}  # "#" links to itself
    assert f"{base_url}index.html" in targets, f"the 404 page at {missing} has no link to the first page"
    broken = [f"{url} (HTTP {code})" for url in sorted(targets) if (code := fetch(url)[0]) != 200]
    assert not broken, f"404 page at {missing}: broken links: " + "; ".join(broken)

    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        visit = open_page(ctx, base_url + missing)
        problems = [p for p in visit.problems if base_url + missing not in p]  # the page's own 404 is the point
        assert not problems, f"404 page at {missing}: " + "; ".join(problems)
        assert visit.page.locator("article h1").inner_text().strip() == "Page not found"
        visit.page.locator("article a", has_text="first page").click()
        visit.page.wait_for_load_state("load")
        assert visit.page.url == f"{base_url}index.html", f"the 404 page's link led to {visit.page.url}"
        assert visit.page.locator("a.next-page").count() == 1, "the first page did not load after the 404 page"
    finally:
        ctx.close()


def test_sitemap_lists_every_page_at_its_published_address(base_url: str) -> None:
    status, body = fetch(base_url + "sitemap.xml")
    assert status == 200, f"sitemap.xml: HTTP {status}"
    locs = [loc.text or "" for loc in ElementTree.fromstring(body).iter(f"{SITEMAP_NS}loc")]
    # A page marked :nosearch: (the contributors' page) is for the site's writers: no sitemap entry.
    unlisted = {p for p in CONTENT_PAGES if ":nosearch:" in source_of(p)}
    assert unlisted, "no page is marked :nosearch: (docs/writing.rst is): the test checks nothing"
    assert sorted(locs) == sorted(published_url() + p for p in CONTENT_PAGES if p not in unlisted)
    broken = [loc for loc in locs if fetch(on_test_server(loc, base_url))[0] != 200]
    assert not broken, f"sitemap entries that do not load under the sub-path: {broken}"


def expected_chart(path: str) -> str:
    """Version N's chapter and gallery page preview its chart once the results hold its row (before that its chart
    is not drawn); every other page previews the ladder."""
    version = re.fullmatch(r"(?:chapters/|gallery/matmul_)(v\d+)\.html", path)
    measured = version and results.ladder_row(results.read_default(), version[1]) is not None
    return f"plot_{version[1]}" if measured else "plot_summary"


@pytest.mark.parametrize("path", CONTENT_PAGES)
def test_link_preview_shows_the_page_chart_and_opening_words_at_its_published_address(base_url: str, path: str) -> None:
    text = (SITE / path).read_text(encoding="utf-8")
    links = PageLinks(text)
    meta = links.meta
    assert links.canonical == meta.get("og:url") == published_url() + path, f"{path}: {links.canonical}, {meta}"

    image = meta.get("og:image", "")
    assert image == f"{published_url()}_static/og/{expected_chart(path)}.png", f"{path}: og:image is {image!r}"
    assert meta.get("og:image:alt"), f"{path}: the preview image has no alt text"
    status, png = fetch(on_test_server(image, base_url))
    assert status == 200 and png[:8] == b"\x89PNG\r\n\x1a\n", f"{path}: {image} is not a PNG (HTTP {status})"
    width, height = struct.unpack(">II", png[16:24])
    assert width >= 1000 and 1.5 <= width / height <= 2.2, f"{path}: {width}x{height} is no link-preview size"

    # sphinxext-opengraph's description: the page's text after its title, cut at 200 characters with "..."
    description, paragraph = meta.get("og:description", ""), FirstParagraph(text).text
    assert description and meta.get("description") == description, f"{path}: {meta}"
    assert len(description) <= 200, f"{path}: {description!r} is longer than a preview shows"
    # (compared without spaces: it puts one between every two pieces of text, as in "( python matmul_vN.py")
    opening, paragraph = re.sub(r"\s", "", description.removesuffix("...")), re.sub(r"\s", "", paragraph)
    assert paragraph.startswith(opening) or opening.startswith(paragraph), (
        f"{path}: {description!r} does not open with the page's first paragraph ({paragraph!r})"
    )


# Under the sub-path and at the root: the search index and the result links are relative to the site root.
SERVED = ["sub-path", "root"]
SEARCHES = {"rasterization": "v4", "warp specialization": "v3"}


@pytest.fixture(scope="module")
def searched(browser: Any, base_url: str, root_url: str) -> Iterator[dict[tuple[str, str], Visit]]:
    """The search page for each word where the site is served, opened side by side: (served, word) -> its visit."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    keys = [(served, word) for served in SERVED for word in SEARCHES]
    sites = {"sub-path": base_url, "root": root_url}
    urls = [sites[served] + "search.html?q=" + word.replace(" ", "+") for served, word in keys]
    yield dict(zip(keys, open_pages(ctx, urls), strict=True))
    ctx.close()


@pytest.mark.parametrize("served", SERVED)
@pytest.mark.parametrize(("word", "expected"), SEARCHES.items())
def test_search_finds_the_chapter_by_a_word_from_it_and_the_result_loads(
    request: pytest.FixtureRequest,
    searched: dict[tuple[str, str], Visit],
    context: Any,
    served: str,
    word: str,
    expected: str,
) -> None:
    site = request.getfixturevalue("base_url" if served == "sub-path" else "root_url")
    page = searched[served, word].page
    page.bring_to_front()  # Chromium runs a background page's scripts slowly: the search runs in front, as a reader's
    page.wait_for_selector("#search-results ul.search li", timeout=15000)
    hits = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.href)")
    wanted = [h for h in hits if h.split("#")[0].split("?")[0] == f"{site}chapters/{expected}.html"]
    assert wanted, f"search for {word!r} at {site} did not find {expected} there: {hits}"
    result = open_page(context, wanted[0])
    assert not result.problems, f"search result {wanted[0]}: " + "; ".join(result.problems)
    assert result.page.locator("article h1").count() == 1, f"search result {wanted[0]} shows no page"
