"""The site on a phone (390 px wide): each sampled page fits the screen, its first screen is captured, its charts
get the width the chart layout test assumes, and wide content (the ladder table, an opened kernel diff) scrolls
inside its own box."""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urljoin

import pytest
from support import SHOTS, first_screen, sampled_pages, site_pages

PAGES = site_pages()
SAMPLED = sampled_pages()
pytestmark = pytest.mark.browser


# Each chart's <img> at phone width: its box inside the panel's padding, its natural size, its file.
CHART_SIZES = """els => els.map(e => {
  const style = getComputedStyle(e);
  const padding = parseFloat(style.paddingLeft) + parseFloat(style.paddingRight);
  return {src: e.getAttribute("src"), natural: e.naturalWidth, shown: e.clientWidth - padding};
})"""


@pytest.fixture(scope="module")
def on_a_phone(browser: Any, base_url: str) -> dict[str, Any]:
    """Each sampled page loaded once at 390 px: its first screen captured, whether it is too wide, the size at
    which it shows each chart (stem: (page, natural width, shown width), first page showing it) and, on a chapter,
    each diagram's link and caption hint (page, what DIAGRAMS reads)."""
    ctx = browser.new_context(viewport={"width": 390, "height": 900})
    SHOTS.mkdir(parents=True, exist_ok=True)
    too_wide: list[str] = []
    charts: dict[str, tuple[str, float, float]] = {}
    diagrams: list[tuple[str, dict[str, Any]]] = []
    try:
        page = ctx.new_page()
        for path in SAMPLED:
            page.goto(base_url + path, wait_until="load")
            too_wide.append(first_screen(page, path, "phone"))
            for chart in page.eval_on_selector_all("article img.plot-directive", CHART_SIZES):
                stem = chart["src"].rsplit("/", 1)[-1].removesuffix(".svg")
                charts.setdefault(stem, (path, chart["natural"], chart["shown"]))
            if path.startswith("chapters/"):
                diagrams += [(path, d) for d in page.eval_on_selector_all("article figure.diagram", DIAGRAMS)]
    finally:
        ctx.close()
    return {"too_wide": [t for t in too_wide if t], "charts": charts, "diagrams": diagrams}


def test_pages_fit_a_phone_screen_and_are_captured(on_a_phone: dict[str, Any]) -> None:
    assert not on_a_phone["too_wide"], "; ".join(on_a_phone["too_wide"])


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
                      shadow: getComputedStyle(box).backgroundImage,
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
    assert fits or "radial-gradient" in box["shadow"], f"the ladder table's box does not show that it scrolls: {box}"


def test_a_phone_shows_each_chart_at_the_width_the_chart_layout_test_assumes(on_a_phone: dict[str, Any]) -> None:
    """At 390 px, each chart a page shows (the plot directive's images) gets at least chartkit.PHONE_CHART_PX (or its
    natural width), and its natural width is the one its code draws: the CPU suite's test_chart_layout.py checks
    every chart's text at that scale (9 pt or more, no overlap, nothing outside the figure)."""
    from chart_text import CSS_PX_PER_INCH

    from matmul_site import chartkit

    shown = on_a_phone["charts"]
    expected = {f"plot_{v}" for v in ("summary", "sweep", "steps", "replication")}
    assert expected <= set(shown), f"charts seen: {sorted(shown)}"
    drawn = chartkit.WIDTH_IN * CSS_PX_PER_INCH
    problems = []
    for stem, (path, natural, width) in sorted(shown.items()):
        if abs(natural - drawn) > 1:
            problems.append(f"{path}: {stem} is {natural} px wide on the site, its code draws {drawn:.0f}")
        if width < min(natural, chartkit.PHONE_CHART_PX) - 1:
            problems.append(
                f"{path}: {stem} is {width:.0f} px wide, less than the {chartkit.PHONE_CHART_PX} px assumed"
            )
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


# Each diagram at phone width: the link around its image, and the line its caption ends with (its ::after).
DIAGRAMS = """els => els.map(e => {
  const link = e.querySelector("a.image-reference");
  const caption = e.querySelector("figcaption");
  return {src: e.querySelector("img").getAttribute("src"), href: link ? link.getAttribute("href") : null,
          hint: caption ? getComputedStyle(caption, "::after").content : null};
})"""


def test_a_phone_offers_each_diagram_full_size(on_a_phone: dict[str, Any]) -> None:
    """A diagram's labels are too small at 390 px: each diagram links to its own SVG, and its caption says to tap."""
    problems = []
    for path, d in on_a_phone["diagrams"]:
        if not d["href"] or d["href"].rsplit("/", 1)[-1] != d["src"].rsplit("/", 1)[-1]:
            problems.append(f"{path}: {d['src']} does not link to itself full size ({d['href']})")
        if "Tap" not in (d["hint"] or ""):
            problems.append(f"{path}: {d['src']}'s caption does not say to tap it ({d['hint']})")
    assert on_a_phone["diagrams"], "no diagram (figure.diagram) on any chapter"
    assert not problems, "\n".join(problems)
