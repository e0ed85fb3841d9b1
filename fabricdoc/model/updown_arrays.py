"""Up/down routes for many host-port pairs at once: the rule of ``Fabric.path`` on arrays.

The impact model routes a whole job's ring (131,072 flows at 65,536 hosts) in two
states of the fabric. Building the per-switch dicts of the up/down router
(:class:`fabricdoc.model.topology._UpDown`) and walking them pair by pair costs
seconds per state; this module holds the same rule as numpy arrays and walks
every pair one hop at a time together:

- a switch's *below* set (the leaves under it) and *reach* set (the leaves it
  reaches by going up then down) are bit rows, one bit per leaf;
- a pair climbs, while its destination's leaf is not below it, through the up
  ports (in port order) whose switch above reaches that leaf, picking
  ``(d // divisor) % count`` with ``d`` the destination's index among the
  fabric's host ports, then descends the same way through the down ports
  whose switch below has the leaf under it.

Routes come as *channel ids*: ``2 x`` the link's position in ``fabric.links``,
plus 0 when crossed from ``key.a`` to ``key.b`` and 1 the other way (what
:func:`fabricdoc.model.paths.directed` gives). A pair this cannot route as
``Fabric.path`` would (no up or down port toward the destination, an odd
cabling) is reported, never guessed: the caller asks ``Fabric.path`` for it.
Only for fabrics without forwarding tables (``Fabric.lfts`` empty).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence

import numpy as np

from fabricdoc.model.graph_arrays import find_sorted, hop_distances, offsets, spans
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import MAX_CLIMB, Fabric

ROUTED = 0
NO_CABLE = 1  # the source or destination port has no live cable: Fabric.path raises TopologyError
ASK = 2  # anything else this does not route: ask Fabric.path, which routes it or raises

_MAX_DOWN = 64  # a descent longer than this is a loop: asked of Fabric.path


class Cabling:
    """A fabric's nodes, levels and cables as arrays: what every routing state of it shares."""

    def __init__(self, fabric: Fabric, link_position: dict[LinkKey, int] | None = None) -> None:
        """``link_position``: each cable's position in ``fabric.links``, when the caller has it already."""
        self.fabric = fabric
        self.node_ids = list(fabric.nodes)
        self.node_index = {n: i for i, n in enumerate(self.node_ids)}
        n_nodes = len(self.node_ids)
        self.is_switch = np.fromiter((node.kind == "switch" for node in fabric.nodes.values()), dtype=bool,
                                     count=n_nodes)
        self.keys: list[LinkKey] = list(fabric.links)
        idx = self.node_index
        n = len(self.keys)
        self.a = np.fromiter((idx[k.a.node] for k in self.keys), dtype=np.int64, count=n)
        self.a_port = np.fromiter((k.a.port for k in self.keys), dtype=np.int64, count=n)
        self.b = np.fromiter((idx[k.b.node] for k in self.keys), dtype=np.int64, count=n)
        self.b_port = np.fromiter((k.b.port for k in self.keys), dtype=np.int64, count=n)
        self.port_span = int(max(self.a_port.max(initial=0), self.b_port.max(initial=0))) + 1
        is_host = np.fromiter((node.kind == "host" for node in fabric.nodes.values()), dtype=bool, count=n_nodes)
        dist = hop_distances(is_host, self.a, self.b)  # Fabric.levels' rule, on these arrays
        self.level = np.where(dist >= 0, dist, 1)  # a switch no host reaches is level 1
        # A destination's index d: its place among Fabric.host_ports() (hosts by id, ports ascending).
        host_rank = np.full(n_nodes, -1, dtype=np.int64)
        hosts = sorted(np.flatnonzero(is_host).tolist(), key=self.node_ids.__getitem__)
        host_rank[hosts] = np.arange(len(hosts), dtype=np.int64)
        ends_node = np.concatenate([self.a, self.b])
        ends_port = np.concatenate([self.a_port, self.b_port])
        on_host = host_rank[ends_node] >= 0
        self._host_port_keys = np.sort(host_rank[ends_node[on_host]] * self.port_span + ends_port[on_host])
        self._host_rank = host_rank
        self._link_position = link_position

    @property
    def link_position(self) -> dict[LinkKey, int]:
        """Each cable's position in ``fabric.links`` (built on first use)."""
        if self._link_position is None:
            self._link_position = {k: i for i, k in enumerate(self.keys)}
        return self._link_position

    def port_arrays(self, ports: Sequence[PortRef]) -> tuple[np.ndarray, np.ndarray]:
        """Node indexes and port numbers of ``ports`` (KeyError for a node the fabric lacks)."""
        idx = self.node_index
        nodes = np.fromiter((idx[p.node] for p in ports), dtype=np.int64, count=len(ports))
        nums = np.fromiter((p.port for p in ports), dtype=np.int64, count=len(ports))
        return nodes, nums

    def dst_index(self, nodes: np.ndarray, ports: np.ndarray) -> np.ndarray:
        """Each port's index among the fabric's cabled host ports; -1 where it is not one."""
        rank = self._host_rank[nodes]
        return np.where(rank >= 0, find_sorted(self._host_port_keys, rank * self.port_span + ports), -1)


