"""NCCL_DEBUG=INFO (or WARN) output of a job: who ran where, over which transport, and what failed.

:func:`parse_nccl_debug` is a pure parser of one log's text into a
:class:`NcclDebugLog` (:func:`fabricdoc.sources.nccl_debug.read_nccl_debug` reads a
file). What it reads, each with its file and line:

* ranks: ``ncclCommInitRank comm 0x... rank R nranks N cudaDev D ... busId B``
  and ``comm 0x... rank R nRanks N nNodes M localRanks L localRank l``, on the
  line's host (``host:pid:tid [cudaDev] NCCL INFO ...``);
* network devices: ``NET/IB : Using [0]mlx5_0:1/IB [1]mlx5_1:1/RoCE ...; OOB eth0:10.0.0.1<0>``,
  ``NET/Socket : Using [0]ens3:172.31.12.210<0>``, ``Bootstrap : Using eno2np0:172.18.62.151<0>``
  (a host's address, by which a peer names it), ``Using network Socket``, ``NET/IB : No device found``;
* connections: ``Channel 00/0 : 0[0] -> 8[0] [send] via NET/IB/0/GDRDMA`` (and the old
  ``Channel 01 : 2[c7000] -> 0[87000] [receive] via ...`` and ``Ring 00 : 3 -> 10 [send] via ...``):
  the transport (``NET/<net>/<dev>[/GDRDMA]``, ``P2P/...``, ``SHM/...``);
* errors: ``NET/IB : Got completion from peer <ip><port> with status=12 ... vendor err 129 (Recv)
  localGid ... remoteGids... [hca mlx5_1]`` in its known spellings (``status=N``,
  ``status=IBV_WC_..._ERR(N)``, ``error N, opcode ...``; the peer an IPv4 address or an IPoIB
  link-local ``fe80::...%ib0``), NIC async events with and without a device (``mlx5_0:1 Got async
  event : port error``, older NCCL's ``Got async event : local catastrophic error``, ``mlx5_1:1 async
  fatal event on QP (0x...): ...``), other network WARN lines (``NET/OFI Request ... completed with
  error``, ``communicator encountered a fatal error``, ``Connection closed by remote peer``),
  ``GPU Direct RDMA Disabled for HCA d 'mlx5_x'`` and PyTorch's ``Watchdog caught collective
  operation timeout``.

NCCL's own ``host:pid:tid [dev] [file:line] NCCL LEVEL`` is found wherever it starts in a line:
after any prefix a launcher or collector adds (timestamps, ``[1,0]<stdout>:``, ``0: ``, pod names,
syslog), and several times in one line when ranks' output ran together. Any other NCCL line is
*skipped* (NCCL prints hundreds of kinds; they are counted); a line that starts like one of the
kinds above but does not fit it, or a record whose "host" is a host other records name with text
glued before it (``-1gcn151``: an nccl-tests row cut by another rank), is *garbled*: skipped,
counted and its first line numbers kept, never guessed.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

# ibv_wc_status names, for the reason a person reads (the numbers are the verbs API's).
WC_STATUS = {
    4: "local protection error", 5: "work request flushed", 10: "remote access error",
    11: "remote operation error", 12: "transport retry counter exceeded", 13: "RNR retry counter exceeded",
}  # fmt: skip

# NCCL's own ``host:pid:tid [dev] [file:line] NCCL LEVEL`` wherever it starts in a line: after any prefix a
# launcher or collector adds (ISO/RFC 3339 timestamps, ``[1,0]<stdout>:``, ``0: ``, ``[155] ``, pod names,
# syslog, CloudWatch's ``| ... |``), at the start of the line or after a space, ``]``, ``>``, ``|``, ``:`` or
# ``,``. Bounded repeats keep the scan linear in the line's length.
_CORE = re.compile(
    r"(?:^|(?<=[\s\]>|:,]))(?P<host><[^\s<>]{1,64}>|[^\s:\[\]<>|]{1,255}):(?P<pid>\d{1,10}):(?P<tid>\d{1,10}) "
    r"\[(?P<dev>\d{1,4})\] (?:\S{1,200} )?NCCL (?P<level>INFO|WARN|TRACE|ABORT) "
)
_INIT = re.compile(r"^ncclCommInitRank comm 0x[0-9a-f]+ rank (\d+) nranks (\d+) cudaDev (\d+)"
                   r"(?: nvmlDev \d+)? busId ([0-9a-fA-F]+)")
_COMM = re.compile(r"^comm 0x[0-9a-f]+ rank (\d+) nRanks (\d+) nNodes (\d+) localRanks (\d+) localRank (\d+)")
_NET_USING = re.compile(r"^NET/(IB|Socket) ?: Using (.*?)(?:\s*;\s*OOB ([^\s:]+):([^\s<]+)<\d+>)?$")
_IB_DEV = re.compile(r"\[(\d+)\]([^\s:\[\]]+)(?::(\d+))?(?:/(IB|RoCE))?")
_SOCK_DEV = re.compile(r"\[(\d+)\]([^\s:\[\]]+):([^\s<]+)<\d+>")
_BOOTSTRAP = re.compile(r"^Bootstrap ?: Using ([^\s:]+):([^\s<]+)<\d+>")
_NETWORK = re.compile(r"^Using network (.+)$")
_NO_IB = re.compile(r"^NET/IB ?: No device found")
_CHANNEL = re.compile(r"^(?:Channel (\d+)(?:/\d+)? : (\d+)\[([0-9a-fx]+)\] -> (\d+)\[([0-9a-fx]+)\]"
                      r"|Ring (\d+) : (\d+)(?:\[[0-9a-fx]+\])? -> (\d+)(?:\[[0-9a-fx]+\])?)(?: \[(send|receive)\])? via (.+)$")
_NET_VIA = re.compile(r"^NET/(.+?)/(\d+)(?:\((\d+)\))?((?:/[A-Za-z]+)*)$")
_COMPLETION = re.compile(r"NET/IB[^:]*?: ?Got completion from peer ([^\s<]+)(?:<(\d+)>)? with (.*)$")
_STATUS = re.compile(r"(?:status=(?:[A-Z_]+\()?(\d+)|error (\d+))")
_VENDOR = re.compile(r"vendor[ _]err[ =]?(\d+)")
_DIRECTION = re.compile(r"\((Send|Recv)\)")
_LOCAL_GID = re.compile(r"localGid ([0-9a-fA-F:.]+)")
_REMOTE_GID = re.compile(r"remoteGids ?([0-9a-fA-F:.]+)")
_HCA = re.compile(r"\bhca ([^\s,]+)")
# ``NET/IB : mlx5_0:1 Got async event : port error``, ``NET/IB : mlx5_1:1 async fatal event on QP (0x...): ...``
# and older NCCL's ``NET/IB : Got async event : local catastrophic error`` (no device named).
_ASYNC = re.compile(r"NET/IB ?: (?:([^\s:]+):(\d+) )?(?:Got )?async (?:fatal )?event(?: on ([^:]{1,80}))? ?: (.+)$")
_GDR_OFF = re.compile(r"^NET/IB ?: GPU Direct RDMA Disabled for HCA (\d+) '([^']+)'")
# A WARN line about the network that no kind above reads (``NET/OFI Request ... completed with error``,
# ``communicator encountered a fatal error``, ``Net : Connection closed by remote peer``): still an error line.
_NET_WARN = re.compile(r"NET/|\bNet :|\bibv_|\b(?:IB|RoCE)\b|fatal|[Cc]onnection (?:closed|refused|reset)|network error")
_WATCHDOG = re.compile(r"\[Rank (\d+)\] Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(\d+), "
                       r"OpType=(\w+)")
_LOOKS_LIKE = ("Got completion from peer", " via ", "ncclCommInitRank comm", "Watchdog caught")


@dataclass(frozen=True)
class Where:
    """Where a fact was read: the file, its 1-based line, and the line itself (untrusted text)."""

    source: str
    line_no: int
    line: str

    def __str__(self) -> str:
        shown = self.line if len(self.line) <= 240 else self.line[:237] + "..."
        return f"{self.source}:{self.line_no}: {shown}"


@dataclass(frozen=True)
class RankInfo:
    """One rank of a communicator: its host (as the log prefix names it), process and GPU."""

    rank: int
    nranks: int
    host: str
    pid: int
    cuda_dev: int
    bus_id: str | None
    at: Where


@dataclass(frozen=True)
class NetDevices:
    """What one process printed for a network: ``NET/IB`` devices by NCCL index (``mlx5_0``,
    port 1, IB or RoCE) or ``NET/Socket`` interfaces, and the OOB address when printed."""

    host: str
    pid: int
    net: str  # "IB" or "Socket"
    devices: dict[int, tuple[str, int | None, str | None]]  # index -> (name, port, "IB"/"RoCE"/ip)
    oob_ip: str | None
    at: Where


@dataclass(frozen=True)
class Connection:
    """One channel connection as one end printed it. ``direction`` says which rank is on this line's host
    (the sender for ``send``, the receiver for ``receive``; None for P2P/SHM lines, which print both).
    ``net_dev`` is NCCL's network device index on this host; ``gdr`` whether GPUDirect RDMA was used."""

    host: str
    pid: int
    cuda_dev: int
    channel: int
    src_rank: int
    dst_rank: int
    direction: str | None  # "send", "receive" or None
    transport: str  # "NET/IB", "NET/Socket", "NET/IBext_v8", "P2P", "SHM", ...
    net_dev: int | None
    gdr: bool
    via: str
    at: Where

    @property
    def is_net(self) -> bool:
        return self.transport.startswith("NET/")

    @property
    def peer_rank(self) -> int:
        return self.dst_rank if self.direction != "receive" else self.src_rank


