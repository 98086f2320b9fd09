"""The pages' own text, as the generator reads it: every page by its path, and the substitutions it names."""

from __future__ import annotations

import re
from pathlib import Path

from matmul_data import paths

USES = re.compile(r"(?<![\w|`])\|([A-Za-z0-9][\w.:+-]*)\|(?![\w|])")  # |v7.tflops| in a page


def pages(docs: Path = paths.DOCS_DIR) -> dict[str, str]:
    """The text of every page (not the generated files, not the gallery sphinx-gallery writes), by its path."""
    found = sorted(p for p in docs.glob("**/*.rst") if not {"_generated", "gallery"} & set(p.relative_to(docs).parts))
    return {page.relative_to(docs).as_posix(): page.read_text(encoding="utf-8") for page in found}


def used_names(docs: Path = paths.DOCS_DIR, texts: dict[str, str] | None = None) -> dict[str, str]:
    """Every substitution name the pages use (their ``texts`` when already read), with the first page that uses it."""
    found: dict[str, str] = {}
    for page, text in (pages(docs) if texts is None else texts).items():
        for name in USES.findall(text):
            found.setdefault(name, page)
    return found
