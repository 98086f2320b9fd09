"""The built site as a reader sees it in Chromium: loads clean, copies code, links, search, dark mode, phones.

The site is served under its sub-path (``base_url``, e.g. /hopper-matmul/), as GitHub Pages serves it; the
lighter check at the root is in test_published_site.py. Each page is opened once per module (fixture ``visit``)
and every check reads that one load, which keeps the session inside CI's budget; failures name the page and
what is wrong.
"""

from __future__ import annotations

import io
import re
import zipfile
from collections.abc import Callable, Iterator
from typing import Any
from urllib.parse import urljoin

import pytest
from support import SHOTS, Visit, fetch, open_page, origin, site_pages

PAGES = site_pages()
GALLERY = sorted(p for p in PAGES if re.fullmatch(r"gallery/matmul_v\d+\.html", p))
# The per-version gallery pages come from one template: the last one stands for all in the checks that look at
# a page's pictures, code blocks and layout (every page is still loaded, and every link followed, elsewhere).
SAMPLED = [p for p in PAGES if p not in GALLERY] + GALLERY[-1:]
pytestmark = pytest.mark.browser


def first_screen(page: Any, path: str, label: str) -> str:
    """Capture the first screen of a page as a reader lands on it (build/screenshots/); "" or why it is too wide."""
    # The first screen only: a full-page capture of every page cost a minute of CI.
    page.screenshot(path=str(SHOTS / f"{path.replace('/', '_')[:-5]}-{label}.png"))
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    width = page.viewport_size["width"]
    return f"{path} is {overflow}px wider than the {width}px screen" if overflow > 1 else ""


@pytest.fixture(scope="module")
def visit(browser: Any, base_url: str) -> Iterator[Callable[[str], Visit]]:
    """Load each page once, in a desktop-sized context that may read the clipboard; a sampled page's first screen
    is captured right after it loads, before any check scrolls it, opens its boxes or changes its theme."""
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin(base_url))
    SHOTS.mkdir(parents=True, exist_ok=True)
    loaded: dict[str, Visit] = {}

    def get(path: str) -> Visit:
        if path not in loaded:
            loaded[path] = open_page(ctx, base_url + path)
            if path in SAMPLED:
                DESKTOP_TOO_WIDE[path] = first_screen(loaded[path].page, path, "desktop")
        # In front, as a reader sees it: Chromium renders a page in the background only now and then, so a
        # screenshot there waits about 4 s (and the clipboard answers the focused page only).
        loaded[path].page.bring_to_front()
        return loaded[path]

    yield get
    ctx.close()


# What each sampled page's first screen showed at desktop width ("" where it fits), filled in by `visit`.
DESKTOP_TOO_WIDE: dict[str, str] = {}


def test_site_was_built_with_pages() -> None:
    assert "index.html" in PAGES, "no pages found in the build"
    assert any(p.startswith("chapters/") for p in PAGES), f"no chapter pages in the build: {PAGES}"


@pytest.mark.parametrize("path", PAGES)
def test_page_loads_without_errors_or_failed_requests(visit: Callable[[str], Visit], path: str) -> None:
    problems = visit(path).problems
    assert not problems, f"{path}: " + "; ".join(problems)


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


def test_pages_fit_a_desktop_screen_and_are_captured(visit: Callable[[str], Visit]) -> None:
    for path in SAMPLED:
        visit(path)  # its first load captured it
    too_wide = [DESKTOP_TOO_WIDE[path] for path in SAMPLED if DESKTOP_TOO_WIDE[path]]
    assert not too_wide, "; ".join(too_wide)


# Each chart's <img> at phone width: its box inside the panel's padding, its natural size, its file.
CHART_SIZES = """els => els.map(e => {
  const style = getComputedStyle(e);
  const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
  return {src: e.getAttribute("src"), natural: e.naturalWidth, shown: e.clientWidth - padding};
})"""


@pytest.fixture(scope="module")
def on_a_phone(browser: Any, base_url: str) -> dict[str, Any]:
    """Each sampled page loaded once at 390 px: its first screen captured, whether it is too wide, and the size at
    which it shows each chart (stem: (page, natural width, shown width), first page showing it)."""
    ctx = browser.new_context(viewport={"width": 390, "height": 900})
    SHOTS.mkdir(parents=True, exist_ok=True)
    too_wide: list[str] = []
    charts: dict[str, tuple[str, float, float]] = {}
    try:
        page = ctx.new_page()
        for path in SAMPLED:
            page.goto(base_url + path, wait_until="load")
            too_wide.append(first_screen(page, path, "phone"))
            for chart in page.eval_on_selector_all("article img.plot-directive", CHART_SIZES):
                stem = chart["src"].rsplit("/", 1)[-1].removesuffix(".svg")
                charts.setdefault(stem, (path, chart["natural"], chart["shown"]))
    finally:
        ctx.close()
    return {"too_wide": [t for t in too_wide if t], "charts": charts}


def test_pages_fit_a_phone_screen_and_are_captured(on_a_phone: dict[str, Any]) -> None:
    assert not on_a_phone["too_wide"], "; ".join(on_a_phone["too_wide"])


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
    heads = [visit(p).page.locator("article h1").inner_text() for p in GALLERY]
    assert not [t for t in titles + heads if "\\" in t], f"backslashes in gallery titles: {titles + heads}"


