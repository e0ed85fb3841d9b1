"""NCCL RAS signals on the fabric: the hosts of lost or out-of-step ranks, joined with what else was found there.

NCCL's RAS names processes and ranks, never the cause: a rank is missing, dead, in error
or out of step (:class:`~fabricdoc.model.records.RankSignal`). Here each host NCCL named is
placed on the fabric (by name, by the address a fabric node declares, or by the address the
job's own NCCL_DEBUG output gave that host) and

* where another finding already names that host's parts (its cable, NIC, GPU, the host), the
  RAS lines are added to it as evidence: the job's symptom next to the fault that explains it;
* otherwise the host gets its own ``warning`` finding (``nccl_rank_lost``, ``nccl_error`` or
  ``nccl_out_of_step``) with NCCL's lines. A warning never drains a host: RAS says which process
  stopped, not that its hardware is bad (an application bug stops a rank too).

A host that cannot be placed is still reported, under the name NCCL gave, with a probe
warning saying how to place it.
"""

from __future__ import annotations

from collections import defaultdict

from fabricdoc.fabric.identity import host_name, host_nodes
from fabricdoc.model.evidence import NcclLogEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import Observations, ProbeRun, RankSignal
from fabricdoc.model.severity import Severity
from fabricdoc.model.topology import Fabric

SOURCE = "nccl-ras"
# The fault a host's signals make, most telling first.
FAULTS = (("dead", "nccl_rank_lost"), ("missing", "nccl_rank_lost"), ("error", "nccl_error"),
          ("out_of_step", "nccl_out_of_step"))
EVIDENCE_PER_HOST = 8


def _by_address(fabric: Fabric, obs: Observations) -> dict[str, list[str]]:
    """Address -> fabric node ids: what fabric nodes declare (``attrs.addresses``), then the job's NCCL logs."""
    out: dict[str, list[str]] = {}
    for node in fabric.hosts():
        addrs = node.attrs.get("addresses")
        for addr in (addrs.values() if isinstance(addrs, dict) else []):
            out.setdefault(str(addr), []).append(node.id)
    for addr, host in (obs.extra.get("nccl_addresses") or {}).items():
        ids = host_nodes(fabric, host)
        if ids:
            out.setdefault(addr, ids)
    return out


def _reason(s: RankSignal) -> str:
    who = f"rank {s.rank}" if s.rank is not None else "process"
    gpu = f" (GPU {s.gpu}, pid {s.pid})" if s.gpu is not None and s.pid is not None else ""
    comm = f" in communicator {s.comm}" if s.comm else ""
    return f"NCCL RAS: {who}{gpu}{comm} {s.state.replace('_', ' ')}: {s.detail}"


def _evidence(s: RankSignal, host: str) -> NcclLogEvidence:
    return NcclLogEvidence(s.source, s.line_no, s.line[:400], host, _reason(s))


def ras_findings(fabric: Fabric, obs: Observations, findings: list[Finding]) -> list[Finding]:
    """New findings for hosts NCCL RAS named; RAS lines added to ``findings`` (in place) on hosts they already name."""
    if not obs.ranks:
        return []
    addresses = _by_address(fabric, obs)
    placed: dict[str, tuple[list[str], list[RankSignal]]] = {}
    unplaced: dict[str, list[RankSignal]] = defaultdict(list)
    hostless: list[RankSignal] = []
    for s in obs.ranks:
        if s.host is None:
            hostless.append(s)
            continue
        ids = host_nodes(fabric, s.host) or addresses.get(s.host, [])
        if ids:
            name = host_name(fabric, ids[0])
            placed.setdefault(name, (ids, []))[1].append(s)
        else:
            unplaced[s.host].append(s)
    lost = [h for h, (_, sigs) in placed.items() if any(s.state in ("dead", "missing") for s in sigs)]
    lost += [h for h, sigs in unplaced.items() if any(s.state in ("dead", "missing") for s in sigs)]
    if hostless and len(lost) == 1:  # NCCL 2.24/2.25 name a missing rank without its host: one lost host has it
        (placed[lost[0]][1] if lost[0] in placed else unplaced[lost[0]]).extend(hostless)
        hostless = []
    out: list[Finding] = []
    for name, (ids, sigs) in sorted(placed.items()):
        evidence = [_evidence(s, name) for s in sigs[:EVIDENCE_PER_HOST]]
        mine = set(ids)
        joined = [f for f in findings if f.kind in ("link", "nic", "host", "gpu", "port") and mine & set(f.node_ids)]
        if joined:
            for f in joined:
                f.evidence.extend(evidence)
        else:
            out.append(_finding(name, ids, sigs, evidence))
    for host, sigs in sorted(unplaced.items()):
        out.append(_finding(host, [host], sigs, [_evidence(s, host) for s in sigs[:EVIDENCE_PER_HOST]]))
        obs.probes.append(ProbeRun(SOURCE, host, "warning", 0.0,
                                   f"NCCL RAS names host {host!r}, which is not on the fabric: give the job's "
                                   "NCCL_DEBUG output (--nccl-debug) or the nodes' addresses in the fabric file"))
    for s in hostless:
        obs.probes.append(ProbeRun(SOURCE, s.source, "warning", 0.0, f"{_reason(s)} (NCCL gave no host)"))
    return out


def _finding(name: str, ids: list[str], sigs: list[RankSignal], evidence: list[NcclLogEvidence]) -> Finding:
    states = {s.state for s in sigs}
    fault = next(f for state, f in FAULTS if state in states)
    return Finding("", "host", name, fault, Severity.WARNING, 0.6, list(evidence), None, list(ids))
