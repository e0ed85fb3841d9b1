"""Direct evidence: a counter rule that fired, a port down or trained low, link-down events.

Each blames the cable at the port where it was seen.
"""

from __future__ import annotations

from collections import defaultdict

from fabricdoc.analysis import flaps as flap_rules
from fabricdoc.analysis.blame import Blame
from fabricdoc.analysis.rules import Rule, anomalies
from fabricdoc.model.counters import deltas
from fabricdoc.model.evidence import (
    CounterEvidence,
    FlapEvidence,
    NotDiscoveredEvidence,
    NotRespondingEvidence,
    StateEvidence,
)
from fabricdoc.model.ib import NO_RESPONSE, NOT_DISCOVERED, OBSERVED_ONLY
from fabricdoc.model.records import LinkKey, Observations, PortRef, PortState
from fabricdoc.model.topology import Fabric

DOWN_STATES = ("down", "polling", "disabled", "sleep")


def from_counters(fabric: Fabric, obs: Observations, rules: tuple[Rule, ...], blame: dict[LinkKey, Blame]) -> None:
    ds = deltas(obs.before, obs.after, changed_only=True, only={r.counter for r in rules})
    for a in anomalies(ds, rules):
        link = fabric.link_at(a.port)
        if link is None:
            continue
        for d in a.deltas:
            blame[link.key].add(a.fault, a.severity, 0.95, CounterEvidence(
                node=fabric.label(d.port.node), port=d.port.port, counter=d.name, delta=d.value,
                per_second=None if d.per_second is None else round(d.per_second, 6), interval_s=d.interval_s,
                raw=tuple(d.raw_names), at_least=d.at_least, reset=d.reset,
            ))  # fmt: skip


def from_states(fabric: Fabric, obs: Observations, blame: dict[LinkKey, Blame]) -> None:
    """Blame each cable for the states its ports were seen in: down, a silent far end
    (``not_responding``), not discovered at all (``not_discovered``), trained narrower or slower
    than expected (with what set the expectation); evidence carries only what a tool said."""
    def _expected_from(s: PortState, what: str) -> str | None:
        # An IbPortState says what set its maximum; ibdiagnet's is PortInfo's Supported, the sim's its fabric.
        return getattr(s, f"max_{what}_from", None) or {"ibdiagnet": "supported", "sim": "topology"}.get(s.source)

    read = {st.ref: st for st in obs.states if st.state not in OBSERVED_ONLY}
    for s in obs.states:
        link = fabric.link_at(PortRef(s.node, s.port))
        if link is None:
            continue
        if s.state == NO_RESPONSE:
            facing = s.peer if s.peer is not None else (link.key.b if link.key.a == s.ref else link.key.a)
            seen = read.get(facing)
            blame[link.key].add("not_responding", "error", 0.9, NotRespondingEvidence(
                node=fabric.label(s.node), port=s.port, switch=fabric.label(facing.node), switch_port=facing.port,
                switch_state=seen.state if seen else "unknown", switch_phys_state=seen.phys_state if seen else None,
                far_answered=getattr(seen, "far_answered", None), source=s.source))
            continue
        if s.state == NOT_DISCOVERED:
            blame[link.key].add("not_discovered", "error", 0.8,
                                NotDiscoveredEvidence(node=fabric.label(s.node), port=s.port, source=s.source))
            continue
        where = {"node": fabric.label(s.node), "port": s.port, "state": s.state, "phys_state": s.phys_state,
                 "source": s.source}
        if s.state.lower() in DOWN_STATES or link.state == "down":
            blame[link.key].add("down", "error", 0.99, StateEvidence(**where))
            continue
        if s.lanes and s.max_lanes and s.lanes < s.max_lanes:
            blame[link.key].add("width_degraded", "error", 0.99, StateEvidence(
                **where, lanes=s.lanes, supported_lanes=s.max_lanes, expected_from=_expected_from(s, "lanes")))
        if s.lane_gbps and s.max_lane_gbps and s.lane_gbps < s.max_lane_gbps * 0.99:
            blame[link.key].add("speed_degraded", "error", 0.99, StateEvidence(
                **where, lane_gbps=s.lane_gbps, supported_lane_gbps=s.max_lane_gbps,
                expected_from=_expected_from(s, "lane_gbps")))
    for link in fabric.links.values():
        if link.state == "up" and link.lanes < (link.max_lanes or link.lanes) and link.key not in blame:
            blame[link.key].add("width_degraded", "error", 0.99, StateEvidence(
                lanes=link.lanes, supported_lanes=link.max_lanes, source=fabric.source, expected_from="topology"))


def from_events(fabric: Fabric, obs: Observations, blame: dict[LinkKey, Blame]) -> None:
    downs: dict[LinkKey, list[float]] = defaultdict(list)
    for e in obs.events:
        link = fabric.link_at(PortRef(e.node, e.port))
        if link is not None and e.state == "down":
            downs[link.key].append(e.timestamp)
    for key, times in downs.items():
        flaps = flap_rules.distinct_downs(times)
        if not flaps:
            continue
        blame[key].flaps = len(flaps)
        blame[key].add("flapping", "error" if len(flaps) > 1 else "warning", 0.95,
                       FlapEvidence(len(flaps), flaps[0], flaps[-1], flap_rules.per_minute(flaps)))