@pytest.mark.parametrize("path", GALLERY)
def test_each_gallery_zip_is_served_and_holds_the_kernel_and_its_helpers(
    visit: Callable[[str], Visit], path: str
) -> None:
    from matmul_site.sphinx import kernel_source

    page = visit(path).page
    kernel = path.removeprefix("gallery/").removesuffix(".html")
    zips = set(page.eval_on_selector_all("article a.download[href$='.zip']", "els => els.map(e => e.href)"))
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


def test_the_ladder_table_scrolls_inside_its_own_box_on_a_phone(browser: Any, base_url: str) -> None:
    ctx = browser.new_context(viewport={"width": 390, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(urljoin(base_url, "index.html"), wait_until="load")
        box = page.evaluate(
            """() => {
              const table = document.querySelector("article table.results-table.ladder");
              if (!table) return null;
              let box = table.parentElement;
              while (box && box.tagName !== "ARTICLE" && getComputedStyle(box).overflowX === "visible")
                box = box.parentElement;
              const r = box.getBoundingClientRect();
              return {tag: box.tagName, overflow: getComputedStyle(box).overflowX, left: r.left, right: r.right,
                      table: table.getBoundingClientRect().width, inner: box.clientWidth,
                      page: document.documentElement.scrollWidth - window.innerWidth};
            }"""
        )
    finally:
        ctx.close()
    assert box is not None, "index.html has no results-ladder table"
    assert box["page"] <= 1, f"index.html scrolls sideways on a 390 px phone by {box['page']} px"
    fits = box["table"] <= box["inner"] + 1
    assert fits or box["overflow"] in ("auto", "scroll"), f"the ladder table overflows its box: {box}"
    assert box["tag"] != "ARTICLE" or fits, f"the ladder table has no scrolling box of its own: {box}"
    assert box["left"] >= 0 and box["right"] <= 391, f"the ladder table's box leaves the screen: {box}"


def test_charts_on_a_phone_show_no_text_under_9_pt_and_none_overlapping(on_a_phone: dict[str, Any]) -> None:
    """At 390 px, each chart a page shows (the plot directive's images) is drawn again from its code (from the
    results the site was built from) and its text is checked at the scale the phone shows it: 9 pt or more, no
    overlap, nothing outside the figure (chart_text.py). The phone must also give each chart the width the chart
    test assumes (chartkit.PHONE_CHART_PX)."""
    import chart_text

    from matmul_site import chartkit

    shown = on_a_phone["charts"]
    expected = {f"plot_{v}" for v in ("summary", "sweep", "steps", "replication")}
    assert expected <= set(shown), f"charts seen: {sorted(shown)}"
    problems = []
    for stem, (path, natural, width) in sorted(shown.items()):
        if width < min(natural, chartkit.PHONE_CHART_PX) - 1:
            problems.append(
                f"{path}: {stem} is {width:.0f} px wide, less than the {chartkit.PHONE_CHART_PX} px assumed"
            )
        fig = chart_text.draw(stem)
        drawn = chart_text.natural_width_px(fig)
        assert abs(drawn - natural) <= 1, f"{stem}: the site's chart is {natural} px wide, its code draws {drawn}"
        problems += [f"{path}: {stem}: {p}" for p in chart_text.layout_problems(fig, scale=min(1.0, width / natural))]
    assert not problems, "\n".join(problems)


def test_an_opened_kernel_diff_scrolls_inside_its_own_box_on_a_phone(browser: Any, base_url: str) -> None:
    chapter = sorted((p for p in PAGES if re.fullmatch(r"chapters/v\d+\.html", p)), key=lambda p: int(p[10:-5]))[-1]
    ctx = browser.new_context(viewport={"width": 390, "height": 900})
    try:
        page = ctx.new_page()
        page.goto(base_url + chapter, wait_until="load")
        diff = page.locator("article details.kernel-diff")
        assert diff.count() == 1, f"{chapter}: {diff.count()} kernel diffs"
        shown = "document.querySelector('details.kernel-diff pre').checkVisibility()"
        assert not page.evaluate(shown), f"{chapter}: the diff is not collapsed"
        diff.locator("summary").click()
        box = page.evaluate(
            """() => {
              const pre = document.querySelector("details.kernel-diff pre");
              const r = pre.getBoundingClientRect();
              return {open: pre.checkVisibility(), left: r.left, right: r.right, height: r.height,
                      overflow: getComputedStyle(pre).overflowX, wide: pre.scrollWidth > pre.clientWidth,
                      page: document.documentElement.scrollWidth - window.innerWidth};
            }"""
        )
    finally:
        ctx.close()
    assert box["open"] and box["height"] > 100, f"{chapter}: the diff does not open: {box}"
    assert box["page"] <= 1, f"{chapter}: the opened diff makes the page scroll sideways by {box['page']} px"
    assert box["left"] >= 0 and box["right"] <= 391, f"{chapter}: the diff's box leaves the screen: {box}"
    assert not box["wide"] or box["overflow"] in ("auto", "scroll"), f"{chapter}: long lines are cut off: {box}"
