"""Parse ``ibroute <lid>`` (one switch's unicast LFT)."""

from __future__ import annotations

import re

from fabricdoc.probes.ib.common import whole_lines

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import IbRoute, guid_id

_IBR_HEAD = re.compile(
    r"^Unicast lids \[(0x[0-9a-fA-F]+)-(0x[0-9a-fA-F]+)\] of switch Lid (\d+) guid (0x[0-9a-fA-F]+) \((.*)\):$"
)
_IBR_ENTRY = re.compile(r"^(0x[0-9a-fA-F]+)\s+(\d+)\s+:\s+\((.*)\)$")
# "(Switch portguid 0x...: 'desc')"; ibroute prints "(unknown node and type)" for a LID it could not resolve.
_IBR_DEST = re.compile(r"portguid (0x[0-9a-fA-F]+): '(.*)'$")
_IBR_TAIL = re.compile(r"^(\d+) (?:valid )?lids dumped\s*$")


def parse_ibroute(text: str, source: str = "ibroute") -> IbRoute:
    """Parse ``ibroute <lid>`` (unicast LFT). The trailing "N valid lids dumped" must match the entries."""
    head: re.Match[str] | None = None
    lft: dict[int, int] = {}
    dests: dict[int, str] = {}
    lines = whole_lines(text, source)
    done = False
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        if head is None:
            head = _IBR_HEAD.match(line)
            if head is None:
                raise ParseError(source, no, raw, "expected 'Unicast lids [...] of switch Lid N guid ...'")
            continue
        if line.startswith("Lid") and "Out" in line or line.startswith("Port") and "Info" in line:
            continue
        m = _IBR_ENTRY.match(line)
        if m and not done:
            lid = int(m.group(1), 16)
            lft[lid] = int(m.group(2))
            dest = _IBR_DEST.search(m.group(3))
            if dest:
                dests[lid] = guid_id(dest.group(1))
            continue
        m = _IBR_TAIL.match(line)
        if m and not done:
            if int(m.group(1)) != len(lft):
                raise ParseError(source, no, raw, f"says {m.group(1)} lids but lists {len(lft)}")
            done = True
            continue
        raise ParseError(source, no, raw, "not an ibroute entry")
    if head is None or not done:
        raise ParseError(source, 0, "", "no 'lids dumped' trailer: output ends early")
    return IbRoute(guid_id(head.group(4)), int(head.group(3)), head.group(5), lft, dests)

