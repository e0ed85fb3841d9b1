"""Parse the files ``ibdiagnet`` (ibutils2) writes into its output directory, one parser per file.

- ``ibdiagnet2.db_csv``: ``START_<SECTION>`` / header / rows / ``END_<SECTION>``
  blocks; :func:`parse_db_csv` reads every section strictly (a row whose field
  count differs from its header is an error) and :func:`db_nodes`,
  :func:`db_ports`, :func:`db_links`, :func:`db_pm` and :func:`db_run` read the
  sections fabricdoc uses (NODES, PORTS, LINKS, PM_INFO, PM_DELTA, RUN_INFO);
  they live in :mod:`.ibdiagnet_db` and :mod:`.ibdiagnet_sections`, the value and
  code conventions in :mod:`.ibdiagnet_codes`, and are importable from here.
- ``ibdiagnet2.lst``: one line per link, both ends in braces.
- ``ibdiagnet2.net_dump``: per switch, one row per port with its state, width and speed.
- ``ibdiagnet2.pm``: one counter block per port (the same sample as PM_INFO).
- ``ibdiagnet2.fdbs``: the switches' unicast LFTs in OpenSM's ``dump_ucast_routes`` layout.
- ``ibdiagnet2.cables``: one ``Key: value`` block per cable module.

Pure: text in, records out; the source (``fabricdoc/sources/ibdiagnet.py``)
decides what they mean together. Values the device does not give (``N/A``,
``-1``, ``0xfffffffffffffffe``) are ``None``, never 0.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field

from fabricdoc.probes.ib import check_port, check_port_count
from fabricdoc.probes.ib.common import tool_warning, whole_lines
from fabricdoc.probes.ib.ibdiagnet_codes import (
    _LANE_RATE_NAMES,
    _NA,
    NODE_TYPES,
    PHYS_STATES,
    PORT_STATES,
    WIDTH_LANES,
    _int,
    active_speed,
    max_speed,
    max_width,
)
from fabricdoc.probes.ib.ibdiagnet_db import DbSection, IbdiagDb, parse_db_csv
from fabricdoc.probes.ib.ibdiagnet_sections import (
    IbdiagNode,
    IbdiagPort,
    IbdiagRun,
    db_links,
    db_nodes,
    db_pm,
    db_ports,
    db_run,
    db_warnings,
)

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import IbCable, IbRoute, IbRoutes, ToolWarning, guid_id

__all__ = [
    "NODE_TYPES", "PHYS_STATES", "PORT_STATES", "WIDTH_LANES", "DbSection", "IbdiagDb", "IbdiagNode", "IbdiagPort",
    "IbdiagRun", "LstEnd", "LstLink", "NetDumpPort", "PmPort", "active_speed", "db_links", "db_nodes", "db_pm",
    "db_ports", "db_run", "db_warnings", "max_speed", "max_width", "parse_db_csv", "parse_ibdiagnet_cables",
    "parse_ibdiagnet_fdbs", "parse_ibdiagnet_lst", "parse_ibdiagnet_net_dump", "parse_ibdiagnet_pm",
]  # fmt: skip


# -- .lst -------------------------------------------------------------------------

_LST_END = re.compile(
    r"\{ (CA|SW|RT) Ports:([0-9a-fA-F]+) SystemGUID:([0-9a-fA-F]+) NodeGUID:([0-9a-fA-F]+) "
    r"PortGUID:([0-9a-fA-F]+) VenID:([0-9a-fA-F]+) DevID:([0-9a-fA-F]+) Rev:([0-9a-fA-F]+) \{(.*?)\} "
    r"LID:([0-9a-fA-F]+) PN:([0-9a-fA-F]+) \}"
)
_LST_TAIL = re.compile(r"^\s*PHY=(\d+)x LOG=(\w+) SPD=([\w.]+)\s*$")
_LST_TYPES = {"CA": "Ca", "SW": "Switch", "RT": "Rt"}
_LST_STATES = {"ACT": "Active", "INI": "Init", "ARM": "Armed", "DWN": "Down", "DOWN": "Down"}


@dataclass(frozen=True)
class LstEnd:
    """One end of a ``.lst`` link (numbers there are hex)."""

    type: str
    num_ports: int
    system_guid: str
    guid: str
    port_guid: str
    vendor_id: int
    device_id: int
    description: str
    lid: int
    port: int


@dataclass(frozen=True)
class LstLink:
    """One ``.lst`` line: both ends, the trained width, logical state and lane speed."""

    a: LstEnd
    b: LstEnd
    lanes: int
    state: str
    speed: str
    line_no: int


def parse_ibdiagnet_lst(text: str, source: str = "ibdiagnet2.lst") -> list[LstLink]:
    """Every link of ``ibdiagnet2.lst``."""
    out = []
    for no, raw in enumerate(whole_lines(text, source), 1):
        if not raw.strip() or raw.startswith("#"):
            continue
        ends = list(_LST_END.finditer(raw))
        tail = _LST_TAIL.match(raw[ends[-1].end():]) if len(ends) == 2 else None
        if tail is None or raw[: ends[0].start()].strip() or raw[ends[0].end(): ends[1].start()].strip():
            raise ParseError(source, no, raw, "not an ibdiagnet .lst link line '{ ... } { ... } PHY=.. LOG=.. SPD=..'")
        speed = _LANE_RATE_NAMES.get(tail.group(3))
        state = _LST_STATES.get(tail.group(2))
        if speed is None or state is None:
            raise ParseError(source, no, raw, f"unknown link state or speed {tail.group(2)}/{tail.group(3)}")
        a, b = (_lst_end(m, source, no, raw) for m in ends)
        out.append(LstLink(a, b, int(tail.group(1)), state, speed, no))
    return out


def _lst_end(m: re.Match[str], source: str, no: int, raw: str) -> LstEnd:
    nports = check_port_count(int(m.group(2), 16), source, no, raw)
    port = check_port(int(m.group(11), 16), source, no, raw, highest=nports)
    return LstEnd(_LST_TYPES[m.group(1)], nports, guid_id(m.group(3)), guid_id(m.group(4)),
                  guid_id(m.group(5)), int(m.group(6), 16), int(m.group(7), 16), m.group(9), int(m.group(10), 16),
                  port)


# -- .net_dump ----------------------------------------------------------------------

_NET_SWITCH = re.compile(r'^"(.*)", (\S+), (0x[0-9a-fA-F]+), LID (\d+)$')
_NET_STATES = {"ACT": "Active", "INI": "Init", "INIT": "Init", "ARM": "Armed", "DOWN": "Down", "DWN": "Down"}
_NET_PHYS = {"LINK UP": "LinkUp", "POLL": "Polling", "DISABLED": "Disabled", "SLEEP": "Sleep",
             "TRAINING": "PortConfigurationTraining", "LINK ERR": "LinkErrorRecovery"}


@dataclass(frozen=True)
class NetDumpPort:
    """One switch port row of ``ibdiagnet2.net_dump``."""

    switch_guid: str
    switch_description: str
    label: str
    port: int
    state: str
    phys_state: str | None
    lanes: int | None
    speed: str | None
    neighbor_guid: str | None
    neighbor_description: str
    line_no: int


def parse_ibdiagnet_net_dump(text: str, source: str = "ibdiagnet2.net_dump") -> list[NetDumpPort]:
    """Every switch port of ``ibdiagnet2.net_dump``, its columns found by the header's names."""
    out: list[NetDumpPort] = []
    switch: re.Match[str] | None = None
    columns: list[str] | None = None
    for no, raw in enumerate(whole_lines(text, source), 1):
        line = raw.strip()
        if not line or raw.startswith("#"):  # the indented column header starts with "#" too
            continue
        m = _NET_SWITCH.match(line)
        if m:
            switch, columns = m, None
            continue
        if switch is None:
            raise ParseError(source, no, raw, "a port row before any switch line")
        if columns is None:
            columns = [c.strip() for c in line.split(" : ")]
            if columns[:2] != ["#", "IB#"] or "Sta" not in columns or "PhysSta" not in columns:
                raise ParseError(source, no, raw, "expected the column header '# : IB# : Sta : PhysSta ...'")
            continue
        cells = [c.strip() for c in raw.split(" : ", len(columns) - 1)]
        if len(cells) != len(columns):
            raise ParseError(source, no, raw, f"{len(cells)} columns, the header has {len(columns)}")
        out.append(_net_port(switch, dict(zip(columns, cells, strict=True)), source, no, raw))
    return out


