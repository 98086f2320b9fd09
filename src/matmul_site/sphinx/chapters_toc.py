"""``.. chapters-toc::``: the index's toctree of chapters, one per kernel file, V0 first, found by convention.

A new version needs no edit to the index; lines in the directive's content follow the chapters (the closing pages).
When the set of versions changes, the page holding the directive is read again.
"""

from __future__ import annotations

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.directives.other import TocTree
from sphinx.environment import BuildEnvironment
from sphinx.util.typing import ExtensionMetadata

from matmul_data import versions

ENV_KEY = "matmul_chapters"


class ChaptersToc(TocTree):
    """A toctree whose first entries are ``chapters/v0``, ``chapters/v1``, ... for every kernel file."""

    def run(self) -> list[nodes.Node]:
        chapters = [f"chapters/{name}" for name in versions.names()]
        self.content = StringList([*chapters, *self.content], source=self.get_source_info()[0])
        found: dict[str, tuple[str, ...]] = getattr(self.env, ENV_KEY, {})
        found[self.env.docname] = tuple(chapters)
        setattr(self.env, ENV_KEY, found)
        return super().run()


def reread_when_versions_change(
    app: Sphinx, env: BuildEnvironment, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """The pages whose chapter list no longer matches the kernel files (a version added or removed)."""
    now = tuple(f"chapters/{name}" for name in versions.names())
    found: dict[str, tuple[str, ...]] = getattr(env, ENV_KEY, {})
    return [doc for doc, chapters in found.items() if chapters != now and doc not in removed]


def purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    getattr(env, ENV_KEY, {}).pop(docname, None)


def setup(app: Sphinx) -> ExtensionMetadata:
    app.add_directive("chapters-toc", ChaptersToc)
    app.connect("env-get-outdated", reread_when_versions_change)
    app.connect("env-purge-doc", purge)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True, "env_version": 1}
