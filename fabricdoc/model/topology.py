"""The fabric graph and its routing.

A :class:`Fabric` holds hosts, switches and the cables between their ports in a
networkx multigraph (two switches may share several cables). Routing gives the
deterministic path of every (source port, destination port) pair: from the
switches' linear forwarding tables when the fabric told us them (OpenSM's
LFTs), else a D-mod-K style up/down fat-tree routing. Ethernet ECMP path sets
come from :meth:`Fabric.ecmp_paths`.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import networkx as nx

from fabricdoc.errors import TopologyError
from fabricdoc.model.memory import gc_paused
from fabricdoc.model.records import Link, LinkKey, Node, PortRef

MAX_CLIMB = 16  # up hops a route takes at most before it gives up (a loop in a miscabled fabric)


@dataclass
class Fabric:
    """Hosts, switches and links, plus optional forwarding tables.

    ``lfts`` maps a switch id to ``{destination LID: output port}`` as read
    from the switch (ibroute); when present it decides every path.
    """

    name: str
    source: str = "memory"
    nodes: dict[str, Node] = field(default_factory=dict)
    links: dict[LinkKey, Link] = field(default_factory=dict)
    lfts: dict[str, dict[int, int]] = field(default_factory=dict)
    port_lids: dict[PortRef, int] = field(default_factory=dict)
    _port_link: dict[PortRef, LinkKey] = field(default_factory=dict, repr=False)
    _route_cache: dict[tuple[PortRef, PortRef], tuple[LinkKey, ...]] = field(
        default_factory=dict, repr=False
    )
    _updown: _UpDown | None = field(default=None, repr=False)
    _levels: dict[str, int] | None = field(default=None, repr=False)
    _node_index: dict[str, list[tuple[PortRef, LinkKey]]] | None = field(default=None, repr=False)

    # -- building ---------------------------------------------------------
    def add_node(self, node: Node) -> Node:
        if node.id in self.nodes:
            raise TopologyError(f"duplicate node {node.id!r}")
        self.nodes[node.id] = node
        return node

    def add_link(
        self,
        a: PortRef,
        b: PortRef,
        *,
        lanes: int = 4,
        lane_gbps: float = 100.0,
        max_lanes: int | None = None,
        max_lane_gbps: float | None = None,
        state: str = "up",
    ) -> Link:
        link = self._cable(a, b, lanes, lane_gbps, max_lanes, max_lane_gbps, state)
        self.invalidate()
        return link

    def add_links(self, cables: Iterable[tuple[PortRef, PortRef, int, float, int | None, float | None, str]],
                  *, checked: bool = False) -> None:
        """:meth:`add_link` for many cables, each ``(a, b, lanes, lane_gbps, max_lanes, max_lane_gbps, state)``:
        the same checks, the derived indexes reset once (a report's 196,608 cables at 65,536 hosts).

        ``checked``: the caller has already made every check :meth:`add_link` makes (both ends are
        nodes of this fabric, ports in range, no port cabled twice or already, no loop), in bulk.
        """
        try:
            put = self._put if checked else self._cable
            for cable in cables:
                put(*cable)
        finally:
            self.invalidate()

    def _cable(self, a: PortRef, b: PortRef, lanes: int, lane_gbps: float, max_lanes: int | None,
               max_lane_gbps: float | None, state: str) -> Link:
        """Check and add one cable; the caller resets the derived indexes."""
        na, nb = self.nodes.get(a.node), self.nodes.get(b.node)
        if (na is None or nb is None or not 1 <= a.port <= na.num_ports or not 1 <= b.port <= nb.num_ports
                or a in self._port_link or b in self._port_link or a == b):
            self._refuse(a, b)
        return self._put(a, b, lanes, lane_gbps, max_lanes, max_lane_gbps, state)

    def _put(self, a: PortRef, b: PortRef, lanes: int, lane_gbps: float, max_lanes: int | None,
             max_lane_gbps: float | None, state: str) -> Link:
        """File one checked cable (both ends' supported width and rate default to the trained ones)."""
        key = LinkKey.of(a, b)
        link = self.links[key] = Link(key, lanes, lane_gbps, lanes if max_lanes is None else max_lanes,
                                      lane_gbps if max_lane_gbps is None else max_lane_gbps, state)  # type: ignore[arg-type]
        self._port_link[a] = self._port_link[b] = key
        return link

    def _refuse(self, a: PortRef, b: PortRef) -> None:
        """Raise why cable ``a``--``b`` cannot be added."""
        for end in (a, b):
            node = self.nodes.get(end.node)
            if node is None:
                raise TopologyError(f"link {a}--{b}: unknown node {end.node!r}")
            if not 1 <= end.port <= node.num_ports:
                raise TopologyError(
                    f"link {a}--{b}: node {end.node!r} has no port {end.port} "
                    f"(it has {node.num_ports})"
                )
            if end in self._port_link:
                raise TopologyError(f"link {a}--{b}: port {end} is already cabled")
        raise TopologyError(f"link {a}--{b} loops back to itself")

    def routes_cached(self) -> int:
        """How many routes are cached now: a mark for :meth:`clear_route_cache`."""
        return len(self._route_cache)

    def clear_route_cache(self, since: int = 0) -> None:
        """Forget the routes cached after mark ``since`` (all of them by default); they are
        recomputed on demand. A planner that looked at many candidate pairs calls this so
        their routes do not outlive the plan, while routes cached before it stay warm."""
        cache = self._route_cache
        if since <= 0:
            cache.clear()
            return
        for key in list(itertools.islice(cache, since, None)):  # a dict keeps insertion order
            del cache[key]

    def invalidate(self) -> None:
        """Forget the routes, levels and indexes worked out from the cabling and tables.

        Call it after changing the fabric in place (a link's ``state``, lanes or rate,
        ``lfts``, ``port_lids``): they are worked out again on demand. Adding a link does it.
        """
        self._route_cache.clear()
        self._updown = None
        self._levels = None
        self._node_index = None

    # -- queries ----------------------------------------------------------
    def hosts(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == "host"]

    def switches(self) -> list[Node]:
        return [n for n in self.nodes.values() if n.kind == "switch"]

    def link_at(self, port: PortRef) -> Link | None:
        key = self._port_link.get(port)
        return self.links.get(key) if key else None

    def peer(self, port: PortRef) -> PortRef | None:
        key = self._port_link.get(port)
        return key.other(port) if key else None

    def host_ports(self, host: str | None = None) -> list[PortRef]:
        """Cabled ports of one host, or of every host, in a stable order (hosts by id, ports ascending)."""
        names = [host] if host else sorted(n.id for n in self.hosts())
        index = self._cabled_ports()
        out: list[PortRef] = []
        for name in names:
            if name not in self.nodes:
                raise KeyError(name)
            out.extend(p for p, _ in index.get(name, ()))
        return out

    def cabled_ports(self, node_id: str) -> list[PortRef]:
        """A node's cabled ports in port order (an index built once for every node)."""
        return [p for p, _ in self._cabled_ports().get(node_id, ())]

    def node_links(self, node_id: str) -> list[Link]:
        """A node's cables in port order (an index built once, not a walk over a 2,048-port spine's ports)."""
        if node_id not in self.nodes:
            raise KeyError(node_id)
        return [self.links[k] for _, k in self._cabled_ports().get(node_id, ())]

    def ports_below(self, switch: str, memo: dict[str, list[PortRef]] | None = None) -> list[PortRef]:
        """Host ports reachable from ``switch`` by going only down (toward hosts): a leaf's own (in
        :meth:`host_ports` order), above it those of the switches one level down over cables that are up.
        ``memo`` keeps each switch's answer across calls (a planner asks about many)."""
        memo = {} if memo is None else memo
        got = memo.get(switch)
        if got is None:
            levels = self.levels()
            mine = levels.get(switch, 0)
            if mine <= 1:
                got = sorted(k.other(p) for p, k in self._cabled_ports().get(switch, ())
                             if self.nodes[k.other(p).node].kind == "host")
            else:
                seen: dict[PortRef, None] = {}
                for link in self.node_links(switch):
                    other = link.key.b if link.key.a.node == switch else link.key.a
                    if link.state == "up" and levels.get(other.node, 0) == mine - 1:
                        seen.update(dict.fromkeys(self.ports_below(other.node, memo)))
                got = list(seen)
            memo[switch] = got
        return got

    def ports_below_cable(self, key: LinkKey, memo: dict[str, list[PortRef]] | None = None) -> list[PortRef]:
        """The host ports a cable carries the traffic of from below: its host end's, or, between switches,
        every host port below its lower end (:meth:`ports_below`)."""
        ends = [e for e in (key.a, key.b) if e.node in self.nodes]
        hosts = [e for e in ends if self.nodes[e.node].kind == "host"]
        if hosts or not ends:
            return hosts
        levels = self.levels()
        return self.ports_below(min(ends, key=lambda e: levels.get(e.node, 0)).node, memo)

    def _cabled_ports(self) -> dict[str, list[tuple[PortRef, LinkKey]]]:
        """Node id -> its cabled ports and their cables in port order, built once per cabling."""
        if self._node_index is None:
            index: dict[str, list[tuple[PortRef, LinkKey]]] = {}
            for entry in self._port_link.items():
                index.setdefault(entry[0].node, []).append(entry)
            for ports in index.values():
                if len(ports) > 1:
                    ports.sort(key=_port_number)
            self._node_index = index
        return self._node_index

    def label(self, node_id: str) -> str:
        node = self.nodes.get(node_id)
        return node.label if node else node_id

    def resolve_port(self, text_node: str, port: int) -> PortRef:
        """Find a port by node id, label or GUID; raise TopologyError if unknown."""
        node_id = self.resolve_node(text_node)
        if not 1 <= port <= self.nodes[node_id].num_ports:
            raise TopologyError(f"node {text_node!r} has no port {port}")
        return PortRef(node_id, port)

    def resolve_node(self, text: str) -> str:
        if text in self.nodes:
            return text
        for node in self.nodes.values():
            if text in (node.label, node.guid):
                return node.id
        raise TopologyError(f"unknown node {text!r}")

    def levels(self) -> dict[str, int]:
        """Every node's hop distance from the nearest host over the cabling (hosts 0, leaves 1...).

        Levels are structural: a cable that is down still says where a switch sits.
        A switch no host reaches gets level 1.
        """
        if self._levels is None:
            self._levels = hop_levels({n.id: n.kind for n in self.nodes.values()},
                                      ((k.a.node, k.b.node) for k in self.links))
        return self._levels

    @property
    def graph(self) -> nx.MultiGraph:
        """The fabric as a networkx multigraph; edge keys are :class:`LinkKey`."""
        g = nx.MultiGraph(name=self.name)
        for node in self.nodes.values():
            g.add_node(node.id, kind=node.kind, label=node.label, **node.attrs)
        for key, link in self.links.items():
            g.add_edge(key.a.node, key.b.node, key=key, link=link)
        return g

    # -- routing ----------------------------------------------------------
    def path(self, src: PortRef, dst: PortRef) -> tuple[LinkKey, ...]:
        """Links a packet from host port ``src`` to host port ``dst`` crosses, in order."""
        cached = self._route_cache.get((src, dst))
        if cached is not None:
            return cached
        if src == dst:
            route: tuple[LinkKey, ...] = ()
        elif self.lfts:
            route = self._lft_path(src, dst)
        else:
            route = self._updown_routes().path(src, dst)
        self._route_cache[(src, dst)] = route
        return route

    def _lft_path(self, src: PortRef, dst: PortRef) -> tuple[LinkKey, ...]:
        lid = self.port_lids.get(dst)
        if lid is None:
            raise TopologyError(f"no LID known for destination port {dst}")
        hops: list[LinkKey] = []
        here = src
        for _ in range(64):
            key = self._port_link.get(here)
            if key is None:
                raise TopologyError(f"route {src} -> {dst}: port {here} is not cabled")
            hops.append(key)
            arrived = key.other(here)
            if arrived == dst:
                return tuple(hops)
            node = self.nodes[arrived.node]
            if node.kind != "switch":
                raise TopologyError(f"route {src} -> {dst} ended at host port {arrived}")
            table = self.lfts.get(node.id)
            if table is None or lid not in table:
                raise TopologyError(
                    f"route {src} -> {dst}: switch {node.label!r} has no LFT entry for LID {lid}"
                )
            out = table[lid]
            if not 1 <= out <= node.num_ports:
                raise TopologyError(
                    f"route {src} -> {dst}: switch {node.label!r} forwards LID {lid} to port {out}, "
                    f"which it does not have (it has {node.num_ports})"
                )
            here = PortRef(node.id, out)
        raise TopologyError(f"route {src} -> {dst}: loop in forwarding tables")

    def _updown_routes(self) -> _UpDown:
        if self._updown is None:
            with gc_paused():  # it only allocates: a collection pass over a large fabric costs more
                self._updown = _UpDown(self)
        return self._updown

    def ecmp_paths(self, src: PortRef, dst: PortRef, limit: int = 64) -> list[tuple[LinkKey, ...]]:
        """All shortest up/down paths (Ethernet ECMP), at most ``limit`` of them."""
        return self._updown_routes().all_paths(src, dst, limit)

    def copy(self) -> Fabric:
        """A copy whose links can change state or width; nodes and cabling are shared."""
        import copy

        return Fabric(
            name=self.name, source=self.source, nodes=self.nodes,
            links={k: copy.copy(v) for k, v in self.links.items()},
            lfts=self.lfts, port_lids=self.port_lids, _port_link=self._port_link,
        )

    def with_all_links_up(self) -> Fabric:
        """A copy whose down links are up again: the routes the fabric had before they failed."""
        up = self.copy()
        up.lfts = {}
        for link in up.links.values():
            link.state = "up"
        return up

    def summary(self) -> dict[str, int]:
        return {
            # A host with several HCAs (one per rail) is one host: identity sets attrs["host"].
            "hosts": len({n.attrs.get("host") or n.id for n in self.hosts()}),
            "switches": len(self.switches()),
            "links": len(self.links),
        }


def _port_number(entry: tuple[PortRef, LinkKey]) -> int:
    return entry[0].port


def hop_levels(kinds: Mapping[str, str], cables: Iterable[tuple[str, str]]) -> dict[str, int]:
    """The one level rule (:meth:`Fabric.levels`) over plain node kinds and cabled node pairs, so a
    report's topology gives it without rebuilding a Fabric: hop distance from the nearest host
    (hosts 0, leaves 1...), a switch no host reaches 1."""
    import numpy as np

    from fabricdoc.model.graph_arrays import hop_distances  # numpy: loaded when needed

    index = {n: i for i, n in enumerate(kinds)}
    ends: list[int] = []
    for x, y in cables:
        ends.append(index.setdefault(x, len(index)))
        ends.append(index.setdefault(y, len(index)))
    names = list(index)
    pairs = np.array(ends, dtype=np.int64).reshape(-1, 2)
    is_host = np.zeros(len(names), dtype=bool)
    is_host[[index[n] for n, kind in kinds.items() if kind == "host"]] = True
    dist = hop_distances(is_host, pairs[:, 0], pairs[:, 1])
    seen = np.flatnonzero(dist >= 0)
    levels = dict(zip([names[i] for i in seen.tolist()], dist[seen].tolist(), strict=True))
    for n, kind in kinds.items():
        if kind == "switch":
            levels.setdefault(n, 1)
    return levels


class _UpDown:
    """Up/down routing over switch levels, D-mod-K style.

    A switch's level is its distance from the nearest host port (leaf = 1).
    A packet climbs until it reaches a switch with the destination's leaf
    below it, choosing among the up ports that still reach that leaf by the
    destination index, so destinations spread evenly across spines, then
    descends the same way. Tables are built once per fabric state.
    """

    def __init__(self, fabric: Fabric) -> None:
        self.f = fabric
        self.level: dict[str, int] = fabric.levels()
        self.dst_index = {p: i for i, p in enumerate(fabric.host_ports())}
        # hop[port] = (cable, the port at its far end), for every cabled port of a live link.
        self.hop: dict[PortRef, tuple[LinkKey, PortRef]] = {}
        for key, link in fabric.links.items():
            if link.state != "down":
                self.hop[key.a] = (key, key.b)
                self.hop[key.b] = (key, key.a)
        self.up: dict[str, list[PortRef]] = {}
        self.down: dict[str, list[PortRef]] = {}
        for sw in fabric.switches():
            ups, downs = [], []
            mine = self.level[sw.id]
            for p in range(1, sw.num_ports + 1):
                here = PortRef(sw.id, p)
                far = self.hop.get(here)
                if far is None:
                    continue
                peer_level = self.level.get(far[1].node, 0)
                if peer_level > mine:
                    ups.append(here)
                elif peer_level < mine:
                    downs.append(here)
            self.up[sw.id] = ups
            self.down[sw.id] = downs
        by_level = sorted(fabric.switches(), key=lambda n: self.level[n.id])
        interned: dict[frozenset[str], frozenset[str]] = {}  # equal sets share one object
        # Leaves below each switch (equal sets shared).
        self.below: dict[str, frozenset[str]] = {}
        for sw in by_level:
            leaves: set[str] = set()
            for port in self.down[sw.id]:
                peer = self.hop[port][1].node
                if self.level.get(peer, 0) == 0:
                    leaves.add(sw.id)
                else:
                    leaves |= self.below.get(peer, frozenset())
            below = frozenset(leaves)
            self.below[sw.id] = interned.setdefault(below, below)
        # Down port numbers toward each leaf below, one table per wiring pattern: switches cabled
        # alike (every core of a fat-tree: port p to pod p) share one, so 65,536 hosts need a handful.
        patterns: dict[tuple[tuple[int, int], ...], dict[str, tuple[int, ...]]] = {}
        self.down_to: dict[str, dict[str, tuple[int, ...]]] = {}
        for sw in by_level:
            groups = tuple((id(self.below[peer]), port.port) for port in self.down[sw.id]
                           if self.level.get(peer := self.hop[port][1].node, 0) != 0)
            table = patterns.get(groups)
            if table is None:
                built: dict[str, list[int]] = {}
                for port in self.down[sw.id]:
                    peer = self.hop[port][1].node
                    if self.level.get(peer, 0) != 0:
                        for leaf in self.below[peer]:
                            built.setdefault(leaf, []).append(port.port)
                table = patterns[groups] = {leaf: tuple(nums) for leaf, nums in built.items()}
            self.down_to[sw.id] = table
        # Leaves a switch reaches by going up then down: an up port is only taken
        # when the switch above still reaches the destination.
        self.reach: dict[str, frozenset[str]] = {}
        self.up_common: dict[str, frozenset[str]] = {}
        for sw in reversed(by_level):
            aboves = {}
            for port in self.up[sw.id]:
                above = self.reach.get(self.hop[port][1].node, frozenset())
                aboves[id(above)] = above
            ups = list(aboves.values())
            if len(ups) == 1 and self.below[sw.id] <= ups[0]:
                reach = common = ups[0]  # every switch above reaches the same leaves (a fat-tree): share them
            else:
                leaves = set(self.below[sw.id])
                for above in ups:
                    leaves |= above
                common = frozenset.intersection(*ups) if ups else frozenset()
                reach = frozenset(leaves)
            self.reach[sw.id] = interned.setdefault(reach, reach)
            self.up_common[sw.id] = interned.setdefault(common, common)
        self._up_to: dict[tuple[str, str], list[PortRef]] = {}

    def _leaf_of(self, port: PortRef) -> str:
        far = self.hop.get(port)
        if far is None:
            raise TopologyError(f"host port {port} is not cabled (or its link is down)")
        return far[1].node

    def _ups_toward(self, here: str, dst_leaf: str) -> list[PortRef]:
        if dst_leaf in self.up_common[here]:
            return self.up[here]
        key = (here, dst_leaf)
        found = self._up_to.get(key)
        if found is None:
            found = [p for p in self.up[here] if dst_leaf in self.reach.get(self.hop[p][1].node, ())]
            self._up_to[key] = found
        return found

    def path(self, src: PortRef, dst: PortRef) -> tuple[LinkKey, ...]:
        if dst not in self.dst_index:
            raise TopologyError(f"{dst} is not a cabled host port")
        d = self.dst_index[dst]
        dst_leaf = self._leaf_of(dst)
        first = self.hop.get(src)
        if first is None:
            raise TopologyError(f"host port {src} is not cabled (or its link is down)")
        hops = [first[0]]
        here = first[1].node
        divisor = 1
        for _ in range(MAX_CLIMB):
            if dst_leaf in self.below[here]:
                break
            ups = self._ups_toward(here, dst_leaf)
            if not ups:
                raise TopologyError(f"no up route from {here!r} toward {dst}")
            key, far = self.hop[ups[(d // divisor) % len(ups)]]
            divisor *= len(ups)
            hops.append(key)
            here = far.node
        else:
            raise TopologyError(f"no route {src} -> {dst}")
        while here != dst_leaf:
            cands = self.down_to[here].get(dst_leaf)
            if not cands:
                raise TopologyError(f"no down route from {here!r} toward {dst}")
            key, far = self.hop[PortRef(here, cands[(d // divisor) % len(cands)])]
            divisor *= len(cands)
            hops.append(key)
            here = far.node
        hops.append(self.hop[dst][0])
        return tuple(hops)

    def all_paths(self, src: PortRef, dst: PortRef, limit: int) -> list[tuple[LinkKey, ...]]:
        dst_leaf = self._leaf_of(dst)
        src_leaf = self._leaf_of(src)
        first = self.hop[src][0]
        last = self.hop[dst][0]
        out: list[tuple[LinkKey, ...]] = []

        def down(node: str, acc: list[LinkKey]) -> None:
            if len(out) >= limit:
                return
            if node == dst_leaf:
                out.append((first, *acc, last))
                return
            for num in self.down_to[node].get(dst_leaf, ()):
                key, far = self.hop[PortRef(node, num)]
                down(far.node, [*acc, key])

        def up(node: str, acc: list[LinkKey]) -> None:
            if len(out) >= limit:
                return
            if dst_leaf in self.below[node]:
                down(node, acc)
                return
            for p in self._ups_toward(node, dst_leaf):
                key, far = self.hop[p]
                up(far.node, [*acc, key])

        up(src_leaf, [])
        return out