def _net_port(switch: re.Match[str], row: dict[str, str], source: str, no: int, raw: str) -> NetDumpPort:
    try:
        return _net_port_row(switch, row, source, no, raw)
    except ValueError as exc:  # a GUID or number that does not read (ParseError is not a ValueError)
        raise ParseError(source, no, raw[:120], f"not a net_dump port row: {exc}"[:200]) from None


def _net_port_row(switch: re.Match[str], row: dict[str, str], source: str, no: int, raw: str) -> NetDumpPort:
    state = _NET_STATES.get(row["Sta"])
    if state is None or not row["IB#"].isdigit():
        raise ParseError(source, no, raw, f"unknown port state {row['Sta']!r} or port {row['IB#']!r}")
    width = row.get("LWA", "")
    speed = row.get("LSA", "")
    neighbor = row.get("Neighbor Guid", "")
    return NetDumpPort(
        switch_guid=guid_id(switch.group(3)), switch_description=switch.group(1), label=row["#"],
        port=check_port(int(row["IB#"]), source, no, raw, lowest=0), state=state, phys_state=_NET_PHYS.get(row["PhysSta"]),
        lanes=int(width[:-1]) if width.endswith("x") and width[:-1].isdigit() else None,
        speed=_LANE_RATE_NAMES.get(speed), neighbor_guid=guid_id(neighbor) if neighbor.startswith("0x") else None,
        neighbor_description=row.get("Neighbor Description", "").strip('"'), line_no=no,
    )


