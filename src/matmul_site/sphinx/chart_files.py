"""The files of the charts that the plot directive draws, and when they must be drawn again.

matplotlib's plot directive draws each chart once per build and saves it in every format of ``plot_formats``: the
SVG the page shows and a PNG that the link previews (:mod:`.link_preview`) and the gallery's cards
(:mod:`.kernel_source`) reuse (:func:`chart_png`). It redraws a chart only when its image is older than its script,
not knowing that the script reads the results file; so at the start of a build, when the results file differs from
the one the charts were drawn from (another file, other bytes, or none at all), every chart image is deleted, and
every page whose chart image is missing is read again (and so draws it afresh).
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.util.typing import ExtensionMetadata

from matmul_data import paths


def plot_build_dir(app: Sphinx, source: Path = paths.PLOTS_DIR) -> Path:
    """Where the plot directive saves the images drawn from ``source`` (plots/, or the chapters' inline charts):
    ``plot_directive/`` beside the doctree folder, under the source's folder relative to the configuration one."""
    return Path(app.doctreedir).parent / "plot_directive" / os.path.relpath(source, app.confdir)


def chart_png(app: Sphinx, chart: str) -> Path:
    """The PNG of a chart (``plot_v3``, ``plot_sweep``) that the plot directive drew in this or an earlier build (it
    may not exist): a version's chart is drawn from its chapter page, every other from plots/<chart>.py."""
    folder = plot_build_dir(app, paths.CHAPTERS_DIR) if re.fullmatch(r"plot_v\d+", chart) else plot_build_dir(app)
    return folder / f"{chart}.png"


RESULTS_STAMP = "results.sha256"  # beside the chart folders: which results file the charts there were drawn from


def results_digest() -> str:
    """What the charts are drawn from: the results file's path and a hash of its bytes, or "none" without one."""
    results_file = paths.results_file()
    if results_file is None:
        return "none"
    return f"{results_file.resolve()} {hashlib.sha256(results_file.read_bytes()).hexdigest()}"


def forget_charts_of_other_results(app: Sphinx) -> None:
    """Delete every chart image when the results file is not the one they were drawn from, so that the plot
    directive draws them again (from the new file, or saying that nothing is measured yet)."""
    stamp = Path(app.doctreedir).parent / "plot_directive" / RESULTS_STAMP
    digest = results_digest()
    if stamp.is_file() and stamp.read_text(encoding="utf-8") == digest:
        return
    for folder in (plot_build_dir(app), plot_build_dir(app, paths.CHAPTERS_DIR)):
        for image in [*folder.glob("*.png"), *folder.glob("*.svg")]:  # none when the folder is not there yet
            image.unlink()
    stamp.parent.mkdir(parents=True, exist_ok=True)
    stamp.write_text(digest, encoding="utf-8")


PLOT = re.compile(r"^\.\. plot::[ \t]*(\S*)\n((?:[ \t]+.*\n|[ \t]*\n)*)", re.M)


def charts_of(app: Sphinx, source: str) -> list[Path]:
    """The PNG of each chart a page draws: a script's (``.. plot:: plot_sweep.py``) or inline code's (``plot_v3``)."""
    found = []
    for script, body in PLOT.findall(source):
        prefix = re.search(r":filename-prefix:[ \t]*(\S+)", body)
        if script:
            found.append(plot_build_dir(app) / f"{Path(script).stem}.png")
        elif prefix:
            found.append(plot_build_dir(app, paths.CHAPTERS_DIR) / f"{prefix.group(1)}.png")
    return found


def pages_whose_charts_are_gone(
    app: Sphinx, env: Any, added: set[str], changed: set[str], removed: set[str]
) -> list[str]:
    """The pages to read again because an image of their charts is missing (deleted above, or never drawn)."""
    stale = []
    for docname in env.found_docs - added - changed:
        path = Path(env.doc2path(docname))
        if path.suffix == ".rst" and path.is_file():
            if any(not png.is_file() for png in charts_of(app, path.read_text(encoding="utf-8"))):
                stale.append(docname)
    return stale


def setup(app: Sphinx) -> ExtensionMetadata:
    app.connect("builder-inited", forget_charts_of_other_results)
    app.connect("env-get-outdated", pages_whose_charts_are_gone)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
