"""Serve the built site on 127.0.0.1 and drive Debian's chromium through Playwright."""

from __future__ import annotations

import functools
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from support import CHROMIUM, CHROMIUM_ARGS, SITE


class _QuietHandler(SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive sockets left open at exit

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


@pytest.fixture(scope="session")
def base_url() -> Iterator[str]:
    if not (SITE / "index.html").exists():
        pytest.fail(f"no built site at {SITE}: run `nox -s browser` (it builds the site first)")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} not found: `apt-get install -y chromium` (see .ci/run)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield browser
        browser.close()


@pytest.fixture
def context(browser: object, base_url: str) -> Iterator[object]:
    ctx = browser.new_context(viewport={"width": 1280, "height": 900})  # type: ignore[attr-defined]
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=base_url.rstrip("/"))
    yield ctx
    ctx.close()
