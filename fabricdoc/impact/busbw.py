"""AllReduce impact: the bus bandwidth a job gets from the fabric, nominal, now, and after a drain.

The model follows NCCL's large-message algorithms over the fabric's own routes:

- **Ring**: ranks are the job's hosts in sorted name order (what a launcher
  given a sorted host list assigns); rank i sends to rank i+1 as in NCCL
  (``ring_step=-1``: to rank i-1, as gloo's ring does). Routes are
  destination-based, so the two directions may cross different cables. On a host with
  several NIC ports (a rail-optimized fabric) each rail runs its own ring over
  port r of every host and the buffer is split evenly over the rails, so the
  slowest rail sets the pace. Every ring edge is a flow along ``Fabric.path``;
  a directed link carrying k flows gives each ``capacity / k``; the ring runs at
  its slowest hop. nccl-tests busbw is then ``rails x min(capacity / flows)``.
- **Tree**: NCCL's double binary tree (``ncclGetBtree``; the second tree is the
  first mirrored for an even rank count, shifted by one for an odd one). Each
  tree carries half the buffer; every tree edge carries it both ways (reduce
  up, broadcast down). The link-load bound gives
  ``busbw = 4 x rails x (n-1)/n x min(capacity / flows)``.

Both are the bulk link-load bound: time = max over directed links of bytes /
capacity, which a pipelined ring or tree reaches at large message sizes.

How findings change capacity ("now"), decided here once:

- link (or nic/port) ``down``, switch ``dead``/``down``, host/nic ``dead``/``down``:
  the links are down; routes are recomputed without them (OpenSM or ECMP
  route around a dead part); a host left without a route makes the job 0.
- ``hung``: the link is up but its tests never finished: capacity 0.
- ``width_degraded`` / ``speed_degraded``: the fabric's Link already carries the
  trained lanes and lane rate; the finding's StateEvidence ``lanes`` / ``lane_gbps``
  lowers it further.
- a link, port or NIC finding with slow-test evidence (SlowPairsEvidence, as ``degraded_bandwidth``
  has), congestion excepted: capacity = the median of its ``median_ratio`` values x
  the smaller of the link's nominal rate and the median ``expected_gbps`` of its slow
  pairs (a pair tested alone runs at its bottleneck link's rate).
- anything else (symbol errors, flapping, congestion, corruption) leaves the
  capacity alone: it costs reliability, which the job cost counts, not bandwidth.
- a switch, host or GPU finding that is not ``dead``/``down`` names no single link:
  no capacity change (a GPU finding never changes the fabric).

"Nominal" is every link up at ``Link.nominal_gbps`` (what both ends support).

Ports out of service (``what_if(..., isolate_links=...)``): each set of isolated
cables is a routing state of its own, "now" with those cables down and routes
recomputed by the fabric's engine (:mod:`fabricdoc.impact.reroute`); the job's
ring in that state is routed once and drains are then counted incrementally, as in "now".
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import chain
from typing import Any, NamedTuple

import numpy as np

from fabricdoc.errors import FabricdocError, TopologyError
from fabricdoc.fabric.identity import host_name, host_rails
from fabricdoc.impact.collectives import dtree_parents, job_ring, ring_edges
from fabricdoc.impact.effects import link_effects, restated
from fabricdoc.impact.flow_routes import FlowRoutes
from fabricdoc.impact.reroute import ENGINES, engine_of, link_names, rerouted, resolve_link
from fabricdoc.model.findings import Finding
from fabricdoc.model.memory import gc_paused
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric
from fabricdoc.model.updown_arrays import Cabling, UpDownArrays

ALGORITHMS: tuple[str, ...] = ("ring", "tree")
_MAX_ISOLATION_STATES = 64


class ImpactModel(FlowRoutes):
    """AllReduce busbw of a job over ``fabric``, nominal and with ``findings`` applied.

    Setup indexes the links, applies the findings and routes the job's ring
    once; ``busbw`` and ``what_if`` then only look up cached routes and count
    flows per directed link with numpy. A drain changes only the ring edges
    next to the drained hosts, so ``what_if`` and the drain search count those
    against the whole ring's cached counts instead of routing the ring again.
    """

    @gc_paused()  # a route per ring edge and rail (65,536 at 8,192 x 8): no garbage, no collection passes
    def __init__(self, fabric: Fabric, findings: Iterable[Finding] = (), job_hosts: Iterable[str] | None = None,
                 *, ring_step: int = 1, routing_engine: str | None = None) -> None:
        if ring_step not in (1, -1):
            raise FabricdocError(f"ring_step must be 1 (NCCL) or -1 (gloo), got {ring_step}")
        self.fabric = fabric
        self.ring_step = ring_step
        self.engine = routing_engine or engine_of(fabric)  # how isolated ports are routed around
        if self.engine not in ENGINES:
            raise FabricdocError(f"unknown routing engine {self.engine!r} (one of {', '.join(ENGINES)})")
        self._isolated: dict[frozenset[LinkKey], str] = {}
        self.findings = list(findings)
        self.keys: list[LinkKey] = list(fabric.links)
        self.index = {k: i for i, k in enumerate(self.keys)}
        n_dir = 2 * len(self.keys)
        self.unroutable = n_dir  # one extra slot of capacity 0 for flows without a route
        self.effects, self.unmapped = link_effects(fabric, self.findings)
        nominal = np.fromiter((lk.nominal_gbps for lk in fabric.links.values()), dtype=float, count=len(self.keys))
        now = np.fromiter((lk.capacity_gbps for lk in fabric.links.values()), dtype=float, count=len(self.keys))
        for key, eff in self.effects.items():
            i = self.index[key]
            now[i] = min(now[i], eff.capacity_gbps)
        self.capacity = {
            "nominal": np.append(np.repeat(nominal, 2), 0.0),
            "now": np.append(np.repeat(now, 2), 0.0),
        }
        down_now = {k for k, lk in fabric.links.items() if lk.state == "down"}
        down_now |= {k for k, e in self.effects.items() if e.down}
        any_down = any(lk.state == "down" for lk in fabric.links.values())
        nominal_routes = restated(fabric, None) if any_down else fabric
        now_routes = nominal_routes if not down_now else (
            fabric if down_now == {k for k, lk in fabric.links.items() if lk.state == "down"} else restated(fabric, down_now)
        )
        self.routes: dict[str, Fabric] = {"nominal": nominal_routes, "now": now_routes}
        self._down_now = down_now
        self._flows: dict[str, dict[int, tuple[int, ...]]] = {"nominal": {}, "now": {}}
        if now_routes is nominal_routes:
            self._flows["now"] = self._flows["nominal"]
        self._cabling: Cabling | None = None
        self._arrays: dict[str, UpDownArrays | None] = {}
        self._fabric_routing: UpDownArrays | None = None  # the fabric's own routes, for fabric_path
        self._port_arrays: tuple[np.ndarray, np.ndarray] | None = None  # self.ports as node indexes, numbers

        # Scheduler host name -> its cabled ports in rail order.
        # (host_rails leaves out HCAs no description names: they cannot be a job's host.)
        self.host_ports: dict[str, list[PortRef]] = host_rails(fabric)
        self.ports: list[PortRef] = [p for ports in self.host_ports.values() for p in ports]
        # Port ids by host: row ``_host_row[h]`` of ``_port_table``, rail by rail (-1 past a host's last rail).
        self._host_row = {h: i for i, h in enumerate(self.host_ports)}
        rails = np.fromiter(map(len, self.host_ports.values()), dtype=np.int64, count=len(self.host_ports))
        rail = np.arange(int(rails.max(initial=0)), dtype=np.int64)
        table = (np.cumsum(rails) - rails)[:, None] + rail[None, :]  # self.ports lists them host by host
        self._port_table = np.where(rail[None, :] < rails[:, None], table, -1)
        self._rail_count = {h: len(ports) for h, ports in self.host_ports.items()}
        counts = set(self._rail_count.values())
        self._uniform_rails = counts.pop() if len(counts) == 1 else None  # every host has as many ports
        self.job_hosts = self.resolve_hosts(job_hosts) if job_hosts is not None else job_ring(self.host_ports)
        self._job_set = set(self.job_hosts)
        self._job_pos = {h: i for i, h in enumerate(self.job_hosts)}
        self._nominal_cache: dict[str, float] = {}
        self._ring_base_of: dict[str, _RingBase] = {}  # state -> the job ring's flows and counts
        for state in ("nominal", "now"):
            self._ring_flows(self.job_hosts, state)  # route the job's ring once

    # -- hosts -----------------------------------------------------------
    def resolve_hosts(self, names: Iterable[str]) -> list[str]:
        """Scheduler host names for ``names`` (host names, node ids, labels or GUIDs), sorted."""
        out = set()
        for name in names:
            name = str(name).strip()
            if not name:
                continue
            if name in self.host_ports:
                out.add(name)
                continue
            try:
                out.add(host_name(self.fabric, self.fabric.resolve_node(name)))
            except TopologyError:
                raise TopologyError(f"job host {name!r} is not a host of fabric {self.fabric.name!r}") from None
        missing = [h for h in out if h not in self.host_ports]
        if missing:
            raise TopologyError(f"job host {missing[0]!r} has no cabled port")
        return job_ring(out)

    def _as_host(self, name: str) -> str:
        if name in self.host_ports:
            return name
        try:
            return host_name(self.fabric, self.fabric.resolve_node(name))
        except TopologyError:
            return name

    def _ranks(self, hosts: Iterable[str] | None) -> list[str]:
        if hosts is None:
            return self.job_hosts
        ranks = job_ring(hosts)
        for h in ranks:
            if h not in self.host_ports:
                return self.resolve_hosts(ranks)
        return ranks

    # -- flows -----------------------------------------------------------
    def _rails(self, ranks: Sequence[str]) -> int:
        if ranks and self._uniform_rails is not None:
            return self._uniform_rails
        return min(map(self._rail_count.__getitem__, ranks))

    def _port_matrix(self, ranks: Sequence[str], rails: int) -> np.ndarray:
        """Port ids of ``ranks`` x ``rails`` (row: rank, column: rail)."""
        rows = np.fromiter(map(self._host_row.__getitem__, ranks), dtype=np.int64, count=len(ranks))
        return self._port_table[rows, :rails]

    def _ring_flows(self, ranks: Sequence[str], state: str) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """Flows of the ring over ``ranks``, rail by rail (flow ``r * n + i``: rank i's send on rail r), and their rails."""
        n = len(ranks)
        if n < 2:
            return [], np.zeros(0, dtype=np.int64)
        rails = self._rails(ranks)
        ports = self._port_matrix(ranks, rails)
        edges = np.asarray(ring_edges(n, self.ring_step), dtype=np.int64).reshape(-1, 2)
        src, dst = ports[edges[:, 0]].T, ports[edges[:, 1]].T
        rail_of = np.repeat(np.arange(rails, dtype=np.int64), len(edges))
        return self._flow_ids(state, src.ravel(), dst.ravel()), rail_of

    def _tree_flows(self, ranks: Sequence[str], state: str) -> tuple[list[tuple[int, ...]], np.ndarray]:
        """Flows of both trees over ``ranks``: per child, per rail, child to parent then parent to child."""
        rails = self._rails(ranks)
        ports = self._port_matrix(ranks, rails)
        srcs, dsts = [], []
        for parents in dtree_parents(len(ranks)):
            child = np.flatnonzero(parents >= 0)
            up = np.stack([ports[child], ports[parents[child]]], axis=2)  # (child, rail, 2)
            down = up[:, :, ::-1]
            srcs.append(up.ravel())
            dsts.append(down.ravel())
        src = np.concatenate(srcs) if srcs else np.zeros(0, dtype=np.int64)
        dst = np.concatenate(dsts) if dsts else np.zeros(0, dtype=np.int64)
        rail_of = np.tile(np.repeat(np.arange(rails, dtype=np.int64), 2), src.size // (2 * rails) if rails else 0)
        return self._flow_ids(state, src, dst), rail_of

    # -- bandwidth -------------------------------------------------------
    def detail(self, hosts: Iterable[str] | None = None, algorithm: str = "ring", state: str = "now") -> dict[str, Any]:
        """busbw with its bottleneck (the directed link with the least capacity per flow) and per-rail figures."""
        if algorithm not in ALGORITHMS:
            raise FabricdocError(f"unknown AllReduce algorithm {algorithm!r} (ring or tree)")
        if state not in self.capacity:
            raise FabricdocError(f"unknown state {state!r} (nominal or now)")
        ranks = self._ranks(hosts)
        n = len(ranks)
        out: dict[str, Any] = {"algorithm": algorithm, "state": state, "hosts": n, "rails": 0,
                               "busbw_gbps": 0.0, "per_rail_gbps": [], "bottleneck": None}
        if n < 2:
            return out
        rails = self._rails(ranks)
        out["rails"] = rails
        if rails == 0:
            return out
        cap = self.capacity[state]
        if algorithm == "ring" and ranks is self.job_hosts:  # the whole job's ring: counted once, cached
            base = self._ring_base(state)
            ids, counts = base.ids, base.counts
            lens = _lengths(base.flows)
            rail_of = np.arange(len(base.flows), dtype=np.int64) // len(ranks)  # flow r * n + i is on rail r
        else:
            flows, rail_of = (self._ring_flows if algorithm == "ring" else self._tree_flows)(ranks, state)
            lens = _lengths(flows)
            ids = _joined(flows, lens)
            counts = np.bincount(ids, minlength=cap.size)
        used = np.flatnonzero(counts)
        per_flow = cap[used] / counts[used]
        j = int(np.argmin(per_flow))
        share = float(per_flow[j])
        factor = rails if algorithm == "ring" else 4.0 * rails * (n - 1) / n
        out["busbw_gbps"] = factor * share
        share_of = np.zeros(cap.size)
        share_of[used] = per_flow
        flow_rail = np.repeat(rail_of, lens)
        worst = np.full(rails, np.inf)
        np.minimum.at(worst, flow_rail, share_of[ids])
        out["per_rail_gbps"] = [float(factor / rails * w) for w in worst]
        out["bottleneck"] = self._describe(int(used[j]), int(counts[used[j]]), state)
        return out

    def ring_links(self, hosts: Iterable[str] | None = None, state: str = "now") -> set[LinkKey]:
        """The cables the job's ring traffic crosses (every rail, in ``state``'s routes)."""
        ranks = self._ranks(hosts)
        if len(ranks) < 2:
            return set()
        flows, _ = self._ring_flows(ranks, state)
        ids = np.unique(_joined(flows))
        return {self.keys[int(i) // 2] for i in ids if int(i) != self.unroutable}

    def busbw(self, hosts: Iterable[str] | None = None, algorithm: str = "ring", state: str = "now") -> float:
        """Predicted nccl-tests AllReduce busbw (Gb/s) of a job on ``hosts`` (default: the job's hosts)."""
        return float(self.detail(hosts, algorithm, state)["busbw_gbps"])

    def _describe(self, directed: int, flows: int, state: str) -> dict[str, Any]:
        if directed == self.unroutable:
            return {"link": None, "direction": None, "capacity_gbps": 0.0, "flows": flows,
                    "reason": "a host has no route (its links are down)"}
        key = self.keys[directed // 2]
        src, dst = (key.a, key.b) if directed % 2 == 0 else (key.b, key.a)
        label = self.fabric.label
        eff = self.effects.get(key) if state != "nominal" else None
        return {
            "link": [[label(key.a.node), key.a.port], [label(key.b.node), key.b.port]],
            "direction": f"{label(src.node)}[{src.port}] -> {label(dst.node)}[{dst.port}]",
            "capacity_gbps": float(self.capacity[state][directed]),
            "flows": flows,
            "reason": eff.rule if eff else None,
            "finding": eff.finding if eff else None,
            "measured": bool(eff and eff.measured),
        }

    # -- what-if ---------------------------------------------------------
    def isolation_state(self, isolate: Iterable[LinkKey]) -> str:
        """The routing state "now, with ``isolate`` out of service": routes recomputed by the
        model's engine around them (see :mod:`fabricdoc.impact.reroute`), their capacity 0.
        Returns the state's name for :meth:`busbw` / :meth:`detail`; ``now`` for no links."""
        iso = frozenset(isolate) - self._down_now
        if not iso:
            return "now"
        name = self._isolated.get(iso)
        if name is not None:
            return name
        if len(self._isolated) >= _MAX_ISOLATION_STATES:  # bound the cached routes of a long search
            for old in self._isolated.values():
                for table in (self.routes, self.capacity, self._flows, self._ring_base_of, self._arrays):
                    table.pop(old, None)
            self._isolated.clear()
        name = f"isolate:{len(self._isolated) + 1}:{len(iso)}"
        while name in self.routes:
            name += "'"
        self.routes[name] = rerouted(self.fabric, set(self._down_now) | set(iso), self.engine)
        cap = self.capacity["now"].copy()
        for key in iso:
            i = self.index[key]
            cap[2 * i] = cap[2 * i + 1] = 0.0
        self.capacity[name] = cap
        self._flows[name] = {}
        self._isolated[iso] = name
        return name

    def what_if(self, drain_hosts: Iterable[str], algorithms: Sequence[str] = ("ring",),
                isolate_links: Iterable[LinkKey] = ()) -> dict[str, Any]:
        """The job without ``drain_hosts`` and with ``isolate_links`` out of service: busbw now,
        against the whole job's nominal busbw.

        ``throughput_fraction`` = kept hosts x busbw over (all hosts x nominal busbw):
        the job's throughput if it were bound by AllReduce (weak scaling), which
        is what the alternatives are ranked by. Ring only by default (fast: the
        TUI calls this per key press); pass ``("ring", "tree")`` for both.
        Names may be host names, node ids, labels or GUIDs; hosts outside the job are ignored.
        ``isolate_links`` are :class:`LinkKey` s (or ``[[node, port], [node, port]]``); the fabric
        reroutes around them (:meth:`isolation_state`), and ``isolate`` lists them as
        ``[[label, port], [label, port]]``. Isolating a job host's only cable leaves it no route (busbw 0).
        """
        drained = sorted({self._as_host(h) for h in drain_hosts} & self._job_set)
        gone = set(drained)
        kept = [h for h in self.job_hosts if h not in gone]
        iso = sorted({resolve_link(self.fabric, k) for k in isolate_links})
        state = self.isolation_state(iso)
        out: dict[str, Any] = {"drain": drained, "isolate": link_names(self.fabric, iso), "hosts": len(kept)}
        for alg in algorithms:
            full = self._nominal(alg)
            if alg == "ring":
                bw = self._ring_without(gone, state)
            else:
                bw = self.busbw(kept, alg, state) if len(kept) >= 2 else 0.0
            out[f"{alg}_busbw_gbps"] = bw
            if alg == algorithms[0]:
                out["busbw_gbps"] = bw
                out["vs_nominal"] = bw / full if full else 0.0
                total = len(self.job_hosts)
                out["throughput_fraction"] = (len(kept) * bw) / (total * full) if full and total else 0.0
        return out

    def _ring_without(self, gone: set[str], state: str = "now") -> float:
        """Ring busbw in ``state`` of the job without ``gone``, from the job ring's flow counts.

        Only the edges touching a drained host change: they are taken out of the
        precomputed per-link counts and the edges that close the gaps are added.
        """
        drained = sorted(self._job_pos[h] for h in gone if h in self._job_pos)
        if len(self.job_hosts) - len(drained) < 2:
            return 0.0
        change = self._kept_ring(drained, state)
        if change is None:
            return self.busbw([h for h in self.job_hosts if h not in gone], "ring", state)
        counts, rails = change.counts, change.rails
        used = np.flatnonzero(counts)
        cap = self.capacity[state]
        return float(rails * np.min(cap[used] / counts[used]))

    def _kept_ring(self, drained: list[int], state: str) -> _KeptRing | None:
        """The job's ring without the hosts at sorted ring positions ``drained``, as a change of the
        whole ring's counts: the edges into or out of a drained host go, one edge per gap closes it.
        None when the hosts left have fewer rails than the job (then every rail's ring changes)."""
        base = self._ring_base(state)
        n = len(self.job_hosts)
        if not drained:
            return _KeptRing(base.counts, self._rails(self.job_hosts), set(), [], np.zeros(0, dtype=np.int64))
        gone = set(drained)
        rails = self._rails(self.job_hosts)
        if self._uniform_rails is None:
            kept_rails = self._rails([h for i, h in enumerate(self.job_hosts) if i not in gone])
            if kept_rails != rails:
                return None
        step = self.ring_step
        removed = {i for d in drained for i in (d, (d - step) % n)}  # edge i: rank i sends to i + step
        senders, receivers = [], []
        for d in drained:
            if (d - 1) % n in gone:
                continue  # not the first drained host of its gap
            a = (d - 1) % n  # the kept hosts either side of the gap
            b = (d + 1) % n
            while b in gone:
                b = (b + 1) % n
            src, dst = (a, b) if step == 1 else (b, a)
            senders.append(src)
            receivers.append(dst)
        ports = self._port_matrix([self.job_hosts[i] for i in senders + receivers], rails)
        k = len(senders)
        added = self._flow_ids(state, ports[:k].T.ravel(), ports[k:].T.ravel())  # flow r * k + j
        counts = base.counts.copy()
        gone_flows = [base.flows[r * n + i] for r in range(rails) for i in sorted(removed)]
        if gone_flows:
            counts -= np.bincount(_joined(gone_flows), minlength=counts.size)
        if added:
            counts += np.bincount(_joined(added), minlength=counts.size)
        return _KeptRing(counts, rails, removed, added, np.asarray(senders, dtype=np.int64))

    def _ring_base(self, state: str = "now") -> _RingBase:
        """The whole job ring's flows in ``state`` and their count per directed link (cached)."""
        cached = self._ring_base_of.get(state)
        if cached is None:
            flows, _ = self._ring_flows(self.job_hosts, state)
            lens = _lengths(flows)
            ids = _joined(flows, lens)
            counts = np.bincount(ids, minlength=self.capacity[state].size)
            flow_of = np.repeat(np.arange(len(flows), dtype=np.int64), lens)
            cached = self._ring_base_of[state] = _RingBase(counts, flows, ids, flow_of)
        return cached

    @property
    def down_now(self) -> frozenset[LinkKey]:
        """Links down in the "now" state (down in the fabric, or by a finding): already routed around."""
        return frozenset(self._down_now)

    def nominal_busbw(self, algorithm: str = "ring") -> float:
        """The whole job's busbw with every link up at its nominal rate (cached)."""
        return self._nominal(algorithm)

    def _nominal(self, algorithm: str) -> float:
        if algorithm not in self._nominal_cache:
            self._nominal_cache[algorithm] = self.busbw(None, algorithm, "nominal")
        return self._nominal_cache[algorithm]

    def best_drains(self, k: int = 3, max_hosts: int = 2, algorithm: str = "ring", beam: int = 6,
                    candidates_per_step: int = 12, only_better: bool = True, *,
                    isolate: Sequence[LinkKey] = (), keep_drained: Iterable[str] = ()) -> list[dict[str, Any]]:
        """The ``k`` best drain sets adding at most ``max_hosts`` hosts to ``keep_drained``, best first.

        Beam search: candidates are the hosts at either end of the flows on the
        current bottleneck link plus the hosts the findings name; each step adds
        one host to the best sets so far. Ties go to fewer drained hosts. With
        ``only_better`` a set must beat draining only ``keep_drained`` to be listed.
        ``isolate``: links out of service in every set (see :meth:`what_if`).
        """
        algs = (algorithm,)
        named = self._finding_hosts()
        state = self.isolation_state(isolate)
        start = tuple(sorted({self._as_host(h) for h in keep_drained} & self._job_set))
        frontier: list[tuple[str, ...]] = [start]
        seen: dict[tuple[str, ...], dict[str, Any]] = {}
        for _ in range(max_hosts):
            nxt: list[tuple[str, ...]] = []
            for base in frontier:
                for host in self._candidates(base, named, state)[:candidates_per_step]:
                    cand = tuple(sorted({*base, host}))
                    if cand in seen or len(cand) == len(base):
                        continue
                    seen[cand] = self.what_if(cand, algs, isolate)
                    nxt.append(cand)
            nxt.sort(key=lambda c: (-seen[c]["throughput_fraction"], len(c), c))
            frontier = nxt[:beam]
            if not frontier:
                break
        ranked = sorted(seen.values(), key=lambda w: (-w["throughput_fraction"], len(w["drain"]), w["drain"]))
        if only_better:
            floor = self.what_if(start, algs, isolate)["throughput_fraction"]
            ranked = [w for w in ranked if w["throughput_fraction"] > floor * (1 + 1e-9)]
        return ranked[:k]

    def _finding_hosts(self) -> list[str]:
        out = []
        for key in self.effects:
            for end in (key.a, key.b):
                if self.fabric.nodes[end.node].kind == "host":
                    out.append(host_name(self.fabric, end.node))
        return [h for h in dict.fromkeys(out) if h in self._job_set]

    def _candidates(self, drained: Sequence[str], named: list[str], state: str = "now") -> list[str]:
        """Hosts at either end of the ring flows on the bottleneck link in ``state``, then the named hosts."""
        gone = set(drained)
        positions = sorted(self._job_pos[h] for h in gone if h in self._job_pos)
        n = len(self.job_hosts)
        m = n - len(positions)
        if m < 3:
            return []
        change = self._kept_ring(positions, state)
        if change is None:
            return self._candidates_routed(gone, named, state)
        cap = self.capacity[state]
        counts = change.counts
        used = np.flatnonzero(counts)
        per_flow = cap[used] / counts[used]
        is_hot = np.zeros(cap.size, dtype=bool)
        is_hot[used[per_flow <= per_flow.min() * (1 + 1e-9)]] = True
        # The kept ring's flow r * m + j is kept host j's send on rail r; a flow of the whole ring
        # that no drain touched is the same edge under the kept numbering.
        base = self._ring_base(state)
        hot = np.unique(base.flow_of[is_hot[base.ids]])
        pos = hot % n
        if change.removed:
            keep = ~np.isin(pos, np.fromiter(change.removed, dtype=np.int64))
            hot, pos = hot[keep], pos[keep]
        drained_at = np.asarray(positions, dtype=np.int64)
        kept_index = pos - np.searchsorted(drained_at, pos)
        flows = (hot // n) * m + kept_index
        if change.added:
            k = change.senders.size
            hot_added = [f for f, hops in enumerate(change.added) if is_hot[list(hops)].any()]
            if hot_added:
                at = np.asarray(hot_added, dtype=np.int64)
                sender = change.senders[at % k]
                flows = np.concatenate([flows, (at // k) * m + sender - np.searchsorted(drained_at, sender)])
        kept = [h for h in self.job_hosts if h not in gone]
        out: list[str] = []
        for f in np.unique(flows).tolist():
            i = f % m
            out += [kept[i], kept[(i + self.ring_step) % m]]
        return [h for h in dict.fromkeys(out + named) if h not in gone]

    def _candidates_routed(self, gone: set[str], named: list[str], state: str) -> list[str]:
        """:meth:`_candidates` with the kept hosts' ring routed from scratch (their rails differ from the job's)."""
        kept = [h for h in self.job_hosts if h not in gone]
        flows, _ = self._ring_flows(kept, state)
        cap = self.capacity[state]
        lens = _lengths(flows)
        ids = _joined(flows, lens)
        counts = np.bincount(ids, minlength=cap.size)
        used = np.flatnonzero(counts)
        per_flow = cap[used] / counts[used]
        is_hot = np.zeros(cap.size, dtype=bool)
        is_hot[used[per_flow <= per_flow.min() * (1 + 1e-9)]] = True
        flow_of = np.repeat(np.arange(len(flows)), lens)
        n = len(kept)
        out: list[str] = []
        for f in np.unique(flow_of[is_hot[ids]]).tolist():
            i = f % n
            out += [kept[i], kept[(i + self.ring_step) % n]]
        return [h for h in dict.fromkeys(out + named) if h not in gone]


class _RingBase(NamedTuple):
    """The whole job ring in one state: per-directed-link counts, each flow's link ids, and them joined."""

    counts: np.ndarray
    flows: list[tuple[int, ...]]
    ids: np.ndarray  # every flow's link ids, in flow order
    flow_of: np.ndarray  # the flow each entry of ``ids`` belongs to


class _KeptRing(NamedTuple):
    """The job ring without some hosts, as a change of the whole ring (see :meth:`ImpactModel._kept_ring`)."""

    counts: np.ndarray
    rails: int
    removed: set[int]  # ring positions whose send edge is gone
    added: list[tuple[int, ...]]  # the gap-closing flows, ``r * len(senders) + j``
    senders: np.ndarray  # ring position sending on gap-closing edge j


def _lengths(flows: Sequence[tuple[int, ...]]) -> np.ndarray:
    return np.fromiter(map(len, flows), dtype=np.int64, count=len(flows))


def _joined(flows: Sequence[tuple[int, ...]], lens: np.ndarray | None = None) -> np.ndarray:
    """Every flow's directed link ids, one array."""
    total = int(lens.sum()) if lens is not None else sum(map(len, flows))
    return np.fromiter(chain.from_iterable(flows), dtype=np.int64, count=total)