@dataclass(frozen=True)
class NetError:
    """A failed work completion on an IB/RoCE queue pair, as the local end printed it.

    ``peer_ip`` is the peer's address as NCCL printed it (its OOB interface); ``local_gid`` and
    ``remote_gid`` the two ports' GIDs (an InfiniBand GID ``fe80::...`` ends in the port GUID);
    ``hca`` the local device when NCCL 2.2x+ names it."""

    host: str
    pid: int
    cuda_dev: int
    peer_ip: str
    status: int
    vendor_err: int | None
    direction: str | None
    local_gid: str | None
    remote_gid: str | None
    hca: str | None
    at: Where

    @property
    def reason(self) -> str:
        name = WC_STATUS.get(self.status, "work completion error")
        vendor = f", vendor err {self.vendor_err}" if self.vendor_err is not None else ""
        return f"{name} (status {self.status}{vendor})"


@dataclass(frozen=True)
class NicEvent:
    """An asynchronous event NCCL got from a local NIC port (``port error``, ``local catastrophic error``,
    a queue pair's fatal event). Older NCCL names no device (``device`` and ``port`` None); ``qp`` is set
    when the event is on one queue pair (``QP (0x...)``) rather than the port or the device."""

    host: str
    device: str | None
    port: int | None
    event: str
    at: Where
    qp: str | None = None

    @property
    def catastrophic(self) -> bool:
        return "catastrophic" in self.event


