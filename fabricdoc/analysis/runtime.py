"""A job's own NCCL signals as evidence: failed connections for tomography, transports for host checks.

:func:`observations_from_nccl_debug` turns parsed NCCL_DEBUG logs
(:mod:`fabricdoc.sources.nccl_debug`) into what localization already judges:

* every failed work completion (``Got completion from peer ... status=12``) is one
  :class:`PairResult` between the two host NIC ports with status ``hung`` and test
  ``nccl-debug``, and every inter-host connection NCCL set up that no error names is a passing
  one. A reliable connection fails when its data path or its acknowledgements' path crosses a
  broken cable, and carried traffic over both when it worked, so the test is bidirectional
  (:data:`fabricdoc.model.paths.BIDIRECTIONAL_TESTS`): tomography blames the cables the failing
  connections' two paths share and clears those of working ones, exactly as for slow bandwidth
  tests (a fabric cable first where a host's own cable explains the same failures). A job that
  died early has few passing connections, so the suspect may stay shared with its equally likely
  neighbours (the report says so).
* every inter-host connection's transport is a :class:`TransportUse`;
* every other line that says the network failed (a NIC's async event, a completion error whose
  ends cannot be told, another network WARN line) is a :class:`NetErrorLine`, on the NIC port
  when the line or the host tells it.

Which NIC ports a connection used, by the first rule that applies: an InfiniBand GID
(``fe80::<port GUID>``) names the port itself; else the HCA NCCL names (``hca mlx5_1``, or
NCCL's device ``NET/IB/<d>`` through that process's ``NET/IB : Using [d]mlx5_1:1``) on the
line's host, matched to the fabric's ``<host> mlx5_1`` node; the peer's host comes from the
rank table (``ncclCommInitRank ... rank R nranks N``) or its address (``Bootstrap``/``OOB``
lines), its device from its own matching ``[receive]`` line, else NCCL's device of the same
index (rings connect NIC d to NIC d unless NCCL_CROSS_NIC), else its only port. A connection
whose ends cannot be told is not guessed: it is counted in a ``warning`` probe record.

:func:`runtime_findings` makes ``host_config`` findings (kind ``host``) from the transports: a
host whose inter-host traffic went over ``NET/Socket`` (TCP) is an error, one whose IB/RoCE
connections ran without GPUDirect RDMA (no ``/GDRDMA``; every NCCL rank is a GPU) a warning;
neither is a fabric fault. It also adds the failing log lines to the cable findings they explain,
makes a failed connection nothing explains a warning (``nccl_error``), and turns the error lines into
findings: a ``local catastrophic error`` is the NIC's (``nic_firmware``, error), every other one an
``nccl_error`` warning on the NIC or host. A log that holds an error line is never ``pass``.
"""

from __future__ import annotations

import contextlib
import ipaddress
import re
from collections import defaultdict

from fabricdoc.errors import TopologyError
from fabricdoc.fabric.identity import host_nodes
from fabricdoc.model.evidence import NcclLogEvidence, SlowPairsEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.ib import guid_id
from fabricdoc.model.records import (
    NetErrorLine,
    Observations,
    PairResult,
    PortRef,
    ProbeRun,
    TransportUse,
)
from fabricdoc.model.severity import Severity
from fabricdoc.model.topology import Fabric
from fabricdoc.sources.nccl_debug import (
    Connection,
    NcclDebugLog,
    NetError,
    NicEvent,
    parse_nccl_debug,
)

TEST = "nccl-debug"
_WHERE = re.compile(r"^(.*?):(\d+): (.*)$")
SOCKET_REASON = "inter-host traffic over TCP sockets (NET/Socket), not RDMA"
NO_GDR_REASON = "IB/RoCE without GPUDirect RDMA: GPU data staged through host memory"


