"""Sparkline series: a host's bandwidth tests in the report, counter rates from the history."""

from __future__ import annotations

import sqlite3
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from fabricdoc.errors import FabricdocError
from fabricdoc.model.evidence import CounterEvidence
from fabricdoc.model.text import escape

from .formatting import fmt_time, port_name
from .index import ReportIndex

BANDWIDTH_SERIES = "bandwidth tests (Gb/s, by round)"
BYTES_AS_GBPS = 8 / 1e9  # a bytes-per-second rate as Gb/s


class Series(list[float]):
    """A time series: the values oldest first (it is their list), with ``times`` (epoch seconds,
    when each was measured) and ``unit``."""

    def __init__(self, values: Iterable[float] = (), times: Iterable[float] = (), unit: str = "") -> None:
        super().__init__(values)
        self.times = tuple(times)
        self.unit = unit


def time_span(times: Sequence[float]) -> str:
    """The first and last time of a series, the second without the date when it is the same day."""
    if not times:
        return ""
    first, last = fmt_time(times[0]), fmt_time(times[-1])
    if len(times) == 1:
        return first
    if first[:10] == last[:10]:
        last = last[11:]
    return f"{first} → {last}"


def history_series(index: ReportIndex, nid: str, port: int | None = None) -> dict[str, list[float]]:
    """The busbw of a host's (or one port's) bandwidth tests in this report, round by round.

    Empty for a switch, or when the host has fewer than two measured tests.
    """
    if index.nodes.get(nid, {}).get("kind") != "host":
        return {}
    label = index.label(nid)
    per_round: dict[int, list[float]] = defaultdict(list)
    for p in index.report.pairs:
        if p.busbw_gbps is not None and any(e[0] == label and (port is None or e[1] == port) for e in (p.src, p.dst)):
            per_round[int(p.round or 0)].append(float(p.busbw_gbps))
    values = [v for r in sorted(per_round) for v in per_round[r]]
    return {BANDWIDTH_SERIES: values} if len(values) > 1 else {}


def store_series(path: Path | None, index: ReportIndex, nid: str, port: int | None = None,
                 limit: int = 8) -> tuple[dict[str, list[float]], str | None]:
    """Counter rates of a node (or one port) across past sweeps in the history store.

    Returns :class:`Series` with the time each rate's interval ended (per second, data
    counters as Gb/s; oldest first; flat-zero series left out; the counters the findings
    name first, then the bandwidth; at most ``limit``) and a note when the store could not
    be read. Never creates the store.
    """
    if path is None or not Path(path).is_file():
        return {}, None
    try:
        from fabricdoc.report.history import History  # pandas: loaded only when a store is there

        with History(path, create=False) as store:
            df = store.counter_rates(node=nid)
    except (FabricdocError, sqlite3.Error, OSError) as exc:
        return {}, f"history store {escape(path)}: {escape(exc)}"
    if port is not None:
        df = df[df["port"] == port]
    out: dict[str, list[float]] = {}
    label = index.label(nid)
    named = {ev.counter for f in index.findings_of_node(nid) for ev in f.evidence if isinstance(ev, CounterEvidence)}

    def first(item: tuple[tuple[Any, str], Any]) -> tuple[int, Any, str]:
        """The counters the findings name first, then the bandwidth, then the rest by name."""
        (p, counter), _ = item
        return (0 if counter in named else 1 if str(counter).endswith("_bytes") else 2, p, str(counter))

    groups = sorted(df.sort_values("t1").groupby(["port", "counter"], sort=True), key=first)
    for (p, counter), g in groups:
        values = [float(v) for v in g["per_second"]]
        if not any(values):
            continue
        times = [float(t) for t in g["t1"]]  # each rate is over the interval that ends at its sweep
        if str(counter).endswith("_bytes"):  # data moved: the port's bandwidth
            out[f"{port_name(label, int(p))} {counter} as Gb/s ({len(values)} intervals)"] = Series(
                [v * BYTES_AS_GBPS for v in values], times, "Gb/s")
        else:
            out[f"{port_name(label, int(p))} {counter} (per second, {len(values)} intervals)"] = Series(
                values, times, "per second")
    return dict(list(out.items())[:limit]), None
