"""A Fabric from parsed ibnetdiscover records, with OpenSM's forwarding tables and iblinkinfo's maxima. Pure.

Node id is the GUID as ibnetdiscover prints it, label the node description;
``fabric_from_ib`` takes the records the ibnetdiscover parser returns (or an
ibdiagnet reader's), so reading files and running tools stay in the sources.
Which CAs are hosts, whose and on which rail is decided by
:func:`fabricdoc.fabric.identity.identify`, called here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import fields, replace
from typing import Protocol

from fabricdoc.fabric.hostmap import HostMap
from fabricdoc.fabric.identity import identify
from fabricdoc.model.ib import IB_SPEEDS, IbCable, IbPortState, IbTopology
from fabricdoc.model.records import Node, PortRef, PortState
from fabricdoc.model.topology import Fabric


def fabric_from_ib(
    records: IbTopology,
    lfts: Mapping[str, Mapping[int, int]] | None = None,
    *,
    name: str = "ib",
    source: str = "ibnetdiscover",
    port_states: Iterable[object] = (),
    host_map: HostMap | None = None,
) -> Fabric:
    """Build a Fabric from parsed ibnetdiscover records (and optionally ibroute LFTs).

    Node id is the GUID as ibnetdiscover prints it (``0x0002c90300000001``), label
    the node description; ``attrs`` keep ``ib_type`` (Switch, Ca, Rt),
    ``system_guid`` and ``device_id`` where the records have them, and a CA's
    ``port_guids``. Host, rail and role come from :func:`identify` (with
    ``host_map`` for HCAs whose description names no host). ``lfts`` maps a
    switch GUID to ``{LID: port}``; when given, ``Fabric.path`` follows them.
    ``port_states`` (PortState from iblinkinfo or ibdiagnet) fill in the supported
    maxima of each link so a link trained below them is visible. A cable to a
    node the records do not describe (a trimmed capture) is left out.
    """
    if not isinstance(records, IbTopology):
        raise TypeError("fabric_from_ib expects the IbTopology that parse_ibnetdiscover returns")
    fabric = Fabric(name=name, source=source)
    for rec in records.nodes:
        kind = "switch" if rec.type == "Switch" else "host"
        attrs: dict[str, object] = {"ib_type": rec.type}
        if rec.system_guid:
            attrs["system_guid"] = rec.system_guid
        if rec.device_id is not None:
            attrs["device_id"] = rec.device_id
        if kind == "host":
            # Port GUIDs (what ibtracert and ibqueryerrors print for a CA's ports), by port number.
            attrs["port_guids"] = {p.port: p.port_guid for p in rec.ports if p.port_guid}
        node = Node(
            id=rec.guid,
            kind=kind,  # type: ignore[arg-type]
            label=rec.description,
            num_ports=rec.num_ports,
            guid=rec.guid,
            lid=rec.lid if kind == "switch" else None,
            attrs=attrs,
        )
        fabric.add_node(node)
        if kind == "host":
            for port in rec.ports:
                if port.lid:
                    fabric.port_lids[PortRef(rec.guid, port.port)] = port.lid
    maxima: dict[PortRef, tuple[int | None, float | None]] = {}
    for st in port_states:
        maxima[PortRef(st.node, st.port)] = (st.max_lanes, st.max_lane_gbps)  # type: ignore[attr-defined]
    ends = {PortRef(rec.guid, p.port): p for rec in records.nodes for p in rec.ports}
    for rec in records.nodes:
        for port in rec.ports:
            a = PortRef(rec.guid, port.port)
            b = PortRef(port.remote_guid, port.remote_port)
            if b.node not in fabric.nodes or fabric.peer(a) is not None or fabric.peer(b) is not None:
                continue
            # ibnetdiscover prints the trained width at both ends; a net file may give each end
            # its own enabled width, and the link trains at the lower while supporting the higher.
            other = ends.get(b)
            widths = [w for w in (port.lanes, other.lanes if other else None) if w]
            speeds = [g for g in (port.lane_gbps, other.lane_gbps if other else None) if g]
            ma = maxima.get(a, (None, None))
            mb = maxima.get(b, (None, None))
            max_lanes = _min_known(ma[0], mb[0]) or (max(widths) if widths else None)
            max_gbps = _min_known(ma[1], mb[1]) or (max(speeds) if speeds else None)
            fabric.add_link(
                a,
                b,
                lanes=min(widths) if widths else 4,
                lane_gbps=min(speeds) if speeds else 2.5,
                max_lanes=int(max_lanes) if max_lanes else None,
                max_lane_gbps=float(max_gbps) if max_gbps else None,
            )
    if lfts:
        fabric.lfts = {sw: dict(table) for sw, table in lfts.items() if sw in fabric.nodes}
    identify(fabric, host_map)
    return fabric


def attach_cables(fabric: Fabric, cables: Iterable[IbCable]) -> int:
    """Put each cable module's facts on its node: ``attrs["cables"][port]`` = vendor, part
    number, serial, length, temperature (C) and per-lane RX/TX power (mW, None where the module
    gives no reading). Returns how many cables found their node."""
    placed = 0
    for cable in cables:
        node = fabric.nodes.get(cable.node_guid)
        if node is None:
            continue
        node.attrs.setdefault("cables", {})[cable.port] = {
            "vendor": cable.vendor, "part_number": cable.part_number, "serial": cable.serial,
            "length": cable.length, "temperature_c": cable.temperature_c,
            "rx_power_mw": list(cable.rx_power_mw), "tx_power_mw": list(cable.tx_power_mw),
        }
        placed += 1
    return placed


# Expectations read from the ports themselves (or the expected fabric): the majority rule never lowers them.
FROM_PORTINFO = frozenset({"topology", "enabled", "supported"})


class SupportedPort(Protocol):
    """A port's PortInfo as ibdiagnet's PORTS section gives it (``probes.ib.ibdiagnet.IbdiagPort``)."""

    node_guid: str
    port: int
    max_lanes: int | None
    max_speed: str | None  # "NDR", "HDR"... (IB_SPEEDS)
    enabled_lanes: int | None  # LinkWidthEnabled; None where the tool did not say
    enabled_speed: str | None  # LinkSpeedEnabled


def _allowed(p: SupportedPort) -> tuple[tuple[float | None, float | None], tuple[float | None, float | None]]:
    """((supported lanes, supported Gb/s per lane), (enabled lanes, enabled Gb/s per lane)) of one port."""
    enabled = getattr(p, "enabled_lanes", None), IB_SPEEDS.get(getattr(p, "enabled_speed", None) or "")
    return (p.max_lanes, IB_SPEEDS.get(p.max_speed or "")), enabled


def _expectation(supported: list[float | None], enabled: list[float | None]) -> tuple[float | None, str]:
    """The lower of both ends' supported and enabled values, and ``enabled`` when an enabled value lowered it."""
    most = _min_known(*supported)
    both = _min_known(most, *enabled)
    return both, "enabled" if both and most and both < most else "supported"


