"""How findings change link capacity in the "now" state, decided here once (see :mod:`fabricdoc.impact.busbw`)."""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

from fabricdoc.errors import TopologyError
from fabricdoc.model.evidence import GroupLoadEvidence, SlowPairsEvidence, StateEvidence
from fabricdoc.model.faults import fault as fault_info
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import Link, LinkKey
from fabricdoc.model.severity import Severity
from fabricdoc.model.topology import Fabric


@dataclass(frozen=True)
class LinkEffect:
    """What one finding does to one link's capacity in the "now" state."""

    link: LinkKey
    capacity_gbps: float
    down: bool
    rule: str
    finding: str
    measured: bool = False  # the capacity is a measured bandwidth (it already includes the stack's efficiency)


def finding_links(fabric: Fabric, finding: Finding) -> list[LinkKey]:
    """The cables a finding names: its endpoints, else the links between or at its nodes."""
    if finding.endpoints:
        keys = []
        for label, port in finding.endpoints:
            link = fabric.link_at(fabric.resolve_port(str(label), int(port)))
            if link is not None:
                keys.append(link.key)
        return list(dict.fromkeys(keys))
    ids = [fabric.resolve_node(n) for n in finding.node_ids]
    if finding.kind in ("switch", "host", "nic", "gpu"):
        return [lk.key for nid in ids for lk in fabric.node_links(nid)]
    if len(ids) == 2:
        a, b = ids
        return [lk.key for lk in fabric.node_links(a) if {lk.key.a.node, lk.key.b.node} == {a, b}]
    return []


def _ratio_estimate(finding: Finding) -> tuple[float | None, float | None]:
    """Median measured/expected ratio and median expected Gb/s in a finding's slow-test evidence."""
    ratios: list[float] = []
    expected: list[float] = []
    for ev in finding.evidence_of(SlowPairsEvidence):
        ratios.append(float(ev.median_ratio))
        expected += [float(p.expected_gbps) for p in ev.slow_pairs if p.expected_gbps]
    r = statistics.median(ratios) if ratios else None
    e = statistics.median(expected) if expected else None
    return r, e


def link_effects(fabric: Fabric, findings: Iterable[Finding]) -> tuple[dict[LinkKey, LinkEffect], list[str]]:
    """Per-link "now" capacity from the findings (rules in the module docstring), and unmapped finding ids."""
    effects: dict[LinkKey, LinkEffect] = {}
    unmapped: list[str] = []

    def lower(key: LinkKey, cap: float, down: bool, rule: str, fid: str, measured: bool = False) -> None:
        old = effects.get(key)
        if old is None or cap < old.capacity_gbps or (down and not old.down):
            effects[key] = LinkEffect(key, max(0.0, cap), down or (old.down if old else False), rule, fid, measured)

    for f in findings:
        if f.severity == Severity.INFO:
            continue  # noise or a suspect to re-test: nothing is known to be slower
        capacity = fault_info(f.fault).capacity  # what the fault does to a cable (the fault registry)
        try:
            keys = finding_links(fabric, f)
        except TopologyError:
            unmapped.append(f.id)
            continue
        if not keys:
            if f.kind in ("link", "port") or (f.kind == "switch" and capacity == "down"):
                unmapped.append(f.id)
            continue
        if capacity == "down":
            if f.kind == "gpu":
                continue
            for k in keys:
                lower(k, 0.0, True, f"{f.kind} {f.fault}: routed around", f.id)
            continue
        if f.kind in ("switch", "host", "gpu"):
            continue
        for k in keys:
            link = fabric.links[k]
            if capacity == "untested":
                lower(k, 0.0, False, f"{f.fault}: tests never finished", f.id)
                continue
            cap = link.capacity_gbps
            measured = False
            rules = []
            for ev in f.evidence_of(StateEvidence):
                lanes = ev.lanes if f.fault == "width_degraded" else None
                lane = ev.lane_gbps if f.fault == "speed_degraded" else None
                if lanes:
                    cap = min(cap, lanes * link.lane_gbps)
                    rules.append(f"trained {lanes} lanes")
                if lane:
                    cap = min(cap, link.lanes * float(lane))
                    rules.append(f"trained {lane:g} Gb/s lanes")
            if capacity != "load":  # the port's load, not its capacity
                ratio, expected = _ratio_estimate(f)
                if ratio is not None:
                    base = min(link.nominal_gbps, expected) if expected else link.nominal_gbps
                    measured = max(0.0, ratio) * base < cap
                    cap = min(cap, max(0.0, ratio) * base)
                    rules.append(f"measured ratio {ratio:.3g} x {base:.4g} Gb/s")
            if cap < link.capacity_gbps or rules:
                lower(k, cap, False, f"{f.fault}: " + ("; ".join(rules) or "as trained"), f.id, measured)
    return effects, unmapped


def restated(fabric: Fabric, down: set[LinkKey] | None) -> Fabric:
    """A copy of ``fabric`` sharing its nodes and tables, with exactly the ``down`` links down
    (``None``: every link up, for the nominal state), for routing.

    The cabling is the same, so the port index and the switch levels (structural: a down
    cable still says where a switch sits) are shared, and so are the records of the links
    whose state stays: only the links that go down or come up are new records. Change a
    link of the copy only after :meth:`Fabric.copy`.
    """
    down = down or set()
    links = dict(fabric.links)
    for key, lk in fabric.links.items():
        state = "down" if key in down else "up"
        if lk.state != state:
            links[key] = Link(key, lk.lanes, lk.lane_gbps, lk.lanes if lk.max_lanes is None else lk.max_lanes,
                              lk.lane_gbps if lk.max_lane_gbps is None else lk.max_lane_gbps, state)
    return Fabric(name=fabric.name, source=fabric.source, nodes=fabric.nodes, links=links, lfts=fabric.lfts,
                  port_lids=fabric.port_lids, _port_link=fabric._port_link,
                  _levels=None if fabric._levels is None else dict(fabric._levels), _node_index=fabric._node_index)


def uncosted(findings: Iterable[Finding]) -> list[dict[str, str]]:
    """Findings on cables or switches whose effect the busbw figures leave out, each with why: faults only
    group tests showed (a load-only collapse, or slowness seen only under a group's load) carry no rate
    of the part alone to put into the model, so the figures would claim a cost nobody measured."""
    out: list[dict[str, str]] = []
    for f in findings:
        groups = f.evidence_of(GroupLoadEvidence)
        if f.kind not in ("link", "port", "switch") or not groups or fault_info(f.fault).capacity in ("down", "untested"):
            continue
        if f.evidence_of(SlowPairsEvidence) or f.evidence_of(StateEvidence):
            continue  # a measured rate or a trained state is costed by link_effects
        ev = groups[0]
        if ev.passing_flows:
            why = (f"load-only: fine at {ev.passing_flows} concurrent flows, collapsed at {ev.failing_flows} in "
                   "group tests; what a job loses depends on how many of its flows meet there")
        else:
            why = f"slow only in group tests (worst {ev.worst_ratio:.2f} of expected); no rate of the part alone"
        out.append({"finding": f.id, "why": why + ": not in the busbw figures"})
    return out
