"""Writing the files a user keeps (results, raw samples, the build record, generated pages, charts, the site's
extras): each replaced in one step, so that a reader or a crash sees the old file or the new one, never half."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def holds(path: Path, data: bytes) -> bool:
    """Whether ``path`` is a file whose bytes are ``data``."""
    path = Path(path)
    return path.is_file() and path.read_bytes() == data


def write_atomic(path: Path, data: bytes, only_if_changed: bool = False) -> bool:
    """Replace ``path`` with ``data`` in one step, making its folder if need be; with ``only_if_changed``, leave a
    file that already holds ``data`` alone (its time too, so that nothing made from it counts as stale). Returns
    whether it wrote."""
    path = Path(path)
    if only_if_changed and holds(path, data):
        return False
    path.parent.mkdir(parents=True, exist_ok=True)
    # Same directory as the target, so os.replace is a rename within one filesystem (atomic on POSIX).
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())  # the bytes are on disk before the name points at them
        # mkstemp makes the file private (0600); give it the mode a normally written file would have.
        os.chmod(tmp, path.stat().st_mode & 0o777 if path.exists() else 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    # Persist the rename itself (the directory entry); not every platform can open a directory.
    with contextlib.suppress(OSError):
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
    return True