def expect_from_ports(states: Iterable[PortState], ports: Iterable[SupportedPort], *,
                      keep: frozenset[str] = frozenset({"topology"})) -> list[PortState]:
    """Set each up port's expected width and speed to the lower of its two ends' min(supported, enabled)
    values (PortInfo LinkWidth/LinkSpeed Supported and Enabled, from ibdiagnet's PORTS).

    ``max_*_from`` is ``enabled`` where an end's enabled value is what lowered the expectation (an
    admin-limited port trained at what it may, not degraded), else ``supported``. What both ends can
    train at outranks iblinkinfo's hint and the fabric's majority, so a link trained below it is
    degraded even where most links trained low; an expectation whose ``max_*_from`` is in ``keep`` (by
    default ``topology``: the expected fabric) stays. Ports whose far end PORTS does not list keep theirs.
    """
    info = {PortRef(p.node_guid, p.port): _allowed(p) for p in ports}
    out: list[PortState] = []
    for s in states:
        here, there = info.get(s.ref), info.get(s.peer) if s.peer is not None else None
        if here is not None and there is not None and s.state != "Down" and s.lanes and s.lane_gbps:
            if not isinstance(s, IbPortState):
                s = IbPortState(**{f.name: getattr(s, f.name) for f in fields(PortState)})
            lanes, lanes_from = _expectation([here[0][0], there[0][0]], [here[1][0], there[1][0]])
            gbps, gbps_from = _expectation([here[0][1], there[0][1]], [here[1][1], there[1][1]])
            if lanes and s.max_lanes_from not in keep:
                s = replace(s, max_lanes=int(lanes), max_lanes_from=lanes_from)
            if gbps and s.max_lane_gbps_from not in keep:
                s = replace(s, max_lane_gbps=float(gbps), max_lane_gbps_from=gbps_from)
        out.append(s)
    return out


