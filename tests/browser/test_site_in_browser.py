"""The built site as a reader sees it in Chromium: loads clean, copies code, links, search, dark mode, phones.

The site is served under its sub-path (``base_url``, e.g. /hopper-matmul/), as GitHub Pages serves it; the
lighter check at the root is in test_published_site.py. Each page is opened once per module (fixture ``visit``)
and every check reads that one load, which keeps the session inside CI's budget; failures name the page and
what is wrong.
"""

from __future__ import annotations

import io
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from support import SHOTS, Visit, open_page, origin, site_pages

PAGES = site_pages()
pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def visit(browser: Any, base_url: str) -> Iterator[Callable[[str], Visit]]:
    """Load each page once, in a desktop-sized context that may read the clipboard."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin(base_url))
    loaded: dict[str, Visit] = {}

    def get(path: str) -> Visit:
        if path not in loaded:
            loaded[path] = open_page(ctx, base_url + path)
        return loaded[path]

    yield get
    ctx.close()


def test_site_was_built_with_pages() -> None:
    assert "index.html" in PAGES, "no pages found in the build"
    assert any(p.startswith("chapters/") for p in PAGES), f"no chapter pages in the build: {PAGES}"


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_without_errors_or_failed_requests(visit: Callable[[str], Visit], path: str) -> None:
    problems = visit(path).problems
    assert not problems, f"{path}: " + "; ".join(problems)


@pytest.mark.parametrize("path", PAGES)
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


@pytest.mark.parametrize("path", PAGES)
def test_every_code_block_copy_button_puts_its_code_on_the_clipboard(visit: Callable[[str], Visit], path: str) -> None:
    page = visit(path).page
    page.bring_to_front()  # the clipboard answers the focused page only
    for i, block in enumerate(page.evaluate(CLICK_EVERY_COPY_BUTTON), start=1):
        assert block is not None, f"{path}: code block {i} has no copy button"
        copied = block["copied"].strip()
        assert copied, f"{path}: copy button {i} left the clipboard empty"
        assert copied.splitlines()[0] in block["shown"], f"{path}: copy button {i} copied {copied[:80]!r}"


def luminance_spread(png: bytes) -> float:
    from matplotlib import image

    pixels = image.imread(io.BytesIO(png), format="png")[..., :3]
    return float((pixels @ [0.2126, 0.7152, 0.0722]).std())


@pytest.mark.parametrize("path", PAGES)
def test_charts_and_figures_stay_readable_in_dark_mode(visit: Callable[[str], Visit], path: str) -> None:
    page = visit(path).page
    page.evaluate("document.body.dataset.theme = 'dark'")
    try:
        pictures = page.locator("article img[src$='.svg']")
        for i in range(pictures.count()):
            picture = pictures.nth(i)
            picture.scroll_into_view_if_needed()
            spread = luminance_spread(picture.screenshot())
            src = picture.get_attribute("src")
            assert spread > 0.08, f"{path}: picture {i + 1} ({src}) has too little contrast in dark mode"
    finally:
        page.evaluate("document.body.dataset.theme = 'auto'")


def toc_order(visit: Callable[[str], Visit], base_url: str) -> list[str]:
    hrefs = visit("index.html").page.eval_on_selector_all(".sidebar-tree a.reference", "els => els.map(e => e.href)")
    order = ["index.html"] + [h.replace(base_url, "").split("#")[0] for h in hrefs]
    return list(dict.fromkeys(order))


def test_next_and_previous_links_follow_the_table_of_contents(visit: Callable[[str], Visit], base_url: str) -> None:
    order = toc_order(visit, base_url)
    assert len(order) > 2, f"the table of contents lists too few pages: {order}"
    for here, there in zip(order, order[1:], strict=False):
        nxt = visit(here).page.locator("a.next-page")
        assert nxt.count() == 1, f"{here}: no 'next' link (expected {there})"
        target = nxt.get_attribute("href").split("#")[0]
        assert target.endswith(there.split("/")[-1]), f"{here}: 'next' leads to {target}, not {there}"
        prev = visit(there).page.locator("a.prev-page")
        assert prev.count() == 1, f"{there}: no 'previous' link (expected {here})"
        target = prev.get_attribute("href").split("#")[0]
        assert target.endswith(here.split("/")[-1]), f"{there}: 'previous' leads to {target}, not {here}"


# Under the sub-path and at the root: the search index and the result links are relative to the site root.
@pytest.mark.parametrize("served", ["sub-path", "root"])
@pytest.mark.parametrize(("word", "expected"), [("rasterization", "v4"), ("warp specialization", "v3")])
def test_search_finds_the_chapter_by_a_word_from_it_and_the_result_loads(
    request: pytest.FixtureRequest, context: Any, served: str, word: str, expected: str
) -> None:
    site = request.getfixturevalue("base_url" if served == "sub-path" else "root_url")
    page = open_page(context, site + "search.html?q=" + word.replace(" ", "+")).page
    page.wait_for_selector("#search-results ul.search li", timeout=15000)
    hits = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.href)")
    wanted = [h for h in hits if h.split("#")[0].split("?")[0] == f"{site}chapters/{expected}.html"]
    assert wanted, f"search for {word!r} at {site} did not find {expected} there: {hits}"
    result = open_page(context, wanted[0])
    assert not result.problems, f"search result {wanted[0]}: " + "; ".join(result.problems)
    assert result.page.locator("article h1").count() == 1, f"search result {wanted[0]} shows no page"


@pytest.mark.parametrize(("label", "width"), [("desktop", 1280), ("phone", 390)])
def test_pages_fit_the_screen_and_are_captured(browser: Any, base_url: str, label: str, width: int) -> None:
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    SHOTS.mkdir(parents=True, exist_ok=True)
    too_wide = []
    for path in PAGES:
        page = ctx.new_page()
        page.goto(base_url + path, wait_until="networkidle")
        page.screenshot(path=str(SHOTS / f"{path.replace('/', '_')[:-5]}-{label}.png"), full_page=True)
        overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
        if overflow > 1:
            too_wide.append(f"{path} is {overflow}px wider than the {width}px screen")
        page.close()
    ctx.close()
    assert not too_wide, "; ".join(too_wide)
