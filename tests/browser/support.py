"""Where the built site and screenshots live, and which pages it has."""

from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SITE = Path(os.environ.get("SITE_DIR", ROOT / "build" / "html")).resolve()
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