@dataclass(frozen=True)
class NetWarning:
    """A WARN line about the network that is none of the kinds above: kept as it was printed."""

    host: str
    pid: int
    message: str
    at: Where


@dataclass(frozen=True)
class Watchdog:
    """PyTorch's watchdog gave up on a collective on one (global) rank; it names no connection."""

    rank: int
    seq: int
    op: str
    at: Where


@dataclass
class NcclDebugLog:
    """Everything read from one NCCL_DEBUG log, plus what was skipped."""

    source: str
    lines: int = 0
    nccl_lines: int = 0
    skipped: int = 0  # NCCL lines of other kinds, and lines that are not NCCL's
    garbled: list[int] = field(default_factory=list)  # lines that looked like ours but did not fit
    ranks: list[RankInfo] = field(default_factory=list)
    nets: list[NetDevices] = field(default_factory=list)
    addresses: dict[str, tuple[str, Where]] = field(default_factory=dict)  # ip -> (host, where)
    networks: list[tuple[str, str, Where]] = field(default_factory=list)  # (host, "IB"/"Socket"/..., where)
    no_ib: list[tuple[str, Where]] = field(default_factory=list)
    connections: list[Connection] = field(default_factory=list)
    errors: list[NetError] = field(default_factory=list)
    nic_events: list[NicEvent] = field(default_factory=list)
    net_warnings: list[NetWarning] = field(default_factory=list)
    gdr_disabled: list[tuple[str, str, Where]] = field(default_factory=list)  # (host, HCA, where)
    watchdogs: list[Watchdog] = field(default_factory=list)

    @property
    def hosts(self) -> list[str]:
        seen = [r.host for r in self.ranks] + [c.host for c in self.connections] + [n.host for n in self.nets]
        return list(dict.fromkeys(seen))


