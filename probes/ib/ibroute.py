"""Parse unicast forwarding tables: ``ibroute <lid>``, ``dump_fts`` and OpenSM's LFT dump.

All three print one block per switch (``infiniband-diags/ibroute.c``,
``dump_fts.c`` and OpenSM's ``dump_ucast_lfts``)::

    Unicast lids [0x0-0x16] of switch Lid 3 guid 0x0002c90200000003 (leaf01):
    Unicast lids [0x0-0x1400] of switch DR path slid 0; dlid 0; 0,1,9 guid 0xf452... (MF0;sw:SX6036/U1):
    Unicast lids [0-22] of switch Lid 3 guid 0x0002c90200000003 ('leaf01'):
      Lid  Out   Destination
           Port     Info
    0x0004 001 : (Channel Adapter portguid 0x0002c90300000002: 'node0001')
    0x0005 001                                   (-n: destinations not resolved)
    0x0004 001 # Channel Adapter portguid 0x0002c90300000002: 'node0001'    (OpenSM)
    22 valid lids dumped

``dump_fts`` prints ``SubnGet(LFT) failed on switch ...`` and libibmad its
``ibwarn:`` lines on stderr, so a saved ``2>&1`` capture has them between (or
inside) the blocks: they are kept as warnings with their line numbers. With
``-a`` (all entries) a LID whose port is beyond the switch's ports is printed
as ``(illegal port)``: not a route, so it is left out of the table. Multicast
blocks (``-M``) carry no unicast routes and are skipped whole.

Port numbers are bounded: an egress port outside 0..255 (0 is the switch itself), or past
the switch's port count when the caller knows it (``num_ports``, from ibnetdiscover), and a
DR-path port outside 0..255, are a ParseError naming the line.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from fabricdoc.probes.ib import check_port
from fabricdoc.probes.ib.common import tool_warning, whole_lines

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import IbRoute, IbRoutes, ToolWarning, guid_id

_IBR_HEAD = re.compile(
    r"^Unicast lids \[(0x[0-9a-fA-F]+|\d+)-(0x[0-9a-fA-F]+|\d+)\] of switch "
    r"(?:Lid (\d+)|DR path slid (\d+); dlid (\d+); ([\d,]+)) guid (0x[0-9a-fA-F]+) \((.*)\):$"
)
_MCAST_HEAD = re.compile(r"^Multicast mlids \[")
_MCAST_TAIL = re.compile(r"^\d+ (?:valid )?mlids dumped\s*$")
_IBR_ENTRY = re.compile(r"^(0x[0-9a-fA-F]+)\s+(\d+)(?:\s+[:#]\s*(.*))?$")
# "(Switch portguid 0x...: 'desc')", OpenSM's "Switch portguid 0x...: 'desc'"; ibroute prints
# "(unknown node and type)" for a LID it could not resolve, dump_fts "(node info not available ...)".
_IBR_DEST = re.compile(r"portguid (0x[0-9a-fA-F]+): '(.*)'\)?$")
_IBR_TAIL = re.compile(r"^(\d+) (?:valid )?lids dumped\s*$")
_COLUMNS = re.compile(r"^(?:Lid\s+Out\s+Destination|Port\s+Info)$")


@dataclass
class _Block:
    head: re.Match[str]
    line_no: int
    text: str
    num_ports: int | None = None  # the switch's port count, when the caller knows it
    lft: dict[int, int] = field(default_factory=dict)
    dests: dict[int, str] = field(default_factory=dict)
    entries: int = 0  # lines listed, illegal ones included: what the trailer counts


def parse_ibroute(text: str, source: str = "ibroute", *, num_ports: int | None = None) -> IbRoute:
    """Parse one ``ibroute <lid>`` dump (unicast LFT); its trailer must match the entries.
    ``num_ports``: the switch's port count, when known; an egress port past it is refused."""
    routes = _parse(text, source, lambda _guid: num_ports)
    if len(routes.routes) != 1:
        raise ParseError(source, routes.routes[1].line_no, "", "more than one switch: read it with parse_routes")
    return routes.routes[0]