class _Job:
    """The facts of all logs of one job, indexed for mapping connections onto NIC ports."""

    def __init__(self, fabric: Fabric, logs: list[NcclDebugLog]) -> None:
        self.fabric = fabric
        ranks: dict[tuple[int, int], set[str]] = defaultdict(set)
        self.devices: dict[tuple[str, int], dict[int, tuple[str, int | None]]] = {}
        by_host: dict[str, dict[int, tuple[str, int | None]]] = {}
        self.addresses: dict[str, str] = {}
        self.connections: list[Connection] = []
        for log in logs:
            for r in log.ranks:
                ranks[(r.nranks, r.rank)].add(r.host)
            for n in log.nets:
                if n.net == "IB":
                    devs = {i: (name, port) for i, (name, port, _) in n.devices.items()}
                    self.devices[(n.host, n.pid)] = devs
                    by_host.setdefault(n.host, devs)
            for ip, (host, _) in log.addresses.items():
                self.addresses.setdefault(ip, host)
            self.connections += log.connections
        # A rank names one host only when every communicator of that size agrees (sub-communicators
        # of the same size with other placements make it ambiguous: then it names none).
        self.rank_host = {k: next(iter(v)) for k, v in ranks.items() if len(v) == 1}
        self.nranks = {n for n, _ in self.rank_host}
        self.host_devices = by_host
        self.by_guid: dict[str, PortRef] = {}
        # A GID carries the *port* GUID (on ibnetdiscover fabrics often the node GUID + 1, which may be
        # another HCA's node GUID): port GUIDs first; a node GUID names a port only on a node of one
        # port whose port GUIDs the fabric does not know.
        guessed: dict[str, PortRef] = {}
        for node in fabric.hosts():
            ports = fabric.host_ports(node.id)
            port_guids = node.attrs.get("port_guids") or {}
            for p in ports:
                if p.port in port_guids:
                    with contextlib.suppress(ValueError):
                        self.by_guid[guid_id(str(port_guids[p.port]))] = p
            if node.guid and len(ports) == 1 and not port_guids:
                with contextlib.suppress(ValueError):
                    guessed[guid_id(node.guid)] = ports[0]
        for guid, p in guessed.items():
            self.by_guid.setdefault(guid, p)

    def peer_host(self, rank: int) -> str | None:
        hosts = {self.rank_host[(n, rank)] for n in self.nranks if (n, rank) in self.rank_host}
        return next(iter(hosts)) if len(hosts) == 1 else None

    def nic(self, host: str, name: str, port: int | None) -> PortRef | None:
        """The fabric port of ``host``'s HCA ``name`` (its label ``<host> <name>``), or its only port."""
        nodes = host_nodes(self.fabric, host)
        for nid in nodes:
            words = self.fabric.label(nid).split()
            ports = self.fabric.host_ports(nid)
            if len(words) > 1 and words[1] == name and ports:
                return next((p for p in ports if p.port == port), ports[0])
        if len(nodes) == 1 and port is not None and len(self.fabric.label(nodes[0]).split()) == 1:
            # One node of several ports named only by its host: NCCL's ``mlx5_1:2`` is its port 2.
            found = [p for p in self.fabric.host_ports(nodes[0]) if p.port == port]
            if len(found) == 1:
                return found[0]
        return self.only_port(host)  # a host of one NIC port: whatever NCCL calls it

    def only_port(self, host: str) -> PortRef | None:
        ports = [p for nid in host_nodes(self.fabric, host) for p in self.fabric.host_ports(nid)]
        return ports[0] if len(ports) == 1 else None

    def device_port(self, host: str, pid: int | None, dev: int | None) -> PortRef | None:
        if dev is None:
            return None
        devs = self.devices.get((host, pid)) if pid is not None else None
        devs = devs or self.host_devices.get(host) or {}
        if dev in devs:
            return self.nic(host, *devs[dev])
        return self.only_port(host)

    def gid_port(self, gid: str | None) -> PortRef | None:
        """The port an InfiniBand GID (``fe80::`` subnet prefix + port GUID) names, if in the fabric; also
        an IPoIB link-local peer address (``fe80::966d:ae03:8b:df78%ib0``: the GUID with its
        universal/local bit flipped, as IPv6 forms interface ids)."""
        if not gid:
            return None
        try:
            addr = ipaddress.IPv6Address(gid.split("%", 1)[0])
        except ValueError:
            return None
        if addr.ipv4_mapped is not None or not gid.lower().startswith("fe80:"):
            return None  # RoCE GIDs carry an IP address, not a port GUID
        low = int(addr) & ((1 << 64) - 1)
        for guid in (low, low ^ (0x02 << 56)) if "%" in gid else (low,):
            if (port := self.by_guid.get(f"0x{guid:016x}")) is not None:
                return port
        return None


def _net_devs(job: _Job, host: str, pid: int) -> set[int]:
    return {c.net_dev for c in job.connections
            if c.host == host and c.pid == pid and c.is_net and c.net_dev is not None}  # fmt: skip


