"""Kernel code on the pages, and the kernel gallery.

``.. kernel-source:: v3`` is ``literalinclude`` of ``examples/hopper_matmul/matmul_v3.py``
with the same options (use ``:start-at:`` / ``:end-at:`` text markers, never line
numbers). While a kernel file is still being written and is not in the repository,
the directive renders a plain note saying so instead of failing the build; once the
file exists, a marker that does not match is a build error, as with literalinclude.

:func:`stage_gallery` prepares the sphinx-gallery input: sphinx-gallery needs a
module docstring and a gallery header, which the kernel files (they open with
comments) and examples/ (not ours to add files to) do not have. So each kernel is
copied under build/ with a docstring made from its header comments, and after the
gallery is generated the downloadable copy is replaced by the untouched original.
Nothing is ever executed: the gallery runs with ``plot_gallery = False``.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.directives.code import LiteralInclude

from matmul_site import paths, versions

ROOT = paths.ROOT
KERNELS = paths.KERNEL_DIR
GALLERY_HEADER = """Kernel gallery
==============

Every version of the kernel as a file you can download and run on a Hopper GPU
(``python matmul_vN.py`` checks it on several shapes and times it next to cuBLAS;
it needs ``common.py`` and ``tilus_fixes.py`` from the same folder). The pages show
the files as they are in ``examples/hopper_matmul/``; nothing here was executed when
the site was built.
"""


def kernel_path(version: str) -> Path:
    return KERNELS / f"matmul_{version}.py"


class KernelSource(LiteralInclude):
    """literalinclude of a kernel file by version name, or a note while the file is not written yet."""

    def run(self) -> list[nodes.Node]:
        version = self.arguments[0]
        if version not in versions.names():
            raise self.error(f"kernel-source: unknown version {version!r}; known: {', '.join(versions.names())}")
        path = kernel_path(version)
        self.env.note_dependency(str(path))  # a missing file counts as changed: the page rebuilds once it lands
        relative = path.relative_to(ROOT).as_posix()
        if not path.exists():
            text = (
                f"The {version.upper()} kernel ({relative}) is being written and is not in the repository yet; "
                "this page will show its code once it lands."
            )
            return [nodes.note("", nodes.paragraph(text, text, classes=["kernel-pending"]))]
        self.arguments[0] = f"/../{relative}"  # a leading "/" is the docs/ folder
        self.options.setdefault("language", "python")
        self.options.setdefault("caption", relative)
        return super().run()


def _docstring(path: Path, version: str) -> str:
    """A gallery docstring from the file's opening comment block; the code itself is not changed."""
    header: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        header.append(line.lstrip("#").strip())
    first = header[0] if header else f"{version.upper()} kernel"
    title = f"{path.name}: {first}"
    body = " ".join(header[1:]) or "The kernel of chapter " + version.upper() + "."
    body = re.sub(r"([\\*`|_])", r"\\\1", body)
    title = re.sub(r"([\\*`|_])", r"\\\1", title)
    link = f"Explained in :doc:`/chapters/{version}`."
    return f'r"""\n{title}\n{"=" * len(title)}\n\n{body}\n\n{link}\n"""\n'  # raw: the escapes are for rst


def stage_gallery(dest: Path) -> list[Path]:
    """Copy every existing kernel file to dest/ (with a docstring) and write the gallery header."""
    dest.mkdir(parents=True, exist_ok=True)
    staged = []
    for version in versions.names():
        source = kernel_path(version)
        target = dest / source.name
        if not source.exists():
            target.unlink(missing_ok=True)
            continue
        text = _docstring(source, version) + source.read_text(encoding="utf-8")
        if not target.exists() or target.read_text(encoding="utf-8") != text:
            target.write_text(text, encoding="utf-8")
        staged.append(target)
    header = dest / "GALLERY_HEADER.rst"
    if not header.exists() or header.read_text(encoding="utf-8") != GALLERY_HEADER:
        header.write_text(GALLERY_HEADER, encoding="utf-8")
    return staged


def _restore_originals(app: Sphinx) -> None:
    """Make each gallery download the exact repository file, not the staged copy with a docstring."""
    gallery = Path(app.srcdir) / app.config.sphinx_gallery_conf["gallery_dirs"]
    for version in versions.names():
        copy = gallery / kernel_path(version).name
        if copy.exists() and kernel_path(version).exists():
            shutil.copyfile(kernel_path(version), copy)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("kernel-source", KernelSource)
    app.connect("builder-inited", _restore_originals, priority=900)  # after sphinx-gallery (priority 500)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
