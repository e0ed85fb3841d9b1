"""ibdiagnet as an input: the fabric, link states, counters, cables and routes of one run's output directory.

``fabricdoc analyze --ibdiagnet DIR`` gives an InfiniBand admin fabricdoc's
verdict, impact and drain list from the ibdiagnet run they already do. What
each file contributes, and which wins when several say the same thing:

- **topology**: ``ibdiagnet2.db_csv`` NODES + PORTS + LINKS (every node, every
  port's LID and GUID, every cable), else ``ibdiagnet2.lst`` (the cables, both
  ends described). Host identity (``<host> <device>`` descriptions, the host
  map, aggregation nodes) is :func:`fabricdoc.fabric.identity.identify`'s.
- **link states**: PORTS (state, physical state, active, supported and enabled width
  and speed of every port), else ``.net_dump`` (switch ports), else ``.lst`` (the
  cables that are up). A link's maximum is what *both* ends support and have enabled
  (an admin-limited port is expected at its enabled width, not degraded).
- **counters**: PM_INFO (+ PM_DELTA), else ``ibdiagnet2.pm``. See below.
- **routes**: ``ibdiagnet2.fdbs`` when there, so paths follow the LFTs.
- **cables**: ``ibdiagnet2.cables`` onto the nodes' ``attrs["cables"]``.

Counters, honestly. ibdiagnet reads every port's counters, sleeps
``--pm_pause_time`` seconds (1 by default; its log says "Going to sleep for N
seconds until next counters sample"), reads them again and writes PM_INFO (the
counters as read) and PM_DELTA (second read minus first). PM_INFO is the second
read: the ``.pm`` file, which holds the same values, is created after the pause
(its "File created at" is a second after the run started, the first read was
before the sleep). So the first read is PM_INFO - PM_DELTA exactly, and fabricdoc
uses that pair as ``before``/``after`` with ``interval_s`` the pause: the rates
cover ibdiagnet's own pause (the pause is a lower bound of the time between
the two reads of one port, so rates are at most that much high). Nothing is
invented: without PM_DELTA, or without a known pause (no log, no
``--pm_pause_time`` in its arguments), there is one sample and no rates, and the
report says so. ``--pc`` (ibdiagnet clears the counters first) changes nothing
here: a delta is a delta. Counters are kept under their IBTA names
(``SymbolErrorCounter``...); PortCountersExtended values (``PortXmitDataExtended``,
the ``*Ext`` error counters) are used, 64 bits wide, where the device keeps
them (an ``Ext`` column at least its 32-bit twin), as ibqueryerrors
``--counters`` does. ``N/A``, ``-1`` and ``0xfffffffffffffffe`` are unknown (None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from fabricdoc.errors import ConfigError, ParseError
from fabricdoc.fabric import infiniband as ibfabric
from fabricdoc.fabric.hostmap import HostMap
from fabricdoc.fabric.identity import IdentityReport, identify
from fabricdoc.fabric.routes import apply_lfts
from fabricdoc.model.ib import IB_SPEEDS, IbNodeRecord, IbPortRecord, IbTopology
from fabricdoc.model.inputs import read_text
from fabricdoc.model.records import (
    Observations,
    PortCounters,
    PortRef,
    PortState,
    ProbeRun,
    ProbeStatus,
)
from fabricdoc.model.topology import Fabric
from fabricdoc.probes.ib import ibdiagnet as diag
from fabricdoc.probes.ib.common import check_register

SOURCE_PREFIX = "ibdiagnet "  # Fabric.source of a fabric read from a run: "ibdiagnet <directory>"
FILE_KINDS = ("db_csv", "lst", "net_dump", "pm", "fdbs", "cables", "log")
_PAUSE_LOG = re.compile(r"Going to sleep for (\d+(?:\.\d+)?) seconds until next counters sample")
_PAUSE_ARG = re.compile(r"--pm_pause_time[ =](\d+(?:\.\d+)?)")
_PM_SKIPPED = re.compile(r"--skip\s+\S*\bpm\b")

# IBTA counter name -> (PM_INFO column, its 64-bit PortCountersExtended column, .pm name, .pm extended name).
_PM_COLUMNS = {
    "SymbolErrorCounter": ("SymbolErrorCounter", "SymbolErrorCounterExt", "symbol_error_counter",
                           "symbol_error_counter_extended"),
    "LinkErrorRecoveryCounter": ("LinkErrorRecoveryCounter", "LinkErrorRecoveryCounterExt",
                                 "link_error_recovery_counter", "link_error_recovery_counter_extended"),
    "LinkDownedCounter": ("LinkDownedCounter", "LinkDownedCounterExt", "link_down_counter",
                          "link_downed_counter_extended"),
    "PortRcvErrors": ("PortRcvErrors", "PortRcvErrorsExt", "port_rcv_errors", "port_rcv_errors_extended"),
    "PortRcvRemotePhysicalErrors": ("PortRcvRemotePhysicalErrors", "PortRcvRemotePhysicalErrorsExt",
                                    "port_rcv_remote_physical_errors", "port_rcv_remote_physical_errors_extended"),
    "PortRcvSwitchRelayErrors": ("PortRcvSwitchRelayErrors", "PortRcvSwitchRelayErrorsExt",
                                 "port_rcv_switch_relay_errors", "port_rcv_switch_relay_errors_extended"),
    "PortXmitDiscards": ("PortXmitDiscards", "PortXmitDiscardsExt", "port_xmit_discard",
                         "port_xmit_discards_extended"),
    "PortXmitConstraintErrors": ("PortXmitConstraintErrors", "PortXmitConstraintErrorsExt",
                                 "port_xmit_constraint_errors", "port_xmit_constraint_errors_extended"),
    "PortRcvConstraintErrors": ("PortRcvConstraintErrors", "PortRcvConstraintErrorsExt",
                                "port_rcv_constraint_errors", "port_rcv_constraint_errors_extended"),
    "LocalLinkIntegrityErrors": ("LocalLinkIntegrityErrors", "LocalLinkIntegrityErrorsExt",
                                 "local_link_integrity_errors", "local_link_integrity_errors_extended"),
    "ExcessiveBufferOverrunErrors": ("ExcessiveBufferOverrunErrors", "ExcessiveBufferOverrunErrorsExt",
                                     "excessive_buffer_errors", "excessive_buffer_overrun_errors_extended"),
    "VL15Dropped": ("VL15Dropped", "VL15DroppedExt", "vl15_dropped", "vl15_dropped_extended"),
    "PortXmitWait": ("PortXmitWait", "PortXmitWaitExt", "port_xmit_wait", "port_xmit_wait_extended"),
    "PortXmitData": ("PortXmitData", "PortXmitDataExtended", "port_xmit_data", "port_xmit_data_extended"),
    "PortRcvData": ("PortRcvData", "PortRcvDataExtended", "port_rcv_data", "port_rcv_data_extended"),
    "PortXmitPkts": ("PortXmitPkts", "PortXmitPktsExtended", "port_xmit_pkts", "port_xmit_pkts_extended"),
    "PortRcvPkts": ("PortRcvPkts", "PortRcvPktsExtended", "port_rcv_pkts", "port_rcv_pkts_extended"),
    "PortUnicastXmitPkts": (None, "PortUniCastXmitPkts", None, "port_unicast_xmit_pkts"),
    "PortUnicastRcvPkts": (None, "PortUniCastRcvPkts", None, "port_unicast_rcv_pkts"),
    "PortMulticastXmitPkts": (None, "PortMultiCastXmitPkts", None, "port_multicast_xmit_pkts"),
    "PortMulticastRcvPkts": (None, "PortMultiCastRcvPkts", None, "port_multicast_rcv_pkts"),
}


@dataclass
class IbdiagnetRun:
    """One ibdiagnet output directory in fabricdoc's terms: the fabric, what was observed on it,
    the files used, and which HCAs could not be named."""

    fabric: Fabric
    observations: Observations
    files: dict[str, Path]
    identity: IdentityReport
    counters: str = "none"  # "delta" (two reads), "one sample", "none"
    notes: list[str] = field(default_factory=list)


def find_files(directory: str | Path) -> dict[str, Path]:
    """The ibdiagnet files of ``directory`` by kind (``db_csv``, ``lst``...): one of each at most."""
    d = Path(directory)
    if not d.is_dir():
        raise ConfigError(f"{d}: not a directory (give the ibdiagnet output directory, e.g. /var/tmp/ibdiagnet2)")
    found: dict[str, Path] = {}
    for kind in FILE_KINDS:
        matches = sorted(p for p in d.glob(f"*.{kind}") if p.is_file())
        if len(matches) > 1:
            raise ConfigError(f"{d}: {len(matches)} *.{kind} files ({matches[0].name}, {matches[1].name}): "
                              f"one ibdiagnet run per directory")
        if matches:
            found[kind] = matches[0]
    if "db_csv" not in found and "lst" not in found:
        raise ConfigError(f"{d}: no ibdiagnet2.db_csv or ibdiagnet2.lst: not an ibdiagnet output directory")
    return found


def read_ibdiagnet_dir(directory: str | Path, host_map: HostMap | None = None) -> IbdiagnetRun:
    """Read one ibdiagnet output directory into a Fabric and the Observations of that run."""
    files = find_files(directory)
    db = diag.parse_db_csv(read_text(files["db_csv"], "ibdiagnet db_csv"), str(files["db_csv"])) \
        if "db_csv" in files else None
    lst = diag.parse_ibdiagnet_lst(read_text(files["lst"], "ibdiagnet lst"), str(files["lst"])) \
        if "lst" in files else None
    ports = diag.db_ports(db) if db is not None else []
    if db is not None and diag.db_nodes(db):
        topo, topo_file = _topology_from_db(db, ports), files["db_csv"].name
    elif lst:
        topo, topo_file = _topology_from_lst(lst), files["lst"].name
    else:
        raise ConfigError(f"{directory}: neither NODES/LINKS in the db_csv nor a .lst: no topology to read")
    states, state_source = _states(ports, topo, files, lst)
    fabric = ibfabric.fabric_from_ib(topo, name=Path(directory).name, source=source_of(directory),
                                     port_states=states, host_map=host_map)
    probes: list[ProbeRun] = []
    notes = [f"topology from {topo_file}", f"link states from {state_source}"]
    if "fdbs" in files:
        probes += _routes(fabric, files["fdbs"])
        notes.append(f"routes from {files['fdbs'].name}")
    if "cables" in files:
        cables = diag.parse_ibdiagnet_cables(read_text(files["cables"], "ibdiagnet cables"), str(files["cables"]))
        notes.append(f"{ibfabric.attach_cables(fabric, cables)} cables from {files['cables'].name}")
    before, after, interval, mode, why = _counters(db, files)
    if why:
        probes.append(ProbeRun("ibdiagnet", str(directory), ProbeStatus.WARNING, 0.0, why))
    if db is not None:
        probes += _db_warnings(db)
    report = identify(fabric, host_map)
    probes += report.probe_runs(str(directory))
    obs = Observations(before=before, after=after, states=states, probes=probes, interval_s=interval,
                       extra={"ibdiagnet": {"directory": str(directory), "files": sorted(files),
                                            "counters": mode}})
    return IbdiagnetRun(fabric, obs, files, report, mode, notes)


def source_of(directory: str | Path) -> str:
    """The ``Fabric.source`` of a fabric read from the ibdiagnet run in ``directory``."""
    return f"{SOURCE_PREFIX}{directory}"


def portinfo_of(fabric: Fabric) -> list[diag.IbdiagPort]:
    """The PORTS rows (supported and enabled width and speed of every port) of the ibdiagnet run
    ``fabric`` was read from; empty when it was not read from one or the run has no db_csv PORTS."""
    if not fabric.source.startswith(SOURCE_PREFIX):
        return []
    files = find_files(fabric.source[len(SOURCE_PREFIX):])
    if "db_csv" not in files:
        return []
    return diag.db_ports(diag.parse_db_csv(read_text(files["db_csv"], "ibdiagnet db_csv"), str(files["db_csv"])))


# -- topology ------------------------------------------------------------------------


def _topology_from_db(db: diag.IbdiagDb, ports: list[diag.IbdiagPort]) -> IbTopology:
    nodes = {n.guid: n for n in diag.db_nodes(db)}
    by_port = {(p.node_guid, p.port): p for p in ports}
    peers: dict[tuple[str, int], tuple[str, int]] = {}
    for p in ports:
        if p.node_guid in nodes and p.port > nodes[p.node_guid].num_ports:
            raise ParseError(db.source, p.line_no, f"{p.node_guid},{p.port_guid},{p.port}",
                             f"PORTS row for port {p.port} of a {nodes[p.node_guid].num_ports}-port node")
    for g1, p1, g2, p2, no in diag.db_links(db):
        for guid, port in ((g1, p1), (g2, p2)):
            if guid not in nodes:
                raise ParseError(db.source, no, f"{g1},{p1},{g2},{p2}", f"LINKS names node {guid}, which NODES lacks")
            if port > nodes[guid].num_ports:
                raise ParseError(db.source, no, f"{g1},{p1},{g2},{p2}",
                                 f"LINKS names port {port} of {guid}, a {nodes[guid].num_ports}-port node")
        peers[(g1, p1)] = (g2, p2)
        peers[(g2, p2)] = (g1, p1)
    records = []
    for guid, n in nodes.items():
        own_lid = by_port.get((guid, 0)).lid if n.type == "Switch" and (guid, 0) in by_port else None
        linked = sorted(port for (g, port) in peers if g == guid)
        records.append(IbNodeRecord(
            n.type, guid, n.num_ports, n.description, own_lid,
            tuple(_db_port(n, port, peers[(guid, port)], nodes, by_port) for port in linked),
            n.line_no, system_guid=n.system_guid, device_id=n.device_id, vendor_id=n.vendor_id,
        ))
    return IbTopology(tuple(records))


def _lid_of(guid: str, port: int, nodes: dict[str, diag.IbdiagNode], by_port: dict) -> int | None:
    """The LID a port answers on: a switch's port 0 LID, a CA port's own."""
    at = by_port.get((guid, 0 if nodes[guid].type == "Switch" else port))
    return at.lid if at is not None else None


def _db_port(n: diag.IbdiagNode, port: int, peer: tuple[str, int], nodes: dict, by_port: dict) -> IbPortRecord:
    info = by_port.get((n.guid, port))
    remote = nodes[peer[0]]
    remote_info = by_port.get(peer)
    return IbPortRecord(
        port=port, remote_guid=peer[0], remote_port=peer[1], remote_description=remote.description,
        lanes=info.lanes if info else None, lane_gbps=IB_SPEEDS.get(info.speed or "") if info else None,
        speed=info.speed if info else None,
        port_guid=info.port_guid if info is not None and n.type != "Switch" else None,
        remote_port_guid=remote_info.port_guid if remote_info is not None and remote.type != "Switch" else None,
        lid=_lid_of(n.guid, port, nodes, by_port), remote_lid=_lid_of(peer[0], peer[1], nodes, by_port),
    )


def _topology_from_lst(links: list[diag.LstLink]) -> IbTopology:
    ends: dict[str, diag.LstEnd] = {}
    ports: dict[str, list[IbPortRecord]] = {}
    first: dict[str, int] = {}
    for link in links:
        for here, there in ((link.a, link.b), (link.b, link.a)):
            ends.setdefault(here.guid, here)
            first.setdefault(here.guid, link.line_no)
            ports.setdefault(here.guid, []).append(IbPortRecord(
                port=here.port, remote_guid=there.guid, remote_port=there.port, remote_description=there.description,
                lanes=link.lanes, lane_gbps=IB_SPEEDS[link.speed], speed=link.speed,
                port_guid=here.port_guid if here.type != "Switch" else None,
                remote_port_guid=there.port_guid if there.type != "Switch" else None,
                lid=here.lid, remote_lid=there.lid,
            ))
    records = tuple(
        IbNodeRecord(e.type, guid, e.num_ports, e.description, e.lid if e.type == "Switch" else None,
                     tuple(sorted(ports[guid], key=lambda p: p.port)), first[guid], system_guid=e.system_guid,
                     device_id=e.device_id, vendor_id=e.vendor_id)
        for guid, e in ends.items()
    )
    return IbTopology(records)


# -- link states ---------------------------------------------------------------------


def _states(ports: list[diag.IbdiagPort], topo: IbTopology, files: dict[str, Path],
            lst: list[diag.LstLink] | None) -> tuple[list[PortState], str]:
    peers = {(n.guid, p.port): (p.remote_guid, p.remote_port) for n in topo.nodes for p in n.ports}
    if ports:
        return _states_from_ports(ports, peers), "PORTS"
    if "net_dump" in files:
        rows = diag.parse_ibdiagnet_net_dump(read_text(files["net_dump"], "ibdiagnet net_dump"), str(files["net_dump"]))
        return [PortState(r.switch_guid, r.port, r.state, r.phys_state, r.lanes,
                          IB_SPEEDS.get(r.speed or ""), peer=_peer(peers, r.switch_guid, r.port),
                          source="ibdiagnet net_dump") for r in rows], files["net_dump"].name
    out = []
    for link in lst or []:
        for here, there in ((link.a, link.b), (link.b, link.a)):
            out.append(PortState(here.guid, here.port, link.state, None, link.lanes, IB_SPEEDS[link.speed],
                                 peer=PortRef(there.guid, there.port), source="ibdiagnet lst"))
    return out, "lst"


def _peer(peers: dict, guid: str, port: int) -> PortRef | None:
    far = peers.get((guid, port))
    return PortRef(*far) if far else None


def _states_from_ports(ports: list[diag.IbdiagPort], peers: dict) -> list[PortState]:
    """One PortState per port with a state (port 0 of a switch has none); a link's maximum is the
    smaller of the two ends' min(supported, enabled) width and speed
    (:func:`fabricdoc.fabric.infiniband.expect_from_ports`, which says which set it)."""
    by_port = {(p.node_guid, p.port): p for p in ports}
    out = []
    for p in ports:
        if p.state is None or p.port == 0:
            continue
        far = peers.get((p.node_guid, p.port))
        other = by_port.get(far) if far else None
        ends = (p, other) if other is not None else (p,)
        max_lanes = _smaller(*(v for e in ends for v in (e.max_lanes, e.enabled_lanes)))
        max_gbps = _smaller(*(IB_SPEEDS.get(v or "") for e in ends for v in (e.max_speed, e.enabled_speed)))
        up = p.state != "Down"
        out.append(PortState(
            node=p.node_guid, port=p.port, state=p.state, phys_state=p.phys_state, lanes=p.lanes,
            lane_gbps=IB_SPEEDS.get(p.speed or ""), max_lanes=max_lanes if up else None,
            max_lane_gbps=max_gbps if up else None, peer=PortRef(*far) if far else None, source="ibdiagnet",
        ))
    return ibfabric.expect_from_ports(out, ports)


def _smaller(*values: float | None) -> float | None:
    known = [v for v in values if v]
    return min(known) if known else None


# -- counters ------------------------------------------------------------------------


def _counters(db: diag.IbdiagDb | None, files: dict[str, Path],
              ) -> tuple[list[PortCounters], list[PortCounters], float | None, str, str | None]:
    """(before, after, interval_s, mode, why there are no rates) from PM_INFO/PM_DELTA, else the .pm file."""
    run = diag.db_run(db) if db is not None else None
    stamp = _epoch(run.date) if run is not None else None
    info = diag.db_pm(db, "PM_INFO") if db is not None else {}
    if info:
        delta = diag.db_pm(db, "PM_DELTA")
        pause = _pause(run.args if run else "", files)
        after = [_sample(db.source, guid, port, no, vals, "db", stamp, pause) for (guid, port), (no, vals)
                 in info.items()]
        if not delta:
            return [], after, None, "one sample", ("ibdiagnet PM: PM_INFO without PM_DELTA: one counter sample, "
                                                   "no rates (keep the PM_DELTA section)")
        if pause is None:
            return [], after, None, "one sample", ("ibdiagnet PM: the pause between its two counter reads is not "
                                                   "known (no ibdiagnet2.log, no --pm_pause_time): no rates")
        before = [_first_read(a, delta.get((a.node, a.port)), db.source, pause) for a in after]
        before = [b for b in before if b is not None]
        return before, after, pause, "delta", None
    if "pm" in files:
        blocks = diag.parse_ibdiagnet_pm(read_text(files["pm"], "ibdiagnet pm"), str(files["pm"]))
        after = [_sample(str(files["pm"]), b.guid, b.port, b.line_no, b.values, "pm", stamp, None) for b in blocks]
        return [], after, None, "one sample", (f"ibdiagnet PM: only {files['pm'].name}, one counter sample: no "
                                               f"rates (the db_csv PM_DELTA section gives them)")
    skipped = run is not None and _PM_SKIPPED.search(run.args)
    why = "ibdiagnet ran with --skip pm: no counters" if skipped else "ibdiagnet output has no counters (no PM_INFO, no .pm)"
    return [], [], None, "none", why


def _pause(args: str, files: dict[str, Path]) -> float | None:
    m = _PAUSE_ARG.search(args)
    if m:
        return float(m.group(1))
    if "log" in files:
        m = _PAUSE_LOG.search(read_text(files["log"], "ibdiagnet log"))
        if m:
            return float(m.group(1))
    return None


def _epoch(date: str) -> float | None:
    """RUN_INFO's "2025-03-31 23:43:18 UTC +0000" as epoch seconds."""
    try:
        return datetime.strptime(date.replace(" UTC", ""), "%Y-%m-%d %H:%M:%S %z").timestamp()
    except ValueError:
        return None


