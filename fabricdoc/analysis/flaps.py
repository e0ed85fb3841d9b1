"""The one flap definition: a flap is a distinct link-down transition within the watch window.

Both ends of a cable report the same flap, so link-level counts take distinct
times (to the millisecond); a port-level summary also says how long the port
was down.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from fabricdoc.model.records import LinkEvent


def distinct_downs(times: Iterable[float]) -> list[float]:
    """Down times with both ends' reports of one flap merged (same millisecond), sorted."""
    return sorted({round(t, 3) for t in times})


def per_minute(flaps: list[float]) -> float | None:
    """Flaps per minute over the span they cover; None for a single flap (no span)."""
    if len(flaps) < 2:
        return None
    span = flaps[-1] - flaps[0]
    return round(len(flaps) / (span / 60.0), 3) if span > 0 else None


def port_summary(events: Iterable[LinkEvent], start: float, end: float) -> dict[tuple[str, int], dict[str, Any]]:
    """Per port over [start, end]: ``flaps`` (distinct downs), ``flaps_per_min``, ``down_s``.

    Time down runs from each down to the next up (or ``end``); a port whose first
    event is an up was down since ``start``.
    """
    window = max(end - start, 1e-9)
    by_port: dict[tuple[str, int], list[LinkEvent]] = {}
    for e in events:
        by_port.setdefault((e.node, e.port), []).append(e)
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for key, evs in by_port.items():
        evs.sort(key=lambda e: e.timestamp)
        flaps = len(distinct_downs(e.timestamp for e in evs if e.state == "down"))
        down_s = 0.0
        down_since: float | None = start if evs and evs[0].state == "up" else None
        for e in evs:
            if e.state == "down" and down_since is None:
                down_since = e.timestamp
            elif e.state == "up" and down_since is not None:
                down_s += max(0.0, e.timestamp - down_since)
                down_since = None
        if down_since is not None:
            down_s += max(0.0, end - down_since)
        out[key] = {
            "ifname": evs[0].ifname,
            "flaps": flaps,
            "flaps_per_min": flaps * 60.0 / window,
            "down_s": round(down_s, 6),
            "window_s": round(window, 6),
        }
    return out
