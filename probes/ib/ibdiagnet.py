"""Parse the files ``ibdiagnet`` (ibutils2) writes into its output directory, one parser per file.

- ``ibdiagnet2.db_csv``: ``START_<SECTION>`` / header / rows / ``END_<SECTION>``
  blocks; :func:`parse_db_csv` reads every section strictly (a row whose field
  count differs from its header is an error) and :func:`db_nodes`,
  :func:`db_ports`, :func:`db_links`, :func:`db_pm` and :func:`db_run` read the
  sections fabricdoc uses (NODES, PORTS, LINKS, PM_INFO, PM_DELTA, RUN_INFO).
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

import csv
import math
import re
from dataclasses import dataclass, field

from fabricdoc.probes.ib import check_port, check_port_count
from fabricdoc.probes.ib.common import tool_warning, whole_lines

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import IbCable, IbRoute, IbRoutes, ToolWarning, guid_id

# PortInfo codes as ibdiagnet prints them in PORTS (IBTA 14.2.5.6).
PORT_STATES = {1: "Down", 2: "Init", 3: "Armed", 4: "Active"}
PHYS_STATES = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp",
               6: "LinkErrorRecovery", 7: "PhyTest"}
WIDTH_LANES = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}
NODE_TYPES = {1: "Ca", 2: "Switch", 3: "Rt"}
# ibdiagnet's LinkSpeed* fields are 32 bits: byte 1 the IBTA speeds, byte 2 the extended
# speeds, byte 3 Mellanox's (FDR10) -- the comment above START_PORTS in the file says so.
_REGULAR = {1: "SDR", 2: "DDR", 4: "QDR"}
_EXTENDED = {1: "FDR", 2: "EDR", 4: "HDR", 8: "NDR", 16: "XDR"}
_MLNX = {1: "FDR10"}
# .lst / .net_dump print the data rate per lane in Gb/s.
_LANE_RATE_NAMES = {"2.5": "SDR", "5": "DDR", "10": "QDR", "14": "FDR", "25": "EDR", "50": "HDR",
                    "100": "NDR", "200": "XDR", "FDR10": "FDR10"}
_NA = {"N/A", "NA", ""}


def _int(text: str) -> int | None:
    """A number as ibdiagnet prints it (decimal or 0x-hex); its "not available" forms are None."""
    t = text.strip()
    if t in _NA or t == "-1" or t.lower() == "0xfffffffffffffffe":
        return None
    return int(t, 0)


# -- db_csv ----------------------------------------------------------------------


@dataclass(frozen=True)
class DbSection:
    """One ``START_X`` .. ``END_X`` block: its header and rows, each row with its line number."""

    name: str
    header: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]
    line_no: int

    def records(self) -> list[tuple[int, dict[str, str]]]:
        return [(no, dict(zip(self.header, row, strict=True))) for no, row in self.rows]


@dataclass(frozen=True)
class IbdiagDb:
    """Every section of one ``ibdiagnet2.db_csv``, by name."""

    source: str
    sections: dict[str, DbSection]

    def get(self, name: str) -> DbSection | None:
        return self.sections.get(name)


def parse_db_csv(text: str, source: str = "ibdiagnet2.db_csv") -> IbdiagDb:
    """Every section of ``ibdiagnet2.db_csv``; a section without its END, or a row with
    more or fewer fields than its header, is a ParseError naming the line."""
    lines = whole_lines(text, source)
    sections: dict[str, DbSection] = {}
    name: str | None = None
    start = 0
    header: tuple[str, ...] | None = None
    rows: list[tuple[int, tuple[str, ...]]] = []
    for no, raw in enumerate(lines, 1):
        if name is None:
            if not raw.strip() or raw.startswith("#"):
                continue
            if not raw.startswith("START_"):
                raise ParseError(source, no, raw, "outside a START_/END_ section")
            name, start, header, rows = raw.strip()[6:], no, None, []
            continue
        if raw.strip() == f"END_{name}":
            if header is None:
                raise ParseError(source, start, lines[start - 1], "section without a header line")
            if name in sections:
                raise ParseError(source, start, lines[start - 1], f"section {name} appears twice")
            sections[name] = DbSection(name, header, tuple(rows), start)
            name = None
            continue
        if not raw.strip():
            raise ParseError(source, no, raw, f"no END_{name} before this blank line: the section ends early")
        try:
            fields = tuple(f.strip() for f in next(csv.reader([raw])))
        except csv.Error as exc:
            raise ParseError(source, no, raw[:120], f"not a CSV row: {exc}") from None
        if header is None:
            header = fields
        elif len(fields) != len(header):
            raise ParseError(source, no, raw, f"{name} row has {len(fields)} fields, its header {len(header)}")
        else:
            rows.append((no, fields))
    if name is not None:
        raise ParseError(source, start, lines[start - 1], f"no END_{name}: the file ends early")
    return IbdiagDb(source, sections)


@dataclass(frozen=True)
class IbdiagNode:
    """A NODES row."""

    guid: str
    type: str  # "Switch", "Ca", "Rt"
    num_ports: int
    description: str
    system_guid: str
    port_guid: str
    device_id: int | None
    vendor_id: int | None
    line_no: int


@dataclass(frozen=True)
class IbdiagPort:
    """A PORTS row: PortInfo of one port, decoded."""

    node_guid: str
    port_guid: str
    port: int
    lid: int | None
    state: str | None  # None: PortState 0, what a base switch port 0 reports
    phys_state: str | None
    lanes: int | None
    speed: str | None
    max_lanes: int | None
    max_speed: str | None
    line_no: int
    # LinkWidthEnabled / LinkSpeedEnabled: the widest and fastest the port may train at (an admin
    # can enable less than it supports); None where PORTS has no such column or the port says nothing.
    enabled_lanes: int | None = None
    enabled_speed: str | None = None


@dataclass(frozen=True)
class IbdiagRun:
    """RUN_INFO: the tool versions, when it ran and with what arguments."""

    version: str
    date: str
    args: str


def _need(db: IbdiagDb, name: str, columns: tuple[str, ...]) -> DbSection | None:
    section = db.get(name)
    if section is None:
        return None
    missing = [c for c in columns if c not in section.header]
    if missing:
        raise ParseError(db.source, section.line_no + 1, ",".join(section.header)[:200],
                         f"{name} has no column {missing[0]}")
    return section


def _row_text(row: dict[str, str]) -> str:
    """A db_csv row as the file holds it (cut to 200 characters), for an error naming it."""
    return ",".join(row.values())[:200]


def _row_error(db: IbdiagDb, no: int, row: dict[str, str], exc: Exception) -> ParseError:
    """A row whose number or GUID does not read, as a ParseError naming the line."""
    return ParseError(db.source, no, _row_text(row), f"not a number or GUID where one belongs ({exc})")


def db_run(db: IbdiagDb) -> IbdiagRun | None:
    section = _need(db, "RUN_INFO", ("IBDIAGNET_Version", "Date", "Args"))
    if section is None or not section.rows:
        return None
    _, row = section.records()[0]
    return IbdiagRun(row["IBDIAGNET_Version"], row["Date"], row["Args"])


def db_nodes(db: IbdiagDb) -> list[IbdiagNode]:
    """NODES: every node ibdiagnet discovered."""
    cols = ("NodeDesc", "NumPorts", "NodeType", "SystemImageGUID", "NodeGUID", "PortGUID", "DeviceID", "VendorID")
    section = _need(db, "NODES", cols)
    out = []
    for no, r in section.records() if section else []:
        try:
            kind = NODE_TYPES.get(int(r["NodeType"]))
            nports = check_port_count(int(r["NumPorts"]), db.source, no, _row_text(r))
            node = IbdiagNode(guid_id(r["NodeGUID"]), kind or "", nports, r["NodeDesc"],
                              guid_id(r["SystemImageGUID"]), guid_id(r["PortGUID"]), _int(r["DeviceID"]),
                              _int(r["VendorID"]), no)
        except ValueError as exc:
            raise _row_error(db, no, r, exc) from None
        if kind is None:
            raise ParseError(db.source, no, ",".join(r.values())[:200], f"unknown NodeType {r['NodeType']}")
        out.append(node)
    return out


def db_ports(db: IbdiagDb) -> list[IbdiagPort]:
    """PORTS: state, physical state, active, supported and (``LinkWidthEn``/``LinkSpeedEn``, where the
    header has them) enabled width and speed of every port."""
    cols = ("NodeGuid", "PortGuid", "PortNum", "LID", "LinkWidthActv", "LinkWidthSup", "LinkSpeedActv",
            "LinkSpeedSup", "PortState", "PortPhyState")
    section = _need(db, "PORTS", cols)
    out = []
    for no, r in section.records() if section else []:
        try:
            out.append(_port_row(db, no, r))
        except ValueError as exc:
            raise _row_error(db, no, r, exc) from None
    return out


def _port_row(db: IbdiagDb, no: int, r: dict[str, str]) -> IbdiagPort:
    """One PORTS row decoded; a down port's other PortInfo fields are not meaningful (IBTA C14-24.2.1)."""
    code = _int(r["PortState"])
    state = PORT_STATES.get(code) if code else None  # 0: no state (a base switch port 0)
    if code and state is None:
        raise ParseError(db.source, no, ",".join(r.values())[:200], f"unknown PortState {r['PortState']}")
    up = state not in (None, "Down")
    return IbdiagPort(
        node_guid=guid_id(r["NodeGuid"]), port_guid=guid_id(r["PortGuid"]),
        port=check_port(int(r["PortNum"]), db.source, no, _row_text(r), lowest=0),
        lid=_int(r["LID"]), state=state, phys_state=PHYS_STATES.get(_int(r["PortPhyState"]) or 0),
        lanes=WIDTH_LANES.get(_int(r["LinkWidthActv"]) or 0) if up else None,
        speed=active_speed(_int(r["LinkSpeedActv"]) or 0) if up else None,
        max_lanes=max_width(_int(r["LinkWidthSup"]) or 0), max_speed=max_speed(_int(r["LinkSpeedSup"]) or 0),
        line_no=no,
        enabled_lanes=max_width(_int(r.get("LinkWidthEn", "")) or 0),
        enabled_speed=max_speed(_int(r.get("LinkSpeedEn", "")) or 0),
    )


