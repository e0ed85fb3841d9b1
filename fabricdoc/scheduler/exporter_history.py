"""The history store as the exporter reads it: each port's newest sample and its latest rates."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from fabricdoc.errors import FabricdocError
from fabricdoc.model.counters import canonical_class, deltas
from fabricdoc.model.counters import totals as counter_totals

# Counter classes whose movement makes a port worth its own series by default.
_ALARM_CLASSES = frozenset({"error", "event"})

PortKey = tuple[str, int]  # (fabric node id, port number)


@dataclass
class HistoryPort:
    """One port's newest sample in the history: labels, totals and rates by canonical counter."""

    device: str
    guid: str
    peer: str
    totals: dict[str, float] = field(default_factory=dict)  # canonical units (bytes, not words)
    gauges: dict[str, float] = field(default_factory=dict)
    rates: dict[str, float] = field(default_factory=dict)  # per second, between the last two samples
    alarm: bool = False  # an error or link-down counter moved between the last two samples


@dataclass
class HistoryView:
    """What the exporter keeps of a history store between reads."""

    ports: dict[PortKey, HistoryPort]
    sweeps: int
    newest: float | None  # epoch seconds of the newest sample


def read_history(path: Path) -> HistoryView:
    """The newest sample and latest rates of every port in the store (FabricdocError when unusable).

    Only each port's newest two samples are read (the store picks them in SQL), and
    their deltas are computed together (:func:`fabricdoc.model.counters.deltas`).
    """
    from fabricdoc.report.history import History  # pandas: loaded off the serving path

    with History(path, create=False) as h:
        try:
            samples = h.newest_samples(2)
            sweeps = h.sweep_count()
        except Exception as exc:  # sqlite3 errors from a damaged or foreign file
            raise FabricdocError(f"{path}: cannot read the history store: {exc}") from None
    ports: dict[PortKey, HistoryPort] = {}
    newest: float | None = None
    before, after = [], []
    for facts, pcs in samples:
        pc = pcs[-1]
        key = (pc.node, int(pc.port))
        hp = ports.get(key)
        if hp is None:
            hp = ports[key] = HistoryPort(str(facts.get("label") or pc.node), str(facts.get("guid") or ""),
                                          str(facts.get("peer") or ""))
        totals, gauges = counter_totals(pc.values)
        hp.totals.update(totals)
        hp.gauges.update(gauges)
        newest = pc.timestamp if newest is None else max(newest, pc.timestamp)
        if len(pcs) > 1 and pcs[-1].timestamp > pcs[-2].timestamp:
            before.append(pcs[-2])
            after.append(pc)
    for d in deltas(before, after):
        hp = ports[(d.port.node, int(d.port.port))]
        if d.per_second is not None and d.per_second == d.per_second:  # NaN when the interval was 0
            hp.rates[d.name] = float(d.per_second)
        if d.value and canonical_class(d.name) in _ALARM_CLASSES:
            hp.alarm = True
    return HistoryView(ports, sweeps, newest)
