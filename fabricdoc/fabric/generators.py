"""Reference fabric generators: 2-level leaf/spine, 3-level k-ary fat-tree, rail-optimized.

Every node gets a deterministic GUID and every host port a LID so a generated
fabric can also be written as an ibsim net file and discovered for real.
"""

from __future__ import annotations

from fabricdoc.errors import TopologyError
from fabricdoc.model.memory import gc_paused
from fabricdoc.model.records import Node, PortRef
from fabricdoc.model.topology import Fabric

_GUID_BASE = {"host": 0x0002C90300000000, "switch": 0x0002C90200000000}


class _Builder:
    def __init__(self, name: str, source: str, lanes: int, lane_gbps: float) -> None:
        self.fabric = Fabric(name=name, source=source)
        self.lanes = lanes
        self.lane_gbps = lane_gbps
        self.count = {"host": 0, "switch": 0}
        self.next_lid = 1

    def node(self, node_id: str, kind: str, ports: int, **attrs: object) -> str:
        self.count[kind] += 1
        guid = f"0x{_GUID_BASE[kind] + self.count[kind]:016x}"
        if kind == "host":
            attrs.setdefault("host", node_id)
        node = Node(id=node_id, kind=kind, label=node_id, num_ports=ports, guid=guid, attrs=attrs)  # type: ignore[arg-type]
        if kind == "switch":
            node.lid = self.next_lid
            self.next_lid += 1
        self.fabric.add_node(node)
        if kind == "host":
            for p in range(1, ports + 1):
                self.fabric.port_lids[PortRef(node_id, p)] = self.next_lid
                self.next_lid += 1
        return node_id

    def link(self, a: str, pa: int, b: str, pb: int) -> None:
        self.fabric.add_link(
            PortRef(a, pa), PortRef(b, pb), lanes=self.lanes, lane_gbps=self.lane_gbps
        )


@gc_paused()  # hundreds of thousands of nodes and links, no garbage: no collection passes
def fat_tree_2(
    leaves: int = 4,
    spines: int = 2,
    hosts_per_leaf: int = 4,
    links_per_spine: int = 1,
    *,
    name: str | None = None,
    lanes: int = 4,
    lane_gbps: float = 100.0,
) -> Fabric:
    """Two-level leaf/spine: every leaf cabled to every spine ``links_per_spine`` times."""
    if min(leaves, spines, hosts_per_leaf, links_per_spine) < 1:
        raise TopologyError("fat_tree_2: every count must be at least 1")
    b = _Builder(name or f"fat-tree-2L-{leaves * hosts_per_leaf}", "generator:fat_tree_2", lanes, lane_gbps)
    up_ports = spines * links_per_spine
    for s in range(spines):
        b.node(f"spine{s + 1:02d}", "switch", leaves * links_per_spine, level=2)
    for leaf in range(leaves):
        lname = b.node(f"leaf{leaf + 1:02d}", "switch", hosts_per_leaf + up_ports, level=1)
        for h in range(hosts_per_leaf):
            hname = b.node(f"node{leaf * hosts_per_leaf + h + 1:04d}", "host", 1, leaf=lname)
            b.link(hname, 1, lname, h + 1)
        for s in range(spines):
            for k in range(links_per_spine):
                b.link(
                    lname,
                    hosts_per_leaf + s * links_per_spine + k + 1,
                    f"spine{s + 1:02d}",
                    leaf * links_per_spine + k + 1,
                )
    return b.fabric


@gc_paused()  # hundreds of thousands of nodes and links, no garbage: no collection passes
def fat_tree_3(k: int = 4, *, name: str | None = None, lanes: int = 4, lane_gbps: float = 100.0) -> Fabric:
    """Three-level k-ary fat-tree (Al-Fares): k pods, (k/2)^2 cores, k^3/4 hosts."""
    if k < 2 or k % 2:
        raise TopologyError(f"fat_tree_3: k must be even and >= 2, got {k}")
    h = k // 2
    b = _Builder(name or f"fat-tree-3L-k{k}", "generator:fat_tree_3", lanes, lane_gbps)
    for c in range(h * h):
        b.node(f"core{c + 1:04d}", "switch", k, level=3)
    host_no = 0
    for pod in range(k):
        for a in range(h):
            agg = b.node(f"agg-p{pod + 1:02d}-{a + 1:02d}", "switch", k, level=2, pod=pod)
            for j in range(h):
                b.link(agg, h + j + 1, f"core{a * h + j + 1:04d}", pod + 1)
        for e in range(h):
            edge = b.node(f"edge-p{pod + 1:02d}-{e + 1:02d}", "switch", k, level=1, pod=pod)
            for a in range(h):
                b.link(edge, h + a + 1, f"agg-p{pod + 1:02d}-{a + 1:02d}", e + 1)
            for j in range(h):
                host_no += 1
                hname = b.node(f"node{host_no:05d}", "host", 1, pod=pod, leaf=edge)
                b.link(hname, 1, edge, j + 1)
    return b.fabric


@gc_paused()  # hundreds of thousands of nodes and links, no garbage: no collection passes
def rail_optimized(
    units: int = 2,
    hosts_per_unit: int = 4,
    rails: int = 8,
    spines: int = 4,
    *,
    name: str | None = None,
    lanes: int = 4,
    lane_gbps: float = 100.0,
) -> Fabric:
    """Rail-optimized GPU cluster (DGX SuperPOD style).

    Each host has ``rails`` NIC ports; port r of every host in a scalable unit
    goes to that unit's rail-r leaf; each leaf has as many uplinks as hosts,
    spread over the spines, so the leaf is non-blocking.
    """
    if min(units, hosts_per_unit, rails, spines) < 1:
        raise TopologyError("rail_optimized: every count must be at least 1")
    if hosts_per_unit % spines:
        raise TopologyError(
            f"rail_optimized: hosts_per_unit ({hosts_per_unit}) must be a multiple of spines ({spines})"
        )
    per_spine = hosts_per_unit // spines
    leaves = units * rails
    b = _Builder(
        name or f"rail-optimized-{units * hosts_per_unit}x{rails}", "generator:rail_optimized", lanes, lane_gbps
    )
    for s in range(spines):
        b.node(f"spine{s + 1:02d}", "switch", leaves * per_spine, level=2)
    hosts = []
    for u in range(units):
        for i in range(hosts_per_unit):
            hosts.append(b.node(f"gpu{u * hosts_per_unit + i + 1:04d}", "host", rails, unit=u))
    for u in range(units):
        for r in range(rails):
            leaf_idx = u * rails + r
            lname = b.node(
                f"leaf-su{u + 1:02d}-r{r + 1}", "switch", hosts_per_unit * 2, level=1, unit=u, rail=r
            )
            for i in range(hosts_per_unit):
                b.link(hosts[u * hosts_per_unit + i], r + 1, lname, i + 1)
            for s in range(spines):
                for k in range(per_spine):
                    b.link(
                        lname,
                        hosts_per_unit + s * per_spine + k + 1,
                        f"spine{s + 1:02d}",
                        leaf_idx * per_spine + k + 1,
                    )
    return b.fabric


GENERATORS = {"fat_tree_2": fat_tree_2, "fat_tree_3": fat_tree_3, "rail_optimized": rail_optimized}
