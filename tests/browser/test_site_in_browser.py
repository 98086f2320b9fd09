"""The built site as a reader sees it in Chromium: loads clean, copies code, links, search, dark mode, phones."""

from __future__ import annotations

import io
from typing import Any

import pytest

from support import SHOTS, site_pages

PAGES = site_pages()
pytestmark = pytest.mark.browser


def open_page(context: Any, url: str) -> tuple[Any, list[str]]:
    """Open a page; collect console errors and failed requests as readable problems."""
    page = context.new_page()
    problems: list[str] = []
    page.on(
        "console",
        lambda msg: (
            problems.append(f"console error: {msg.text} at {msg.location.get('url')}")
            if msg.type == "error" and not msg.location.get("url", "").endswith("/favicon.ico")
            else None
        ),
    )
    page.on("pageerror", lambda exc: problems.append(f"script error: {exc}"))
    page.on("requestfailed", lambda req: problems.append(f"request failed: {req.url} ({req.failure})"))
    page.on(
        "response",
        lambda resp: (
            problems.append(f"HTTP {resp.status}: {resp.url}")
            if resp.status >= 400 and not resp.url.endswith("/favicon.ico")  # asked by the browser, not the page
            else None
        ),
    )
    page.goto(url, wait_until="load")
    page.wait_for_load_state("networkidle")
    return page, problems


def test_site_was_built_with_pages() -> None:
    assert "index.html" in PAGES, "no pages found in the build"
    assert len(PAGES) >= 2


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_without_errors_or_failed_requests(context: Any, base_url: str, path: str) -> None:
    page, problems = open_page(context, base_url + path)
    assert not problems, f"{path}: " + "; ".join(problems)


@pytest.mark.parametrize("path", PAGES)
def test_every_image_and_chart_is_loaded_with_nonzero_size(context: Any, base_url: str, path: str) -> None:
    page, _ = open_page(context, base_url + path)
    images = page.eval_on_selector_all(
        "article img, article object",
        "els => els.map(e => ({src: e.src || e.data, w: e.naturalWidth ?? e.clientWidth,"
        " h: e.naturalHeight ?? e.clientHeight, shown: e.getBoundingClientRect().width}))",
    )
    broken = [img["src"] for img in images if not (img["w"] and img["h"] and img["shown"])]
    assert not broken, f"{path}: images not loaded or zero-sized: {broken}"


@pytest.mark.parametrize("path", PAGES)
def test_every_code_block_copy_button_puts_its_code_on_the_clipboard(context: Any, base_url: str, path: str) -> None:
    page, _ = open_page(context, base_url + path)
    blocks = page.locator("div.highlight")
    for i in range(blocks.count()):
        block = blocks.nth(i)
        button = block.locator("button.copybtn")
        assert button.count() == 1, f"{path}: code block {i + 1} has no copy button"
        block.scroll_into_view_if_needed()
        block.hover()
        button.click()
        copied = page.evaluate("navigator.clipboard.readText()")
        shown = block.locator("pre").inner_text()
        first_line = copied.strip().splitlines()[0] if copied.strip() else ""
        assert first_line and first_line in shown, f"{path}: copy button {i + 1} copied {copied[:80]!r}"


def toc_order(context: Any, base_url: str) -> list[str]:
    page, _ = open_page(context, base_url + "index.html")
    hrefs = page.eval_on_selector_all(".sidebar-tree a.reference", "els => els.map(e => e.href)")
    order = ["index.html"] + [h.replace(base_url, "").split("#")[0] for h in hrefs]
    return list(dict.fromkeys(order))


def test_next_and_previous_links_follow_the_table_of_contents(context: Any, base_url: str) -> None:
    order = toc_order(context, base_url)
    for here, there in zip(order, order[1:], strict=False):
        page, _ = open_page(context, base_url + here)
        nxt = page.locator("a.next-page")
        assert nxt.count() == 1, f"{here}: no 'next' link (expected {there})"
        assert nxt.get_attribute("href").split("#")[0].endswith(there.split("/")[-1]), f"{here}: next is not {there}"
        page, _ = open_page(context, base_url + there)
        prev = page.locator("a.prev-page")
        assert prev.count() == 1, f"{there}: no 'previous' link (expected {here})"
        prev.click()
        page.wait_for_load_state("load")
        assert page.url.split("#")[0].endswith(here.split("/")[-1]), f"{there}: previous led to {page.url}, not {here}"


@pytest.mark.parametrize(("word", "expected"), [("rasterization", "v4"), ("warp specialization", "v3")])
def test_search_finds_the_chapter_by_a_word_from_it(context: Any, base_url: str, word: str, expected: str) -> None:
    page, _ = open_page(context, base_url + "search.html?q=" + word.replace(" ", "+"))
    page.wait_for_selector("#search-results ul.search li", timeout=15000)
    hits = page.eval_on_selector_all("#search-results ul.search li a", "els => els.map(e => e.href)")
    assert any(expected in h for h in hits), f"search for {word!r} did not find chapter {expected}: {hits}"


def luminance_spread(png: bytes) -> float:
    from matplotlib import image

    pixels = image.imread(io.BytesIO(png), format="png")[..., :3]
    return float((pixels @ [0.2126, 0.7152, 0.0722]).std())


@pytest.mark.parametrize("path", PAGES)
def test_charts_stay_readable_in_dark_mode(context: Any, base_url: str, path: str) -> None:
    page, _ = open_page(context, base_url + path)
    page.evaluate("document.body.dataset.theme = 'dark'")
    charts = page.locator("article img[src$='.svg']")
    for i in range(charts.count()):
        chart = charts.nth(i)
        chart.scroll_into_view_if_needed()
        spread = luminance_spread(chart.screenshot())
        assert spread > 0.08, (
            f"{path}: figure {i + 1} ({chart.get_attribute('src')}) has too little contrast in dark mode"
        )


@pytest.mark.parametrize("path", PAGES)
@pytest.mark.parametrize(("label", "width"), [("desktop", 1280), ("phone", 390)])
def test_page_fits_the_screen_and_is_captured(browser: Any, base_url: str, path: str, label: str, width: int) -> None:
    ctx = browser.new_context(viewport={"width": width, "height": 900})
    page = ctx.new_page()
    page.goto(base_url + path, wait_until="networkidle")
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{path.replace('/', '_')[:-5]}-{label}.png"), full_page=True)
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    ctx.close()
    assert overflow <= 1, f"{path} at {width}px: the page is {overflow}px wider than the screen"
