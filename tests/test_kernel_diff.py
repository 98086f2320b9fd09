"""The "what changed" diff of each chapter: the whole kernel file against the previous version's, exact."""

from __future__ import annotations

import re

import pytest

from matmul_data import versions
from matmul_site.sphinx.kernel_diff import kernel_diff

HUNK = re.compile(r"@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def apply(diff: str, old: list[str]) -> list[str]:
    """The file a unified diff makes of ``old``; AssertionError where a context or removed line does not match."""
    new: list[str] = []
    at = 0  # lines of old consumed
    lines = diff.splitlines(keepends=True)[2:]  # past the --- and +++ lines
    for line in lines:
        hunk = HUNK.match(line)
        if hunk:
            start = int(hunk[1]) - (0 if hunk[2] == "0" else 1)
            new += old[at:start]
            at = start
        elif line.startswith((" ", "-")):
            assert old[at] == line[1:], f"line {at + 1} of the old file is {old[at]!r}, the diff says {line[1:]!r}"
            if line.startswith(" "):
                new.append(line[1:])
            at += 1
        elif line.startswith("+"):
            new.append(line[1:])
    return new + old[at:]


@pytest.mark.parametrize("version", versions.names()[1:])
def test_the_diff_turns_the_previous_kernel_file_into_this_one(version: str) -> None:
    before, text, added, removed = kernel_diff(version)
    assert before == versions.previous(version).name
    old = versions.get(before).path.read_text(encoding="utf-8").splitlines(keepends=True)
    new = versions.get(version).path.read_text(encoding="utf-8").splitlines(keepends=True)
    assert apply(text, old) == new
    head = f"--- examples/hopper_matmul/matmul_{before}.py\n+++ examples/hopper_matmul/matmul_{version}.py\n"
    assert text.startswith(head)
    body = text.splitlines()[2:]
    assert added == sum(1 for line in body if line.startswith("+")) > 0
    assert removed == sum(1 for line in body if line.startswith("-"))


def test_the_first_version_has_no_diff() -> None:
    with pytest.raises(versions.VersionError, match="first version"):
        kernel_diff(versions.names()[0])
