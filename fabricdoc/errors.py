"""One error hierarchy for the library; only the CLI turns these into a line and an exit code."""

from __future__ import annotations


class FabricdocError(Exception):
    """Base of every error fabricdoc raises on purpose."""


class ParseError(FabricdocError):
    """A tool's output or an input file has a line we do not understand.

    ``source`` names the input (a file path or a tool name), ``line_no`` is 1-based
    (0 when the input ended early), ``line`` is the offending text.
    """

    def __init__(self, source: str, line_no: int, line: str, reason: str = "") -> None:
        self.source = source
        self.line_no = line_no
        self.line = line
        self.reason = reason
        where = f"{source}:{line_no}" if line_no else f"{source}"
        what = f": {reason}" if reason else ""
        shown = line if len(line) <= 120 else line[:117] + "..."
        super().__init__(f"{where}{what}: {shown!r}" if line else f"{where}{what}")


class ProbeError(FabricdocError):
    """A probe could not run: tool missing, timed out, failed, or gave nothing usable."""

    def __init__(self, probe: str, message: str, status: str = "error") -> None:
        self.probe = probe
        self.status = status
        super().__init__(f"{probe}: {message}")


class TopologyError(FabricdocError):
    """A fabric description is inconsistent (unknown node or port, duplicate link...)."""


class ConfigError(FabricdocError):
    """A config, threshold or fault file is invalid; the message names file and key."""
