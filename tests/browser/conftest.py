"""Serve the built site on 127.0.0.1, as GitHub Pages will and at the root, and drive Debian's chromium."""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from support import CHROMIUM, CHROMIUM_ARGS, SITE, origin, published_url


class _PagesHandler(SimpleHTTPRequestHandler):
    """Serves the site only under `prefix`, and answers a missing page with 404.html and status 404, as Pages does."""

    protocol_version = "HTTP/1.0"  # one request per connection: no keep-alive sockets left open at exit

    def __init__(self, *args: object, prefix: str, **kwargs: object) -> None:
        self.prefix = prefix
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]

    def translate_path(self, path: str) -> str:
        here = urlsplit(path).path
        if not (here + "/").startswith(self.prefix):
            return str(Path(self.directory) / ".outside-the-served-path")  # does not exist: a 404
        return super().translate_path("/" + path[len(self.prefix) :])

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        page = Path(self.directory) / "404.html"
        if code != 404 or not page.is_file():
            super().send_error(code, message, explain)
            return
        body = page.read_bytes()
        self.send_response(404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002
        pass


class _QuietServer(ThreadingHTTPServer):
    """A threading server that lets a browser drop a connection quietly: Chromium cancels the requests of a page it
    leaves (a reset or a broken pipe in the handler thread, not a failure of the site)."""

    def handle_error(self, request: object, client_address: object) -> None:
        if not isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            super().handle_error(request, client_address)  # type: ignore[arg-type]


def _serve(prefix: str) -> Iterator[str]:
    if not (SITE / "index.html").exists():
        pytest.fail(f"no built site at {SITE}: run `nox -s browser` (it builds the site first)")
    handler = functools.partial(_PagesHandler, directory=str(SITE), prefix=prefix)
    server = _QuietServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}{prefix}"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="session")
def site_path() -> str:
    """The path the site was built to live under (html_baseurl's path), e.g. /hopper-matmul/."""
    path = urlsplit(published_url()).path
    if path in ("", "/"):
        pytest.fail(
            f"{SITE} was built for {published_url() or 'no html_baseurl'}, not a sub-path: "
            "run `nox -s browser` (it builds with HOPPER_MATMUL_BASEURL ending in /hopper-matmul/)"
        )
    return path


@pytest.fixture(scope="session")
def base_url(site_path: str) -> Iterator[str]:
    """The site under its sub-path, the way GitHub Pages serves a project site: the full suite runs here."""
    yield from _serve(site_path)


@pytest.fixture(scope="session")
def root_url() -> Iterator[str]:
    """The same build served at the root, as `python3 -m http.server -d build/html` serves it to a local reader."""
    yield from _serve("/")


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
    ctx.grant_permissions(["clipboard-read", "clipboard-write"], origin=origin(base_url))
    yield ctx
    ctx.close()