def _sample(source: str, guid: str, port: int, line_no: int, raw: dict[str, int | None], names: str,
            stamp: float | None, pause: float | None) -> PortCounters:
    """One port's counters under IBTA names: the 64-bit Extended value where the device keeps it."""
    values: dict[str, int | None] = {}
    widths: dict[str, int] = {}
    for name, (base, ext, pm_base, pm_ext) in _PM_COLUMNS.items():
        b, e = (base, ext) if names == "db" else (pm_base, pm_ext)
        low = raw.get(b) if b else None
        high = raw.get(e) if e else None
        if high is not None and (low is None or high >= low):
            values[name], widths[name] = high, 64
        else:
            values[name] = low
        if values[name] is not None:
            check_register(name, values[name], widths.get(name), source, line_no, f"{guid} port {port}")
    ts = (stamp or 0.0) + (pause or 0.0)
    return PortCounters(guid, port, ts, values, source="ibdiagnet", width_bits=widths)


def _first_read(after: PortCounters, delta: tuple[int, dict[str, int | None]] | None, source: str,
                pause: float) -> PortCounters | None:
    """The first of ibdiagnet's two reads: PM_INFO (the second) minus PM_DELTA, column by column."""
    if delta is None:
        return None
    no, moved = delta
    values: dict[str, int | None] = {}
    for name, value in after.values.items():
        base, ext = _PM_COLUMNS[name][:2]
        col = ext if after.width_bits.get(name) == 64 else base
        d = moved.get(col) if col else None
        if value is None or d is None:
            values[name] = None
            continue
        if d < 0 or d > value:
            raise ParseError(source, no, f"{after.node} port {after.port}",
                             f"PM_DELTA {col} = {d} does not fit PM_INFO's {value}")
        values[name] = value - d
    return PortCounters(after.node, after.port, after.timestamp - pause, values, source="ibdiagnet",
                        width_bits=dict(after.width_bits))


# -- routes and ibdiagnet's own checks ------------------------------------------------


def _routes(fabric: Fabric, path: Path) -> list[ProbeRun]:
    routes = diag.parse_ibdiagnet_fdbs(read_text(path, "ibdiagnet fdbs"), str(path))
    for route in routes.routes:
        if route.switch_guid not in fabric.nodes:
            raise ParseError(str(path), route.line_no, "", f"switch {route.switch_guid} is not in the fabric")
    apply_lfts(fabric, routes.routes, source=str(path))
    return [ProbeRun("ibdiagnet fdbs", str(path), ProbeStatus.WARNING, 0.0, str(w)) for w in routes.warnings]


def _db_warnings(db: diag.IbdiagDb) -> list[ProbeRun]:
    """One warning probe run per ibdiagnet WARNINGS_*/ERRORS_* section that has rows (its own checks)."""
    out = []
    for name, rows in diag.db_warnings(db).items():
        if not rows:
            continue
        no, first = rows[0]
        out.append(ProbeRun("ibdiagnet", f"{db.source}:{no}", ProbeStatus.WARNING, 0.0,
                            f"{name}: {len(rows)} rows (first: {first.get('EventName', '')} "
                            f"{first.get('Summary', '')})".strip()))
    return out