def _garble(log: NcclDebugLog, line_no: int) -> None:
    log.garbled.append(line_no)
    log.skipped += 1


def _connection(m: re.Match[str], host: str, pid: int, dev: int, at: Where) -> Connection | None:
    if m.group(1) is not None:
        channel, src, dst = int(m.group(1)), int(m.group(2)), int(m.group(4))
    else:
        channel, src, dst = int(m.group(6)), int(m.group(7)), int(m.group(8))
    direction, via = m.group(9), m.group(10).strip()
    net = _NET_VIA.match(via)
    if via.startswith("NET/"):
        if not net:
            return None
        flags = {f for f in net.group(4).split("/") if f}
        return Connection(host, pid, dev, channel, src, dst, direction, f"NET/{net.group(1)}", int(net.group(2)),
                          "GDRDMA" in flags, via, at)
    transport = via.split("/", 1)[0].split()[0]
    if transport not in ("P2P", "SHM", "CollNet", "NVLS", "PXN"):
        return None
    return Connection(host, pid, dev, channel, src, dst, direction, transport, None, False, via, at)


def _nets(m: re.Match[str], host: str, pid: int, at: Where) -> NetDevices | None:
    net, devs, oob_ip = m.group(1), m.group(2), m.group(4)
    found: dict[int, tuple[str, int | None, str | None]] = {}
    if net == "IB":
        for d in _IB_DEV.finditer(devs):
            found[int(d.group(1))] = (d.group(2), int(d.group(3)) if d.group(3) else None, d.group(4))
    else:
        for d in _SOCK_DEV.finditer(devs):
            found[int(d.group(1))] = (d.group(2), None, d.group(3))
    if not found:
        return None
    if oob_ip is None and net == "Socket" and len(found) == 1:
        oob_ip = next(iter(found.values()))[2]
    return NetDevices(host, pid, net, found, oob_ip, at)


def _error(rest: str, m: re.Match[str], host: str, pid: int, dev: int, at: Where) -> NetError | None:
    tail = m.group(3)
    status = _STATUS.search(tail)
    if not status:
        return None
    vendor, direction = _VENDOR.search(tail), _DIRECTION.search(tail)
    lgid, rgid, hca = _LOCAL_GID.search(tail), _REMOTE_GID.search(tail), _HCA.search(tail)
    return NetError(host, pid, dev, m.group(1), int(status.group(1) or status.group(2)),
                    int(vendor.group(1)) if vendor else None, direction.group(1) if direction else None,
                    lgid.group(1) if lgid else None, rgid.group(1) if rgid else None,
                    hca.group(1) if hca else None, at)  # fmt: skip


def _records(line: str) -> list[re.Match[str]]:
    """Where NCCL records start in one line (several when ranks' output ran together)."""
    if "NCCL " not in line:
        return []
    return list(_CORE.finditer(line))


def _spliced(host: str, seen: Counter[str]) -> bool:
    """Whether ``host`` is another line's tail glued before a host that more records name (``-1gcn151``):
    its proper suffixes looked up (linear in the name, not in the hosts of the log)."""
    return any(seen.get(host[i:], 0) > seen[host] for i in range(1, len(host)))


