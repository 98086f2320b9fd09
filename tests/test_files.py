"""The one writer of the files a user keeps (matmul_data.files): atomic, and able to leave an unchanged file alone."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from matmul_data import files


def test_write_atomic_makes_the_folder_and_a_world_readable_file_with_no_temp_file_left(tmp_path: Path) -> None:
    path = tmp_path / "new" / "out.bin"
    assert files.write_atomic(path, b"first") is True
    assert path.read_bytes() == b"first" and path.stat().st_mode & 0o777 == 0o644
    assert files.write_atomic(path, b"second") is True
    assert path.read_bytes() == b"second"
    assert os.listdir(path.parent) == ["out.bin"]


def test_write_atomic_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "run.sh"
    files.write_atomic(path, b"#!/bin/sh\n")
    path.chmod(0o755)
    files.write_atomic(path, b"#!/bin/sh\ntrue\n")
    assert path.stat().st_mode & 0o777 == 0o755


def test_only_if_changed_leaves_a_file_with_the_same_bytes_and_its_time_alone(tmp_path: Path) -> None:
    path = tmp_path / "page.csv"
    files.write_atomic(path, b"a,b\n")
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    assert files.write_atomic(path, b"a,b\n", only_if_changed=True) is False
    assert path.stat().st_mtime_ns == 1_000_000_000
    assert files.write_atomic(path, b"a,c\n", only_if_changed=True) is True
    assert path.read_bytes() == b"a,c\n" and path.stat().st_mtime_ns != 1_000_000_000
    assert files.write_atomic(path, b"a,c\n") is True  # without it: written all the same


def test_holds_compares_bytes_and_is_false_for_no_file(tmp_path: Path) -> None:
    path = tmp_path / "x.txt"
    assert not files.holds(path, b"")
    path.write_bytes(b"one\r\n")
    assert files.holds(path, b"one\r\n") and not files.holds(path, b"one\n")


def test_a_failure_while_writing_leaves_the_old_file_whole_and_no_temp_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "results.json"
    files.write_atomic(path, b'{"old": true}\n')

    def crash(*args: Any, **kwargs: Any) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(files.os, "fsync", crash)  # with the temporary file written, before the rename
    with pytest.raises(OSError, match="disk full"):
        files.write_atomic(path, b'{"new": true, "and": "longer"}\n')
    assert path.read_bytes() == b'{"old": true}\n'
    assert os.listdir(tmp_path) == ["results.json"]
