"""The one loader (matmul_data.loader): a spec or an edited copy is read as its file is now."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from matmul_data import loader


def test_a_spec_rewritten_within_the_second_at_the_same_size_is_read_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Python's .pyc cache is keyed on the source's mtime in whole seconds and its size: both stay the same here.
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    spec = tmp_path / "steps.py"
    stamp = (1_700_000_000, 1_700_000_000)
    spec.write_text('OVER = "v5"\n', encoding="utf-8")
    os.utime(spec, stamp)
    assert loader.import_spec(spec, "steps").OVER == "v5"
    spec.write_text('OVER = "v9"\n', encoding="utf-8")
    os.utime(spec, stamp)
    assert loader.import_spec(spec, "steps").OVER == "v9"
