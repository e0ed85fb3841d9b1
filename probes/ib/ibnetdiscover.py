"""Parse ``ibnetdiscover`` output (or an ibsim net file in that syntax) into an IbTopology.

Every flavour seen on real fabrics reads the same way (the format is
``infiniband-diags/ibnetdiscover.c`` in rdma-core):

- the plain topology file, tab- or space-separated, indented or not;
- ``ibnetdiscover -f`` (full): ``s=N w=N v=N`` (PortInfo speed, width and VL
  codes) after the speed of each port line;
- ``ibnetdiscover -g`` (grouping): ``Chassis N (guid ...)``, ``# Spine Nodes``,
  ``Non-Chassis Nodes`` headings and ``[ext N]`` port labels;
- routers (``Rt``, ``rtguid=``, ``"R-..."``);
- the copy ibdiagnet writes (``ibdiagnet2.ibnetdiscover``): port labels such as
  ``[1](1/1/1)`` and ``[1](B143D0F0/0/0/1)(5c25...)``;
- the tools' own warnings mixed in (``ibwarn: ...``, ``src/query_smp.c:195; umad
  (DR path ...) bad status 110; Connection timed out``), kept as warnings with
  their line numbers;
- an HCA with no active port: a ``Ca`` block without port lines, which only the
  node that ran the tool can print (nothing else can reach it).

Anything else is a ParseError naming the line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from fabricdoc.probes.ib import check_port, check_port_count
from fabricdoc.probes.ib.common import tool_warning, whole_lines

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import (
    IB_SPEEDS,
    IbNodeRecord,
    IbPortRecord,
    IbTopology,
    ToolWarning,
    guid_id,
)

_NODE_RE = re.compile(r'^(Switch|Ca|Rt|Hca)\s+(\d+)\s+"([^"]+)"\s*(?:#\s*"(.*)"(.*))?$')
# [port][ext N](label)(port guid)  "remote"[port][ext N] (remote port guid)  x=y...  # comment
_PORT_RE = re.compile(
    r'^\[(\d+)\](?:\[ext \d+\])?((?:\([^()\s]*\))*)\s*"([^"]+)"\[(\d+)\](?:\[ext \d+\])?'
    r"(?:\s*\(([0-9a-fA-F]+)\))?((?:\s+[a-z]=\S+)*)\s*(?:#\s*(.*))?$"
)
_PAREN = re.compile(r"\(([^()\s]*)\)")
_DISCOVERED_ID = re.compile(r"^[SHR]-[0-9a-fA-F]{1,16}$")
# '"desc" lid N 4xHDR', then -f's ' s=5 w=2 v=4', then a Xsigo ' slot N' or ' (scp)'.
_CONN_TAIL = re.compile(
    r'"(.*)"\s+lid\s+(\d+)\s+(\d+)x([A-Za-z0-9?]+)((?:\s+[a-z]=-?\d+)*)(?:\s+slot \d+|\s+\(scp\))?\s*$'
)
_OWN_LID = re.compile(r"^lid\s+(\d+)\s+lmc\s+\d+\s*")
_GUID_LINE = re.compile(r"^(switchguid|caguids?|hcaguids?|rtguid)\s*=\s*(0x[0-9a-fA-F]+|\d+)")
_ID_LINE = re.compile(r"^(vendid|devid|sysimgguid)\s*=\s*(0x[0-9a-fA-F]+|\d+)")
_HEADER_KEYS = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguids?|hcaguids?|rtguid)\s*=\s*\S+")
# ibnetdiscover -g headings between the blocks.
_GROUPING = re.compile(r"^(?:Non-Chassis Nodes|Chassis \d+(?: \(guid 0x[0-9a-fA-F]+\))?|Hostname: .*)$")
# ibsim's netfile directives (sim_net.c) that carry no topology.
_NETFILE_KEYS = re.compile(r"^(width|speed|module|include|pdebug|do|devid|vendid|sysimgguid)\b")
# ibsim's default GUID bases when a net file sets none (sim_net.c).
_IBSIM_GUID_BASE = {"Switch": 0x200000, "Ca": 0x100000, "Rt": 0x300000}


@dataclass
class _Port:
    port: int
    text: str
    line: int
    remote: str
    remote_port: int
    remote_description: str
    lanes: int | None
    speed: str | None
    port_guid: str | None
    remote_port_guid: str | None
    lid: int | None
    remote_lid: int | None


@dataclass
class _Node:
    type: str
    n: int
    ident: str
    guid: str
    desc: str
    lid: int | None
    line: int
    discovered: bool
    ids: dict[str, int] = field(default_factory=dict)
    ports: list[_Port] = field(default_factory=list)


@dataclass
class _State:
    """What the line-by-line pass has read so far."""

    source: str
    partial: bool
    nodes: list[_Node] = field(default_factory=list)
    warnings: list[ToolWarning] = field(default_factory=list)
    next_guid: dict[str, int] = field(default_factory=lambda: dict(_IBSIM_GUID_BASE))
    ids: dict[str, int] = field(default_factory=dict)  # vendid/devid/sysimgguid of the next block

    @property
    def current(self) -> _Node | None:
        return self.nodes[-1] if self.nodes else None


def parse_ibnetdiscover(text: str, source: str = "ibnetdiscover", *, partial: bool = False) -> IbTopology:
    """Parse ``ibnetdiscover`` output, a saved copy, or an ibsim net file in that syntax.

    Discovered ids (``"S-0002c9..."``) are GUIDs; a net file's own ids
    (``"leaf01"``) get the GUID ibsim would give them (its ``switchguid=``/
    ``caguid=`` lines, else its defaults), and its port lines need not carry the
    ``lid N 4xHDR`` tail. A whole output describes every node a port leads to and
    lists every cable at both ends; a port that leads to a node the text never
    describes means the output was cut short (ParseError), unless ``partial``
    says the capture was trimmed on purpose: then that cable is counted in
    ``IbTopology.undescribed`` and left out.
    """
    lines = whole_lines(text, source, _whole_port_line)
    st = _State(source, partial)
    for no, raw in enumerate(lines, 1):
        _read_line(st, no, raw)
    if not st.nodes:
        raise ParseError(source, 0, "", "no nodes (empty or truncated output)")
    _check_blocks(st, lines)
    return _records(st)


def _whole_port_line(line: str) -> bool:
    """Whether a last line without a line end is whole: a port line ending in its ``lid N 4xHDR``
    tail (with ``-f``'s codes) at a speed InfiniBand has; anything shorter may have been cut."""
    port = _PORT_RE.match(line.strip())
    tail = _CONN_TAIL.search(port.group(7) or "") if port else None
    return bool(tail and tail.group(4) in IB_SPEEDS)


def _whole_ports_line(line: str) -> bool:
    """Whether a last ``-p`` line without a line end is whole: a cabled port's ends in its
    ``( 'desc' - 'desc' )`` pair, an uncabled one's in its one quoted description."""
    text = line.rstrip()
    if " ( '" in text:
        return text.endswith(")") and text.count("'") >= 4
    return text.endswith("'") and text.count("'") == 2


def _read_line(st: _State, no: int, raw: str) -> None:
    line = raw.strip()
    if not line or line.startswith("#") or _GROUPING.match(line):
        return
    warning = tool_warning(raw, st.source, no)
    if warning is not None:
        st.warnings.append(warning)
        return
    g = _GUID_LINE.match(line)
    if g:
        kind = {"s": "Switch", "c": "Ca", "h": "Ca", "r": "Rt"}[g.group(1)[0]]
        st.next_guid[kind] = int(g.group(2), 0)
        return
    ids = _ID_LINE.match(line)
    if ids:
        if ids.group(1) == "vendid":
            st.ids = {}  # a new block starts with its vendid
        st.ids[ids.group(1)] = int(ids.group(2), 0)
        return
    if _HEADER_KEYS.match(line) or _NETFILE_KEYS.match(line) and st.current is None:
        return
    m = _NODE_RE.match(line)
    if m:
        st.nodes.append(_node(st, m, no, raw))
        st.ids = {}
        return
    m = _PORT_RE.match(line)
    if m and st.current is not None:
        st.current.ports.append(_port(st, st.current, m, no, raw))
        return
    raise ParseError(st.source, no, raw, "not an ibnetdiscover node, port or header line")


def _node(st: _State, m: re.Match[str], no: int, raw: str) -> _Node:
    kind = "Ca" if m.group(1) == "Hca" else m.group(1)
    nports = check_port_count(int(m.group(2)), st.source, no, raw)
    ident = m.group(3)
    discovered = bool(_DISCOVERED_ID.match(ident))
    if discovered:
        guid = guid_id(ident)
    else:
        guid = f"0x{st.next_guid[kind]:016x}"
        st.next_guid[kind] += 1 if kind == "Switch" else nports + 1
    lm = re.search(r"\blid\s+(\d+)", m.group(5) or "")
    return _Node(
        type=kind,
        n=nports,
        ident=ident,
        guid=guid,
        desc=m.group(4) if m.group(4) is not None else ident,
        lid=int(lm.group(1)) if lm else None,
        line=no,
        discovered=discovered,
        ids=dict(st.ids),
    )


def _port(st: _State, cur: _Node, m: re.Match[str], no: int, raw: str) -> _Port:
    port = int(m.group(1))
    if not 1 <= port <= cur.n:
        raise ParseError(st.source, no, raw, f"port {port} on a {cur.n}-port node")
    remote_port = check_port(int(m.group(4)), st.source, no, raw, what="remote port")
    comment = m.group(7) or ""
    own_lid = None
    om = _OWN_LID.match(comment)
    if om:
        own_lid = int(om.group(1))
        comment = comment[om.end():]
    tail = _CONN_TAIL.search(comment)
    if tail is None and cur.discovered:
        raise ParseError(st.source, no, raw, "port line without '\"desc\" lid N <width>x<speed>'")
    speed = tail.group(4).upper() if tail else None
    if speed == "???":
        speed = None  # ibnetdiscover could not read the active speed
    elif speed is not None and speed not in IB_SPEEDS:
        raise ParseError(st.source, no, raw, f"unknown link speed {speed!r}")
    return _Port(
        port=port,
        text=raw,
        line=no,
        remote=m.group(3),
        remote_port=remote_port,
        remote_description=tail.group(1) if tail else "",
        lanes=int(tail.group(3)) if tail else None,
        speed=speed,
        port_guid=_own_port_guid(cur, m.group(2)),
        remote_port_guid=guid_id(m.group(5)) if m.group(5) else None,
        lid=own_lid if own_lid is not None else (cur.lid if cur.type == "Switch" else None),
        remote_lid=int(tail.group(2)) if tail else None,
    )


def _own_port_guid(cur: _Node, parens: str) -> str | None:
    """The port's own GUID from what follows ``[N]``: ``(2c9...)`` on a CA port line, or
    ``(label)(2c9...)`` in ibdiagnet's copy. A switch port line has only ibdiagnet's
    label (``(1/1/1)``, ``(65)``): switch ports have no GUID of their own."""
    groups = _PAREN.findall(parens)
    if not groups or cur.type == "Switch":
        return None
    last = groups[-1]
    if re.fullmatch(r"[0-9a-fA-F]{6,16}", last) is None:  # a label such as (1) or (65) is not a GUID
        return None
    return guid_id(last)


def _check_blocks(st: _State, lines: list[str]) -> None:
    """Every cable at both ends, every node reached by something it lists.

    ibnetdiscover prints each node's linked ports; a node block without port lines
    is either the tool's own HCA with no active port (nothing leads to it: kept, with
    a warning) or a block the output was cut after (something leads to it: error).
    """
    by_ident: dict[str, _Node] = {}
    for n in st.nodes:
        first = by_ident.setdefault(n.ident, n)
        if first is not n:
            raise ParseError(st.source, n.line, lines[n.line - 1][:120],
                             f"{n.desc!r} ({n.ident}) is described twice (first at line {first.line}): "
                             "two outputs joined?")
    reached = {p.remote for n in st.nodes for p in n.ports}
    for n in st.nodes:
        if n.ports:
            continue
        if n.type == "Switch" or not n.discovered or n.ident in reached:
            raise ParseError(st.source, n.line, lines[n.line - 1], "node header without port lines: output ends early")
        st.warnings.append(ToolWarning(
            st.source, n.line, f"{n.type} {n.desc!r} has no active port: nothing is cabled to it"))
    for n in st.nodes:
        for p in n.ports:
            remote = by_ident.get(p.remote)
            if remote is None:
                if not st.partial:
                    raise ParseError(
                        st.source, p.line, p.text,
                        f"output ends early: {n.desc!r} port {p.port} leads to {p.remote!r} which is never described",
                    )
                continue
            if p.remote_port > remote.n:
                raise ParseError(st.source, p.line, p.text, f"remote port {p.remote_port} on {remote.desc!r}, "
                                 f"a {remote.n}-port node (line {remote.line})")
            if n.discovered and remote.discovered:
                _check_other_end(st, lines, n, p, remote)


def _check_other_end(st: _State, lines: list[str], n: _Node, p: _Port, remote: _Node) -> None:
    """ibnetdiscover lists a cable at both ends; the far end must name this port back."""
    back = next((q for q in remote.ports if q.port == p.remote_port), None)
    if back is None:
        what = "output ends early" if remote is st.nodes[-1] else "inconsistent output"
        raise ParseError(
            st.source, remote.line, lines[remote.line - 1],
            f"{what}: {remote.desc!r} does not list its port {p.remote_port}, which "
            f"{n.desc!r} port {p.port} (line {p.line}) leads to",
        )
    if (back.remote, back.remote_port) != (n.ident, p.port):
        raise ParseError(
            st.source, back.line, back.text,
            f"{remote.desc!r} port {back.port} leads to {back.remote}[{back.remote_port}], but "
            f"{n.desc!r} port {p.port} (line {p.line}) says it leads here",
        )


def _records(st: _State) -> IbTopology:
    by_ident = {n.ident: n for n in st.nodes}
    records = []
    undescribed = 0
    for n in st.nodes:
        ports = []
        for p in n.ports:
            remote = by_ident.get(p.remote)
            if remote is None:
                undescribed += 1
            ports.append(_port_record(n, p, remote))
        records.append(IbNodeRecord(
            n.type, n.guid, n.n, n.desc, n.lid, tuple(ports), n.line,
            system_guid=f"0x{n.ids['sysimgguid']:016x}" if "sysimgguid" in n.ids else None,
            device_id=n.ids.get("devid"),
            vendor_id=n.ids.get("vendid"),
        ))
    warnings = tuple(sorted(st.warnings, key=lambda w: w.line_no))
    return IbTopology(tuple(records), warnings, undescribed)


def _port_record(n: _Node, p: _Port, remote: _Node | None) -> IbPortRecord:
    port_guid = p.port_guid
    if port_guid is None and n.type != "Switch":
        port_guid = f"0x{int(n.guid, 16) + p.port:016x}"  # how ibsim and most HCAs number them
    if remote is not None:
        remote_guid, remote_desc = remote.guid, p.remote_description or remote.desc
    else:  # a trimmed capture: the peer's id still names its GUID
        remote_guid = guid_id(p.remote) if _DISCOVERED_ID.match(p.remote) else p.remote
        remote_desc = p.remote_description
    return IbPortRecord(
        port=p.port,
        remote_guid=remote_guid,
        remote_port=p.remote_port,
        remote_description=remote_desc,
        lanes=p.lanes,
        lane_gbps=IB_SPEEDS[p.speed] if p.speed else None,
        speed=p.speed,
        port_guid=port_guid,
        remote_port_guid=p.remote_port_guid,
        lid=p.lid,
        remote_lid=p.remote_lid,
    )


# -- ibnetdiscover -p (--ports) ------------------------------------------------------

# "SW  1719 10 0x7cfe9003009ce5b0 4x EDR - CA   134  1 0x7cfe9003003b4bde ( 'ib-i1l1s01' - 'o0001 HCA-1' )"
# "SW  2052 37 0x506b4b03005c2740 4x ???                                    'ib-i4l1s01'"
_PORTS_LINE = re.compile(
    r"^(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+(\d+x|\?+)\s+(\S+)"
    r"(?:\s+-\s+(SW|CA|RT)\s+(\d+)\s+(\d+)\s+0x([0-9a-fA-F]{1,16})\s+\( '(.*?)' - '(.*)' \)"
    r"|\s+'(.*)'|\s+([^'\s].*))\s*$"
)
_PORTS_TYPE = {"SW": "Switch", "CA": "Ca", "RT": "Rt"}


@dataclass
class _PortsEnd:
    type: str
    lid: int
    port: int
    guid: str
    desc: str


@dataclass
class _PortsLine:
    local: _PortsEnd
    peer: _PortsEnd | None
    line: int
    text: str
    lanes: int | None
    speed: str | None


def parse_ibnetdiscover_ports(text: str, source: str = "ibnetdiscover -p", *, partial: bool = False) -> IbTopology:
    """Parse ``ibnetdiscover -p`` (the ports report: one line per port) into an IbTopology.

    The report prints each port's own GUID, never a CA's node GUID, so a CA node
    here is keyed by its port GUID (a dual-port HCA becomes one node per port;
    host identity groups them by description). A node's port count is the highest
    port number listed. A cabled port is listed at both ends in a whole report;
    a peer never listed means the report was cut short (ParseError), unless
    ``partial`` says it was trimmed on purpose (then counted in ``undescribed``).
    Ports with no peer (``4x ???  'desc'``) are down: no cable.
    """
    lines = whole_lines(text, source, _whole_ports_line)
    warnings: list[ToolWarning] = []
    ends: dict[tuple[str, int], _PortsLine] = {}
    nodes: dict[str, _PortsEnd] = {}
    first_line: dict[str, int] = {}
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        warning = tool_warning(raw, source, no)
        if warning is not None:
            warnings.append(warning)
            continue
        m = _PORTS_LINE.match(line)
        if m is None:
            raise ParseError(source, no, raw, "not an 'ibnetdiscover -p' port line")
        local_port = check_port(int(m.group(3)), source, no, raw, lowest=0 if m.group(7) is None else 1)
        local = _PortsEnd(_PORTS_TYPE[m.group(1)], int(m.group(2)), local_port, guid_id(m.group(4)),
                          (m.group(11) if m.group(7) else m.group(13) or m.group(14) or "").strip())
        peer = None
        if m.group(7):
            peer_port = check_port(int(m.group(9)), source, no, raw, what="peer port")
            peer = _PortsEnd(_PORTS_TYPE[m.group(7)], int(m.group(8)), peer_port, guid_id(m.group(10)),
                             m.group(12).strip())
        key = (local.guid, local.port)
        if key in ends:
            raise ParseError(source, no, raw, f"port {local.port} of {local.guid} is listed twice (line {ends[key].line})")
        lanes = int(m.group(5)[:-1]) if m.group(5)[-1] == "x" else None
        speed = m.group(6).upper() if m.group(6).upper() in IB_SPEEDS else None
        ends[key] = _PortsLine(local, peer, no, raw, lanes, speed)
        nodes.setdefault(local.guid, local)
        first_line.setdefault(local.guid, no)
    if not ends:
        raise ParseError(source, 0, "", "no port lines (empty or truncated output)")
    return _ports_topology(source, partial, ends, nodes, first_line, warnings)


def _ports_topology(source: str, partial: bool, ends: dict[tuple[str, int], _PortsLine],
                    nodes: dict[str, _PortsEnd], first_line: dict[str, int], warnings: list[ToolWarning]) -> IbTopology:
    """Nodes and their cables from the port lines; both ends of a cable must agree."""
    undescribed = 0
    ports: dict[str, list[IbPortRecord]] = {guid: [] for guid in nodes}
    highest: dict[str, int] = {}
    for (guid, port), row in ends.items():
        local, peer, no, raw, lanes, speed = row.local, row.peer, row.line, row.text, row.lanes, row.speed
        highest[guid] = max(highest.get(guid, 0), port)
        if peer is None:
            continue
        highest[peer.guid] = max(highest.get(peer.guid, 0), peer.port)
        back = ends.get((peer.guid, peer.port))
        if back is None:
            if peer.guid in nodes:
                raise ParseError(source, no, raw, f"inconsistent output: {peer.desc!r} does not list its port "
                                 f"{peer.port}, which this line leads to")
            if not partial:
                raise ParseError(source, no, raw, f"output ends early: {peer.desc!r} ({peer.guid}) is never listed")
            undescribed += 1
        elif back.peer is None or (back.peer.guid, back.peer.port) != (guid, port):
            raise ParseError(source, back.line, back.text, f"this port's peer disagrees with line {no}")
        ports[guid].append(IbPortRecord(
            port=port, remote_guid=peer.guid, remote_port=peer.port, remote_description=peer.desc,
            lanes=lanes, lane_gbps=IB_SPEEDS[speed] if speed else None, speed=speed,
            port_guid=guid if local.type != "Switch" else None,
            remote_port_guid=peer.guid if peer.type != "Switch" else None,
            lid=local.lid, remote_lid=peer.lid,
        ))
    records = tuple(
        IbNodeRecord(n.type, guid, highest[guid], n.desc, n.lid if n.type == "Switch" else None,
                     tuple(sorted(ports[guid], key=lambda p: p.port)), first_line[guid])
        for guid, n in nodes.items()
    )
    return IbTopology(records, tuple(warnings), undescribed)