# -- .pm ----------------------------------------------------------------------------

_PM_HEAD = re.compile(r"^Port=(\d+) Lid=(0x[0-9a-fA-F]+) GUID=(0x[0-9a-fA-F]+)(?: Device=(\d+))? Port Name=(.*)$")
_PM_VALUE = re.compile(r"^(\w+)=(-?0x[0-9a-fA-F]+|-?\d+|N/?A)$")


@dataclass(frozen=True)
class PmPort:
    """One ``.pm`` block: a port's counters under ibdiagnet's snake_case names."""

    guid: str
    port: int
    lid: int
    name: str
    values: dict[str, int | None]
    line_no: int


def parse_ibdiagnet_pm(text: str, source: str = "ibdiagnet2.pm") -> list[PmPort]:
    """Every port block of ``ibdiagnet2.pm``."""
    out: list[PmPort] = []
    for no, raw in enumerate(whole_lines(text, source), 1):
        line = raw.strip()
        if not line or line.startswith("#") or set(line) == {"-"}:
            continue
        m = _PM_HEAD.match(line)
        if m:
            port = check_port(int(m.group(1)), source, no, raw, lowest=0)
            out.append(PmPort(guid_id(m.group(3)), port, int(m.group(2), 16), m.group(5), {}, no))
            continue
        m = _PM_VALUE.match(line)
        if m is None or not out:
            raise ParseError(source, no, raw, "not a .pm 'Port=...' header or 'counter=value' line")
        out[-1].values[m.group(1)] = _int(m.group(2))  # the block's own dict, filled as it is read
    return out


# -- .fdbs --------------------------------------------------------------------------

_FDB_SWITCH = re.compile(r"^(?:osm_ucast_mgr_|__osm_ucast_mgr_)?dump_ucast_routes: Switch (0x[0-9a-fA-F]+)$")
_FDB_ENTRY = re.compile(r"^(0x[0-9a-fA-F]+)\s*:\s*(?:(\d+)\s*:\s*\d+\s*:\s*(?:yes|no)|UNREACHABLE)$")


