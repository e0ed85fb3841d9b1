"""NCCL_DEBUG logs as a source: one job log read from a file and parsed by :mod:`fabricdoc.probes.nccl.debug`.

:func:`read_nccl_debug` reads through :func:`fabricdoc.model.inputs.read_text` (too big, not
UTF-8 or empty: one error naming the file and line).
"""

from __future__ import annotations

from pathlib import Path

from fabricdoc.errors import ParseError
from fabricdoc.model.inputs import read_text
from fabricdoc.probes.nccl.debug import (
    Connection,
    NcclDebugLog,
    NetError,
    NicEvent,
    parse_nccl_debug,
)

__all__ = ["Connection", "NcclDebugLog", "NetError", "NicEvent", "parse_nccl_debug", "read_nccl_debug"]


def read_nccl_debug(path: str | Path) -> NcclDebugLog:
    """Read and parse one log file; an unreadable file, or one with no NCCL line at all, is one error."""
    text = read_text(path, "NCCL debug log")
    if not text.strip():
        raise ParseError(str(path), 0, "", "empty file: no NCCL_DEBUG output")
    log = parse_nccl_debug(text, str(path))
    if not log.nccl_lines and not log.watchdogs:
        first = next((n for n, ln in enumerate(text.splitlines(), 1) if ln.strip()), 1)
        raise ParseError(str(path), first, text.splitlines()[first - 1][:120],
                         "no NCCL_DEBUG line in the file (run the job with NCCL_DEBUG=INFO)")
    return log
