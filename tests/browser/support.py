"""Where the built site and screenshots live, and which pages it has."""

from __future__ import annotations

import os
import re
import urllib.error
import urllib.request
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SITE_DIR", ROOT / "build" / "browser-html")).resolve()  # nox -s browser's own build
SHOTS = Path(os.environ.get("SCREENSHOT_DIR", ROOT / "build" / "screenshots")).resolve()
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# Flags for a closed network: no background fetches, no sandbox as root, no GPU.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def site_pages() -> list[str]:
    """Every content page of the build, as a path relative to the site root."""
    if not (SITE / "index.html").exists():
        return []
    skip = {"genindex.html", "search.html", "py-modindex.html"}
    pages = sorted(p.relative_to(SITE).as_posix() for p in SITE.rglob("*.html"))
    return [p for p in pages if p not in skip and not p.startswith(("_", "gallery/sg_execution_times"))]


def gallery_pages() -> list[str]:
    """The per-version gallery pages (gallery/matmul_vN.html)."""
    return sorted(p for p in site_pages() if re.fullmatch(r"gallery/matmul_v\d+\.html", p))


def sampled_pages() -> list[str]:
    """Every page but the gallery's per-version pages, and the last of those: they come from one template, so one
    stands for all in the checks that load a page in Chromium (every link, asset and download of every page is
    still fetched, in test_published_site.py)."""
    gallery = gallery_pages()
    return [p for p in site_pages() if p not in gallery] + gallery[-1:]


def first_screen(page: Any, path: str, label: str) -> str:
    """Capture the first screen of a page as a reader lands on it (build/screenshots/); "" or why it is too wide."""
    # The first screen only: a full-page capture of every page cost a minute of CI.
    page.screenshot(path=str(SHOTS / f"{path.replace('/', '_')[:-5]}-{label}.png"))
    overflow = page.evaluate("document.documentElement.scrollWidth - window.innerWidth")
    width = page.viewport_size["width"]
    return f"{path} is {overflow}px wider than the {width}px screen" if overflow > 1 else ""


def published_url() -> str:
    """The html_baseurl the site was built for, read back from the canonical link of its index page."""
    index = (SITE / "index.html").read_text(encoding="utf-8") if (SITE / "index.html").exists() else ""
    match = re.search(r'<link rel="canonical" href="([^"]*)index\.html"', index)
    return match[1] if match else ""


def origin(url: str) -> str:
    """scheme://host:port of a URL (what browser permissions are granted to)."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


class PageLinks(HTMLParser):
    """Every URL a page loads or links to (href, src, data), its canonical link and its <meta> tags."""

    ATTRIBUTES = {"a": "href", "link": "href", "script": "src", "img": "src", "object": "data", "iframe": "src"}

    def __init__(self, text: str) -> None:
        super().__init__()
        self.urls: list[str] = []
        self.meta: dict[str, str] = {}
        self.canonical = ""
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        if tag == "meta" and ("property" in values or "name" in values):
            self.meta[values.get("property") or values["name"]] = values.get("content", "")
        if tag == "link" and values.get("rel") == "canonical":
            self.canonical = values.get("href", "")
        elif values.get(self.ATTRIBUTES.get(tag, "")):
            self.urls.append(values[self.ATTRIBUTES[tag]])


class Anchors(HTMLParser):
    """A built page's links as its HTML has them: (classes, href, inside the sidebar's table of contents)."""

    def __init__(self, text: str) -> None:
        super().__init__()
        self.links: list[tuple[set[str], str, bool]] = []
        self.open: list[bool] = []  # per open element: is it, or is it inside, the sidebar tree
        self.feed(text)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = {k: v or "" for k, v in attrs}
        classes = set(values.get("class", "").split())
        inside = bool(self.open and self.open[-1]) or "sidebar-tree" in classes
        if tag == "a" and "href" in values:
            self.links.append((classes, values["href"], inside))
        if tag not in FirstParagraph.VOID:
            self.open.append(inside)

    def handle_endtag(self, tag: str) -> None:
        if self.open and tag not in FirstParagraph.VOID:
            self.open.pop()


class FirstParagraph(HTMLParser):
    """The text of the article's first paragraph of body text: the first <p> directly inside a <section>."""

    VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}

    def __init__(self, text: str) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.parts: list[str] = []
        self.inside = self.done = False
        self.feed(text)
        self.text = " ".join("".join(self.parts).replace("\\(", "").replace("\\)", "").split())

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "p" and not self.done and self.stack[-1:] == ["section"] and "article" in self.stack:
            self.inside = True
        if tag not in self.VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag in self.stack:
            del self.stack[len(self.stack) - 1 - self.stack[::-1].index(tag) :]
        if tag == "p" and self.inside:
            self.inside, self.done = False, True

    def handle_data(self, data: str) -> None:
        if self.inside:
            self.parts.append(data)


_NO_PROXY = urllib.request.build_opener(urllib.request.ProxyHandler({}))


def fetch(url: str) -> tuple[int, bytes]:
    """Status and body of a GET to the local test server (never through a proxy)."""
    try:
        with _NO_PROXY.open(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


class Visit:
    """One loaded page and the problems the browser reported while loading it."""

    def __init__(self, page: Any, problems: list[str]) -> None:
        self.page, self.problems = page, problems


def open_pages(context: Any, urls: list[str]) -> list[Visit]:
    """Open pages side by side; collect each one's console errors and failed requests as readable problems.

    Every navigation starts before any is waited on, so the pages load at once and their waits for a quiet network
    (half a second of no requests each, when late requests such as fonts and the search index have failed or not)
    overlap instead of adding up.
    """
    visits = []
    for url in urls:
        page = context.new_page()
        problems: list[str] = []
        page.on(
            "console",
            lambda msg, problems=problems: (
                problems.append(f"console error: {msg.text} at {msg.location.get('url')}")
                if msg.type == "error" and not msg.location.get("url", "").endswith("/favicon.ico")
                else None
            ),
        )
        page.on("pageerror", lambda exc, problems=problems: problems.append(f"script error: {exc}"))
        page.on(
            "requestfailed",
            lambda req, problems=problems: problems.append(f"request failed: {req.url} ({req.failure})"),
        )
        page.on(
            "response",
            lambda resp, problems=problems: (
                problems.append(f"HTTP {resp.status}: {resp.url}")
                if resp.status >= 400 and not resp.url.endswith("/favicon.ico")  # asked by the browser, not the page
                else None
            ),
        )
        page.goto(url, wait_until="commit")
        visits.append(Visit(page, problems))
    for visit in visits:
        visit.page.wait_for_load_state("load")
        visit.page.wait_for_load_state("networkidle")
    return visits


def open_page(context: Any, url: str) -> Visit:
    """Open a page; collect console errors and failed requests as readable problems."""
    return open_pages(context, [url])[0]