def parse_ibdiagnet_fdbs(text: str, source: str = "ibdiagnet2.fdbs") -> IbRoutes:
    """Every switch's unicast LFT from ``ibdiagnet2.fdbs``.

    Written from the format's own writers (no real sample was found): ibdiagnet
    prints OpenSM's ``dump_ucast_routes`` layout, ``osm_ucast_mgr_dump_ucast_routes:
    Switch 0x<guid>``, an optional ``PLFT_NUM: n`` line, the ``LID : Port : Hops :
    Optimal`` header, then ``0x0002 : 003  : 00   : yes`` or ``0x0001 : UNREACHABLE``
    per LID (UNREACHABLE: no route, left out). Only PLFT 0 (the linear table) is
    a route table here; other private LFTs are refused.
    """
    routes: list[IbRoute] = []
    warnings: list[ToolWarning] = []
    cur: tuple[str, int, dict[int, int]] | None = None
    for no, raw in enumerate(whole_lines(text, source), 1):
        line = raw.strip()
        if not line or line.startswith("#") or line.startswith("LID"):
            continue
        warning = tool_warning(raw, source, no)
        if warning is not None:
            warnings.append(warning)
            continue
        m = _FDB_SWITCH.match(line)
        if m:
            if cur is not None:
                routes.append(_fdb_route(cur))
            cur = (guid_id(m.group(1)), no, {})
            continue
        if cur is None:
            raise ParseError(source, no, raw, "expected 'osm_ucast_mgr_dump_ucast_routes: Switch 0x...'")
        if line.startswith("PLFT_NUM:"):
            if line.split(":", 1)[1].strip() != "0":
                raise ParseError(source, no, raw, "a private LFT other than 0: not the switch's linear table")
            continue
        m = _FDB_ENTRY.match(line)
        if m is None:
            raise ParseError(source, no, raw, "not an fdbs entry '0xLID : port : hops : optimal'")
        if m.group(2) is not None:
            cur[2][int(m.group(1), 16)] = check_port(int(m.group(2)), source, no, raw, lowest=0)
    if cur is not None:
        routes.append(_fdb_route(cur))
    if not routes:
        raise ParseError(source, 0, "", "no switch in the fdbs file")
    return IbRoutes(tuple(routes), tuple(warnings))


def _fdb_route(cur: tuple[str, int, dict[int, int]]) -> IbRoute:
    guid, line_no, lft = cur
    own = min((lid for lid, port in lft.items() if port == 0), default=0)
    return IbRoute(guid, own, "", lft, {}, line_no)


# -- .cables ------------------------------------------------------------------------

_CABLE_HEAD = re.compile(r"^Port=(\d+) Lid=(0x[0-9a-fA-F]+) GUID=(0x[0-9a-fA-F]+) Port Name=(.*)$")
_CABLE_FIELD = re.compile(r"^([^:]+):\s*(.*)$")
_POWER = re.compile(r"^(-?\d+(?:\.\d+)?|-?inf|nan)\s*mW")


@dataclass
class _CableBlock:
    guid: str
    port: int
    line_no: int
    fields: dict[str, str] = field(default_factory=dict)


def parse_ibdiagnet_cables(text: str, source: str = "ibdiagnet2.cables") -> list[IbCable]:
    """Every cable block of ``ibdiagnet2.cables`` (``--get_cable_info``).

    A power of ``-999.999 mW`` (the module gives no reading) or ``inf`` is None.
    """
    blocks: list[_CableBlock] = []
    for no, raw in enumerate(whole_lines(text, source), 1):
        line = raw.strip()
        if not line or line.startswith("#") or set(line) == {"-"}:
            continue
        m = _CABLE_HEAD.match(line)
        if m:
            blocks.append(_CableBlock(guid_id(m.group(3)), check_port(int(m.group(1)), source, no, raw), no))
            continue
        f = _CABLE_FIELD.match(line)
        if f is None or not blocks:
            raise ParseError(source, no, raw, "not a cable 'Port=...' header or 'Key: value' line")
        blocks[-1].fields[f.group(1).strip()] = f.group(2).strip()
    return [_cable(b) for b in blocks]


def _cable(b: _CableBlock) -> IbCable:
    f = b.fields

    def text(key: str) -> str | None:
        value = f.get(key)
        return None if value is None or value in _NA else value

    temp = text("Temperature")
    return IbCable(
        node_guid=b.guid, port=b.port, vendor=text("Vendor"), part_number=text("PN"), serial=text("SN"),
        length=text("Length"),
        temperature_c=float(temp[:-1]) if temp and re.fullmatch(r"-?\d+(\.\d+)?C", temp) else None,
        rx_power_mw=_powers(f, "RX"), tx_power_mw=_powers(f, "TX"), fields=dict(f), line_no=b.line_no,
    )


def _powers(fields: dict[str, str], side: str) -> tuple[float | None, ...]:
    out: list[float | None] = []
    lane = 1
    while f"{side}{lane} Power" in fields:
        m = _POWER.match(fields[f"{side}{lane} Power"])
        value = float(m.group(1)) if m else None
        out.append(value if value is not None and math.isfinite(value) and value >= 0 else None)
        lane += 1
    return tuple(out)
