"""Parse ``ibnetdiscover`` output (or an ibsim net file in that syntax) into an IbTopology."""

from __future__ import annotations

import re

from fabricdoc.probes.ib.common import whole_lines

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import IB_SPEEDS, IbNodeRecord, IbPortRecord, IbTopology, guid_id

_NODE_RE = re.compile(r'^(Switch|Ca|Rt|Hca)\s+(\d+)\s+"([^"]+)"\s*(?:#\s*"(.*)"(.*))?$')
_PORT_RE = re.compile(
    r'^\[(\d+)\](?:\[ext \d+\])?(?:\(([0-9a-fA-F]+)\))?\s*"([^"]+)"\[(\d+)\](?:\[ext \d+\])?'
    r"(?:\(([0-9a-fA-F]+)\))?((?:\s+[a-z]=\S+)*)\s*(?:#\s*(.*))?$"
)
_DISCOVERED_ID = re.compile(r"^[SHR]-[0-9a-fA-F]{1,16}$")
_CONN_TAIL = re.compile(r'"(.*)"\s+lid\s+(\d+)\s+(\d+)x([A-Za-z0-9]+)\s*$')
_OWN_LID = re.compile(r"^lid\s+(\d+)\s+lmc\s+\d+\s*")
_GUID_LINE = re.compile(r"^(switchguid|caguids?|hcaguids?|rtguid)\s*=\s*(0x[0-9a-fA-F]+|\d+)")
_HEADER_KEYS = re.compile(r"^(vendid|devid|sysimgguid|switchguid|caguids?|hcaguids?|rtguid)\s*=\s*\S+")
# ibsim's netfile directives (sim_net.c) that carry no topology.
_NETFILE_KEYS = re.compile(r"^(width|speed|module|include|pdebug|do|devid|vendid|sysimgguid)\b")
# ibsim's default GUID bases when a net file sets none (sim_net.c).
_IBSIM_GUID_BASE = {"Switch": 0x200000, "Ca": 0x100000, "Rt": 0x300000}


def parse_ibnetdiscover(text: str, source: str = "ibnetdiscover") -> IbTopology:
    """Parse ``ibnetdiscover`` output, a saved copy, or an ibsim net file in that syntax.

    Discovered ids (``"S-0002c9..."``) are GUIDs; a net file's own ids
    (``"leaf01"``) get the GUID ibsim would give them (its ``switchguid=``/
    ``caguid=`` lines, else its defaults), and its port lines need not carry the
    ``lid N 4xHDR`` tail. A port that leads to a node the text never describes
    means the output was cut short: ParseError with line 0.
    """
    lines = whole_lines(text, source)
    nodes: list[dict] = []
    cur: dict | None = None
    next_guid = dict(_IBSIM_GUID_BASE)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        g = _GUID_LINE.match(line)
        if g:
            kind = {"s": "Switch", "c": "Ca", "h": "Ca", "r": "Rt"}[g.group(1)[0]]
            next_guid[kind] = int(g.group(2), 0)
            continue
        if _HEADER_KEYS.match(line) or _NETFILE_KEYS.match(line) and cur is None:
            continue
        m = _NODE_RE.match(line)
        if m:
            kind = "Ca" if m.group(1) == "Hca" else m.group(1)
            nports = int(m.group(2))
            ident = m.group(3)
            if _DISCOVERED_ID.match(ident):
                guid = guid_id(ident)
            else:
                guid = f"0x{next_guid[kind]:016x}"
                next_guid[kind] += 1 if kind == "Switch" else nports + 1
            rest = m.group(5) or ""
            lm = re.search(r"\blid\s+(\d+)", rest)
            cur = {
                "type": kind,
                "n": nports,
                "ident": ident,
                "guid": guid,
                "desc": m.group(4) if m.group(4) is not None else ident,
                "lid": int(lm.group(1)) if lm else None,
                "ports": [],
                "line": no,
                "discovered": bool(_DISCOVERED_ID.match(ident)),
            }
            nodes.append(cur)
            continue
        m = _PORT_RE.match(line)
        if m and cur is not None:
            port = int(m.group(1))
            comment = m.group(7) or ""
            own_lid = None
            om = _OWN_LID.match(comment)
            if om:
                own_lid = int(om.group(1))
                comment = comment[om.end() :]
            tail = _CONN_TAIL.search(comment)
            if not 0 <= port <= cur["n"]:
                raise ParseError(source, no, raw, f"port {port} on a {cur['n']}-port node")
            if tail is None and cur["discovered"]:
                raise ParseError(source, no, raw, "port line without '\"desc\" lid N <width>x<speed>'")
            speed = tail.group(4).upper() if tail else None
            if speed is not None and speed not in IB_SPEEDS:
                raise ParseError(source, no, raw, f"unknown link speed {speed!r}")
            cur["ports"].append(
                {
                    "port": port,
                    "text": raw,
                    "remote": m.group(3),
                    "remote_port": int(m.group(4)),
                    "remote_description": tail.group(1) if tail else "",
                    "lanes": int(tail.group(3)) if tail else None,
                    "lane_gbps": IB_SPEEDS[speed] if speed else None,
                    "speed": speed,
                    "port_guid": guid_id(m.group(2)) if m.group(2) else None,
                    "remote_port_guid": guid_id(m.group(5)) if m.group(5) else None,
                    "lid": own_lid if own_lid is not None else (cur["lid"] if cur["type"] == "Switch" else None),
                    "remote_lid": int(tail.group(2)) if tail else None,
                    "line": no,
                }
            )
            continue
        raise ParseError(source, no, raw, "not an ibnetdiscover node, port or header line")
    if not nodes:
        raise ParseError(source, 0, "", "no nodes (empty or truncated output)")
    for n in nodes:
        # Every discovered node has at least the cable it was found through.
        if not n["ports"]:
            raise ParseError(source, n["line"], lines[n["line"] - 1],
                             "node header without port lines: output ends early")
    by_ident = {n["ident"]: n for n in nodes}
    records = []
    for n in nodes:
        ports = []
        for p in n["ports"]:
            remote = by_ident.get(p["remote"])
            if remote is None:
                raise ParseError(
                    source,
                    p["line"],
                    p["text"],
                    f"output ends early: {n['desc']!r} port {p['port']} leads to "
                    f"{p['remote']!r} which is never described",
                )
            port_guid = p["port_guid"]
            if port_guid is None and n["type"] != "Switch":
                port_guid = f"0x{int(n['guid'], 16) + p['port']:016x}"  # how ibsim and most HCAs number them
            ports.append(
                IbPortRecord(
                    port=p["port"],
                    remote_guid=remote["guid"],
                    remote_port=p["remote_port"],
                    remote_description=p["remote_description"] or remote["desc"],
                    lanes=p["lanes"],
                    lane_gbps=p["lane_gbps"],
                    speed=p["speed"],
                    port_guid=port_guid,
                    remote_port_guid=p["remote_port_guid"],
                    lid=p["lid"],
                    remote_lid=p["remote_lid"],
                )
            )
        records.append(IbNodeRecord(n["type"], n["guid"], n["n"], n["desc"], n["lid"], tuple(ports), n["line"]))
    return IbTopology(tuple(records))

