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
  trained lanes and lane rate; evidence ``lanes`` / ``lane_gbps`` lowers it further.
- ``degraded_bandwidth`` (and any other fault whose evidence carries a measured
  ``ratio``, ``median_ratio`` or ``slow_pairs``): capacity = median ratio x the
  smaller of the link's nominal rate and the pairs' expected bandwidth (a pair
  tested alone runs at its bottleneck link's rate).
- evidence ``capacity_gbps`` / ``measured_gbps`` caps the link directly.
- anything else (symbol errors, flapping, congestion, corruption) leaves the
  capacity alone: it costs reliability, which the job cost counts, not bandwidth.
- a switch finding other than dead names no single link: no capacity change.

"Nominal" is every link up at ``Link.nominal_gbps`` (what both ends support).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from fabricdoc.drain import host_name
from fabricdoc.errors import FabricdocError, TopologyError
from fabricdoc.model import Finding, LinkKey, PortRef
from fabricdoc.topology import Fabric

Algorithm = Literal["ring", "tree"]
State = Literal["nominal", "now"]
ALGORITHMS: tuple[str, ...] = ("ring", "tree")

_DOWN_FAULTS = {"down", "dead"}
_NO_CAPACITY_FAULTS = {"hung"}
_IGNORE_RATIO_FAULTS = {"congestion"}  # load, not capacity


@dataclass(frozen=True)
class LinkEffect:
    """What one finding does to one link's capacity in the "now" state."""

    link: LinkKey
    capacity_gbps: float
    down: bool
    rule: str
    finding: str


# -- findings -> link capacities -----------------------------------------------------------


def finding_links(fabric: Fabric, finding: Finding) -> list[LinkKey]:
    """The cables a finding names: its endpoints, else the links between or at its nodes."""
    if finding.endpoints:
        keys = []
        for label, port in finding.endpoints:
            link = fabric.link_at(fabric.resolve_port(str(label), int(port)))
            if link is not None:
                keys.append(link.key)
        return list(dict.fromkeys(keys))
    ids = [fabric.resolve_node(n) for n in finding.node_ids]
    if finding.kind in ("switch", "host", "nic", "gpu"):
        return [lk.key for nid in ids for lk in fabric.node_links(nid)]
    if len(ids) == 2:
        a, b = ids
        return [lk.key for lk in fabric.node_links(a) if {lk.key.a.node, lk.key.b.node} == {a, b}]
    return []


def _ratio_estimate(finding: Finding) -> tuple[float | None, float | None]:
    """Median measured/expected ratio and median expected Gb/s in a finding's evidence."""
    ratios: list[float] = []
    expected: list[float] = []
    for ev in finding.evidence:
        d = ev.detail
        if isinstance(d.get("median_ratio"), int | float):
            ratios.append(float(d["median_ratio"]))
        elif isinstance(d.get("ratio"), int | float):
            ratios.append(float(d["ratio"]))
        elif d.get("slow_pairs"):
            ratios.extend(float(p["ratio"]) for p in d["slow_pairs"] if isinstance(p.get("ratio"), int | float))
        for p in d.get("slow_pairs") or []:
            if isinstance(p.get("expected_gbps"), int | float) and p["expected_gbps"] > 0:
                expected.append(float(p["expected_gbps"]))
        if isinstance(d.get("expected_gbps"), int | float) and d["expected_gbps"] > 0:
            expected.append(float(d["expected_gbps"]))
    r = statistics.median(ratios) if ratios else None
    e = statistics.median(expected) if expected else None
    return r, e


def link_effects(fabric: Fabric, findings: Iterable[Finding]) -> tuple[dict[LinkKey, LinkEffect], list[str]]:
    """Per-link "now" capacity from the findings (rules in the module docstring), and unmapped finding ids."""
    effects: dict[LinkKey, LinkEffect] = {}
    unmapped: list[str] = []

    def lower(key: LinkKey, cap: float, down: bool, rule: str, fid: str) -> None:
        old = effects.get(key)
        if old is None or cap < old.capacity_gbps or (down and not old.down):
            effects[key] = LinkEffect(key, max(0.0, cap), down or (old.down if old else False), rule, fid)

    for f in findings:
        try:
            keys = finding_links(fabric, f)
        except TopologyError:
            unmapped.append(f.id)
            continue
        if not keys:
            if f.kind in ("link", "port") or (f.kind == "switch" and f.fault in _DOWN_FAULTS):
                unmapped.append(f.id)
            continue
        if f.fault in _DOWN_FAULTS:
            if f.kind == "gpu":
                continue
            for k in keys:
                lower(k, 0.0, True, f"{f.kind} {f.fault}: routed around", f.id)
            continue
        if f.kind in ("switch", "host", "gpu"):
            continue
        for k in keys:
            link = fabric.links[k]
            if f.fault in _NO_CAPACITY_FAULTS:
                lower(k, 0.0, False, f"{f.fault}: tests never finished", f.id)
                continue
            cap = link.capacity_gbps
            rules = []
            for ev in f.evidence:
                d = ev.detail
                lanes = d.get("lanes") if f.fault == "width_degraded" else None
                lane = d.get("lane_gbps") if f.fault == "speed_degraded" else None
                if isinstance(lanes, int) and lanes > 0:
                    cap = min(cap, lanes * link.lane_gbps)
                    rules.append(f"trained {lanes} lanes")
                if isinstance(lane, int | float) and lane > 0:
                    cap = min(cap, link.lanes * float(lane))
                    rules.append(f"trained {lane} Gb/s lanes")
                for name in ("capacity_gbps", "measured_gbps"):
                    if isinstance(d.get(name), int | float) and d[name] >= 0:
                        cap = min(cap, float(d[name]))
                        rules.append(f"{name} {d[name]}")
            if f.fault not in _IGNORE_RATIO_FAULTS:
                ratio, expected = _ratio_estimate(f)
                if ratio is not None:
                    base = min(link.nominal_gbps, expected) if expected else link.nominal_gbps
                    cap = min(cap, max(0.0, ratio) * base)
                    rules.append(f"measured ratio {ratio:.3g} x {base:.4g} Gb/s")
            if cap < link.capacity_gbps or rules:
                lower(k, cap, False, f"{f.fault}: " + ("; ".join(rules) or "as trained"), f.id)
    return effects, unmapped


def _restated(fabric: Fabric, down: set[LinkKey] | None) -> Fabric:
    """A copy of ``fabric`` sharing its nodes and tables, with exactly the ``down`` links down
    (``None``: every link up, for the nominal state)."""
    out = Fabric(name=fabric.name, source=fabric.source, nodes=fabric.nodes, lfts=fabric.lfts,
                 port_lids=fabric.port_lids)
    for key, lk in fabric.links.items():
        out.add_link(key.a, key.b, lanes=lk.lanes, lane_gbps=lk.lane_gbps, max_lanes=lk.max_lanes,
                     max_lane_gbps=lk.max_lane_gbps, state="down" if down and key in down else "up")
    return out


# -- trees --------------------------------------------------------------------------------


def btree_parents(n: int) -> np.ndarray:
    """Parent rank of every rank in NCCL's binary tree over ``n`` ranks (-1 for the root)."""
    rank = np.arange(n, dtype=np.int64)
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    up = np.where(up >= n, rank ^ bit, up)
    up[0] = -1
    return up


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents in NCCL's two complementary trees: mirrored (even ``n``) or shifted by one (odd)."""
    first = btree_parents(n)
    rank = np.arange(n, dtype=np.int64)
    if n % 2:
        u = first[(rank - 1) % n]
        second = np.where(u < 0, -1, (u + 1) % n)
    else:
        u = first[n - 1 - rank]
        second = np.where(u < 0, -1, n - 1 - u)
    return first, second


# -- the model ----------------------------------------------------------------------------


class ImpactModel:
    """AllReduce busbw of a job over ``fabric``, nominal and with ``findings`` applied.

    Setup indexes the links, applies the findings and routes the job's ring
    once; ``busbw`` and ``what_if`` then only look up cached routes and count
    flows per directed link with numpy.
    """

    def __init__(self, fabric: Fabric, findings: Iterable[Finding] = (), job_hosts: Iterable[str] | None = None,
                 *, ring_step: int = 1) -> None:
        if ring_step not in (1, -1):
            raise FabricdocError(f"ring_step must be 1 (NCCL) or -1 (gloo), got {ring_step}")
        self.fabric = fabric
        self.ring_step = ring_step
        self.findings = list(findings)
        self.keys: list[LinkKey] = list(fabric.links)
        self.index = {k: i for i, k in enumerate(self.keys)}
        n_dir = 2 * len(self.keys)
        self.unroutable = n_dir  # one extra slot of capacity 0 for flows without a route
        self.effects, self.unmapped = link_effects(fabric, self.findings)
        nominal = np.array([fabric.links[k].nominal_gbps for k in self.keys], dtype=float)
        now = np.array([fabric.links[k].capacity_gbps for k in self.keys], dtype=float)
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
        nominal_routes = _restated(fabric, None) if any_down else fabric
        now_routes = nominal_routes if not down_now else (
            fabric if down_now == {k for k, lk in fabric.links.items() if lk.state == "down"} else _restated(fabric, down_now)
        )
        self.routes: dict[str, Fabric] = {"nominal": nominal_routes, "now": now_routes}
        self._flows: dict[str, dict[int, np.ndarray]] = {"nominal": {}, "now": {}}
        if now_routes is nominal_routes:
            self._flows["now"] = self._flows["nominal"]

        # Scheduler host name -> its cabled ports in rail order.
        self.host_ports: dict[str, list[PortRef]] = {}
        for port in fabric.host_ports():
            self.host_ports.setdefault(host_name(fabric, port.node), []).append(port)
        self.ports: list[PortRef] = [p for ports in self.host_ports.values() for p in ports]
        self.port_id = {p: i for i, p in enumerate(self.ports)}
        self._host_port_ids = {h: [self.port_id[p] for p in ports] for h, ports in self.host_ports.items()}
        self.job_hosts = self.resolve_hosts(job_hosts) if job_hosts is not None else sorted(self.host_ports)
        self._job_set = set(self.job_hosts)
        self._nominal_cache: dict[str, float] = {}
        self._ring_counts: np.ndarray | None = None
        self._ring_base_flows: list[np.ndarray] = []
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
        return sorted(out)

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
        ranks = sorted(set(hosts))
        for h in ranks:
            if h not in self.host_ports:
                return self.resolve_hosts(ranks)
        return ranks

    # -- routes ----------------------------------------------------------
    def _flow_ids(self, state: str, pairs: Sequence[tuple[int, int]]) -> list[np.ndarray]:
        """Directed link ids of each (src port id, dst port id) flow, from the route cache."""
        cache = self._flows[state]
        n = len(self.ports)
        out = []
        for s, d in pairs:
            arr = cache.get(s * n + d)
            if arr is None:
                arr = cache[s * n + d] = self._route(state, self.ports[s], self.ports[d])
            out.append(arr)
        return out

    def _route(self, state: str, src: PortRef, dst: PortRef) -> np.ndarray:
        routes = self.routes[state]
        try:
            path = routes.path(src, dst)
        except TopologyError:
            # The up/down routing may pick an up port with no way down to the destination
            # once a link is gone; any valid shortest path stands in for the rerouted one.
            try:
                alternatives = routes.ecmp_paths(src, dst, limit=1)
            except TopologyError:
                alternatives = []
            if not alternatives:
                return np.array([self.unroutable], dtype=np.int64)
            path = alternatives[0]
        ids = []
        here = src.node
        for key in path:
            i = self.index[key]
            if key.a.node == here:
                ids.append(2 * i)
                here = key.b.node
            else:
                ids.append(2 * i + 1)
                here = key.a.node
        return np.array(ids, dtype=np.int64)

    def _rails(self, ranks: Sequence[str]) -> int:
        return min(len(self._host_port_ids[h]) for h in ranks)

    def _ring_flows(self, ranks: Sequence[str], state: str) -> tuple[list[np.ndarray], list[int]]:
        n = len(ranks)
        rails = self._rails(ranks)
        ids = [self._host_port_ids[h] for h in ranks]
        step = self.ring_step
        pairs = [(ids[i][r], ids[(i + step) % n][r]) for r in range(rails) for i in range(n)]
        return self._flow_ids(state, pairs), [r for r in range(rails) for _ in range(n)]

    def _tree_flows(self, ranks: Sequence[str], state: str) -> tuple[list[np.ndarray], list[int]]:
        n = len(ranks)
        rails = self._rails(ranks)
        ids = [self._host_port_ids[h] for h in ranks]
        pairs, rail_of = [], []
        for parents in dtree_parents(n):
            for child, parent in enumerate(parents.tolist()):
                if parent < 0:
                    continue
                for r in range(rails):
                    pairs.append((ids[child][r], ids[parent][r]))
                    pairs.append((ids[parent][r], ids[child][r]))
                    rail_of += [r, r]
        return self._flow_ids(state, pairs), rail_of

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
        flows, rail_of = (self._ring_flows if algorithm == "ring" else self._tree_flows)(ranks, state)
        lens = np.fromiter((len(a) for a in flows), dtype=np.int64, count=len(flows))
        ids = np.concatenate(flows) if flows else np.zeros(0, dtype=np.int64)
        cap = self.capacity[state]
        counts = np.bincount(ids, minlength=cap.size)
        used = np.flatnonzero(counts)
        per_flow = cap[used] / counts[used]
        j = int(np.argmin(per_flow))
        share = float(per_flow[j])
        factor = rails if algorithm == "ring" else 4.0 * rails * (n - 1) / n
        out["busbw_gbps"] = factor * share
        share_of = np.zeros(cap.size)
        share_of[used] = per_flow
        flow_rail = np.repeat(np.asarray(rail_of, dtype=np.int64), lens)
        worst = np.full(rails, np.inf)
        np.minimum.at(worst, flow_rail, share_of[ids])
        out["per_rail_gbps"] = [float(factor / rails * w) for w in worst]
        out["bottleneck"] = self._describe(int(used[j]), int(counts[used[j]]), state)
        return out

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
        eff = self.effects.get(key) if state == "now" else None
        return {
            "link": [[label(key.a.node), key.a.port], [label(key.b.node), key.b.port]],
            "direction": f"{label(src.node)}[{src.port}] -> {label(dst.node)}[{dst.port}]",
            "capacity_gbps": float(self.capacity[state][directed]),
            "flows": flows,
            "reason": eff.rule if eff else None,
            "finding": eff.finding if eff else None,
        }

    # -- what-if ---------------------------------------------------------
    def what_if(self, drain_hosts: Iterable[str], algorithms: Sequence[str] = ("ring",)) -> dict[str, Any]:
        """The job without ``drain_hosts``: busbw now, against the whole job's nominal busbw.

        ``throughput_fraction`` = kept hosts x busbw over (all hosts x nominal busbw):
        the job's throughput if it were bound by AllReduce (weak scaling), which
        is what the alternatives are ranked by. Ring only by default (fast: the
        TUI calls this per key press); pass ``("ring", "tree")`` for both.
        Names may be host names, node ids, labels or GUIDs; hosts outside the job are ignored.
        """
        drained = sorted({self._as_host(h) for h in drain_hosts} & self._job_set)
        gone = set(drained)
        kept = [h for h in self.job_hosts if h not in gone]
        out: dict[str, Any] = {"drain": drained, "hosts": len(kept)}
        for alg in algorithms:
            full = self._nominal(alg)
            bw = self._ring_without(gone) if alg == "ring" else self.busbw(kept, alg, "now")
            out[f"{alg}_busbw_gbps"] = bw
            if alg == algorithms[0]:
                out["busbw_gbps"] = bw
                out["vs_nominal"] = bw / full if full else 0.0
                total = len(self.job_hosts)
                out["throughput_fraction"] = (len(kept) * bw) / (total * full) if full and total else 0.0
        return out

    def _ring_without(self, gone: set[str]) -> float:
        """Ring busbw now of the job without ``gone``, from the job ring's flow counts.

        Only the edges touching a drained host change: they are taken out of the
        precomputed per-link counts and the edges that close the gaps are added.
        """
        n = len(self.job_hosts)
        kept_pos = [i for i, h in enumerate(self.job_hosts) if h not in gone]
        if len(kept_pos) < 2:
            return 0.0
        base = self._ring_base()
        if not gone:
            counts = base
        else:
            step = self.ring_step
            rails = self._rails([self.job_hosts[i] for i in kept_pos])
            if rails != self._rails(self.job_hosts):
                return self.busbw([self.job_hosts[i] for i in kept_pos], "ring", "now")
            flows = self._ring_base_flows
            drained_pos = {i for i, h in enumerate(self.job_hosts) if h in gone}
            removed = [i for i in range(n) if i in drained_pos or (i + step) % n in drained_pos]
            ids = [self._host_port_ids[h] for h in self.job_hosts]
            new_pairs = []
            m = len(kept_pos)
            for j in range(m):
                a, b = kept_pos[j], kept_pos[(j + 1) % m]
                if (a + 1) % n == b:
                    continue  # this edge was in the job ring already
                src, dst = (a, b) if step == 1 else (b, a)
                new_pairs += [(ids[src][r], ids[dst][r]) for r in range(rails)]
            counts = base.copy()
            gone_ids = [flows[r * n + i] for r in range(rails) for i in removed]
            if gone_ids:
                counts -= np.bincount(np.concatenate(gone_ids), minlength=counts.size)
            added = self._flow_ids("now", new_pairs)
            if added:
                counts += np.bincount(np.concatenate(added), minlength=counts.size)
        used = np.flatnonzero(counts)
        cap = self.capacity["now"]
        rails = self._rails([self.job_hosts[i] for i in kept_pos])
        return float(rails * np.min(cap[used] / counts[used]))

    def _ring_base(self) -> np.ndarray:
        if self._ring_counts is None:
            flows, _ = self._ring_flows(self.job_hosts, "now")
            self._ring_base_flows = flows
            self._ring_counts = np.bincount(np.concatenate(flows), minlength=self.capacity["now"].size)
        return self._ring_counts

    def _nominal(self, algorithm: str) -> float:
        if algorithm not in self._nominal_cache:
            self._nominal_cache[algorithm] = self.busbw(None, algorithm, "nominal")
        return self._nominal_cache[algorithm]

    def best_drains(self, k: int = 3, max_hosts: int = 2, algorithm: str = "ring", beam: int = 6,
                    candidates_per_step: int = 12, only_better: bool = True) -> list[dict[str, Any]]:
        """The ``k`` best non-empty drain sets of at most ``max_hosts`` hosts, best first.

        Beam search: candidates are the hosts at either end of the flows on the
        current bottleneck link plus the hosts the findings name; each step adds
        one host to the best sets so far. Ties go to fewer drained hosts. With
        ``only_better`` a set must beat draining nothing to be listed.
        """
        algs = (algorithm,)
        named = self._finding_hosts()
        frontier: list[tuple[str, ...]] = [()]
        seen: dict[tuple[str, ...], dict[str, Any]] = {}
        for _ in range(max_hosts):
            nxt: list[tuple[str, ...]] = []
            for base in frontier:
                for host in self._candidates(base, named)[:candidates_per_step]:
                    cand = tuple(sorted({*base, host}))
                    if cand in seen or len(cand) == len(base):
                        continue
                    seen[cand] = self.what_if(cand, algs)
                    nxt.append(cand)
            nxt.sort(key=lambda c: (-seen[c]["throughput_fraction"], len(c), c))
            frontier = nxt[:beam]
            if not frontier:
                break
        ranked = sorted(seen.values(), key=lambda w: (-w["throughput_fraction"], len(w["drain"]), w["drain"]))
        if only_better:
            floor = self.what_if((), algs)["throughput_fraction"]
            ranked = [w for w in ranked if w["throughput_fraction"] > floor * (1 + 1e-9)]
        return ranked[:k]

    def _finding_hosts(self) -> list[str]:
        out = []
        for key in self.effects:
            for end in (key.a, key.b):
                if self.fabric.nodes[end.node].kind == "host":
                    out.append(host_name(self.fabric, end.node))
        return [h for h in dict.fromkeys(out) if h in self._job_set]

    def _candidates(self, drained: Sequence[str], named: list[str]) -> list[str]:
        """Hosts at either end of the ring flows on the now-bottleneck link, then the named hosts."""
        gone = set(drained)
        kept = [h for h in self.job_hosts if h not in gone]
        if len(kept) < 3:
            return []
        flows, _ = self._ring_flows(kept, "now")
        cap = self.capacity["now"]
        counts = np.bincount(np.concatenate(flows), minlength=cap.size)
        used = np.flatnonzero(counts)
        per_flow = cap[used] / counts[used]
        is_hot = np.zeros(cap.size, dtype=bool)
        is_hot[used[per_flow <= per_flow.min() * (1 + 1e-9)]] = True
        lens = np.fromiter((len(a) for a in flows), dtype=np.int64, count=len(flows))
        flow_of = np.repeat(np.arange(len(flows)), lens)
        n = len(kept)
        out: list[str] = []
        for f in np.unique(flow_of[is_hot[np.concatenate(flows)]]).tolist():
            i = f % n
            out += [kept[i], kept[(i + self.ring_step) % n]]
        return [h for h in dict.fromkeys(out + named) if h not in gone]


# -- the report's impact section ------------------------------------------------------------


def impact_section(
    fabric: Fabric,
    findings: Iterable[Finding],
    drain_hosts: Iterable[str],
    job_hosts: Iterable[str] | None = None,
    hours: float = 24.0,
    checkpoint_minutes: float | None = None,
    failure_rates: dict[str, float] | None = None,
    *,
    model: ImpactModel | None = None,
    alternatives: int = 3,
    tree_max_hosts: int = 8192,
) -> dict[str, Any]:
    """The report's ``impact`` dict: AllReduce busbw nominal / now / after draining, what-if, job cost.

    ``checkpoint_minutes`` is the time one checkpoint takes to write.
    ``failure_rates`` may hold ``host_per_hour`` or ``host_mtbf_hours`` (else the
    documented default), ``link_per_hour`` / ``switch_per_hour`` (per component
    on the fabric, spread over the job's share of it), ``restart_minutes`` and
    ``source`` (a description). Every value is JSON-able (no NaN or infinity).
    Above ``tree_max_hosts`` job hosts only the ring is computed (the headline
    is the ring either way).
    """
    from fabricdoc import jobcost

    m = model or ImpactModel(fabric, findings, job_hosts)
    drain = sorted(set(drain_hosts))
    algorithms = ALGORITHMS if len(m.job_hosts) <= tree_max_hosts else ("ring",)
    after = m.what_if(drain, algorithms)
    by_alg: dict[str, Any] = {}
    for alg in algorithms:
        nominal = m.detail(None, alg, "nominal")
        now = m.detail(None, alg, "now")
        by_alg[alg] = {
            "nominal": _num(nominal["busbw_gbps"]),
            "now": _num(now["busbw_gbps"]),
            "after_drain": _num(after[f"{alg}_busbw_gbps"]),
            "per_rail_now": [_num(x) for x in now["per_rail_gbps"]],
            "bottleneck_now": now["bottleneck"],
        }
    if "tree" not in by_alg:
        by_alg["tree"] = {"skipped": f"more than {tree_max_hosts} job hosts (tree routes are computed per pair)"}
    best = m.best_drains(alternatives)
    report_entry = m.what_if(drain)
    what_if = [{"choice": "report", **report_entry}, {"choice": "none", **m.what_if([])}]
    listed = {tuple(w["drain"]) for w in what_if}
    what_if += [{"choice": "alternative", **w} for w in best if tuple(w["drain"]) not in listed]

    rates = dict(failure_rates or {})
    n_job = after["hosts"]
    extra = 0.0
    hosts_total = max(1, len(fabric.hosts()))
    share = len(m.job_hosts) / hosts_total
    extra += float(rates.get("link_per_hour", 0.0)) * len(fabric.links) * share
    extra += float(rates.get("switch_per_hour", 0.0)) * len(fabric.switches()) * share
    job = jobcost.job_cost(
        n_job,
        hours,
        host_failures_per_hour=rates.get("host_per_hour"),
        host_mtbf_hours=rates.get("host_mtbf_hours"),
        checkpoint_write_minutes=checkpoint_minutes if checkpoint_minutes is not None else jobcost.DEFAULT_CHECKPOINT_WRITE_MINUTES,
        restart_minutes=float(rates.get("restart_minutes", 0.0)),
        extra_failures_per_hour=extra,
        rate_source=rates.get("source"),  # type: ignore[arg-type]
    )
    headline = by_alg["ring"]
    return _clean({
        "algorithm": "ring",
        "job_hosts": len(m.job_hosts),
        "rails": m.detail(None, "ring", "nominal")["rails"],
        "allreduce_busbw_gbps": {k: headline[k] for k in ("nominal", "now", "after_drain")},
        "by_algorithm": by_alg,
        "what_if": [_round_entry(w) for w in what_if],
        "job": job,
        "link_effects": [
            {"link": [[fabric.label(e.link.a.node), e.link.a.port], [fabric.label(e.link.b.node), e.link.b.port]],
             "capacity_gbps": e.capacity_gbps, "nominal_gbps": fabric.links[e.link].nominal_gbps,
             "down": e.down, "rule": e.rule, "finding": e.finding}
            for e in m.effects.values()
        ],
        "unmapped_findings": m.unmapped,
    })


def _num(x: float) -> float:
    return round(float(x), 4) if math.isfinite(x) else 0.0


def _round_entry(w: dict[str, Any]) -> dict[str, Any]:
    return {k: (_num(v) if isinstance(v, float) else v) for k, v in w.items()}


def _clean(obj: Any) -> Any:
    """Replace any non-finite float by None so the report stays strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj
