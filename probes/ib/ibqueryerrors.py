"""Parse ``ibqueryerrors`` (errors, ``--counters``) into PortCounters."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from fabricdoc.probes.ib import check_port
from fabricdoc.probes.ib.common import EXTENDED_WIDTH, IBTA_ERRORS, check_register, whole_lines

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import guid_id
from fabricdoc.model.records import PortCounters, PortRef

# The IBTA error counters ibqueryerrors checks; a port it checked but did not list has all zero.
IBQUERYERRORS_ERRORS = IBTA_ERRORS



@dataclass(frozen=True)
class IbQueryErrors:
    """ibqueryerrors output: per-port counters it listed, and the ports it says it checked."""

    counters: tuple[PortCounters, ...]
    nodes_checked: int
    ports_checked: int
    bad_ports: int | None
    descriptions: dict[str, str] = field(default_factory=dict)


_IQE_NODE = re.compile(r'^(Errors|Data Counters) for (?:(0x[0-9a-fA-F]+) )?"(.*)"$')
_IQE_PORT = re.compile(r"^GUID (0x[0-9a-fA-F]+) port (\d+|ALL):(.*)$")
_IQE_ITEM = re.compile(r"\[([A-Za-z][A-Za-z0-9]*) == (-?\d+)(?: \([^)]*\))?\]")
_IQE_SUMMARY1 = re.compile(r"^## Summary: (\d+) nodes checked, (\d+) bad nodes found$")
_IQE_SUMMARY2 = re.compile(r"^## +(\d+) ports checked, (\d+) ports have errors beyond threshold$")


def parse_ibqueryerrors(
    text: str,
    source: str = "ibqueryerrors",
    *,
    timestamp: float | None = None,
    port_guid_to_node: Mapping[str, PortRef] | None = None,
) -> IbQueryErrors:
    """Parse ``ibqueryerrors`` (errors, ``--data``, ``--counters``; ``-r`` link info is skipped).

    Returns one PortCounters per ``GUID ... port N:`` line (the ``port ALL``
    aggregate is dropped). A block header with a GUID names the node; a CA's
    error block header has none (``Errors for "node0003"``) and its port lines
    carry the *port* GUID, turned into the node by ``port_guid_to_node`` (from
    ibnetdiscover) when given. The ``## Summary`` block must be there: without
    it the output was cut short. A port number outside 0..255 (1..255 in a CA's error block,
    where port 0 does not exist) is a ParseError naming the line.
    """
    guids = port_guid_to_node or {}
    ts = time.time() if timestamp is None else timestamp
    merged: dict[tuple[str, int], dict[str, int | None]] = {}
    descs: dict[str, str] = {}
    kinds: dict[tuple[str, int], str] = {}
    node: str | None = None
    summary: tuple[int, int] | None = None
    ports_checked: int | None = None
    bad_ports: int | None = None
    lines = whole_lines(text, source)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        m = _IQE_NODE.match(line)
        if m:
            node = guid_id(m.group(2)) if m.group(2) else ""
            desc = m.group(3)
            if node:
                descs[node] = desc
            kind = "counters" if m.group(1) == "Data Counters" else "errors"
            continue
        m = _IQE_PORT.match(line)
        if m:
            if node is None or (node and guid_id(m.group(1)) != node):
                raise ParseError(source, no, raw, "port line outside its node's block")
            port_node = node
            if not node:
                at = guids.get(guid_id(m.group(1)))
                port_node = at.node if at is not None else guid_id(m.group(1))
                descs.setdefault(port_node, desc)
            body = m.group(3)
            items = _IQE_ITEM.findall(body)
            stripped = body.strip()
            # Nothing but whole "[Name == n (...)]" items: one bracket pair per item, nothing outside.
            if (
                not items
                or stripped[:1] != "["
                or stripped[-1:] != "]"
                or stripped.count("[") != len(items)
                or stripped.count("]") != len(items)
            ):
                raise ParseError(source, no, raw, "cannot read the counter list")
            if m.group(2) == "ALL":
                continue
            # Port 0 is a switch's management port; a CA's error block (no GUID in its header) has 1..N.
            port = check_port(int(m.group(2)), source, no, raw, lowest=1 if not node else 0)
            values = {k: int(v) for k, v in items}
            for name, value in values.items():
                width = EXTENDED_WIDTH.get(name) if kind == "counters" else None
                check_register(name, value, width, source, no, raw)
            key = (port_node, port)
            merged.setdefault(key, {}).update(values)
            kinds[key] = kind
            continue
        if line.startswith("Link info:"):
            continue
        m = _IQE_SUMMARY1.match(line)
        if m:
            summary = (int(m.group(1)), int(m.group(2)))
            continue
        m = _IQE_SUMMARY2.match(line)
        if m:
            ports_checked, bad_ports = int(m.group(1)), int(m.group(2))
            continue
        if line.startswith("## Thresholds:") or line.startswith("## Suppressed:") or line.startswith("##"):
            continue
        raise ParseError(source, no, raw, "not an ibqueryerrors line")
    if summary is None or ports_checked is None:
        raise ParseError(source, 0, "", "no '## Summary' block: output ends early")
    counters = tuple(
        PortCounters(
            node=n,
            port=p,
            timestamp=ts,
            values=vals,
            source="ibqueryerrors --counters" if kinds[(n, p)] == "counters" else "ibqueryerrors",
            width_bits={k: 64 for k in vals if k in EXTENDED_WIDTH} if kinds[(n, p)] == "counters" else {},
        )
        for (n, p), vals in sorted(merged.items())
    )
    return IbQueryErrors(counters, summary[0], ports_checked, bad_ports, descs)