def db_links(db: IbdiagDb) -> list[tuple[str, int, str, int, int]]:
    """LINKS: (node GUID, port, node GUID, port, line) for every cable ibdiagnet found up."""
    section = _need(db, "LINKS", ("NodeGuid1", "PortNum1", "NodeGuid2", "PortNum2"))
    out = []
    for no, r in section.records() if section else []:
        try:
            p1, p2 = (check_port(int(r[c]), db.source, no, _row_text(r)) for c in ("PortNum1", "PortNum2"))
            out.append((guid_id(r["NodeGuid1"]), p1, guid_id(r["NodeGuid2"]), p2, no))
        except ValueError as exc:
            raise _row_error(db, no, r, exc) from None
    return out


def db_pm(db: IbdiagDb, name: str = "PM_INFO") -> dict[tuple[str, int], tuple[int, dict[str, int | None]]]:
    """PM_INFO (the counters ibdiagnet read) or PM_DELTA (how much they moved between its two
    reads), per (node GUID, port): the line and every column as ibdiagnet names it."""
    section = _need(db, name, ("NodeGUID", "PortNumber"))
    out: dict[tuple[str, int], tuple[int, dict[str, int | None]]] = {}
    for no, r in section.records() if section else []:
        try:
            key = (guid_id(r["NodeGUID"]), check_port(int(r["PortNumber"]), db.source, no, _row_text(r), lowest=0))
        except ValueError as exc:
            raise _row_error(db, no, r, exc) from None
        values: dict[str, int | None] = {}
        for col, text in r.items():
            if col in ("NodeGUID", "PortGUID", "PortNumber"):
                continue
            try:
                values[col] = _int(text)
            except ValueError:
                raise ParseError(db.source, no, ",".join(r.values())[:200], f"{col} is not a number: {text!r}") from None
        out[key] = (no, values)
    return out


