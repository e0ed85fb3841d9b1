"""Parse ``ibtracert <src> <dst>`` (the route one packet takes)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from fabricdoc.probes.ib import check_port

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import guid_id
from fabricdoc.model.inputs import refuse_long_numbers
from fabricdoc.model.records import LinkKey, PortRef


@dataclass(frozen=True)
class IbTrace:
    """A route as ibtracert walked it: the source port, each hop, the destination node."""

    src_guid: str
    src_port: int
    dst_guid: str
    dst_port: int
    hops: tuple[tuple[int, str, str, int], ...]  # (out port, "switch"/"ca", guid, in port)

    def links(self, port_guid_to_node: Mapping[str, PortRef] | None = None) -> tuple[LinkKey, ...]:
        """The hops as links between (node GUID, port); a CA hop's port GUID becomes the dst node."""
        guids = port_guid_to_node or {}
        out: list[LinkKey] = []
        here_node, _ = self.src_guid, self.src_port
        for out_port, kind, guid, in_port in self.hops:
            if kind == "switch":
                there = guid
            elif guid in guids:
                there = guids[guid].node
            else:
                there = self.dst_guid
            out.append(LinkKey.of(PortRef(here_node, out_port), PortRef(there, in_port)))
            here_node = there
        return tuple(out)


_ITR_FROM = re.compile(r"^From (ca|switch) \{(0x[0-9a-fA-F]+)\} portnum (\d+) lid [\d-]+ \"(.*)\"$")
_ITR_HOP = re.compile(r"^\[(\d+)\] -> (ca|switch) port \{(0x[0-9a-fA-F]+)\}\[(\d+)\] lid [\d-]+ \"(.*)\"$")
_ITR_TO = re.compile(r"^To (ca|switch) \{(0x[0-9a-fA-F]+)\} portnum (\d+) lid [\d-]+ \"(.*)\"$")


def parse_ibtracert(text: str, source: str = "ibtracert") -> IbTrace:
    """Parse ``ibtracert <src lid> <dst lid>``: From, one line per hop, To. Port numbers are
    1..255 (0, the management port, only as a switch's ``portnum``), else a ParseError naming the line."""
    src: re.Match[str] | None = None
    dst: re.Match[str] | None = None
    hops: list[tuple[int, str, str, int]] = []
    src_port = dst_port = 0
    refuse_long_numbers(text, source)
    lines = text.splitlines()
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if src is None:
            src = _ITR_FROM.match(line)
            if src is None:
                raise ParseError(source, no, raw, "expected 'From ca {guid} portnum N ...'")
            src_port = _end_port(src, source, no, raw)
            continue
        m = _ITR_HOP.match(line)
        if m and dst is None:
            out_port = check_port(int(m.group(1)), source, no, raw, what="out port")
            in_port = check_port(int(m.group(4)), source, no, raw, what="in port")
            hops.append((out_port, m.group(2), guid_id(m.group(3)), in_port))
            continue
        m = _ITR_TO.match(line)
        if m and dst is None:
            dst = m
            dst_port = _end_port(m, source, no, raw)
            continue
        raise ParseError(source, no, raw, "not an ibtracert hop")
    if src is None or dst is None or not hops:
        raise ParseError(source, 0, "", "no 'To ...' line: output ends early")
    return IbTrace(guid_id(src.group(2)), src_port, guid_id(dst.group(2)), dst_port, tuple(hops))


def _end_port(m: re.Match[str], source: str, no: int, raw: str) -> int:
    """The ``portnum`` of a From/To line: a switch's may be 0 (the switch itself), a CA's is 1..255."""
    return check_port(int(m.group(3)), source, no, raw, lowest=0 if m.group(1) == "switch" else 1, what="portnum")
