"""The one host failure rate: hosts newly drained per host-hour in service, over a run of sweeps."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Snapshot:
    """One sweep as the failure rate sees it: when (epoch s), how many hosts, which were drained."""

    at: float
    hosts: int
    drained: frozenset[str]


def host_failure_rate(snapshots: Iterable[Snapshot], what: str = "sweeps") -> tuple[float, str] | None:
    """Per-host failure rate observed over ``snapshots`` (any order).

    A failure is a host that enters the drain list between one sweep and the
    next; the exposure is the hosts in service (not drained) times the hours
    between them. Returns ``(rate per host-hour, description)``, or None when
    there are fewer than two snapshots or no time between them.
    """
    rows = sorted(snapshots, key=lambda s: s.at)
    if len(rows) < 2:
        return None
    failures, host_hours = 0, 0.0
    for prev, cur in zip(rows, rows[1:], strict=False):
        failures += len(cur.drained - prev.drained)
        in_service = max(prev.hosts - len(prev.drained), 0)
        host_hours += in_service * (cur.at - prev.at) / 3600.0
    if host_hours <= 0:
        return None
    span_h = (rows[-1].at - rows[0].at) / 3600.0
    return failures / host_hours, f"history: {failures} host failures in {len(rows)} {what} over {span_h:.1f} h"