def parse_nccl_debug(text: str, source: str = "nccl-debug") -> NcclDebugLog:
    """Parse one NCCL_DEBUG log (see the module docstring); never raises on a line it does not know."""
    log = NcclDebugLog(source)
    lines = text.splitlines()
    found = [_records(raw) for raw in lines]
    # A record whose "host" is a host other records name more often with text glued before it is a
    # splice of two ranks' output (an nccl-tests row cut by another rank's line), not a host.
    seen = Counter(m["host"] for ms in found for m in ms)
    spliced = {h for h in seen if _spliced(h, seen)}
    for i, (raw, records) in enumerate(zip(lines, found, strict=True), 1):
        log.lines += 1
        line = raw.rstrip()
        at = Where(source, i, line)
        w = _WATCHDOG.search(line)
        if w:
            log.watchdogs.append(Watchdog(int(w.group(1)), int(w.group(2)), w.group(3), at))
            continue
        if not records:
            if any(k in line for k in _LOOKS_LIKE):
                _garble(log, i)
            else:
                log.skipped += 1
            continue
        for n, p in enumerate(records):
            end = records[n + 1].start() if n + 1 < len(records) else len(line)
            if p["host"] in spliced:
                _garble(log, i)
                continue
            log.nccl_lines += 1
            msg = line[p.end():end].strip()
            try:
                _read_record(log, p["host"], int(p["pid"]), int(p["dev"]), p["level"], msg, at)
            except ValueError:  # a number no NCCL field holds (thousands of digits): garbled, not a crash
                _garble(log, i)
    return log


def _read_record(log: NcclDebugLog, host: str, pid: int, dev: int, level: str, msg: str, at: Where) -> None:
    """One NCCL record (``msg``: what follows ``NCCL LEVEL``) into the log's lists."""
    i = at.line_no
    if (m := _INIT.match(msg)) or (c := _COMM.match(msg)):
        if m:
            log.ranks.append(RankInfo(int(m.group(1)), int(m.group(2)), host, pid, int(m.group(3)),
                                      m.group(4).lower(), at))
        else:
            log.ranks.append(RankInfo(int(c.group(1)), int(c.group(2)), host, pid, dev, None, at))
    elif m := _CHANNEL.match(msg):
        conn = _connection(m, host, pid, dev, at)
        if conn is None:
            _garble(log, i)
        else:
            log.connections.append(conn)
    elif m := _COMPLETION.search(msg):
        err = _error(msg, m, host, pid, dev, at)
        if err is None:
            _garble(log, i)
        else:
            log.errors.append(err)
    elif m := _NET_USING.match(msg):
        nets = _nets(m, host, pid, at)
        if nets is None:
            _garble(log, i)
            return
        log.nets.append(nets)
        if nets.oob_ip:
            log.addresses.setdefault(nets.oob_ip, (host, at))
    elif m := _BOOTSTRAP.match(msg):
        log.addresses.setdefault(m.group(2), (host, at))
    elif m := _NETWORK.match(msg):
        log.networks.append((host, m.group(1).strip(), at))
    elif _NO_IB.match(msg):
        log.no_ib.append((host, at))
    elif m := _GDR_OFF.match(msg):
        log.gdr_disabled.append((host, m.group(2), at))
    elif m := _ASYNC.search(msg):
        qp = m.group(3).strip() if m.group(3) else None
        log.nic_events.append(NicEvent(host, m.group(1), int(m.group(2)) if m.group(2) else None,
                                       m.group(4).strip(), at, qp))
    elif level == "WARN" and _NET_WARN.search(msg) and not msg.startswith("Call to ibv_get_async_event"):
        log.net_warnings.append(NetWarning(host, pid, msg, at))
    elif any(k in msg for k in _LOOKS_LIKE[:3]) and msg.startswith(("Channel", "Ring", "NET/", "ncclComm")):
        _garble(log, i)
    else:
        log.skipped += 1