def _error_ports(job: _Job, err: NetError) -> tuple[PortRef | None, PortRef | None, str]:
    """The local and remote NIC ports of a failed completion, and what could not be told."""
    local = job.gid_port(err.local_gid)
    if local is None and err.hca:
        local = job.nic(err.host, err.hca, None)
    dev = None
    if local is None:
        devs = _net_devs(job, err.host, err.pid)
        dev = next(iter(devs)) if len(devs) == 1 else None
        local = job.device_port(err.host, err.pid, dev) if dev is not None else job.only_port(err.host)
    remote = job.gid_port(err.remote_gid) or job.gid_port(err.peer_ip)
    peer = job.addresses.get(err.peer_ip)
    if remote is None and peer is not None:
        remote = job.device_port(peer, None, dev) if dev is not None else job.only_port(peer)
    if local is None:
        return None, remote, f"which NIC of {err.host!r} failed cannot be told"
    if remote is None:
        who = f"peer {err.peer_ip} ({peer})" if peer else f"peer {err.peer_ip} (no Bootstrap/OOB line names its host)"
        return local, None, f"which NIC of {who} cannot be told"
    return local, remote, ""


def _connection_ports(job: _Job, c: Connection, receivers: dict[tuple, Connection]) -> tuple[PortRef, PortRef] | None:
    peer = job.peer_host(c.peer_rank)
    if peer is None or peer == c.host:
        return None
    local = job.device_port(c.host, c.pid, c.net_dev)
    match = receivers.get((c.channel, c.src_rank, c.dst_rank, peer))
    remote = job.device_port(peer, match.pid, match.net_dev) if match else job.device_port(peer, None, c.net_dev)
    if local is None or remote is None:
        return None
    return local, remote


def _event_kind(ev: NicEvent) -> str:
    if ev.catastrophic:
        return "catastrophic"
    if ev.qp is not None:
        return "qp_fatal"
    return "port_error" if ev.event.startswith("port error") else "event"


EVENT_REASONS = {
    "catastrophic": "the NIC reported a fatal device error (local catastrophic error): it stopped working",
    "port_error": "the NIC port's link went down during the job (port error)",
    "qp_fatal": "a queue pair failed on this NIC",
    "event": "the NIC reported an error event",
}


def _event_reason(ev: NicEvent) -> str:
    where = f" on {ev.qp}" if ev.qp else ""
    return f"{EVENT_REASONS[_event_kind(ev)]}: {ev.event}{where}"


def _error_line(fabric: Fabric, host: str, kind: str, reason: str, at, port: PortRef | None) -> NetErrorLine:
    nodes = host_nodes(fabric, host)
    node = port.node if port is not None else (nodes[0] if len(nodes) == 1 else None)
    return NetErrorLine(host, kind, reason, at.source, at.line_no, at.line[:400], node, port)


