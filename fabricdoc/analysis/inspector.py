"""A job's NCCL Inspector figures as group tests: its communicators' rings over the fabric, judged against their peers.

Each communicator of a ring collective (AllReduce, AllGather, ReduceScatter) that spans two or
more hosts of the fabric becomes a :class:`~fabricdoc.model.records.GroupResult` (phase ``job``):
its ranks' hosts in rank order, one port each, and the bus bandwidth the Inspector measured at
its largest message size. What it should reach is what its peers reached: the median of the
communicators of the same shape (collective, ranks, nodes, message size) in the same job,
when there are at least :data:`MIN_PEERS` of them; a communicator without enough peers is not
judged (said in a probe record). Group tomography then names the cable or switch the slow
communicators share and the healthy ones do not cross.

Communicators inside one host (NVLink) say nothing about the fabric and are left out. A
communicator some of whose ranks wrote no Inspector file was not fully seen: a probe error,
so the verdict cannot be PASS.
"""

from __future__ import annotations

import statistics
from collections import defaultdict

from fabricdoc.fabric.identity import host_nodes
from fabricdoc.model.records import GroupResult, Observations, PortRef, ProbeRun
from fabricdoc.model.topology import Fabric
from fabricdoc.sources.nccl_inspector import CommPerf

SOURCE = "nccl-inspector"
RING_COLLECTIVES = ("AllReduce", "AllGather", "ReduceScatter")
MIN_PEERS = 3


def _members(fabric: Fabric, cp: CommPerf) -> tuple[list[PortRef], list[str]]:
    """One port per host, in rank order; and the host names not on the fabric."""
    ports: list[PortRef] = []
    seen: set[str] = set()
    unknown: list[str] = []
    for rank in sorted(cp.hosts):
        host = cp.hosts[rank]
        if host in seen:
            continue
        seen.add(host)
        ids = host_nodes(fabric, host)
        cabled = [p for nid in ids for p in fabric.host_ports(nid)]
        if not cabled:
            unknown.append(host)
            continue
        ports.append(cabled[0])
    return ports, unknown


def observations_from_inspector(fabric: Fabric, comms: list[CommPerf]) -> Observations:
    """Group results (phase ``job``) for the communicators that span hosts, and probe records for what was not judged."""
    obs = Observations()
    placed: list[tuple[CommPerf, list[PortRef]]] = []
    unknown_hosts: set[str] = set()
    inside, other = 0, 0
    for cp in comms:
        if cp.coll not in RING_COLLECTIVES:
            other += 1
            continue
        if cp.missing_ranks:
            obs.probes.append(ProbeRun(SOURCE, f"communicator {cp.comm}", "error", 0.0,
                                       f"{len(cp.missing_ranks)} of {cp.n_ranks} ranks wrote no Inspector record "
                                       f"(ranks {', '.join(map(str, cp.missing_ranks[:8]))}): not judged"))
            continue
        members, unknown = _members(fabric, cp)
        unknown_hosts.update(unknown)
        if unknown:
            continue
        if len(members) < 2:
            inside += 1
            continue
        placed.append((cp, members))
    shapes: dict[tuple, list[float]] = defaultdict(list)
    for cp, members in placed:
        shapes[(cp.coll, cp.n_ranks, len(members), cp.size_bytes)].append(cp.busbw_gbps)
    alone = 0
    for i, (cp, members) in enumerate(placed):
        peers = shapes[(cp.coll, cp.n_ranks, len(members), cp.size_bytes)]
        if len(peers) < MIN_PEERS:
            alone += 1  # an unjudged communicator is no evidence either way
            continue
        expected = statistics.median(peers)
        obs.groups.append(GroupResult(tuple(members), "all_reduce", "ok", cp.busbw_gbps, expected, round=i,
                                      phase="job", label=f"communicator {cp.comm} {cp.coll} {cp.size_bytes} B",
                                      size_bytes=cp.size_bytes))
    for host in sorted(unknown_hosts):
        obs.probes.append(ProbeRun(SOURCE, host, "error", 0.0,
                                   "NCCL Inspector names a host that is not on the fabric: its communicators not judged"))
    notes = []
    if alone:
        notes.append(f"{alone} communicators have fewer than {MIN_PEERS} of the same shape to compare with: not judged")
    if inside:
        notes.append(f"{inside} communicators inside one host (NVLink) left out")
    if other:
        notes.append(f"{other} records of collectives other than {', '.join(RING_COLLECTIVES)} left out")
    obs.probes.append(ProbeRun(SOURCE, "communicators", "warning" if alone else "ok", 0.0, "; ".join(notes) or None))
    return obs
