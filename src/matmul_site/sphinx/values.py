"""Generated values on the pages: each page gets the definitions of the values it names, |v7.tflops| and the rest.

``docs/_generated/values.rst`` (written by :mod:`matmul_site.render`) defines every value, about 400 substitutions.
Included through ``rst_prolog``, all of them were parsed again for every page: a third of a build's time.
At ``source-read`` a page's text gets, at its end (so that the line numbers of its warnings stay its own), only the
definitions it references; docutils resolves a substitution wherever in the document it is defined. A name with no
definition is left undefined, so ``-W`` still fails on a value the generator does not write. The file is a
dependency of every page, as the include made it: a page is read again when the values change.
"""

from __future__ import annotations

import re
from pathlib import Path

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError
from sphinx.util.typing import ExtensionMetadata

VALUES = Path("_generated") / "values.rst"  # relative to the docs' source folder
# One definition per line, as the generator writes them: ".. |name| replace:: text".
DEFINITION = re.compile(r"\.\. \|([^|\s]+)\| replace:: .*")
REFERENCE = re.compile(r"\|([^|\s]+)\|")


def definitions(srcdir: Path) -> dict[str, str]:
    """Each generated value's definition line, by name (none where the file does not exist yet); read for each page,
    in a millisecond."""
    path = srcdir / VALUES
    if not path.is_file():
        return {}
    found: dict[str, str] = {}
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or (line.startswith(".. ") and not line.startswith(".. |")):  # blank, or a comment
            continue
        match = DEFINITION.fullmatch(line)
        if match is None:
            raise ExtensionError(f"{path}:{number}: not a one-line substitution definition: {line[:80]!r}")
        found[match.group(1)] = line
    return found


def with_values(text: str, known: dict[str, str]) -> str:
    """A page's text with the definitions of the values it references appended, each once, in order of use."""
    used = [known[name] for name in dict.fromkeys(REFERENCE.findall(text)) if name in known]
    return text if not used else text.rstrip("\n") + "\n\n" + "\n".join(used) + "\n"


def _add_values(app: Sphinx, docname: str, source: list[str]) -> None:
    srcdir = Path(app.srcdir)
    source[0] = with_values(source[0], definitions(srcdir))
    app.env.note_dependency(srcdir / VALUES, docname=docname)


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("source-read", _add_values)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
