"""NCCL RAS reports as a source: a saved ``ncclras`` output read from a file and parsed by
:mod:`fabricdoc.probes.nccl.ras`."""

from __future__ import annotations

from fabricdoc.model.inputs import read_text
from fabricdoc.probes.nccl.ras import RasReport, parse_ncclras

__all__ = ["RasReport", "read_ncclras"]


def read_ncclras(path: str) -> RasReport:
    """Read one saved ``ncclras`` output (text or JSON); ParseError naming file and line on anything else."""
    return parse_ncclras(read_text(path, "NCCL RAS report"), path)
