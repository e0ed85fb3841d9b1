"""Atomic file writes: a reader sees the old file or the new one, never half of either."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from fabricdoc.errors import FabricdocError


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def write_atomic(path: str | os.PathLike[str], text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder, fsync and a rename.

    The file gets the mode a plain ``open`` would give it (the umask's), or keeps the
    mode of the file it replaces: a report is read by other users and by the scheduler.
    A symlink is written through (its target is replaced, the link stays); a path that
    is not a regular file (``/dev/stdout``, a fifo, a folder) is refused. A failure
    (full disk, read-only folder) raises FabricdocError and leaves any old file intact.
    """
    given = Path(path)
    path = Path(os.path.realpath(given)) if given.is_symlink() else given
    if path.exists() and not path.is_file():
        raise FabricdocError(f"{given}: not a regular file: refusing to replace it (write the report to a file)")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = path.stat().st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~_umask()
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    except OSError as exc:
        raise FabricdocError(f"{path}: cannot write: {exc.strerror or exc}") from None
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise FabricdocError(f"{path}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path
