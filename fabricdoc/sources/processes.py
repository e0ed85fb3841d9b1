"""The processes fabricdoc started (tests, tools): stop them all when a run is interrupted."""

from __future__ import annotations

from fabricdoc.probes import exec as px


def stop_all() -> int:
    """Kill every process group fabricdoc started that is still running; returns how many."""
    return px.kill_all()