def parse_routes(text: str, source: str = "routes", *, num_ports: Mapping[str, int] | None = None) -> IbRoutes:
    """Every switch's unicast LFT from concatenated ``ibroute`` dumps, ``dump_fts`` output or
    OpenSM's LFT dump, with the tools' warning lines kept. Each block needs its
    "N lids dumped" trailer (matching its entries): without it the output was cut.
    ``num_ports`` (switch GUID as :func:`guid_id` writes it, a fabric node id -> its port count, when
    known) bounds each switch's egress ports."""
    counts = num_ports or {}
    return _parse(text, source, lambda guid: counts.get(guid))


def _parse(text: str, source: str, count_of: Callable[[str], int | None]) -> IbRoutes:
    """parse_routes, with ``count_of`` giving a switch's port count (or None) from its GUID."""
    lines = whole_lines(text, source, lambda line: bool(_IBR_TAIL.match(line.strip())))
    routes: list[IbRoute] = []
    warnings: list[ToolWarning] = []
    block: _Block | None = None
    in_mcast = False
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        warning = tool_warning(raw, source, no) or _lft_failure(line, source, no)
        if warning is not None:
            warnings.append(warning)
            continue
        if in_mcast:
            in_mcast = not _MCAST_TAIL.match(line)
            continue
        if _MCAST_HEAD.match(line) and block is None:
            in_mcast = True
            continue
        head = _IBR_HEAD.match(line)
        if head is not None:
            if block is not None:
                raise ParseError(source, block.line_no, block.text, "no 'lids dumped' trailer: output ends early")
            for hop in (head.group(6) or "").split(","):
                if hop:
                    check_port(int(hop), source, no, raw, lowest=0, what="DR path port")
            block = _Block(head, no, raw, count_of(guid_id(head.group(7))))
            continue
        if block is None:
            raise ParseError(source, no, raw, "no ibroute 'Unicast lids [...] of switch ... guid ...' header "
                             "before this line")
        if _COLUMNS.match(line):
            continue
        m = _IBR_ENTRY.match(line)
        if m:
            _entry(block, m, source, no, raw)
            continue
        m = _IBR_TAIL.match(line)
        if m:
            if int(m.group(1)) != block.entries:
                raise ParseError(source, no, raw, f"says {m.group(1)} lids but lists {block.entries}")
            routes.append(_route(block))
            block = None
            continue
        raise ParseError(source, no, raw, "not an ibroute entry")
    if block is not None or in_mcast or not routes:
        where = block.line_no if block is not None else 0
        raise ParseError(source, where, block.text if block else "", "no 'lids dumped' trailer: output ends early")
    return IbRoutes(tuple(routes), tuple(warnings))


def _lft_failure(line: str, source: str, no: int) -> ToolWarning | None:
    """dump_fts's own ``SubnGet(LFT) failed on switch ...`` line (a block it could not read)."""
    if line.startswith(("SubnGet(", "SubnGet() failed")):
        return ToolWarning(source, no, line)
    return None


def _entry(block: _Block, m: re.Match[str], source: str, no: int, raw: str) -> None:
    block.entries += 1
    port = check_port(int(m.group(2)), source, no, raw, lowest=0, what="egress port")  # 0: the switch itself
    info = (m.group(3) or "").strip()
    if "illegal port" in info:
        return  # -a prints unassigned entries (port 255 and the like): no route
    lid = int(m.group(1), 16)
    if block.num_ports is not None and port > block.num_ports:
        raise ParseError(source, no, raw, f"LID {lid} is forwarded to port {port}, but the switch "
                                          f"({block.head.group(8)}) has {block.num_ports} ports")
    block.lft[lid] = port
    dest = _IBR_DEST.search(info)
    if dest:
        block.dests[lid] = guid_id(dest.group(1))


def _route(block: _Block) -> IbRoute:
    head = block.head
    desc = head.group(8)
    if len(desc) >= 2 and desc[0] == desc[-1] == "'":
        desc = desc[1:-1]  # OpenSM quotes the description
    if head.group(3) is not None:
        lid = int(head.group(3))
    else:  # a DR-path header names no LID: the switch's own LID is the one it forwards to port 0
        lid = min((d for d, port in block.lft.items() if port == 0 and d > 0), default=0)
    return IbRoute(guid_id(head.group(7)), lid, desc, block.lft, block.dests, block.line_no)