class UpDownArrays:
    """One routing state of a fabric: exactly the links in ``down`` down, the rest up."""

    def __init__(self, cabling: Cabling, down: Collection[LinkKey]) -> None:
        c = self.cabling = cabling
        live = np.ones(len(c.keys), dtype=bool)
        if down:
            pos = c.link_position
            live[[pos[k] for k in down if k in pos]] = False
        ids = np.flatnonzero(live)
        # One entry per live cable end: (node, port) -> (node at the far end, channel leaving here).
        node = np.concatenate([c.a[ids], c.b[ids]])
        port = np.concatenate([c.a_port[ids], c.b_port[ids]])
        far = np.concatenate([c.b[ids], c.a[ids]])
        chan = np.concatenate([2 * ids, 2 * ids + 1])
        order = np.lexsort((port, node))
        self.node, self.port, self.far, self.chan = node[order], port[order], far[order], chan[order]
        self._entry_keys = self.node * c.port_span + self.port
        level, is_switch = c.level, c.is_switch
        here_sw = is_switch[self.node]
        far_sw = is_switch[self.far]
        up = here_sw & far_sw & (level[self.far] > level[self.node])
        down_sw = here_sw & far_sw & (level[self.far] < level[self.node])
        to_host = here_sw & (level[self.far] < level[self.node]) & (level[self.far] == 0)
        # Bit rows (64-bit words): one per switch, one bit per leaf (a switch with a live cable to a host).
        self.row = np.full(len(c.node_ids), -1, dtype=np.int64)
        switches = np.flatnonzero(is_switch)
        self.row[switches] = np.arange(switches.size)
        leaves = np.unique(self.node[to_host])
        self.col = np.full(len(c.node_ids), -1, dtype=np.int64)
        self.col[leaves] = np.arange(leaves.size)
        words = max(1, (leaves.size + 63) // 64)
        below = np.zeros((switches.size, words), dtype=np.uint64)
        np.bitwise_or.at(below, (self.row[leaves], self.col[leaves] >> 6),
                         np.left_shift(np.uint64(1), (self.col[leaves] & 63).astype(np.uint64)))
        self.up_off, self.up_far, self.up_chan = self._csr(up)
        self.down_off, self.down_far, self.down_chan = self._csr(down_sw)
        for lv in np.unique(level[switches]):  # children sit lower: their rows are final
            self._or_rows(below, below, down_sw & (level[self.node] == lv))
        reach = below.copy()
        for lv in np.unique(level[switches])[::-1]:  # switches above sit higher: their rows are final
            self._or_rows(reach, reach, up & (level[self.node] == lv))
        self.below, self.reach = below, reach
        # A switch whose every switch below is at level 1 (a spine over leaves) goes down toward leaf L
        # only by its cables to L (a level-1 switch has no leaf below it but itself): those are found by
        # key, not by a scan of every down port (a spine of 2,048 leaves, for each flow it carries).
        n_nodes = len(c.node_ids)
        mixed = np.zeros(n_nodes, dtype=bool)
        mixed[self.node[down_sw & (level[self.far] != 1)]] = True
        self.direct = ~mixed
        sel = down_sw & self.direct[self.node]
        keys = self.node[sel] * n_nodes + self.far[sel]
        order = np.argsort(keys, kind="stable")  # entries are in port order: stable keeps it per key
        self._direct_keys, self._direct_far, self._direct_chan = keys[order], self.far[sel][order], self.chan[sel][order]

    def _csr(self, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Offsets by node, far ends and channels of the entries in ``mask`` (in port order per node)."""
        return offsets(self.node[mask], len(self.cabling.node_ids)), self.far[mask], self.chan[mask]

    def _or_rows(self, into: np.ndarray, source: np.ndarray, mask: np.ndarray) -> None:
        """``into[node] |= source[far]`` over the entries in ``mask``, OR-ed per node."""
        if not mask.any():
            return
        nodes, fars = self.node[mask], self.far[mask]
        starts = np.flatnonzero(np.r_[True, nodes[1:] != nodes[:-1]])
        into[self.row[nodes[starts]]] |= np.bitwise_or.reduceat(source[self.row[fars]], starts, axis=0)

    def _bit(self, matrix: np.ndarray, nodes: np.ndarray, leaf_cols: np.ndarray) -> np.ndarray:
        """Whether each switch's row of ``matrix`` has the bit of its leaf column."""
        bits = matrix[self.row[nodes], leaf_cols >> 6] >> (leaf_cols & 63).astype(np.uint64)
        return (bits & np.uint64(1)).astype(bool)

    def _entry(self, nodes: np.ndarray, ports: np.ndarray) -> np.ndarray:
        """The live cable end at each (node, port); -1 where there is none."""
        return find_sorted(self._entry_keys, nodes * self.cabling.port_span + ports)

    def _pick(self, off: np.ndarray, fars: np.ndarray, chans: np.ndarray, matrix: np.ndarray, here: np.ndarray,
              leaf: np.ndarray, d: np.ndarray, div: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Per flow at switch ``here`` toward ``leaf``: of the ports in ``off`` whose far switch has the
        leaf in ``matrix``, the ``(d // div) % count``-th. Returns (far node, channel, count); count 0: none."""
        deg = off[here + 1] - off[here]
        flow, ent = spans(off[here], deg)
        first = np.cumsum(deg) - deg
        ok = self._bit(matrix, fars[ent], leaf[flow])
        count = np.bincount(flow, weights=ok, minlength=here.size).astype(np.int64)
        seen = np.cumsum(ok)
        rank = seen - 1 - np.concatenate([[0], seen])[first][flow]
        want = (d // div) % np.maximum(count, 1)
        hit = ok & (rank == want[flow])
        far = np.full(here.size, -1, dtype=np.int64)
        chan = np.full(here.size, -1, dtype=np.int64)
        far[flow[hit]] = fars[ent[hit]]
        chan[flow[hit]] = chans[ent[hit]]
        return far, chan, count

    def routes(self, src: Sequence[PortRef], dst: Sequence[PortRef]) -> tuple[list[tuple[int, ...] | None], np.ndarray]:
        """Channel ids of each ``src[i] -> dst[i]`` route and a status per pair (ROUTED, NO_CABLE,
        ASK); the route is None where the status is not ROUTED."""
        c = self.cabling
        return self.routes_of(*c.port_arrays(src), *c.port_arrays(dst))

    def routes_of(self, s_node: np.ndarray, s_port: np.ndarray, d_node: np.ndarray,
                  d_port: np.ndarray) -> tuple[list[tuple[int, ...] | None], np.ndarray]:
        """:meth:`routes` of ports given as node indexes (:attr:`Cabling.node_index`) and port numbers."""
        c = self.cabling
        n = s_node.size
        status = np.full(n, ASK, dtype=np.int64)
        if n == 0:
            return [], status
        same = (s_node == d_node) & (s_port == d_port)
        s_ent, d_ent = self._entry(s_node, s_port), self._entry(d_node, d_port)
        status[~same & ((s_ent < 0) | (d_ent < 0))] = NO_CABLE
        d = c.dst_index(d_node, d_port)
        leaf = np.where(d_ent >= 0, self.far[d_ent], -1)
        here = np.where(s_ent >= 0, self.far[s_ent], -1)
        go = ~same & (s_ent >= 0) & (d_ent >= 0) & (d >= 0)
        go[go] = (self.row[here[go]] >= 0) & (self.col[leaf[go]] >= 0)
        flows = np.flatnonzero(go)
        hop_flow = [flows]
        hop_chan = [self.chan[s_ent[flows]]]
        here, lf, dd = here[flows], self.col[leaf[flows]], d[flows]
        div = np.ones(flows.size, dtype=np.int64)
        cap = int(d.max(initial=0)) + 1  # past every d, (d // div) is 0: the divisor stops mattering

        def step(moving: np.ndarray, pick: Callable[..., tuple[np.ndarray, np.ndarray, np.ndarray]]) -> None:
            """One hop for every flow in ``moving``: ``pick`` gives its next switch, the channel there
            and how many ports it chose among; a flow with no port stops moving."""
            todo = np.flatnonzero(moving)
            far, chan, count = pick(todo)
            stuck = count == 0
            moving[todo[stuck]] = False
            moved = todo[~stuck]
            hop_flow.append(flows[moved])
            hop_chan.append(chan[~stuck])
            here[moved] = far[~stuck]
            div[moved] = np.minimum(div[moved] * count[~stuck], cap)

        def up(todo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            return self._pick(self.up_off, self.up_far, self.up_chan, self.reach, here[todo], lf[todo], dd[todo],
                              div[todo])

        target = leaf[flows]

        def down(todo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
            far = np.full(todo.size, -1, dtype=np.int64)
            chan = np.full(todo.size, -1, dtype=np.int64)
            count = np.zeros(todo.size, dtype=np.int64)
            direct = self.direct[here[todo]]
            at, scan = todo[direct], todo[~direct]
            key = here[at] * len(c.node_ids) + target[at]
            lo = np.searchsorted(self._direct_keys, key, side="left")
            count[direct] = np.searchsorted(self._direct_keys, key, side="right") - lo
            hit = count[direct] > 0
            chosen = (lo + (dd[at] // div[at]) % np.maximum(count[direct], 1))[hit]
            found = np.flatnonzero(direct)[hit]
            far[found], chan[found] = self._direct_far[chosen], self._direct_chan[chosen]
            if scan.size:
                far[~direct], chan[~direct], count[~direct] = self._pick(
                    self.down_off, self.down_far, self.down_chan, self.below, here[scan], lf[scan], dd[scan], div[scan])
            return far, chan, count

        descending = np.zeros(flows.size, dtype=bool)
        climbing = np.ones(flows.size, dtype=bool)
        for _ in range(MAX_CLIMB):  # as Fabric.path: it climbs at most this often, then gives up
            arrived = climbing & self._bit(self.below, here, lf)
            descending |= arrived
            climbing &= ~arrived
            if not climbing.any():
                break
            step(climbing, up)
        finished = np.zeros(flows.size, dtype=bool)
        for _ in range(_MAX_DOWN):
            at_leaf = descending & (here == target)
            finished |= at_leaf
            descending &= ~at_leaf
            if not descending.any():
                break
            step(descending, down)
        ok = flows[finished]
        hop_flow.append(ok)
        hop_chan.append(self.chan[d_ent[ok]] ^ 1)  # the last cable, leaf to destination
        status[ok] = ROUTED
        status[same] = ROUTED
        all_flow = np.concatenate(hop_flow)
        keep = status[all_flow] == ROUTED
        all_flow, all_chan = all_flow[keep], np.concatenate(hop_chan)[keep]
        order = np.argsort(all_flow, kind="stable")  # hops were gathered step by step: stable keeps their order
        chans = all_chan[order].tolist()
        lens = np.bincount(all_flow, minlength=n)
        out: list[tuple[int, ...] | None] = [None] * n
        at = 0
        for i, (length, st) in enumerate(zip(lens.tolist(), status.tolist(), strict=True)):
            if st == ROUTED:
                out[i] = tuple(chans[at:at + length])
                at += length
        return out, status
