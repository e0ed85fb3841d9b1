"""Which hosts to drain: the hosts a job cannot use safely because of the findings."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricdoc.fabric.identity import host_name
from fabricdoc.model.findings import Finding
from fabricdoc.model.topology import Fabric

# Faults that make a host unfit for a large job. Congestion and warnings are
# reported but do not drain: they are the fabric's problem, not the host's.
_DRAIN_SEVERITIES = {"error", "critical"}


@dataclass
class DrainEntry:
    """A host the scheduler should drain, why, and the keys of the findings that say so."""

    node: str
    reason: str
    findings: list[str] = field(default_factory=list)


def drain_list(fabric: Fabric, findings: list[Finding]) -> list[DrainEntry]:
    """Hosts to drain, one entry each, with the findings that put them there.

    A host is drained when an error or critical finding names it (its NIC, its
    GPU, the host, its own cable) or when its cable leads into a dead switch.
    Faults deeper in the fabric do not drain hosts: routing or the network
    team fixes those, and the impact section says what they cost.
    """
    reasons: dict[str, list[tuple[str, str]]] = {}
    for f in findings:
        if f.severity not in _DRAIN_SEVERITIES:
            continue
        if f.kind in ("host", "nic", "gpu"):
            for nid in f.node_ids:
                node = fabric.nodes.get(nid)
                if node is not None and node.kind == "host":
                    reasons.setdefault(host_name(fabric, nid), []).append((f.key, f"{f.kind} {f.fault}"))
        cut_hosts = set(_hosts_cut_off(fabric, f))
        for host in sorted(cut_hosts):
            reasons.setdefault(host, []).append((f.key, f"behind {f.kind} {f.name} ({f.fault})"))
        for host in _hosts_on_cable(fabric, f):
            if host not in cut_hosts:
                reasons.setdefault(host, []).append((f.key, f"its cable {f.name} ({f.fault})"))
    out = []
    for host in sorted(reasons):
        ids = sorted({fid for fid, _ in reasons[host]})
        why = "; ".join(dict.fromkeys(r for _, r in reasons[host]))
        out.append(DrainEntry(node=host, reason=why, findings=ids))
    return out


def _hosts_cut_off(fabric: Fabric, f: Finding) -> list[str]:
    """Hosts whose host-facing link is this (down or dead) component."""
    if f.fault not in ("down", "dead"):
        return []
    if f.kind == "switch":
        out = []
        for nid in f.node_ids:
            for link in fabric.node_links(nid) if nid in fabric.nodes else []:
                for end in (link.key.a, link.key.b):
                    node = fabric.nodes[end.node]
                    if node.kind == "host":
                        out.append(host_name(fabric, node.id))
        return sorted(set(out))
    if f.kind == "link" and f.endpoints:
        return sorted(
            {host_name(fabric, nid) for nid in f.node_ids if nid in fabric.nodes and fabric.nodes[nid].kind == "host"}
        )
    return []


def _hosts_on_cable(fabric: Fabric, f: Finding) -> list[str]:
    """Hosts at either end of a failing link (a host's own cable or NIC port)."""
    if f.kind != "link":
        return []
    return sorted(
        {host_name(fabric, nid) for nid in f.node_ids if nid in fabric.nodes and fabric.nodes[nid].kind == "host"}
    )
