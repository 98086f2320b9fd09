"""Let sphinx-notfound-page 1.1.0 build the 404 page on Sphinx 9 without a deprecation warning.

Its sidebar toctree calls ``global_toctree_for_doc`` without ``tags`` (RemovedInSphinx11Warning; an error in the docs
test). It imports that function at call time, so wrapping the module attribute to pass the builder's tags, as Sphinx
itself falls back to, fixes it. Drop this once a notfound release passes ``tags``.
"""

from __future__ import annotations

import functools
from typing import Any

from sphinx.application import Sphinx
from sphinx.environment.adapters import toctree
from sphinx.util.typing import ExtensionMetadata


def _with_tags(function: Any) -> Any:
    if getattr(function, "_passes_tags", False):
        return function

    @functools.wraps(function)
    def wrapper(env: Any, docname: str, builder: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("tags", builder.tags)
        return function(env, docname, builder, **kwargs)

    wrapper._passes_tags = True  # type: ignore[attr-defined]
    return wrapper


def setup(app: Sphinx) -> ExtensionMetadata:
    toctree.global_toctree_for_doc = _with_tags(toctree.global_toctree_for_doc)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
