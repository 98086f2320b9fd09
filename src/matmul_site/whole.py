"""Sentences of the pages that rest on measured values, written whole: a page keeps the sentence itself in a comment
just before its paragraph, and names it where it stands::

    .. whole v8.whole-over-the-sweep-v7
       Over the sweep V7 is |v7.sweep|; V8 is |latest.sweep|.
       unmeasured: These numbers are not measured yet.

    The ladder and the sweep do not test the model. |v8.whole-over-the-sweep-v7| Every difference is ...

The generator (:func:`whole_values`) writes ``|v8.whole-over-the-sweep-v7|`` as the sentence with its values where
the data gives every one of them, and as the ``unmeasured:`` sentence where it lacks any: never "V7 is not measured
yet; V8 is not measured yet" in the middle of a sentence. A comment is invisible on the built page.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterator

from matmul_site.doc_pages import USES
from matmul_site.numfmt import NOT_MEASURED

COMMENT = re.compile(r"^([ \t]*)\.\. whole (\S+)[ \t]*\n((?:\1   .*\n)+)", re.M)
UNMEASURED = "unmeasured:"
DOC = re.compile(r":doc:`([^`<]*<)?([^`<>]+)(>?)`")  # a :doc: link, made absolute: values.rst is in _generated/


def absolute(page: str, text: str) -> str:
    """``text`` with its relative :doc: links made absolute from ``page`` (``v4`` on chapters/v8.rst: /chapters/v4)."""

    def link(m: re.Match[str]) -> str:
        target = (
            m[2] if m[2].startswith("/") else "/" + posixpath.normpath(posixpath.join(posixpath.dirname(page), m[2]))
        )
        return f":doc:`{m[1] or ''}{target}{m[3]}`"

    return DOC.sub(link, text)


def templates(texts: dict[str, str]) -> dict[str, tuple[str, str]]:
    """Every page's ``.. whole`` comments: the sentence's name -> (its text with substitutions, the sentence that
    says it is not measured)."""
    found: dict[str, tuple[str, str]] = {}
    for page, text in texts.items():
        for match in COMMENT.finditer(text):
            said, _, missing = " ".join(line.strip() for line in match[3].splitlines()).partition(UNMEASURED)
            if match[2] in found or not said.strip() or not missing.strip() or UNMEASURED in missing:
                raise ValueError(f"{page}: '.. whole {match[2]}' needs a sentence, then one '{UNMEASURED}' sentence, "
                                 "and a name no other sentence has")  # fmt: skip
            found[match[2]] = (absolute(page, said.strip()), absolute(page, missing.strip()))
    return found


def whole_values(texts: dict[str, str], named: dict[str, str]) -> Iterator[tuple[str, str]]:
    """Each ``.. whole`` sentence with the values ``named`` gives, or its unmeasured sentence where one is
    missing or reads 'not measured yet'."""
    for name, (sentence, missing) in templates(texts).items():
        wanted = USES.findall(sentence)
        known = all(named.get(n, NOT_MEASURED) != NOT_MEASURED for n in wanted)
        yield name, USES.sub(lambda m: named[m[1]], sentence) if known else missing
