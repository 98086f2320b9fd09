"""Kernel code on the pages, and the kernel gallery.

``.. kernel-source:: v3`` is ``literalinclude`` of ``examples/hopper_matmul/matmul_v3.py`` with the same options
(text markers ``:start-at:`` / ``:end-at:``, never line numbers).

The gallery is sphinx-gallery's, which needs a module docstring and a gallery header: the kernel files open with
comments, and examples/ is not ours to add files to. So at ``builder-inited`` each kernel is copied to
``examples_dirs`` (under build/) with a docstring made from its header comments, and once the gallery is generated
its downloads get the untouched original and a zip of the kernel with the modules it imports (:func:`bundle_files`).
Nothing is executed (``plot_gallery = False``). Each card shows the chapter's chart, the plot directive's PNG
(:mod:`.chart_files`), scaled just before the gallery's index is read, which is read last for that reason (with
``-j`` a card may show the chart of the build before). Files written here keep the time of their inputs (or are
left alone when their bytes are the same): a build with nothing changed finds no dependency newer than its page.
"""

from __future__ import annotations

import ast
import io
import os
import re
import shutil
import tempfile
import zipfile
from pathlib import Path

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.directives.code import LiteralInclude
from sphinx.environment import BuildEnvironment
from sphinx.util.typing import ExtensionMetadata

from matmul_data import files, paths, versions
from matmul_site.sphinx import chart_files

ROOT = paths.ROOT
KERNELS = paths.KERNEL_DIR
ZIP_TIME = (1980, 1, 1, 0, 0, 0)  # the earliest time a zip can hold: every build writes the same bytes
GALLERY_HEADER = """Kernel gallery
==============

Every version of the kernel as a file you can download and run on a Hopper GPU
(``python matmul_vN.py`` checks it on several shapes and times it next to cuBLAS).
Each page offers a zip of the file and the helper modules it imports, which runs as
it is unzipped. The pages show the files as they are in ``examples/hopper_matmul/``;
nothing here was executed when the site was built.
"""


def kernel_path(version: str) -> Path:
    """Where the kernel file of ``version`` is, or will be (a chapter may be written before its kernel)."""
    return versions.kernel_file(version, KERNELS)


class KernelSource(LiteralInclude):
    """literalinclude of a kernel file by version name (the versions are the kernel files that exist)."""

    def run(self) -> list[nodes.Node]:
        version = self.arguments[0]
        if version not in versions.names():
            raise self.error(f"kernel-source: unknown version {version!r}; known: {', '.join(versions.names())}")
        relative = kernel_path(version).relative_to(ROOT).as_posix()
        self.arguments[0] = f"/../{relative}"  # a leading "/" is the docs/ folder
        self.options.setdefault("language", "python")
        self.options.setdefault("caption", relative)
        return super().run()


def bundle_files(path: Path) -> list[Path]:
    """``path`` and every module of its folder that it imports (``import common``, ``from raster import ...``, in
    functions and try blocks too), followed recursively: what it takes to run it."""
    found = {path.stem: path}  # a helper that imports the kernel back adds nothing
    todo = [path]
    while todo:
        module = todo.pop()
        for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"), filename=str(module))):
            if isinstance(node, ast.Import | ast.ImportFrom):
                for name in [node.module or ""] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]:
                    file = path.parent / f"{name.partition('.')[0]}.py"
                    if file.stem not in found and file.is_file():
                        found[file.stem] = file
                        todo.append(file)
    return [path] + [found[name] for name in sorted(found) if name != path.stem]


def zip_bytes(path: Path) -> bytes:
    """A zip of ``bundle_files(path)`` in a folder named after the kernel; the same files give the same bytes."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for file in bundle_files(path):
            info = zipfile.ZipInfo(f"{path.stem}/{file.name}", date_time=ZIP_TIME)
            info.external_attr = 0o644 << 16
            archive.writestr(info, file.read_bytes(), compress_type=zipfile.ZIP_DEFLATED)
    return buffer.getvalue()


def _header_rst(path: Path) -> str:
    """The file's opening comment block as rst: its lines escaped, its ``- `` items a bullet list."""
    lines: list[str] = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if not line.startswith("#"):
            break
        text = re.sub(r"([\\*`|_])", r"\\\1", line[1:].removeprefix(" ").rstrip())
        was_list = bool(lines) and lines[-1].startswith(("- ", "  "))
        is_list = text.startswith("- ") or (was_list and text.startswith("  "))
        if lines and lines[-1] and is_list != was_list:
            lines.append("")  # rst wants a blank line where a list starts or ends
        lines.append(text)
    return "\n".join(lines).strip()


def _docstring(path: Path, version: str, download: Path) -> str:
    """A gallery docstring: the chapter's title, what the file is, its opening comment block, the zip to download."""
    title = versions.get(version, path.parent).heading  # also the card's title, which sphinx-gallery puts in raw HTML
    lead = f"The complete kernel file ``{path.relative_to(ROOT).as_posix()}``, explained in :doc:`/chapters/{version}`."
    helpers = [file.name for file in bundle_files(path)[1:]]
    needs = f" and the modules it imports ({', '.join(f'``{name}``' for name in helpers)})" if helpers else ""
    in_docs = Path(os.path.relpath(download, paths.DOCS_DIR)).as_posix()  # a "/" path starts at docs/
    parts = [title, "=" * len(title), "", lead, "", _header_rst(path), "",
             f"To run it, download :download:`{download.name} </{in_docs}>`: it holds ``{path.name}``{needs}. "
             f"Unzip it and run ``python {path.name}`` in the folder it makes, on a Hopper GPU."]  # fmt: skip
    return 'r"""\n' + "\n".join(parts) + '\n"""\n'  # raw: the escapes are for rst


