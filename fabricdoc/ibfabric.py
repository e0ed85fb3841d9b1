"""InfiniBand fabric files: a generated Fabric as an ibsim net file, and a Fabric from ibnetdiscover.

Pure functions, no subprocesses. ``write_netfile`` keeps the generators' GUIDs and
LIDs so that what ibsim + OpenSM show can be matched back to the generated fabric;
``fabric_from_ib`` builds the live fabric from parsed ibnetdiscover records, with
OpenSM's forwarding tables so :meth:`Fabric.path` follows the real routes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import replace
from pathlib import Path

from fabricdoc.errors import ParseError, TopologyError
from fabricdoc.model import Node, PortRef, PortState
from fabricdoc.probes.ibdiags import IB_SPEEDS
from fabricdoc.topology import Fabric

_NETFILE_SPEEDS = ("SDR", "DDR", "QDR", "FDR", "EDR", "HDR")  # what ibsim 0.10 parses (no NDR)
_RESERVED = set('#@"[]\n\r\t')


def speed_name(lane_gbps: float) -> str:
    """The IB speed name closest to a lane rate that ibsim can train (100 -> HDR, 25 -> EDR, 10 -> QDR)."""
    return min(_NETFILE_SPEEDS, key=lambda n: abs(IB_SPEEDS[n] - lane_gbps))


def _check_name(text: str, what: str) -> str:
    bad = sorted(_RESERVED & set(text))
    if bad or not text or len(text) > 63:
        raise TopologyError(
            f"{what} {text!r} cannot be an ibsim node id or description "
            "(1-63 characters, no '#', '@', quotes, brackets or control characters)"
        )
    return text


def _ibsim_nodes(fabric: Fabric) -> dict[PortRef, tuple[str, int]]:
    """Where each fabricdoc port lands in ibsim: a multi-port host becomes one single-port HCA per port."""
    where: dict[PortRef, tuple[str, int]] = {}
    for node in fabric.nodes.values():
        for p in range(1, node.num_ports + 1):
            if node.kind == "host" and node.num_ports > 1:
                where[PortRef(node.id, p)] = (f"{node.id}-mlx5_{p - 1}", 1)
            else:
                where[PortRef(node.id, p)] = (node.id, p)
    return where


def write_netfile(fabric: Fabric) -> str:
    """The fabric as an ibsim net file, in ibnetdiscover syntax plus ibsim's ``*guid=`` lines.

    Node ids in the file are the fabricdoc node ids (so console commands read
    ``Unlink "leaf01"[5]``) and descriptions are the labels. Each node's GUID is
    set with a ``switchguid=``/``caguid=`` line and LIDs with ``lid N``. A host
    with several ports is written as one HCA per port, described
    ``"<label> mlx5_<i>"`` like a real multi-rail server, GUID = host GUID + ``i << 40``.
    Each port line ends like ibnetdiscover's, ``lid <remote> 4xNDR``, which ibsim
    reads as that port's enabled width and speed: a degraded link (``lanes`` or
    ``lane_gbps`` below its maximum) is written degraded on one end and at its
    maximum on the other, so ibsim trains it down and both ends still support more.
    """
    where = _ibsim_nodes(fabric)
    lids = _lids(fabric)
    out = [
        f"# ibsim net file written by fabricdoc for {fabric.name!s}",
        f"# {len(fabric.hosts())} hosts, {len(fabric.switches())} switches, {len(fabric.links)} links",
        "",
    ]
    # ibsim attaches clients (OpenSM, the diags) to the first node in the file: a top switch,
    # so that unlinking a leaf or a host never cuts the SM off from the rest of the fabric.
    switches = sorted(fabric.switches(), key=lambda n: (-int(n.attrs.get("level", 1)), n.id))
    for node in switches:
        _check_name(node.id, "switch id")
        _check_name(node.label, "switch label")
        if node.guid:
            out.append(f"switchguid={node.guid}")
        lid = f" lid {node.lid} lmc 0" if node.lid else ""
        out.append(f'Switch\t{node.num_ports} "{node.id}"\t# "{node.label}" enhanced port 0{lid}')
        for p in range(1, node.num_ports + 1):
            line = _port_line(fabric, where, lids, PortRef(node.id, p), p)
            if line:
                out.append(line)
        out.append("")
    for node in sorted(fabric.hosts(), key=lambda n: n.id):
        _check_name(node.label, "host label")
        for p in range(1, node.num_ports + 1):
            ref = PortRef(node.id, p)
            ca_id, _ = where[ref]
            _check_name(ca_id, "host id")
            if node.guid:
                out.append(f"caguid=0x{int(node.guid, 16) + ((p - 1) << 40):016x}")
            desc = node.label if node.num_ports == 1 else f"{node.label} mlx5_{p - 1}"
            out.append(f'Hca\t1 "{ca_id}"\t# "{desc}"')
            line = _port_line(fabric, where, lids, ref, 1)
            if line:
                out.append(line)
            out.append("")
    return "\n".join(out) + "\n"


def _lids(fabric: Fabric) -> dict[PortRef, int]:
    """The LID a port answers on: the switch LID for switch ports, the port LID for host ports."""
    out: dict[PortRef, int] = dict(fabric.port_lids)
    for node in fabric.switches():
        if node.lid:
            for p in range(1, node.num_ports + 1):
                out[PortRef(node.id, p)] = node.lid
    return out


def _port_line(
    fabric: Fabric,
    where: Mapping[PortRef, tuple[str, int]],
    lids: Mapping[PortRef, int],
    ref: PortRef,
    local_port: int,
) -> str | None:
    peer = fabric.peer(ref)
    link = fabric.link_at(ref)
    if peer is None or link is None or link.state == "down":
        return None
    remote_id, remote_port = where[peer]
    max_lanes = link.max_lanes or link.lanes
    max_gbps = link.max_lane_gbps or link.lane_gbps
    degraded_end = ref == link.key.a
    lanes = link.lanes if degraded_end else max_lanes
    gbps = link.lane_gbps if degraded_end else max_gbps
    conn = f"lid {lids.get(peer, 0)} {lanes}x{speed_name(gbps)}"
    remote_label = fabric.label(peer.node)
    node = fabric.nodes[ref.node]
    if node.kind == "switch":
        return f'[{local_port}]\t"{remote_id}"[{remote_port}]\t# "{remote_label}" {conn}'
    return f'[{local_port}]\t"{remote_id}"[{remote_port}]\t# lid {lids.get(ref, 0)} lmc 0 "{remote_label}" {conn}'


def load_ibnetdiscover_file(path: str | Path) -> Fabric:
    """A fabric from a saved ``ibnetdiscover`` output (or an ibsim net file in that syntax)."""
    from fabricdoc.probes.ibdiags import parse_ibnetdiscover

    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        raise ParseError(str(p), 0, "", f"cannot read: {exc.strerror}") from exc
    records = parse_ibnetdiscover(text, source=str(p))
    return fabric_from_ib(records, name=p.stem, source=str(p))


def fabric_from_ib(
    records: object,
    lfts: Mapping[str, Mapping[int, int]] | None = None,
    *,
    name: str = "ib",
    source: str = "ibnetdiscover",
    port_states: Iterable[object] = (),
) -> Fabric:
    """Build a Fabric from parsed ibnetdiscover records (and optionally ibroute LFTs).

    Node id is the GUID as ibnetdiscover prints it (``0x0002c90300000001``), label
    the node description, ``attrs["host"]`` an HCA description's first word.
    ``lfts`` maps a switch GUID to ``{LID: port}``; when given, ``Fabric.path``
    follows them. ``port_states`` (PortState from iblinkinfo) fill in the supported
    maxima of each link so a link trained below them is visible.
    """
    from fabricdoc.probes.ibdiags import IbTopology

    if not isinstance(records, IbTopology):
        raise TypeError("fabric_from_ib expects the IbTopology that parse_ibnetdiscover returns")
    fabric = Fabric(name=name, source=source)
    for rec in records.nodes:
        kind = "switch" if rec.type == "Switch" else "host"
        attrs: dict[str, object] = {}
        if kind == "host":
            words = rec.description.split()
            attrs["host"] = words[0] if words else rec.guid
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
    return fabric


def cap_supported(states: Iterable[PortState]) -> list[PortState]:
    """Cap each port's supported maximum at the width and speed most of the fabric trained at.

    A port is degraded when it trained below what both ends support, but ibsim
    (and some firmware) reports every port as 12X-capable, which would make every
    4X link look degraded. A real fabric's links are built alike, so the most
    common trained width/speed is the design; a port's maximum is
    ``min(supported, max(trained, design))``: a 1X link in a 4X fabric is
    degraded, a 4X link that "could be 12X" is not.
    """
    states = list(states)
    up = [s for s in states if s.state != "Down" and s.lanes and s.lane_gbps]
    if not up:
        return states
    design_lanes = Counter(s.lanes for s in up).most_common(1)[0][0]
    design_gbps = Counter(s.lane_gbps for s in up).most_common(1)[0][0]
    out = []
    for s in states:
        if s.state != "Down" and s.lanes and s.lane_gbps:
            sup_l = s.max_lanes or s.lanes
            sup_g = s.max_lane_gbps or s.lane_gbps
            new_l = min(sup_l, max(s.lanes, design_lanes))
            new_g = min(sup_g, max(s.lane_gbps, design_gbps))
            if (new_l, new_g) != (s.max_lanes, s.max_lane_gbps):
                s = replace(s, max_lanes=new_l, max_lane_gbps=new_g)
        out.append(s)
    return out


def _min_known(x: float | None, y: float | None) -> float | None:
    known = [v for v in (x, y) if v]
    return min(known) if known else None


def apply_routes_file(fabric: Fabric, path: str | Path) -> Fabric:
    """Load every switch's LFT from saved ``ibroute`` output (one dump per switch, concatenated)
    onto ``fabric``, so its paths follow the routes OpenSM programmed. Errors name file and line."""
    from fabricdoc.errors import ConfigError, ParseError
    from fabricdoc.probes import ibdiags

    path = Path(path)
    try:
        text = path.read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read routes: {exc.strerror}") from None
    lines = text.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Unicast lids [")]
    if not starts:
        raise ParseError(str(path), 1 if lines else 0, lines[0] if lines else "", "no ibroute 'Unicast lids' header")
    tables: dict[str, dict[int, int]] = {}
    for n, start in enumerate(starts):
        end = starts[n + 1] if n + 1 < len(starts) else len(lines)
        chunk = "\n".join(lines[start:end]) + "\n"
        try:
            route = ibdiags.parse_ibroute(chunk, source=str(path))
        except ParseError as exc:
            line_no = exc.line_no + start if exc.line_no else end
            raise ParseError(str(path), line_no, exc.line, exc.reason) from None
        switch = ibdiags.guid_id(route.switch_guid)
        if switch not in fabric.nodes:
            raise ParseError(str(path), start + 1, lines[start], f"switch {route.switch_guid} is not in the fabric")
        tables[switch] = route.lft
    fabric.lfts = tables
    fabric._invalidate()
    return fabric