def db_warnings(db: IbdiagDb) -> dict[str, list[tuple[int, dict[str, str]]]]:
    """The WARNINGS_* and ERRORS_* sections (ibdiagnet's own checks), by section name."""
    return {name: s.records() for name, s in db.sections.items() if name.startswith(("WARNINGS_", "ERRORS_"))}


def active_speed(code: int) -> str | None:
    """The speed a LinkSpeedActv code names: the extended byte wins, then FDR10, then the IBTA byte."""
    ext, mlnx, regular = (code >> 8) & 0xFF, (code >> 16) & 0xFF, code & 0xFF
    if ext:
        return _EXTENDED.get(ext)
    if mlnx:
        return _MLNX.get(mlnx)
    return _REGULAR.get(regular)


def max_speed(code: int) -> str | None:
    """The fastest speed a LinkSpeedSup/En code allows (None for 0: nothing said)."""
    ext, mlnx, regular = (code >> 8) & 0xFF, (code >> 16) & 0xFF, code & 0xFF
    for byte, names in ((ext, _EXTENDED), (mlnx, _MLNX), (regular, _REGULAR)):
        bits = [bit for bit in names if byte & bit]
        if bits:
            return names[max(bits)]
    return None


def max_width(code: int) -> int | None:
    """The widest lane count a LinkWidthSup/En code allows (bits: 1x, 4x, 8x, 12x, 2x; None for 0)."""
    lanes = [n for bit, n in WIDTH_LANES.items() if code & bit]
    return max(lanes) if lanes else None


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
