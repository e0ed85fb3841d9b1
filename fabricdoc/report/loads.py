"""Each cable's load during the sweep: the bytes its busier end sent over the counter interval, as a
fraction of its trained rate (what the fabric map colours a healthy cable by)."""

from __future__ import annotations

from fabricdoc.model.counters import deltas
from fabricdoc.model.records import LinkKey, Observations
from fabricdoc.model.topology import Fabric


def link_loads(fabric: Fabric, obs: Observations) -> dict[LinkKey, float]:
    """Cable -> sent bits per second at its busier end over its trained Gb/s (0..1, capped), from the
    two counter samples; cables with no data counter at either end are absent (unknown, not idle)."""
    if not obs.before or not obs.after:
        return {}
    sent: dict[tuple[str, int], float] = {}
    for d in deltas(obs.before, obs.after, only={"xmit_bytes"}):
        rate = d.per_second
        if rate is not None:
            key = (d.port.node, d.port.port)
            sent[key] = max(sent.get(key, 0.0), rate)
    out: dict[LinkKey, float] = {}
    for key, link in fabric.links.items():
        ends = [sent[e] for e in ((key.a.node, key.a.port), (key.b.node, key.b.port)) if e in sent]
        gbps = (link.lanes or 0) * (link.lane_gbps or 0.0)
        if ends and gbps > 0 and link.state == "up":
            out[key] = round(min(1.0, max(ends) * 8 / (gbps * 1e9)), 4)
    return out
