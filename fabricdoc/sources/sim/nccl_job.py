"""A training job's NCCL_DEBUG=INFO output on a fabric with broken cables, as NCCL prints it.

For tests and benchmarks of connection tomography: what :mod:`fabricdoc.sources.nccl_debug`
reads from a real job, generated for any fabric, placement and fault. The line formats are
those of the real logs in ``tests/data/nccl-debug`` (``Bootstrap : Using``, ``NET/IB : Using
[0]mlx5_0:1/IB ... [RO]; OOB``, ``ncclCommInitRank ... Init START``, ``Channel 00/0 : 0[0] ->
8[0] [send] via NET/IB/0/GDRDMA``, and NCCL 2.2x's completion errors with GIDs and ``hca``).

The job: every host of ``hosts`` runs ``gpus`` ranks, GPU ``g`` on its rail ``g`` NIC (the
host's ports in rail order). Ring channel ``c`` crosses from each host to the next on rail
``c mod gpus`` (NCCL keeps a ring on one rail between nodes), and each tree channel is a binary
tree over the hosts (the second one mirrored, as NCCL's double binary tree), parent and child
connected both ways. A connection is a reliable queue pair: it fails when its data path or its
acknowledgements' path (the reverse route, which up/down and LFT routing may send elsewhere)
crosses a broken cable. Each end of a failed connection prints its completion error with
probability ``report`` (the sender ``status=12 ... vendor err 129 (Send)``, the receiver
``status=5 ... vendor err 249 (Recv)``): a job aborts on its first errors, so some failed
connections go unreported, and none of its working connections does. At least one is reported.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass, field

from fabricdoc.errors import TopologyError
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric
from fabricdoc.sources.nccl_logs import rails_of

PREFIXES = ("", "iso", "tag")  # none, a collector's RFC 3339 time, mpirun --tag-output


@dataclass(frozen=True)
class JobConnection:
    """One inter-host connection: the sending and receiving rank's NIC ports, and whether it failed."""

    channel: int
    src_rank: int
    dst_rank: int
    src: PortRef
    dst: PortRef
    failed: bool


@dataclass
class SimulatedJob:
    """Per-host log text, and what was simulated (for scoring)."""

    logs: dict[str, str]
    connections: list[JobConnection] = field(default_factory=list)

    @property
    def failed(self) -> list[JobConnection]:
        return [c for c in self.connections if c.failed]


def _device(fabric: Fabric, port: PortRef, index: int) -> str:
    words = fabric.label(port.node).split()
    return words[1] if len(words) > 1 else f"mlx5_{index}"


def _gid(fabric: Fabric, port: PortRef) -> str:
    """The port's InfiniBand GID: the link-local subnet prefix and its port GUID (as ibnetdiscover gave
    it), else its node's GUID (a generated fabric has no port GUIDs), else 0."""
    node = fabric.nodes[port.node]
    value = int(str((node.attrs.get("port_guids") or {}).get(port.port) or node.guid or "0"), 16)
    return "fe80::" + ":".join(f"{(value >> s) & 0xFFFF:x}" for s in (48, 32, 16, 0))