def observations_from_nccl_debug(fabric: Fabric, logs: list[NcclDebugLog]) -> Observations:
    """Failed and working inter-host connections as pair results, transports as records (module docstring)."""
    job = _Job(fabric, logs)
    obs = Observations()
    failed: dict[frozenset, PairResult] = {}
    unmapped: list[str] = []
    for log in logs:
        for err in log.errors:
            local, remote, why = _error_ports(job, err)
            if local is None or remote is None:
                unmapped.append(f"{err.at.source}:{err.at.line_no}: {why}")
                obs.net_errors.append(_error_line(fabric, err.host, "completion", f"connection failed: {err.reason}; "
                                                  f"{why}", err.at, local or job.only_port(err.host)))
                continue
            key = frozenset((local, remote))
            if key not in failed:
                failed[key] = PairResult(src=local, dst=remote, status="hung", busbw_gbps=None, test=TEST,
                                         error=f"{err.at.source}:{err.at.line_no}: {err.at.line}")
    receivers = {(c.channel, c.src_rank, c.dst_rank, c.host): c for c in job.connections
                 if c.is_net and c.direction == "receive"}  # fmt: skip
    passed: dict[frozenset, PairResult] = {}
    skipped = 0
    seen_use: set[tuple] = set()
    for c in job.connections:
        if not c.is_net:
            continue
        peer = job.peer_host(c.peer_rank)
        use = (c.host, peer, c.transport, c.gdr)
        if use not in seen_use:
            seen_use.add(use)
            obs.transports.append(TransportUse(c.host, peer, c.transport, c.gdr, c.at.source, c.at.line_no, c.at.line))
        if c.direction != "send" or not c.transport.startswith("NET/IB"):
            continue  # a TCP socket connection crossed the Ethernet, not the fabric's cables
        ends = _connection_ports(job, c, receivers)
        if ends is None:
            skipped += 1
            continue
        key = frozenset(ends)
        if key not in failed and key not in passed:
            passed[key] = PairResult(src=ends[0], dst=ends[1], status="ok", busbw_gbps=None, test=TEST)
    for log in logs:
        for ev in log.nic_events:
            port = job.nic(ev.host, ev.device, ev.port) if ev.device else job.only_port(ev.host)
            obs.net_errors.append(_error_line(fabric, ev.host, _event_kind(ev), _event_reason(ev), ev.at, port))
        for w in log.net_warnings:
            obs.net_errors.append(_error_line(fabric, w.host, "warning", "NCCL warned of a network failure", w.at,
                                              job.only_port(w.host)))
        for host, hca, at in log.gdr_disabled:
            obs.transports.append(TransportUse(host, None, f"NET/IB ({hca})", False, at.source, at.line_no, at.line))
        for host, at in log.no_ib:
            obs.transports.append(TransportUse(host, None, "NET/Socket", False, at.source, at.line_no, at.line))
        for host, network, at in log.networks:
            if network.lower() == "socket":
                obs.transports.append(TransportUse(host, None, "NET/Socket", False, at.source, at.line_no, at.line))
    obs.pairs = list(failed.values()) + list(passed.values())
    for log in logs:
        notes = []
        if log.garbled:
            notes.append(f"{len(log.garbled)} garbled lines skipped (first at line {log.garbled[0]})")
        if log.watchdogs:
            w = log.watchdogs[0]
            notes.append(f"{len(log.watchdogs)} watchdog timeouts (rank {w.rank} {w.op} seq {w.seq}, line "
                         f"{w.at.line_no}): a timeout names no connection")
        mine = [u for u in unmapped if u.startswith(f"{log.source}:")]
        if mine:
            notes.append(f"{len(mine)} failed connections not mapped to NIC ports ({mine[0]})")
        status = "warning" if notes else "ok"
        obs.probes.append(ProbeRun(TEST, log.source, status, 0.0, "; ".join(notes) or None))
    if skipped:
        obs.probes.append(ProbeRun(TEST, "connections", "warning", 0.0, f"{skipped} inter-host connections whose "
                                   "NIC ports cannot be told (peer rank's host or device not in the logs)"))  # fmt: skip
    obs.extra["nccl_debug"] = len(logs)
    # Which host an address is (Bootstrap/OOB lines): NCCL RAS names hosts by address.
    obs.extra["nccl_addresses"] = dict(job.addresses)
    return obs


def _evidence(line: str, source: str, line_no: int, host: str, reason: str) -> NcclLogEvidence:
    return NcclLogEvidence(source, line_no, line[:400], host, reason)


def _host_config(fabric: Fabric, transports: list[TransportUse]) -> list[Finding]:
    by_host: dict[str, list[tuple[Severity, TransportUse, str]]] = defaultdict(list)
    for t in transports:
        if t.transport == "NET/Socket":
            by_host[t.host].append((Severity.ERROR, t, SOCKET_REASON))
        elif t.transport.startswith("NET/") and not t.gdr:
            by_host[t.host].append((Severity.WARNING, t, NO_GDR_REASON))
    out = []
    for host, items in by_host.items():
        severity = Severity.ERROR if any(s == Severity.ERROR for s, _, _ in items) else Severity.WARNING
        evidence = []
        for reason in (SOCKET_REASON, NO_GDR_REASON):
            for _, t, _ in [i for i in items if i[2] == reason][:3]:
                peer = f" (to {t.peer})" if t.peer else ""
                evidence.append(_evidence(t.line, t.source, t.line_no, host, reason + peer))
        nodes = host_nodes(fabric, host) or [host]
        out.append(Finding("", "host", host, "host_config", severity, 0.9, evidence, None, nodes))  # type: ignore[arg-type]
    return out


def _crosses(fabric: Fabric, p: PairResult, ends: set[tuple[str, int]]) -> bool:
    """Whether a connection's data path or its acknowledgements' path crosses the cable with ``ends``."""
    try:
        paths = (fabric.path(p.src, p.dst), fabric.path(p.dst, p.src))
    except TopologyError:
        return False
    return any({tuple(k.a), tuple(k.b)} == ends for path in paths for k in path)


