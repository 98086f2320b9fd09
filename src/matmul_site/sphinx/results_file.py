"""The results file as an input of the build: checked before anything is read, and a dependency of pages.

A file that cannot be used (truncated, not valid, several files and none chosen) stops the build at its start
with the data layer's one-line message, which names the file, the problem and what to do, and with the exit
status of a failed sphinx-build (2). Sphinx 9 answers any exception that an extension raises with a crash report
(versions, traceback, "please open an issue"), which is not the reader's problem here, so the message is logged
as an error and the build ends with SystemExit.

A page that shows something drawn from the file notes it as a dependency (:func:`note_dependency`), so that a
changed file makes the next build read that page again, and only that page.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment
from sphinx.util import logging

from matmul_data import paths, results

logger = logging.getLogger(__name__)
EXIT_STATUS = 2  # what sphinx-build returns when a build fails


def stop_on_a_broken_file(app: Sphinx) -> None:
    """End the build with one line when the results file cannot be used; a missing file is fine (not measured)."""
    try:
        results.load_default()
    except results.ResultsError as err:
        logger.error("the results file cannot be used: %s", err)
        raise SystemExit(EXIT_STATUS) from err


def note_dependency(env: BuildEnvironment) -> None:
    """The page being read shows something drawn from the results file (or from the folder where it will be)."""
    path = paths.results_file()
    env.note_dependency(str(path if path is not None else paths.RESULTS_DIR))


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", stop_on_a_broken_file, priority=100)  # before any other extension reads it
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