def _tree_edges(n: int) -> list[tuple[int, int]]:
    """(parent, child) host indices of a binary tree over ``n`` hosts in order."""
    return [((i - 1) // 2, i) for i in range(1, n)]


def simulate_job(fabric: Fabric, hosts: list[str], broken: Iterable[LinkKey], *, gpus: int = 1, rings: int = 2,
                 trees: int = 2, report: float = 0.9, prefix: str = "", seed: int = 0) -> SimulatedJob:
    """The NCCL_DEBUG=INFO logs (one text per host) of a job on ``hosts`` with ``broken`` cables (module doc)."""
    rng = random.Random(seed)
    broken = set(broken)
    rails = {h: rails_of(fabric, h).ports for h in hosts}
    for h, ports in rails.items():
        if len(ports) < gpus and len(ports) != 1:
            raise TopologyError(f"host {h!r} has {len(ports)} NIC ports for {gpus} GPUs")
    n = len(hosts)
    nranks = n * gpus
    lines: dict[str, list[str]] = {h: [] for h in hosts}
    pid = {(h, g): 1000 + 10 * i + g for i, h in enumerate(hosts) for g in range(gpus)}
    ip = {h: f"10.{i // 250}.{i % 250 + 1}.1" for i, h in enumerate(hosts)}

    def head(h: str, g: int) -> str:
        p = pid[(h, g)]
        return f"{h}:{p}:{p + 1} [{g}]"

    def nic(h: str, g: int) -> PortRef:
        ports = rails[h]
        return ports[g % len(ports)]

    for i, h in enumerate(hosts):
        devs = " ".join(f"[{k}]{_device(fabric, p, k)}:{p.port}/IB" for k, p in enumerate(rails[h]))
        for g in range(gpus):
            r = i * gpus + g
            lines[h] += [f"{head(h, g)} NCCL INFO Bootstrap : Using ib0:{ip[h]}<0>",
                         f"{head(h, g)} NCCL INFO NET/IB : Using {devs} [RO]; OOB ib0:{ip[h]}<0>",
                         f"{head(h, g)} NCCL INFO Using network IB",
                         f"{head(h, g)} NCCL INFO ncclCommInitRank comm 0x{0x55d0000 + r:x} rank {r} nranks {nranks} "
                         f"cudaDev {g} nvmlDev {g} busId {0x18000 + 0x10000 * g:x} commId 0x5eed - Init START"]
    conns: list[JobConnection] = []

    def connect(channel: int, a: int, b: int, g: int) -> None:
        ha, hb = hosts[a], hosts[b]
        src, dst = nic(ha, g), nic(hb, g)
        try:
            crossed = set(fabric.path(src, dst)) | set(fabric.path(dst, src))
        except TopologyError:
            crossed = set()
        conns.append(JobConnection(channel, a * gpus + g, b * gpus + g, src, dst, bool(crossed & broken)))
        dev = rails[ha].index(src)
        ra, rb = a * gpus + g, b * gpus + g
        lines[ha].append(f"{head(ha, g)} NCCL INFO Channel {channel:02d}/0 : {ra}[{g}] -> {rb}[{g}] [send] "
                         f"via NET/IB/{dev}/GDRDMA")
        lines[hb].append(f"{head(hb, g)} NCCL INFO Channel {channel:02d}/0 : {ra}[{g}] -> {rb}[{g}] [receive] "
                         f"via NET/IB/{rails[hb].index(dst)}/GDRDMA")

    if n > 1:
        for c in range(rings):
            for i in range(n):
                connect(c, i, (i + 1) % n, c % gpus)
        for t in range(trees):
            channel = rings + t
            order = list(range(n)) if t % 2 == 0 else list(reversed(range(n)))
            for parent, child in _tree_edges(n):
                connect(channel, order[child], order[parent], channel % gpus)
                connect(channel, order[parent], order[child], channel % gpus)
    failed = [c for c in conns if c.failed]
    told = [(c, end) for c in failed for end in ("send", "recv") if rng.random() < report]
    if failed and not told:
        told = [(failed[0], "send")]
    for c, end in told:
        a, b = c.src_rank // gpus, c.dst_rank // gpus
        g = c.src_rank % gpus
        if end == "send":
            h, here, there, peer = hosts[a], c.src, c.dst, hosts[b]
            what = "status=12 opcode=0 len=524288 vendor err 129 (Send)"
        else:
            h, here, there, peer = hosts[b], c.dst, c.src, hosts[a]
            what = "status=5 opcode=128 len=0 vendor err 249 (Recv)"
        lines[h].append(f"{head(h, g)} transport/net_ib.cc:2451 NCCL WARN NET/IB : Got completion from peer "
                        f"{ip[peer]}<{40000 + c.channel}> with {what} localGid {_gid(fabric, here)} "
                        f"remoteGids{_gid(fabric, there)} hca {_device(fabric, here, rails[h].index(here))}")
    return SimulatedJob({h: _prefixed(text, h, prefix, i) for i, (h, text) in enumerate(lines.items())}, conns)


def _prefixed(lines: list[str], host: str, prefix: str, index: int) -> str:
    if prefix == "iso":
        lines = [f"2026-12-05T07:{index % 60:02d}:{k % 60:02d}.{k % 1000:03d}Z {ln}" for k, ln in enumerate(lines)]
    elif prefix == "tag":
        lines = [f"[1,{index}]<stdout>:{ln}" for ln in lines]
    return "\n".join(lines) + "\n"
