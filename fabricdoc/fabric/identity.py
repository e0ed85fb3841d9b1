"""Host identity: which scheduler host a fabric node is, and records mapped onto fabric ids.

Records come from ``fabricdoc probe`` on each node, from a saved sweep, or from
nccl-tests logs; their node names may be labels, GUIDs or hostnames and
Ethernet records may name an interface instead of a port number, so each is
mapped onto the fabric's ids before analysis.
"""

from __future__ import annotations

import dataclasses

from fabricdoc.errors import TopologyError
from fabricdoc.model.records import Observations, ProbeRun
from fabricdoc.model.topology import Fabric


def host_name(fabric: Fabric, node_id: str) -> str:
    """The scheduler-facing host name of a host node (an HCA's host on InfiniBand)."""
    node = fabric.nodes.get(node_id)
    if node is None:
        return node_id
    return str(node.attrs.get("host") or node.label)


def host_nodes(fabric: Fabric, name: str) -> list[str]:
    """The fabric node ids of a host named as the scheduler names it (every HCA of a
    multi-HCA host), or of the node with that id, label or GUID; empty when unknown."""
    found = [n.id for n in fabric.hosts() if host_name(fabric, n.id) == name]
    if found:
        return sorted(found)
    try:
        return [fabric.resolve_node(name)]
    except TopologyError:
        return []


def port_for_ifname(fabric: Fabric, node_id: str, ifname: str | None) -> int | None:
    """The port a host's interface is cabled to, from the node's ``ifnames`` attribute."""
    if ifname is None:
        return None
    names = fabric.nodes[node_id].attrs.get("ifnames") or {}
    for port, name in names.items():
        if name == ifname:
            return int(port)
    return None


def align(fabric: Fabric, obs: Observations) -> Observations:
    """Map every record's node (label, GUID, id) and interface onto fabric ids and ports.

    Records about nodes the fabric does not have are dropped and counted in a
    ``ProbeRun`` with status ``error``, so the report says what it ignored.
    """
    unknown: dict[str, int] = {}
    cache: dict[str, str | None] = {}

    def node_of(name: str) -> str | None:
        if name not in cache:
            try:
                cache[name] = fabric.resolve_node(name)
            except TopologyError:
                cache[name] = None
        return cache[name]

    def fix(rec):
        nid = node_of(rec.node)
        if nid is None:
            unknown[rec.node] = unknown.get(rec.node, 0) + 1
            return None
        port = port_for_ifname(fabric, nid, getattr(rec, "ifname", None)) or rec.port
        if nid == rec.node and port == rec.port:
            return rec
        return dataclasses.replace(rec, node=nid, port=port)

    out = Observations(interval_s=obs.interval_s, probes=list(obs.probes), gpus=list(obs.gpus), extra=dict(obs.extra))
    for name in ("before", "after", "states", "events"):
        setattr(out, name, [r for r in (fix(x) for x in getattr(obs, name)) if r is not None])
    for p in obs.pairs:
        src, dst = node_of(p.src.node), node_of(p.dst.node)
        if src is None or dst is None:
            for n in (p.src.node, p.dst.node):
                if node_of(n) is None:
                    unknown[n] = unknown.get(n, 0) + 1
            continue
        out.pairs.append(dataclasses.replace(
            p, src=p.src._replace(node=src), dst=p.dst._replace(node=dst)))
    for name, count in sorted(unknown.items()):
        out.probes.append(ProbeRun("align", name, "error", 0.0, f"{count} records name a node not in the fabric"))
    return out