def stage_gallery(dest: Path, downloads: Path | None = None) -> list[Path]:
    """Copy every kernel file to dest/ (with a docstring), its zip to ``downloads`` (or dest/../gallery_downloads)."""
    downloads = downloads or dest.parent / "gallery_downloads"
    dest.mkdir(parents=True, exist_ok=True)
    staged = []
    for version in versions.names(KERNELS):
        source = kernel_path(version)
        target = dest / source.name
        download = downloads / f"{source.stem}.zip"
        files.write_atomic(download, zip_bytes(source), only_if_changed=True)
        text = _docstring(source, version, download) + source.read_text(encoding="utf-8")
        files.write_atomic(target, text.encode("utf-8"), only_if_changed=True)
        staged.append(target)
    for left in dest.glob("matmul_v*.py"):  # a version removed since the last build
        if left not in staged:
            left.unlink()
    files.write_atomic(dest / "GALLERY_HEADER.rst", GALLERY_HEADER.encode("utf-8"), only_if_changed=True)
    return staged


def forget_removed_versions(gallery: Path) -> None:
    """Delete what sphinx-gallery generated for kernel files that no longer exist (it never deletes its output): the
    page of a removed version would still link to the removed chapter and break the build."""
    current = set(versions.names(KERNELS))
    for path in sorted(gallery.glob("**/*matmul_v*")):
        found = re.search(r"matmul_(v\d+)(?:_|\.)", path.name)
        if found and found[1] not in current and path.is_file():
            path.unlink()


class VersionOrder:
    """sphinx-gallery's ``within_subsection_order``: the cards in ladder order (V0, V1, ..., V10), not by code size."""

    def __init__(self, src_dir: str | Path) -> None:
        self.src_dir = src_dir

    def __call__(self, filename: str | Path) -> tuple[int, str]:
        number = versions.number_of(Path(filename).name)
        return (1 << 30 if number is None else number, str(filename))

    def __repr__(self) -> str:  # the same text in every build, as sphinx-gallery's own sort keys give
        return "<VersionOrder>"


def _gallery_dir(app: Sphinx) -> Path:
    return Path(app.srcdir) / app.config.sphinx_gallery_conf["gallery_dirs"]


def _gallery_index(app: Sphinx) -> str:
    return f"{app.config.sphinx_gallery_conf['gallery_dirs']}/index"


def _stage(app: Sphinx) -> None:
    """sphinx-gallery's input, staged where the configuration says it is, before sphinx-gallery reads it."""
    stage_gallery(Path(app.srcdir, app.config.sphinx_gallery_conf["examples_dirs"]))
    forget_removed_versions(_gallery_dir(app))


def _restore_originals(app: Sphinx) -> None:
    """Each gallery page's downloads, just written from the staged copy: the repository file and the runnable zip,
    with the time of the newest original, so that the gallery page counts as changed only when a kernel file did."""
    for version in versions.names():
        source = kernel_path(version)
        copy = _gallery_dir(app) / source.name
        if copy.exists():
            files.write_atomic(copy, source.read_bytes())  # not the staged copy with a docstring
            shutil.copystat(source, copy)  # the file's time (and mode), as a copy2 would keep them
            archive = copy.with_suffix(".zip")  # sphinx-gallery's: the .py alone
            files.write_atomic(archive, zip_bytes(source), only_if_changed=True)
            newest = max(file.stat().st_mtime_ns for file in bundle_files(source))
            os.utime(archive, ns=(newest, newest))


def _read_gallery_index_last(app: Sphinx, env: BuildEnvironment, docnames: list[str]) -> None:
    """The gallery's index after every chapter, so that the charts its cards show are drawn when it is read."""
    index = _gallery_index(app)
    if index in docnames:
        docnames.remove(index)
        docnames.append(index)


def _write_thumbnails(app: Sphinx, docname: str, source: list[str]) -> None:
    """Each card's image, where sphinx-gallery keeps it: the chapter's chart (or sphinx-gallery's "no image")."""
    if docname != _gallery_index(app):
        return
    app.env.note_dependency(str(paths.DOCS_DIR / "_generated" / "values.rst"))  # the cards show the charts
    from sphinx_gallery import glr_path_static
    from sphinx_gallery.utils import scale_image

    thumbs = _gallery_dir(app) / "images" / "thumb"
    width, height = app.config.sphinx_gallery_conf["thumbnail_size"]
    for version in versions.names():
        chart = chart_files.chart_png(app, f"plot_{version}")
        image = chart if chart.is_file() else Path(glr_path_static()) / "no_image.png"
        with tempfile.TemporaryDirectory() as scratch:
            scaled = Path(scratch) / "thumb.png"
            scale_image(image, scaled, width, height)
            thumb = thumbs / f"sphx_glr_matmul_{version}_thumb.png"
            files.write_atomic(thumb, scaled.read_bytes(), only_if_changed=True)


def setup(app: Sphinx) -> ExtensionMetadata:
    app.add_directive("kernel-source", KernelSource)
    app.connect("builder-inited", _stage, priority=400)  # before sphinx-gallery generates the gallery (500)
    app.connect("builder-inited", _restore_originals, priority=900)  # after it
    app.connect("env-before-read-docs", _read_gallery_index_last)
    app.connect("source-read", _write_thumbnails)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
