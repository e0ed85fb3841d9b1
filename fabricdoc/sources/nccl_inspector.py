"""NCCL Inspector dumps as a source: the plugin's files found under the paths given, read, and parsed by
:mod:`fabricdoc.probes.nccl.inspector` into each communicator's measured bus bandwidth."""

from __future__ import annotations

from pathlib import Path

from fabricdoc.errors import ParseError
from fabricdoc.model.inputs import read_text
from fabricdoc.probes.nccl.inspector import CommPerf, comm_perfs

__all__ = ["CommPerf", "inspector_files", "read_inspector"]

MAX_FILES = 100_000


def inspector_files(paths: list[str]) -> list[str]:
    """The files named, and every ``*.log``/``*.json``/``*.jsonl`` file under the directories named."""
    out: list[str] = []
    for p in paths:
        path = Path(p)
        if path.is_dir():
            out += sorted(str(f) for f in path.rglob("*") if f.is_file() and f.suffix in (".log", ".json", ".jsonl"))
        else:
            out.append(p)
        if len(out) > MAX_FILES:
            raise ParseError(p, 0, "", f"more than {MAX_FILES} Inspector files")
    if not out:
        raise ParseError(", ".join(paths)[:200], 0, "", "no NCCL Inspector files (*.log, *.json, *.jsonl) found")
    return out


def read_inspector(paths: list[str]) -> list[CommPerf]:
    """Every communicator's collectives from the Inspector files under ``paths``."""
    return comm_perfs((f, read_text(f, "NCCL Inspector file")) for f in inspector_files(paths))
