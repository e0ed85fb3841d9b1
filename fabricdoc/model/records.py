"""Plain records passed between stages: what probes produce and what analysis returns.

Identity follows the fabric: a node is its id (the GUID for InfiniBand, the
hostname for Ethernet and simulated fabrics) and a port its number; a human
description is a label, never a key. Missing values are ``None``, never 0.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Literal, NamedTuple

NodeKind = Literal["host", "switch"]


class ProbeStatus(StrEnum):
    """How one probe run went: what a report says it could not see, and why."""

    OK = "ok"
    ERROR = "error"  # ran and failed, or gave output we could not read
    TIMEOUT = "timeout"  # killed at its deadline
    UNSUPPORTED = "unsupported"  # the tool, driver or device is not there
    SKIPPED = "skipped"  # not run on purpose (not applicable)
    WARNING = "warning"  # ran and gave usable output, with warnings worth reading


class PortRef(NamedTuple):
    """One port of one node: ``node`` is the node id, ``port`` its 1-based number.

    A NamedTuple rather than a dataclass: routing and localization hash millions
    of these, and tuple hashing runs in C.
    """

    node: str
    port: int

    def __str__(self) -> str:
        return f"{self.node}[{self.port}]"


class LinkKey(NamedTuple):
    """Canonical, order-free identity of a cable: the two ports sorted."""

    a: PortRef
    b: PortRef

    @staticmethod
    def of(x: PortRef, y: PortRef) -> LinkKey:
        return LinkKey(x, y) if x <= y else LinkKey(y, x)

    def other(self, end: PortRef) -> PortRef:
        return self.b if end == self.a else self.a

    def __str__(self) -> str:
        return f"{self.a}--{self.b}"


@dataclass
class Node:
    """A host (HCA/NIC owner) or a switch.

    ``label`` is the fabric's description (ibnetdiscover's quoted name, the
    hostname): untrusted text. ``attrs`` holds generator facts such as
    ``level``, ``rail``, ``unit`` or ``pod`` used by routing and the TUI.
    """

    id: str
    kind: NodeKind
    label: str
    num_ports: int
    guid: str | None = None
    lid: int | None = None
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass
class Link:
    """A cable between two ports with its trained and supported width and speed.

    ``lanes`` and ``lane_gbps`` are what the link trained at (e.g. 4 x 25.78 for
    4X EDR); ``max_lanes`` / ``max_lane_gbps`` what both ends support, so a link
    trained below that is visible as degraded.
    """

    key: LinkKey
    lanes: int = 4
    lane_gbps: float = 25.0
    max_lanes: int | None = None
    max_lane_gbps: float | None = None
    state: Literal["up", "down"] = "up"

    @property
    def capacity_gbps(self) -> float:
        return 0.0 if self.state == "down" else self.lanes * self.lane_gbps

    @property
    def nominal_gbps(self) -> float:
        lanes = self.max_lanes or self.lanes
        lane = self.max_lane_gbps or self.lane_gbps
        return lanes * lane


@dataclass(frozen=True)
class PortCounters:
    """One sample of one port's counters, with the vendor's names as keys.

    ``values`` maps real names (``SymbolErrorCounter``, ``PortXmitData``,
    ``rx_prio3_pause``, ``np_ecn_marked_roce_packets``) to raw integers, or
    ``None`` when the device does not report that counter. ``width_bits``
    gives a counter's register width when it is not the IBTA default for its name.
    ``timestamp`` is seconds since the epoch when the sample was taken.
    """

    node: str
    port: int
    timestamp: float
    values: dict[str, int | None]
    source: str = "perfquery"
    width_bits: dict[str, int] = field(default_factory=dict)
    ifname: str | None = None  # Ethernet: the interface these counters came from

    @property
    def ref(self) -> PortRef:
        return PortRef(self.node, self.port)


@dataclass(frozen=True)
class PortState:
    """Link state of one port as a tool reports it (iblinkinfo, sysfs, netlink)."""

    node: str
    port: int
    state: str  # "Active", "Down", "Polling", "Init", "Armed", or Ethernet "up"/"down"
    phys_state: str | None = None  # "LinkUp", "Polling", "Disabled"...
    lanes: int | None = None
    lane_gbps: float | None = None
    max_lanes: int | None = None
    max_lane_gbps: float | None = None
    peer: PortRef | None = None
    source: str = "iblinkinfo"
    ifname: str | None = None

    @property
    def ref(self) -> PortRef:
        return PortRef(self.node, self.port)


@dataclass(frozen=True)
class LinkEvent:
    """A link state transition seen at one port, at ``timestamp`` (epoch seconds)."""

    node: str
    port: int
    timestamp: float
    state: Literal["up", "down"]
    source: str = "netlink"
    ifname: str | None = None

    @property
    def ref(self) -> PortRef:
        return PortRef(self.node, self.port)


@dataclass(frozen=True)
class PairResult:
    """One bandwidth test between two ports (host NICs).

    ``status``: ``ok`` measured; ``hung`` killed at its timeout (itself evidence);
    ``wrong`` the data check failed (corruption, a different fault from slowness);
    ``error`` could not run. ``busbw_gbps`` follows the nccl-tests definition.
    ``sizes`` holds a multi-size run's figures, ``(size_bytes, busbw_gbps)`` per printed size (the
    sizes are judged one by one against what healthy tests reach at each); empty for one-size tests.
    """

    src: PortRef
    dst: PortRef
    status: Literal["ok", "hung", "wrong", "error"]
    busbw_gbps: float | None
    expected_gbps: float | None = None
    algbw_gbps: float | None = None
    size_bytes: int | None = None
    wrong: int = 0
    duration_s: float | None = None
    round: int = 0
    test: str = "sendrecv"
    error: str | None = None
    sizes: tuple[tuple[int, float], ...] = ()

    @property
    def ratio(self) -> float | None:
        """Measured over expected bandwidth, when both are known."""
        return _ratio(self.busbw_gbps, self.expected_gbps)


def _ratio(measured: float | None, expected: float | None) -> float | None:
    return None if measured is None or not expected else measured / expected


@dataclass(frozen=True)
class GroupResult:
    """One group collective (all_reduce or alltoall) over ``members`` (host ports, rank order).

    ``phase`` says why it ran: ``screen`` (topology groups), ``split`` (a half of a
    failing group), ``cross`` (across the boundary of a failing group whose halves
    passed), ``confirm`` (against a known-good host), ``switch`` (a one-way load through
    half of the switches a failing round loaded alike), ``full_load`` (every host at
    once) or ``job`` (a running job's communicator, read from NCCL's Inspector).
    ``label`` names the group for people ("leaf leaf03", "half 1 of ...").
    Status and figures mean what they mean for a :class:`PairResult`.
    """

    members: tuple[PortRef, ...]
    test: str
    status: Literal["ok", "hung", "wrong", "error"]
    busbw_gbps: float | None
    expected_gbps: float | None = None
    round: int = 0
    phase: str = "screen"
    label: str = ""
    size_bytes: int | None = None
    duration_s: float | None = None
    wrong: int = 0
    error: str | None = None

    @property
    def ratio(self) -> float | None:
        """Measured over expected bus bandwidth, when both are known."""
        return _ratio(self.busbw_gbps, self.expected_gbps)


@dataclass(frozen=True)
class ProbeRun:
    """Health of one probe run, so a report says what it could not see."""

    probe: str
    target: str
    status: ProbeStatus
    duration_s: float
    error: str | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "status", ProbeStatus(self.status))


@dataclass(frozen=True)
class GpuHealth:
    """Health facts for one GPU (NVML); ``None`` fields were not available."""

    host: str
    index: int
    uuid: str | None
    status: ProbeStatus
    values: dict[str, Any] = field(default_factory=dict)
    error: str | None = None


@dataclass(frozen=True)
class KernelEvent:
    """One kernel message about a NIC or a PCIe device (journal or dmesg), at ``timestamp`` (epoch s).

    ``kind``: ``link`` (``state`` up/down), ``module`` (transceiver: plugged, unplugged, error),
    ``thermal``, ``cmd_timeout`` (firmware command), ``health`` (firmware health), ``aer`` (PCIe
    AER; ``state`` corrected, uncorrected or fatal). ``device`` is the PCI address the driver
    named, ``ifname`` its netdev; ``port`` the host port they map to (None when unmapped).
    ``timestamp`` is None when the log gave only time since boot and the boot time was unknown.
    ``message`` is the kernel's text (untrusted, escaped wherever shown).
    """

    node: str
    timestamp: float | None
    kind: str
    driver: str
    message: str
    device: str | None = None
    ifname: str | None = None
    port: int | None = None
    state: str | None = None
    source: str = "kmsg"


@dataclass(frozen=True)
class HostCheck:
    """One host configuration check read from sysfs/procfs: ``status`` ok, fail, unknown or n/a.

    ``check``: ``gpudirect``, ``pcie_acs``, ``pcie_link``, ``numa``, ``roce_gid``, ``mtu``,
    ``traffic_class``, ``pfc``. ``subject`` names what was checked (``mlx5_0``, a PCI address,
    an interface); ``values`` holds what was read, so analysis can compare hosts (MTU, GID
    index, traffic class). ``unknown`` means it applies but could not be read: not seen, never a
    pass. ``n/a`` means there was nothing to check (no GPU, no NUMA nodes, a setting the driver does
    not expose), like a probe that is ``unsupported``.
    """

    node: str
    check: str
    status: Literal["ok", "fail", "unknown", "n/a"]
    subject: str
    reason: str = ""
    values: dict[str, Any] = field(default_factory=dict)
    port: int | None = None


@dataclass(frozen=True)
class TransportUse:
    """How one of a job's connections really ran, as NCCL printed it (NCCL_DEBUG=INFO).

    ``host`` printed the line; ``peer`` is the other end's host when the log tells it;
    ``transport`` is NCCL's (``NET/IB``, ``NET/Socket``, ``P2P``, ``SHM``); ``gdr`` whether
    GPUDirect RDMA carried it. ``source``/``line_no``/``line``: where it was read (untrusted text).
    """

    host: str
    peer: str | None
    transport: str
    gdr: bool
    source: str
    line_no: int
    line: str


@dataclass(frozen=True)
class NetErrorLine:
    """A line of a job's NCCL log saying the network failed, other than a failed connection placed on
    two NIC ports: a NIC's asynchronous event, a completion error whose ends cannot be told, or
    another network WARN line. ``kind``: ``catastrophic`` (the device failed), ``port_error`` (the
    port's link went down), ``qp_fatal`` (one queue pair failed), ``event`` (another NIC event),
    ``completion`` or ``warning``. ``port`` is the NIC port when the line (or the host's only port)
    tells it; ``node`` the host's fabric node when known. ``line`` is untrusted text.
    """

    host: str
    kind: str
    reason: str
    source: str
    line_no: int
    line: str
    node: str | None = None
    port: PortRef | None = None


@dataclass(frozen=True)
class RankSignal:
    """What NCCL's RAS said about one rank or process of a running job (``ncclras``).

    ``state``: ``missing`` (no communicator data from it), ``dead`` (unreachable via the RAS
    network), ``error`` (initialization or asynchronous error, aborted), ``out_of_step`` (launched
    a different number of a collective than most ranks, or has another status). ``host`` is as
    NCCL printed it (usually an IP address; None when NCCL could not tell); ``comm`` the
    communicator hash ("" for the whole job); ``detail`` what it means. ``source``/``line_no``/
    ``line``: where it was read (untrusted text: escape when shown).
    """

    host: str | None
    rank: int | None
    comm: str
    state: str
    detail: str
    pid: int | None
    gpu: str | None
    source: str
    line_no: int
    line: str


@dataclass
class Observations:
    """Everything the probes (or the simulator) collected for one sweep.

    ``before``/``after`` are two counter samples of the same ports (``before``
    may come from a saved baseline); ``interval_s`` is the time between them.
    """

    before: list[PortCounters] = field(default_factory=list)
    after: list[PortCounters] = field(default_factory=list)
    states: list[PortState] = field(default_factory=list)
    events: list[LinkEvent] = field(default_factory=list)
    pairs: list[PairResult] = field(default_factory=list)
    groups: list[GroupResult] = field(default_factory=list)  # group collectives (load tests)
    probes: list[ProbeRun] = field(default_factory=list)
    gpus: list[GpuHealth] = field(default_factory=list)
    kernel_events: list[KernelEvent] = field(default_factory=list)
    host_checks: list[HostCheck] = field(default_factory=list)
    transports: list[TransportUse] = field(default_factory=list)
    ranks: list[RankSignal] = field(default_factory=list)  # NCCL RAS: lost or out-of-step ranks
    net_errors: list[NetErrorLine] = field(default_factory=list)  # NCCL: NIC events, unplaced errors
    interval_s: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def merged(cls, parts: list[Observations]) -> Observations:
        """One Observations from several: records appended in order, the longest interval kept."""
        out = cls()
        for part in parts:
            for name in ("before", "after", "states", "events", "pairs", "groups", "probes", "gpus",
                         "kernel_events", "host_checks", "transports", "ranks", "net_errors"):
                getattr(out, name).extend(getattr(part, name))
            if part.interval_s is not None:
                out.interval_s = max(out.interval_s or 0.0, part.interval_s)
            out.extra.update(part.extra)
        return out
