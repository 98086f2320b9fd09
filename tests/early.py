"""Site builds started as soon as pytest has collected a test that reads them, in background threads.

A test module registers a build at import (at collection) with :func:`register`; conftest's
``pytest_collection_finish`` starts the builds of the modules it selected, and a fixture collects one with
:func:`result`. Each build is a sphinx-build child process of one thread: it runs while the tests before it run
here, on the second core, instead of after them.
"""

from __future__ import annotations

import atexit
import functools
import os
import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

# The environment as it was at collection, before any test ran: a build's child process gets this, not os.environ of
# the moment, which a test running in the meantime may have changed (monkeypatch.setenv).
ENVIRON = dict(os.environ)
# key -> (the test file that reads it, what makes it in a fresh folder)
_REGISTERED: dict[str, tuple[str, Callable[[Path], Any]]] = {}
_STARTED: dict[str, Future[Any]] = {}


@functools.cache
def _threads() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=4, thread_name_prefix="early-build")


@functools.cache
def _folder() -> Path:
    """One folder for every build of this session, removed when pytest exits."""
    folder = Path(tempfile.mkdtemp(prefix="pytest-early-"))
    atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return folder


def register(test_file: str, key: str, make: Callable[[Path], Any]) -> None:
    """Have ``make(folder)`` run early whenever a test of ``test_file`` (its file name) is selected.

    ``key`` names the build's folder too: no space (matplotlib's plot directive drops spaces from the paths it
    writes, and the build then misses its images).
    """
    if not key.replace("-", "").replace("_", "").isalnum():
        raise ValueError(f"{key!r}: a build's key is its folder's name: letters, digits, - and _ only")
    _REGISTERED[key] = (Path(test_file).name, make)


def test_files() -> set[str]:
    """The names of the test files that registered a build."""
    return {test_file for test_file, _ in _REGISTERED.values()}


def _start(key: str) -> Future[Any]:
    if key not in _STARTED:
        make = _REGISTERED[key][1]
        folder = _folder() / key
        folder.mkdir()
        _STARTED[key] = _threads().submit(make, folder)
    return _STARTED[key]


def start(selected_files: set[str]) -> None:
    """Start the builds registered by the selected test files."""
    for key, (test_file, _) in _REGISTERED.items():
        if test_file in selected_files:
            _start(key)


def result(key: str) -> Any:
    """What a registered build made (started now if it was not yet); its exception, if it failed."""
    return _start(key).result()
