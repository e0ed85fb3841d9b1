"""Parse ``iblinkinfo`` into PortStates with trained and supported width and speed."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from fabricdoc.probes.ib import check_port
from fabricdoc.probes.ib.common import whole_lines

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import IB_SPEEDS, IbPortState, guid_id
from fabricdoc.model.records import PortRef

_ILI_SWITCH = re.compile(r"^Switch:\s+(0x[0-9a-fA-F]+)\s+(.*):$")
_ILI_CA = re.compile(r"^(CA|Router):\s+(.*):$")
_ILI_PORT = re.compile(
    r"^(?:(0x[0-9a-fA-F]+)\s+)?(\d+)\s+(\d+)\[[^\]]*\]\s+==\(\s*(.*?)\s*\)==>\s*(.*)$"
)
# "4X   25.78125 Gbps Active/  LinkUp", "4X 10.0 Gbps (FDR10) Active/  LinkUp", "Down/ Polling";
# -s adds " (HOQ:18 VL_Stall:7)" after the physical state.
_ILI_LINK = re.compile(
    r"^(?:(\d+)X\s+(\d+(?:\.\d+)?)\s+Gbps(?:\s+\((\w+)\))?\s+)?(\w+)/\s*(\w+)(?:\)\s+\(HOQ:\d+ VL_Stall:\d+)?$"
)
# The hint in the last parentheses (ibdiag_common.c get_max_msg): "(%s %s)" of a width message
# and a speed message, each empty or "Could be ...": "( )", "(Could be 12X )",
# "( Could be 53.125 Gbps)", "(Could be 12X Could be 10.0 Gbps)", "( Could be FDR10)".
_COULD_BE = re.compile(r"Could be (?:(\d+)X|(\d+(?:\.\d+)?) Gbps|(FDR10))")
_ILI_REMOTE = re.compile(r'^(?:(0x[0-9a-fA-F]+)\s+)?(\d+)?\s*(\d+)?\[[^\]]*\]\s+"(.*)"\s+\((.*)\)$')
_ILI_UNAVAILABLE = re.compile(r'^"Port not available"$')
_STATE_NAMES = {"Initialize": "Init", "Init": "Init", "Down": "Down", "Armed": "Armed", "Active": "Active"}


@dataclass(frozen=True)
class IbLinkInfoPort:
    """One iblinkinfo port line, unresolved: LIDs as printed."""

    node_guid: str | None  # switches: the switch GUID; CAs: None (use port_guid)
    port_guid: str | None  # CAs print their port GUID first
    description: str
    lid: int
    port: int
    state: str
    phys_state: str
    lanes: int | None
    lane_gbps: float | None
    could_be_lanes: int | None
    could_be_gbps: float | None
    remote_lid: int | None
    remote_port: int | None
    remote_description: str
    remote_answered: bool = True  # False: iblinkinfo printed "Port not available" for the far end


def could_be(hint: str) -> tuple[int | None, float | None]:
    """The width and lane rate iblinkinfo says a link could run at, from its hint text.

    Both messages may be there (``Could be 12X Could be 10.0 Gbps``): each is read.
    ``Could be FDR10`` is FDR10's lane rate (10.3125 Gb/s).
    """
    lanes = gbps = None
    for width, rate, fdr10 in _COULD_BE.findall(hint):
        if width:
            lanes = int(width)
        elif rate:
            gbps = float(rate)
        elif fdr10:
            gbps = IB_SPEEDS["FDR10"]
    return lanes, gbps


def parse_iblinkinfo_lines(text: str, source: str = "iblinkinfo") -> list[IbLinkInfoPort]:
    """The raw port lines of ``iblinkinfo`` (default format), in order; a port or remote port
    outside 1..255 is a ParseError naming the line."""
    out: list[IbLinkInfoPort] = []
    node_guid: str | None = None
    desc = ""
    in_node = False
    ports_here = header_no = 0
    header = ""
    lines = whole_lines(text, source)
    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        m = _ILI_SWITCH.match(line) or _ILI_CA.match(line)
        if m:
            if in_node and ports_here == 0:
                raise ParseError(source, header_no, header, "node header without port lines")
            if m.re is _ILI_SWITCH:
                node_guid, desc = guid_id(m.group(1)), m.group(2)
            else:
                node_guid, desc = None, m.group(2)
            in_node, ports_here, header_no, header = True, 0, no, raw
            continue
        m = _ILI_PORT.match(line)
        if not m or not in_node:
            raise ParseError(source, no, raw, "not an iblinkinfo node or port line")
        port_guid = guid_id(m.group(1)) if m.group(1) else None
        link = _ILI_LINK.match(m.group(4))
        far = m.group(5).strip()
        remote = _ILI_REMOTE.match(far)
        answered = True
        if remote is None and _ILI_UNAVAILABLE.match(far):
            # The link is up but the far end does not answer MADs (ibsim: Error "node"[port] 100).
            remote, answered = _ILI_REMOTE.match('[  ] "" ( )'), False
        if not link or not remote:
            raise ParseError(source, no, raw, "cannot read the link state or the remote end")
        state = _STATE_NAMES.get(link.group(4))
        if state is None:
            raise ParseError(source, no, raw, f"unknown port state {link.group(4)!r}")
        ports_here += 1
        port = check_port(int(m.group(3)), source, no, raw)  # iblinkinfo lists ports 1..N, never port 0
        far_port = remote.group(3) or remote.group(2)
        remote_port = check_port(int(far_port), source, no, raw, what="remote port") if far_port else None
        could_lanes, could_gbps = could_be(remote.group(5))
        trained_gbps = float(link.group(2)) if link.group(2) else None
        if link.group(3) == "FDR10":
            trained_gbps = IB_SPEEDS["FDR10"]  # printed "10.0 Gbps (FDR10)": 64b/66b at 10.3125 per lane
        out.append(
            IbLinkInfoPort(
                node_guid=node_guid,
                port_guid=port_guid,
                description=desc,
                lid=int(m.group(2)),
                port=port,
                state=state,
                phys_state=link.group(5),
                lanes=int(link.group(1)) if link.group(1) else None,
                lane_gbps=trained_gbps,
                could_be_lanes=could_lanes,
                could_be_gbps=could_gbps,
                remote_lid=int(remote.group(2)) if remote.group(2) and remote.group(3) else None,
                remote_port=remote_port,
                remote_description=remote.group(4),
                remote_answered=answered,
            )
        )
    if not out:
        raise ParseError(source, 0, "", "no port lines (empty or truncated output)")
    if in_node and ports_here == 0:
        raise ParseError(source, header_no, header, "node header without port lines: output ends early")
    return out


def parse_iblinkinfo(
    text: str,
    source: str = "iblinkinfo",
    *,
    port_guid_to_node: Mapping[str, PortRef] | None = None,
    lid_to_port: Mapping[int, PortRef] | None = None,
) -> list[IbPortState]:
    """Parse ``iblinkinfo`` into one IbPortState per port.

    ``lanes``/``lane_gbps`` are what the port trained at; ``max_*`` what iblinkinfo
    says both ends could do (both "Could be" phrases, width and speed, each read on its
    own), else the trained values (no phrase: the link runs at what both ends support);
    ``max_lanes_from``/``max_lane_gbps_from`` are ``could_be`` for an up port.
    ``port_guid_to_node`` (from ibnetdiscover) turns a CA's port GUID into its node
    GUID; ``lid_to_port`` resolves the remote end into ``peer``.
    """
    guids = port_guid_to_node or {}
    lids = lid_to_port or {}
    states: list[IbPortState] = []
    for rec in parse_iblinkinfo_lines(text, source):
        if rec.node_guid is not None:
            node = rec.node_guid
        elif rec.port_guid is not None and rec.port_guid in guids:
            node = guids[rec.port_guid].node
        else:
            node = rec.port_guid or f"lid:{rec.lid}"
        peer = None
        if rec.remote_lid is not None and rec.remote_port is not None:
            at = lids.get(rec.remote_lid)
            if at is not None:
                # A switch answers on port 0's LID: the remote port number is the one printed.
                peer = PortRef(at.node, rec.remote_port if at.port == 0 else at.port)
            else:
                peer = PortRef(f"lid:{rec.remote_lid}", rec.remote_port)
        up = rec.state != "Down"
        states.append(
            IbPortState(
                node=node,
                port=rec.port,
                state=rec.state,
                phys_state=rec.phys_state,
                lanes=rec.lanes,
                lane_gbps=rec.lane_gbps,
                max_lanes=(rec.could_be_lanes or rec.lanes) if up else None,
                max_lane_gbps=(rec.could_be_gbps or rec.lane_gbps) if up else None,
                peer=peer,
                source="iblinkinfo",
                max_lanes_from="could_be" if up else None,
                max_lane_gbps_from="could_be" if up else None,
                far_answered=rec.remote_answered if up else None,
            )
        )
    return states

