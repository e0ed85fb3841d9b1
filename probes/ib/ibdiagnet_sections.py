"""The ``ibdiagnet2.db_csv`` sections fabricdoc uses, decoded: NODES, PORTS, LINKS,
PM_INFO / PM_DELTA, RUN_INFO, and ibdiagnet's own WARNINGS_* / ERRORS_*.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricdoc.probes.ib import check_port, check_port_count
from fabricdoc.probes.ib.ibdiagnet_codes import (
    NODE_TYPES,
    PHYS_STATES,
    PORT_STATES,
    WIDTH_LANES,
    _int,
    active_speed,
    max_speed,
    max_width,
)
from fabricdoc.probes.ib.ibdiagnet_db import DbSection, IbdiagDb

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import guid_id


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