def cap_supported(states: Iterable[PortState]) -> list[PortState]:
    """Judge each up port's expected width and speed from the tools' hints, the majority rule last.

    Speed: iblinkinfo's "Could be N Gbps" (or, with no phrase, the trained speed: both ends
    support no more) is what both ends' LinkSpeedSupported allow, so it stands as read
    (``max_lane_gbps_from`` ``could_be``): a link trained at SDR on a QDR fabric is degraded even when
    many links trained low. Width: ibsim (and some firmware) reports every port 12X-capable,
    so "Could be 12X" is capped at ``max(trained, the fabric's most common trained width)``;
    where that cap lowers the hint, ``max_lanes_from`` is ``majority``. A 1X link in a 4X fabric is
    degraded, a 4X link that "could be 12X" is not. States without a hint source are
    judged by the majority rule for both. An expectation read from the ports' own PortInfo or the
    expected fabric (``max_*_from`` in ``FROM_PORTINFO``) is left as it is: the majority rule is the last resort.
    """
    states = list(states)
    up = [s for s in states if s.state != "Down" and s.lanes and s.lane_gbps]
    if not up:
        return states
    design_lanes = Counter(s.lanes for s in up).most_common(1)[0][0]
    design_gbps = Counter(s.lane_gbps for s in up).most_common(1)[0][0]
    out: list[PortState] = []
    for s in states:
        if s.state != "Down" and s.lanes and s.lane_gbps:
            from_l, from_g = getattr(s, "max_lanes_from", None), getattr(s, "max_lane_gbps_from", None)
            hinted = from_g == "could_be"
            sup_l = s.max_lanes or s.lanes
            sup_g = s.max_lane_gbps or s.lane_gbps
            new_l = sup_l if from_l in FROM_PORTINFO else min(sup_l, max(s.lanes, design_lanes))
            new_g = sup_g if hinted or from_g in FROM_PORTINFO else min(sup_g, max(s.lane_gbps, design_gbps))
            if (new_l, new_g) != (s.max_lanes, s.max_lane_gbps):
                s = replace(s, max_lanes=new_l, max_lane_gbps=new_g)
            if isinstance(s, IbPortState):
                s = replace(s, max_lanes_from="majority" if new_l < sup_l else s.max_lanes_from or "majority",
                            max_lane_gbps_from="majority" if new_g < sup_g else s.max_lane_gbps_from or "majority")
        out.append(s)
    return out


def expect_from_topology(states: Iterable[PortState], expected: Fabric) -> list[PortState]:
    """Raise each up port's expected width and speed to what the expected fabric (a topology file)
    says its cable runs at (``max_*_from`` ``topology``). A saved discovery records what links
    trained at when it was taken, so it never lowers what the tools' hints expect; ports of cables
    the file does not know keep theirs."""
    out: list[PortState] = []
    for s in states:
        link = expected.link_at(PortRef(s.node, s.port))
        if link is not None and s.state != "Down" and s.lanes and s.lane_gbps:
            if not isinstance(s, IbPortState):
                s = IbPortState(**{f.name: getattr(s, f.name) for f in fields(PortState)})
            topo_l, topo_g = link.max_lanes or link.lanes, link.max_lane_gbps or link.lane_gbps
            if topo_l >= (s.max_lanes or 0):
                s = replace(s, max_lanes=topo_l, max_lanes_from="topology")
            if topo_g >= (s.max_lane_gbps or 0) * 0.99:
                s = replace(s, max_lane_gbps=max(topo_g, s.max_lane_gbps or 0), max_lane_gbps_from="topology")
        out.append(s)
    return out


def _min_known(*values: float | None) -> float | None:
    known = [v for v in values if v]
    return min(known) if known else None
