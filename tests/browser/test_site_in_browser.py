"""The built site as a reader sees it in Chromium at desktop width: loads clean, copies code, links, dark mode.

The site is served under its sub-path (``base_url``, e.g. /hopper-matmul/), as GitHub Pages serves it; the
lighter check at the root and search are in test_published_site.py, phone widths in test_on_a_phone.py (nox -s
browser runs the files side by side). Each sampled page is opened once per module (fixture ``visit``) and every
check reads that one load; the gallery's other kernel pages come from the same template, and every link, asset and
download of every page is fetched in test_published_site.py. Failures name the page and what is wrong.
"""

from __future__ import annotations

import io
import posixpath
import re
import zipfile
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urljoin, urlsplit

import pytest
from support import (
    SHOTS,
    SITE,
    Anchors,
    PageLinks,
    Visit,
    fetch,
    first_screen,
    gallery_pages,
    open_page,
    open_pages,
    origin,
    sampled_pages,
    site_pages,
)

PAGES = site_pages()
GALLERY = gallery_pages()
SAMPLED = sampled_pages()
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def visit(browser: Any, base_url: str) -> Iterator[Callable[[str], Visit]]:
    """Load each page once, in a desktop-sized context that may read the clipboard; a sampled page's first screen
    is captured right after it loads, before any check scrolls it, opens its boxes or changes its theme."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin(base_url))
    SHOTS.mkdir(parents=True, exist_ok=True)
    # Every sampled page at once (their loads overlap); another page when a check first asks for it.
    loaded = dict(zip(SAMPLED, open_pages(ctx, [base_url + path for path in SAMPLED]), strict=True))
    captured: set[str] = set()

    def get(path: str) -> Visit:
        if path not in loaded:
            loaded[path] = open_page(ctx, base_url + path)
        # In front, as a reader sees it: Chromium renders a page in the background only now and then, so a
        # screenshot there waits about 4 s (and the clipboard answers the focused page only).
        loaded[path].page.bring_to_front()
        if path in SAMPLED and path not in captured:
            captured.add(path)
            DESKTOP_TOO_WIDE[path] = first_screen(loaded[path].page, path, "desktop")
        return loaded[path]

    yield get
    ctx.close()


# What each sampled page's first screen showed at desktop width ("" where it fits), filled in by `visit`.
DESKTOP_TOO_WIDE: dict[str, str] = {}


def test_site_was_built_with_pages() -> None:
    assert "index.html" in PAGES, "no pages found in the build"
    assert any(p.startswith("chapters/") for p in PAGES), f"no chapter pages in the build: {PAGES}"


@pytest.mark.parametrize("path", SAMPLED)
def test_page_loads_without_errors_or_failed_requests(visit: Callable[[str], Visit], path: str) -> None:
    problems = visit(path).problems
    assert not problems, f"{path}: " + "; ".join(problems)


def test_pages_loaded_side_by_side_each_report_their_own_failed_request_and_script_error(browser: Any) -> None:
    """The check above can fail: two made-up pages loaded at once, one throwing, one asking for a missing script
    after it has loaded (as the theme's late requests do), when both pages' navigations have long started."""
    script = "Object.assign(document.createElement('script'), {src: 'missing.js'})"
    late = f"setTimeout(() => document.head.append({script}), 200)"
    pages = {"/asks.html": f"<script>{late}</script><p>a</p>", "/throws.html": "<script>throw 1</script>"}

    def answer(route: Any) -> None:
        body = pages.get(urlsplit(route.request.url).path)
        route.fulfill(status=404 if body is None else 200, content_type="text/html", body=body or "")

    ctx = browser.new_context()
    try:
        ctx.route("http://site.test/**", answer)
        asks, throws = open_pages(ctx, ["http://site.test/asks.html", "http://site.test/throws.html"])
    finally:
        ctx.close()
    assert "HTTP 404: http://site.test/missing.js" in asks.problems
    assert not any("script error" in problem for problem in asks.problems), asks.problems
    assert [problem for problem in throws.problems if "script error" in problem] == ["script error: 1"]
    assert not any("missing.js" in problem for problem in throws.problems), throws.problems


@pytest.mark.parametrize("path", SAMPLED)
def test_every_image_and_chart_is_loaded_with_nonzero_size(visit: Callable[[str], Visit], path: str) -> None:
    images = visit(path).page.eval_on_selector_all(
        "article img, article object",
        "els => els.map(e => ({src: e.src || e.data, w: e.naturalWidth ?? e.clientWidth,"
        " h: e.naturalHeight ?? e.clientHeight, shown: e.getBoundingClientRect().width}))",
    )
    broken = [img["src"] for img in images if not (img["w"] and img["h"] and img["shown"])]
    assert not broken, f"{path}: images not loaded or zero-sized: {broken}"


# Clicks every copy button in the page and reads the clipboard after each click, in one round trip.
CLICK_EVERY_COPY_BUTTON = """async () => {
  for (const box of document.querySelectorAll("details")) box.open = true;  // a reader opens it to see the code
  const seen = [];
  for (const block of document.querySelectorAll("div.highlight")) {
    const button = block.querySelector("button.copybtn");
    if (!button) { seen.push(null); continue; }
    await navigator.clipboard.writeText("");
    button.click();
    let copied = "";
    for (let i = 0; i < 50 && !copied; i++) {
      await new Promise((done) => setTimeout(done, 10));
      copied = await navigator.clipboard.readText();
    }
    seen.push({copied, shown: block.querySelector("pre").innerText});
  }
  return seen;
}"""


@pytest.mark.parametrize("path", SAMPLED)
def test_every_code_block_copy_button_puts_its_code_on_the_clipboard(visit: Callable[[str], Visit], path: str) -> None:
    page = visit(path).page
    for i, block in enumerate(page.evaluate(CLICK_EVERY_COPY_BUTTON), start=1):
        assert block is not None, f"{path}: code block {i} has no copy button"
        copied = block["copied"].strip()
        assert copied, f"{path}: copy button {i} left the clipboard empty"
        assert copied.splitlines()[0] in block["shown"], f"{path}: copy button {i} copied {copied[:80]!r}"


def luminance_spread(png: bytes) -> float:
    from matplotlib import image

    pixels = image.imread(io.BytesIO(png), format="png")[..., :3]
    return float((pixels @ [0.2126, 0.7152, 0.0722]).std())


# Every chart is drawn by one style (matmul_site.charts) on a white panel: one chart stands for all of them.
# Each diagram of figures/ has colours of its own, so every one is checked (once, on the first page showing it).
_CHECKED_IN_DARK_MODE: set[str] = set()


def _picture_kind(src: str) -> str:
    name = src.rsplit("/", 1)[-1]
    return "chart" if name.startswith("plot_") else name


@pytest.mark.parametrize("path", SAMPLED)
def test_charts_and_figures_stay_readable_in_dark_mode(visit: Callable[[str], Visit], path: str) -> None:
    page = visit(path).page
    page.evaluate("document.body.dataset.theme = 'dark'")
    try:
        pictures = page.locator("article img[src$='.svg']")
        for i in range(pictures.count()):
            picture = pictures.nth(i)
            kind = _picture_kind(picture.get_attribute("src") or "")
            if kind in _CHECKED_IN_DARK_MODE:
                continue
            _CHECKED_IN_DARK_MODE.add(kind)
            picture.scroll_into_view_if_needed()
            spread = luminance_spread(picture.screenshot())
            src = picture.get_attribute("src")
            assert spread > 0.08, f"{path}: picture {i + 1} ({src}) has too little contrast in dark mode"
    finally:
        page.evaluate("document.body.dataset.theme = 'auto'")


def links(path: str, cls: str) -> list[str]:
    """The pages a built page links to with class ``cls``, relative to the site root (static HTML: furo writes the
    table of contents and the next and previous links into every page)."""
    found = Anchors((SITE / path).read_text(encoding="utf-8")).links
    where = posixpath.dirname(path)
    return [
        posixpath.normpath(posixpath.join(where, href.split("#")[0])) for classes, href, _ in found if cls in classes
    ]


def toc_order() -> list[str]:
    found = Anchors((SITE / "index.html").read_text(encoding="utf-8")).links
    order = ["index.html"] + [
        href.split("#")[0] for classes, href, inside in found if inside and "reference" in classes
    ]
    return list(dict.fromkeys(order))


def test_next_and_previous_links_follow_the_table_of_contents() -> None:
    order = toc_order()
    assert len(order) > 2, f"the table of contents lists too few pages: {order}"
    for here, there in zip(order, order[1:], strict=False):
        assert links(here, "next-page") == [there], f"{here}: 'next' leads to {links(here, 'next-page')}, not {there}"
        assert links(there, "prev-page") == [here], f"{there}: 'previous' leads to {links(there, 'prev-page')}"


def test_pages_fit_a_desktop_screen_and_are_captured(visit: Callable[[str], Visit]) -> None:
    for path in SAMPLED:
        visit(path)  # its first load captured it
    too_wide = [DESKTOP_TOO_WIDE[path] for path in SAMPLED if DESKTOP_TOO_WIDE[path]]
    assert not too_wide, "; ".join(too_wide)


@pytest.mark.parametrize(("path", "title"), [("steps.html", "What each step bought"), ("glossary.html", "Glossary")])
def test_closing_pages_load_with_their_title(visit: Callable[[str], Visit], path: str, title: str) -> None:
    assert path in PAGES, f"{path} is not in the build"
    page = visit(path).page
    assert page.locator("article h1").inner_text().strip().rstrip("¶").strip() == title
    if path == "glossary.html":
        terms = page.locator("article dl.glossary dt")
        assert terms.count() >= 20, f"the glossary defines only {terms.count()} terms"
        targets = page.eval_on_selector_all("article a[href*='#term-']", "els => els.map(e => e.hash.slice(1))")
        broken = [t for t in targets if page.locator(f"[id='{t}']").count() != 1]
        assert targets and not broken, f"glossary :term: links without a target: {broken}"


def test_gallery_cards_are_titled_like_the_chapters_without_backslashes(visit: Callable[[str], Visit]) -> None:
    page = visit("gallery/index.html").page
    titles = page.eval_on_selector_all(".sphx-glr-thumbnail-title", "els => els.map(e => e.innerText.trim())")
    numbers = [int(m[1]) for t in titles if (m := re.match(r"V(\d+): \S", t))]
    assert len(numbers) == len(titles) == len(GALLERY), f"gallery card titles: {titles}"
    assert numbers == sorted(numbers), f"cards are not in ladder order: {titles}"
    heads = [re.search(r"<h1>([^<]*)", (SITE / p).read_text(encoding="utf-8"))[1] for p in GALLERY]  # as built
    assert not [t for t in titles + heads if "\\" in t], f"backslashes in gallery titles: {titles + heads}"


@pytest.mark.parametrize("path", GALLERY)
def test_each_gallery_zip_is_served_and_holds_the_kernel_and_its_helpers(base_url: str, path: str) -> None:
    from matmul_site.sphinx import kernel_source

    urls = PageLinks((SITE / path).read_text(encoding="utf-8")).urls  # the links as built: no browser needed
    kernel = path.removeprefix("gallery/").removesuffix(".html")
    zips = {urljoin(base_url + path, url) for url in urls if url.endswith(".zip")}
    assert len(zips) == 2, f"{path}: expected the page's zip link and sphinx-gallery's, found {sorted(zips)}"
    files = kernel_source.bundle_files(kernel_source.kernel_path(kernel.removeprefix("matmul_")))
    expected = {f"{kernel}/{f.name}": f.read_bytes() for f in files}
    assert {f"{kernel}/common.py", f"{kernel}/tilus_fixes.py"} <= set(expected)
    for url in sorted(zips):
        status, body = fetch(url)
        assert status == 200, f"{path}: {url} answered HTTP {status}"
        with zipfile.ZipFile(io.BytesIO(body)) as archive:
            held = {name: archive.read(name) for name in archive.namelist()}
        assert held == expected, f"{path}: {url} holds {sorted(held)}, not the kernel and helpers {sorted(expected)}"


def test_the_site_has_a_favicon_that_loads(visit: Callable[[str], Visit], base_url: str) -> None:
    """Every page names an icon, so that a browser asks for that file, not for a /favicon.ico the site lacks."""
    page = visit("index.html").page
    icons = page.eval_on_selector_all("link[rel~='icon']", "els => els.map(e => e.href)")
    assert icons, "index.html names no favicon (conf.py's html_favicon)"
    for href in icons:
        answer = page.request.get(href)
        assert answer.status == 200, f"the favicon {href} answers {answer.status}"
        assert "svg" in answer.headers.get("content-type", "") or answer.body()[:4] == b"\x89PNG", href