def _log_lines_on(fabric: Fabric, f: Finding, failing: list[PairResult]) -> list[NcclLogEvidence]:
    if f.kind not in ("link", "nic", "port") or len(f.node_ids) != 2 or not f.endpoints:
        return []
    ends = {(nid, int(port)) for nid, (_, port) in zip(f.node_ids, f.endpoints, strict=True)}
    out = []
    for p in failing:
        ev = _line_evidence(fabric, p) if _crosses(fabric, p, ends) else None
        if ev is not None:
            out.append(ev)
            if len(out) >= 5:
                break
    return out


NCCL_ERROR = "nccl_error"  # the fault NCCL RAS gives an error on a host's rank, too


def _unexplained_failures(fabric: Fabric, findings: list[Finding], failing: list[PairResult]) -> None:
    """A failed connection that no named part explains is said as a warning, never an ``info`` footnote:
    the job's own log says the network failed there. Tomography's ``slow_unexplained`` finding for it
    becomes an ``nccl_error`` warning with the log line (changed in place)."""
    by_ends = {frozenset((p.src, p.dst)): p for p in failing}
    for f in findings:
        if f.fault != "slow_unexplained" or f.kind != "pair":
            continue
        samples = [s for e in f.evidence_of(SlowPairsEvidence) for s in e.slow_pairs]
        if not samples or any(s.status != "hung" for s in samples):
            continue
        ends = [PortRef(nid, port) for nid, (_, port) in zip(f.node_ids, f.endpoints or [], strict=False)]
        p = by_ends.get(frozenset(ends))
        if p is None:
            continue
        f.fault, f.severity = NCCL_ERROR, Severity.WARNING  # the component (its key's part) stays the pair
        ev = _line_evidence(fabric, p, "; no named part explains it")
        f.evidence = ([ev] if ev is not None else []) + f.evidence


def _line_evidence(fabric: Fabric, p: PairResult, also: str = "") -> NcclLogEvidence | None:
    """The log line a failed connection came from (its ``error`` is ``file:line: text``), as evidence."""
    m = _WHERE.match(p.error or "")
    if not m:
        return None
    parsed = parse_nccl_debug(m.group(3), m.group(1)).errors
    host = parsed[0].host if parsed else fabric.label(p.src.node)
    reason = f"connection failed: {parsed[0].reason}" if parsed else "connection failed"
    return _evidence(m.group(3), m.group(1), int(m.group(2)), host, reason + also)


def _error_line_findings(fabric: Fabric, lines: list[NetErrorLine]) -> list[Finding]:
    """One finding per NIC port (or host, when the line names no port) and fault: a catastrophic
    device error is the NIC's (``nic_firmware``, error); every other line says only that NCCL saw
    the network fail there (``nccl_error``, warning): never a cable, never a drain on its own."""
    groups: dict[tuple[PortRef | str, str], list[NetErrorLine]] = defaultdict(list)
    for e in lines:  # where: the NIC port, else the host's one fabric node, else the host as NCCL named it
        where = e.port if e.port is not None else (e.node or e.host)
        groups[(where, "nic_firmware" if e.kind == "catastrophic" else NCCL_ERROR)].append(e)
    out = []
    for (where, fault), items in groups.items():
        severity = Severity.ERROR if fault == "nic_firmware" else Severity.WARNING
        evidence = [_evidence(e.line, e.source, e.line_no, e.host, e.reason) for e in items[:5]]
        if isinstance(where, PortRef):
            out.append(Finding("", "nic", f"{fabric.label(where.node)} port {where.port}", fault, severity, 0.8,
                               evidence, None, [where.node]))  # type: ignore[arg-type]
        else:
            name = items[0].host
            ids = host_nodes(fabric, name) or [where]
            out.append(Finding("", "host", name, fault, severity, 0.6, evidence, None, ids))  # type: ignore[arg-type]
    return out


def runtime_findings(fabric: Fabric, obs: Observations, findings: list[Finding]) -> list[Finding]:
    """``host_config`` findings from the transports NCCL used, and findings from the NCCL error lines
    no connection placed; adds the failing log lines to the cable findings (``findings``, changed in
    place) they explain, and makes a failed connection nothing explains a warning. Returns the new
    findings. A log that holds an error line never leaves the verdict ``pass``."""
    failing = [p for p in obs.pairs if p.test == TEST and p.status == "hung"]
    if failing:
        for f in findings:
            f.evidence.extend(_log_lines_on(fabric, f, failing))
        _unexplained_failures(fabric, findings, failing)
    return _host_config(fabric, obs.transports) + _error_line_findings(fabric, obs.net_errors)
