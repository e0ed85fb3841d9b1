"""Flow-level fabric simulator: the same records the real probes produce, for any fabric size.

Faults change a copy of the fabric (the "truth"); the simulator then produces
two PortCounters samples per cabled port (IBTA names), the port states a
discovery would show (iblinkinfo), link events, and pair bandwidth results by
max-min fair sharing of directed link capacity among the tests of a round, and
group collectives (ring all_reduce, alltoall) over routed paths; load-only faults
(:mod:`~fabricdoc.sources.sim.load`) collapse when enough flows meet.
Everything is seeded and reproducible.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import networkx as nx
import numpy as np

from fabricdoc.errors import TopologyError
from fabricdoc.fabric.faults import FAULT_KINDS, HOST_FAULT_KINDS, SWITCH_FAULT_KINDS, Fault
from fabricdoc.fabric.realism import DEFAULT, Realism
from fabricdoc.model.counters import lookup
from fabricdoc.model.flows import maxmin
from fabricdoc.model.groups import busbw_from_rates, group_edges
from fabricdoc.model.ib import NO_RESPONSE
from fabricdoc.model.paths import Channel, directed, expected_gbps
from fabricdoc.model.records import (
    GroupResult,
    LinkEvent,
    LinkKey,
    Observations,
    PairResult,
    PortCounters,
    PortRef,
    PortState,
)
from fabricdoc.model.topology import Fabric
from fabricdoc.sources.sim.load import LoadModel

CEILING = 0.99  # no test reads above this share of its fair rate: hardware is never faster than the line
# Bandwidth a faulty cable keeps, by fault kind, unless the fault gives its own ``factor``.
FACTORS = {"slow": 0.5, "congested": 0.5, "lossy": 0.8, "rcv_errors": 0.9, "flapping": 0.7, "bad_nic": 0.3}


@dataclass
class SimResult:
    """What a simulated sweep saw (``observed`` fabric as discovery shows it) and the truth."""

    observed: Fabric
    observations: Observations
    truth: list[Fault]
    # Ground truth for tests: the links / switches / host ports each fault affects.
    faulty_links: set[LinkKey] = field(default_factory=set)
    faulty_switches: set[str] = field(default_factory=set)


class Simulator:
    """Seeded simulator of one fabric with faults; ``run(rounds)`` gives a SimResult."""

    def __init__(
        self,
        fabric: Fabric,
        faults: Sequence[Fault] = (),
        *,
        seed: int = 0,
        interval_s: float = 10.0,
        realism: Realism = DEFAULT,
        start_time: float | None = None,
    ) -> None:
        self.fabric = fabric
        self.faults = list(faults)
        self.rng = np.random.default_rng(seed)
        self.interval_s = interval_s
        self.realism = realism
        # Each host's own factor (its NICs, PCIe, CPU): drawn once, within three spreads.
        spread = realism.host_variance
        hosts = sorted(n.id for n in fabric.hosts())
        draws = np.clip(self.rng.normal(1.0, spread, len(hosts)), 1 - 3 * spread, 1 + 3 * spread) if spread else None
        self.host_factor: dict[str, float] = dict(zip(hosts, map(float, draws), strict=True)) if draws is not None else {}
        # Ground truth for benchmarks and tests: (round, src, dst) of pair tests and (round, members) of
        # groups that were transiently slow (a neighbour's checkpoint), nothing wrong with the fabric.
        self.transients: set[tuple] = set()
        # Samples and events carry real clock times (now), so history and flap rates work.
        self.t0 = time.time() - interval_s if start_time is None else start_time
        self._validate()
        # Discovery shows what the truth fabric shows: trained widths and down links,
        # not the hidden faults (slow, lossy, congested) that only probes reveal.
        self.truth = self._truth_fabric()
        # Remaining bandwidth factor per link from faults that counters may not show.
        self.factor: dict[LinkKey, float] = {}
        for f in self.faults:
            if f.kind in FACTORS:
                key = f.link(fabric)
                self.factor[key] = self.factor.get(key, 1.0) * (f.factor if f.factor is not None else FACTORS[f.kind])
        # Cables that carry no data (tests through them hang) and host ports whose CA is silent.
        self.hung: set[LinkKey] = {f.link(fabric) for f in self.faults if f.kind == "hung"}
        self.silent: set[PortRef] = {f.port for f in self.faults if f.kind == "silent_hca" and f.port is not None}
        self.load = LoadModel(fabric, self.faults)

    def _validate(self) -> None:
        for f in self.faults:
            if f.kind not in FAULT_KINDS:
                raise TopologyError(f"unknown fault kind {f.kind!r} (one of {', '.join(FAULT_KINDS)})")
            if f.kind in SWITCH_FAULT_KINDS:
                if f.switch not in self.fabric.nodes or self.fabric.nodes[f.switch].kind != "switch":
                    raise TopologyError(f"fault {f.kind}: no switch {f.switch!r}")
            else:
                f.link(self.fabric)
            if f.kind in HOST_FAULT_KINDS and self.fabric.nodes[f.port.node].kind != "host":  # type: ignore[union-attr]
                raise TopologyError(f"fault {f.kind}: {f.port} is not a host port")

    # -- fabrics -----------------------------------------------------------
    def _truth_fabric(self) -> Fabric:
        """The fabric as it is now: down links, trained widths and speeds, and today's routes.

        When links went down, a subnet manager routes around them: forwarding tables
        read now (ibroute) are new ones, so tables from before the failure are replaced
        by min-hop tables over the live links, and every path, expected rate and flow
        follows today's routes.
        """
        truth = self.fabric.copy()
        for f in self.faults:
            if f.kind == "down":
                truth.links[f.link(truth)].state = "down"
            elif f.kind == "dead_switch":
                for link in truth.node_links(f.switch):  # type: ignore[arg-type]
                    link.state = "down"
            elif f.kind == "degraded":
                link = truth.links[f.link(truth)]
                if f.lanes is not None:
                    link.lanes = f.lanes
                elif f.lane_gbps is None:
                    link.lanes = max(1, link.lanes // 2)  # neither given: trained at half width
                if f.lane_gbps is not None:
                    link.lane_gbps = f.lane_gbps
        if truth.lfts and any(link.state == "down" for link in truth.links.values()):
            truth.lfts = rerouted_lfts(truth)
        truth.invalidate()
        return truth

    # -- records -------------------------------------------------------------
    def port_states(self) -> list[PortState]:
        """What a discovery shows of every cabled port (iblinkinfo).

        A silent CA answers nothing: its port has no record of its own, and its switch port
        shows Active/LinkUp with no peer discovered behind it; like the InfiniBand source
        (``missing_link_states``), the silent end is then recorded as ``NoResponse``.
        """
        out = []
        for key, link in self.truth.links.items():
            for end in (key.a, key.b):
                if end in self.silent:
                    if link.state == "up":
                        out.append(PortState(end.node, end.port, NO_RESPONSE, peer=key.other(end),
                                             source="sim (not in the discovery; its switch port Active/LinkUp)"))
                    continue
                up = link.state == "up"
                out.append(
                    PortState(
                        node=end.node,
                        port=end.port,
                        state="Active" if up else "Down",
                        phys_state="LinkUp" if up else "Polling",
                        lanes=link.lanes if up else None,
                        lane_gbps=link.lane_gbps if up else None,
                        max_lanes=link.max_lanes,
                        max_lane_gbps=link.max_lane_gbps,
                        peer=key.other(end) if up and key.other(end) not in self.silent else None,
                        source="sim",
                    )
                )
        return out

    def counters(self, pairs: Iterable[PairResult] = ()) -> tuple[list[PortCounters], list[PortCounters]]:
        """Two samples ``interval_s`` apart of every cabled port that answers, IBTA PortCounters names."""
        rng = self.rng
        t1 = self.t0 + self.interval_s
        ports = [end for key in self.truth.links for end in (key.a, key.b)]
        n = len(ports)
        index = {p: i for i, p in enumerate(ports)}
        names = (
            "SymbolErrorCounter", "LinkErrorRecoveryCounter", "LinkDownedCounter", "PortRcvErrors",
            "PortRcvRemotePhysicalErrors", "PortXmitDiscards", "LocalLinkIntegrityErrors",
            "ExcessiveBufferOverrunErrors", "PortXmitWait",
        )
        base = {nm: rng.integers(0, 3, n) for nm in names[:3]}
        before_vals = {nm: base.get(nm, np.zeros(n, dtype=np.int64)).astype(np.int64) for nm in names}
        delta = {nm: np.zeros(n, dtype=np.int64) for nm in names}
        # Healthy background: a little xmit wait everywhere, far below thresholds.
        delta["PortXmitWait"] += rng.integers(0, 20_000, n)
        xmit_words = rng.integers(10**8, 10**9, n).astype(np.int64)
        before_data = rng.integers(0, 2**31, n).astype(np.int64)
        for f in self.faults:
            if f.kind in SWITCH_FAULT_KINDS:
                continue
            key = f.link(self.fabric)
            near = f.port if f.port is not None else key.a
            far = key.other(near)
            i, j = index[near], index[far]
            if f.kind == "lossy":
                errs = max(1, int(round(f.rate_per_hour * self.interval_s / 3600.0)))
                delta["SymbolErrorCounter"][i] += errs
                delta["PortRcvErrors"][i] += max(1, errs // 10)
                delta["LinkErrorRecoveryCounter"][i] += 0
            elif f.kind == "rcv_errors":
                delta["PortRcvErrors"][i] += max(1, int(round(f.rate_per_hour * self.interval_s / 3600.0)))
            elif f.kind == "flapping":
                for k in (i, j):
                    delta["LinkDownedCounter"][k] += f.flaps
                    delta["LinkErrorRecoveryCounter"][k] += f.flaps
            elif f.kind == "congested":
                # XmitWait ticks: the port had data but no credits for most of the interval.
                delta["PortXmitWait"][i] += int(self.interval_s * 2.5e8 * (1 - (f.factor or 0.5)))
                delta["PortXmitDiscards"][i] += 500
            elif f.kind == "bad_nic":
                delta["PortRcvErrors"][i] += 200
                delta["SymbolErrorCounter"][i] += 50
        # Whole columns at once (saturating at each register's maximum), then one dict per port.
        keys = (*names, "PortXmitData", "PortRcvData")
        top32 = 2**32 - 1
        cols_b = [before_vals[nm].tolist() for nm in names]
        cols_a = [np.minimum(before_vals[nm] + delta[nm], min(_max(nm), np.iinfo(np.int64).max)).tolist()
                  for nm in names]
        cols_b += [before_data.tolist(), (before_data // 2).tolist()]
        cols_a += [np.minimum(before_data + xmit_words, top32).tolist(),
                   np.minimum(before_data // 2 + xmit_words, top32).tolist()]
        before, after = [], []
        silent = self.silent
        for p, bvals, avals in zip(ports, zip(*cols_b, strict=True), zip(*cols_a, strict=True), strict=True):
            if p in silent:
                continue  # the CA answers no PerfMgt query: no sample, not zeros
            before.append(PortCounters(p.node, p.port, self.t0, dict(zip(keys, bvals, strict=True)), source="sim"))
            after.append(PortCounters(p.node, p.port, t1, dict(zip(keys, avals, strict=True)), source="sim"))
        return before, after

    def events(self) -> list[LinkEvent]:
        """Link down/up events of flapping cables, inside the sampling interval."""
        out = []
        for f in self.faults:
            if f.kind != "flapping":
                continue
            key = f.link(self.fabric)
            step = self.interval_s / (2 * f.flaps + 1)
            for k in range(f.flaps):
                for end in (key.a, key.b):
                    out.append(LinkEvent(end.node, end.port, self.t0 + step * (2 * k + 1), "down", source="sim"))
                    out.append(LinkEvent(end.node, end.port, self.t0 + step * (2 * k + 2), "up", source="sim"))
        return sorted(out, key=lambda e: e.timestamp)

    def bandwidth(
        self,
        rounds: Sequence[Sequence[tuple[PortRef, PortRef]]],
        *,
        bidirectional: bool = False,
        first_round: int = 0,
        progress: Callable[[int, int], None] | None = None,
    ) -> list[PairResult]:
        """Run each round's tests concurrently (see :meth:`measure_round`)."""
        out: list[PairResult] = []
        for r, tests in enumerate(rounds):
            out.extend(self.measure_round(first_round + r, tests, bidirectional=bidirectional))
            if progress is not None:
                progress(r + 1, len(rounds))
        return out

    def measure_round(
        self,
        r: int,
        tests: Sequence[tuple[PortRef, PortRef]],
        expected: Sequence[float | None] | None = None,
        *,
        bidirectional: bool = False,
    ) -> list[PairResult]:
        """One round's tests at once: max-min fair share of directed link capacity.

        A one-way test is one flow src->dst; a bidirectional one is two flows and
        reports the slower direction. A test reaches what :meth:`_healthy` gives of its fair
        share (the realism's efficiency, host factors, jitter, transient outliers), never more
        than its fair share; other traffic takes a share of each cable direction per round
        (``realism.background``). ``expected`` is what each test is
        judged against (default: :func:`fabricdoc.model.paths.expected_gbps` on the
        routes discovery shows now, as a real sweep does). A test with no live route,
        or to or from a CA that stopped answering, could not run: status ``error``; one
        through a cable that carries nothing started and never finished: ``hung``.
        """
        per = 2 if bidirectional else 1
        if expected is None:
            expected = []
            for src, dst in tests:
                try:
                    expected.append(expected_gbps(self.truth, src, dst, bidirectional))
                except TopologyError:
                    expected.append(None)
        test = "all_reduce" if bidirectional else "sendrecv"
        flows: list[list[Channel]] = []
        failed: dict[int, PairResult] = {}
        for t, (src, dst) in enumerate(tests):
            paths = []
            for a, b in ((src, dst), (dst, src))[:per]:
                try:
                    paths.append((self.truth.path(a, b), a))
                except TopologyError:
                    paths.append(None)
            if any(p is None or any(self.truth.links[k].state == "down" for k in p[0]) for p in paths):
                failed[t] = PairResult(src, dst, "error", None, expected[t], round=r, error="peer unreachable")
                flows.extend([] for _ in range(per))
                continue
            if src in self.silent or dst in self.silent:
                failed[t] = PairResult(src, dst, "error", None, expected[t], round=r,
                                       error="connection timed out (CA not responding)")
                flows.extend([] for _ in range(per))
                continue
            if any(k in self.hung for p in paths for k in p[0]):  # type: ignore[index]
                failed[t] = PairResult(src, dst, "hung", None, expected[t], round=r,
                                       error="started, never finished", test=test)
                flows.extend([] for _ in range(per))
                continue
            flows.extend(directed(path, start) for path, start in paths)  # type: ignore[misc]
        rates = self._maxmin(flows)
        out = []
        for t, (src, dst) in enumerate(tests):
            if t in failed:
                out.append(failed[t])
                continue
            fair = float(min(rates[per * t: per * t + per]))
            bw = min(fair * self._healthy(test, 1 << 28, (src.node, dst.node), (r, src, dst)), fair * CEILING)
            exp = expected[t]
            out.append(
                PairResult(src, dst, "ok", round(bw, 3), None if exp is None else round(exp, 3),
                           algbw_gbps=round(bw, 3), size_bytes=1 << 28,
                           duration_s=round((1 << 28) * 8 / max(bw, 1e-3) / 1e9, 4), round=r, test=test)
            )
        return out

    def _healthy(self, test: str, size_bytes: int, hosts: Iterable[str], tag: tuple) -> float:
        """The share of its fair rate one healthy test reaches: the efficiency of its kind at its size, x
        the slowest of its hosts' factors, x its own jitter, x a transient slowdown now and then (``tag``,
        the test's round and ends, goes into :attr:`transients`)."""
        r = self.realism
        share = r.at(test, size_bytes) * min((self.host_factor.get(h, 1.0) for h in hosts), default=1.0)
        if r.jitter:
            share *= max(0.5, 1.0 + float(self.rng.normal(0.0, r.jitter)))
        if r.outlier_rate and self.rng.random() < r.outlier_rate:
            share *= float(self.rng.uniform(*r.outlier_factor))
            self.transients.add(tag)
        return share

    def _maxmin(self, flows: list[list[Channel]]) -> np.ndarray:
        """Max-min fair rates of ``flows`` over the faulty fabric's directed capacities (load faults
        tripped by these flows running together), each less the share other traffic took of the busiest
        cable direction on its path this round (``realism.background``: drawn per direction and round;
        applied after the sharing, so capacities stay few distinct values and the filling stays fast)."""
        def capacity(k: LinkKey) -> float:
            return self.truth.links[k].capacity_gbps * self.factor.get(k, 1.0)

        rates = maxmin(flows, capacity, self.load.factors(self.truth, flows) if self.load else None)
        if self.realism.background and flows:
            used = {c: i for i, c in enumerate(dict.fromkeys(c for hops in flows for c in hops))}  # first use: seeded
            left = 1.0 - self.rng.uniform(0.0, 2 * self.realism.background, len(used))
            rates = rates * np.fromiter((min((left[used[c]] for c in hops), default=1.0) for hops in flows),
                                        dtype=float, count=len(flows))
        return rates

    def measure_groups(
        self,
        r: int,
        groups: Sequence[tuple[str, Sequence[PortRef]]],
        expected: Sequence[float | None] | None = None,
        *,
        phase: str = "screen",
        labels: Sequence[str] | None = None,
    ) -> list[GroupResult]:
        """One round of group collectives at once: every flow of every group shares the fabric.

        Each group is ``(test, members)`` (``all_reduce`` or ``alltoall``, ranks in
        order); its busbw follows :func:`fabricdoc.model.groups.busbw_from_rates` of its max-min
        rates, at what :meth:`_healthy` gives of it (never more). A group with a member
        unreachable or silent could not run (``error``); one whose flows cross a cable
        that carries nothing ``hung``.
        """
        flows: list[list[Channel]] = []
        spans: list[tuple[int, int]] = []
        failed: dict[int, tuple[str, str]] = {}
        for g, (test, members) in enumerate(groups):
            start = len(flows)
            try:
                paths = [(self.truth.path(a, b), a) for a, b in group_edges(members, test)]
            except TopologyError:
                paths = []
                failed[g] = ("error", "peer unreachable")
            if paths and any(self.truth.links[k].state == "down" for p, _ in paths for k in p):
                failed[g] = ("error", "peer unreachable")
            elif any(m in self.silent for m in members):
                failed[g] = ("error", "connection timed out (CA not responding)")
            elif any(k in self.hung for p, _ in paths for k in p):
                failed[g] = ("hung", "started, never finished")
            if g not in failed:
                flows.extend(directed(p, a) for p, a in paths)
            spans.append((start, len(flows)))
        rates = self._maxmin(flows) if flows else np.zeros(0)
        out = []
        for g, (test, members) in enumerate(groups):
            exp = None if expected is None else expected[g]
            exp = None if exp is None else round(exp, 3)
            label = labels[g] if labels is not None else ""
            ranks = tuple(members)
            if g in failed:
                status, why = failed[g]
                out.append(GroupResult(ranks, test, status, None, exp, round=r, phase=phase,  # type: ignore[arg-type]
                                       label=label, error=why))
                continue
            a, b = spans[g]
            fair = busbw_from_rates(test, len(ranks), rates[a:b])
            bw = min(fair * self._healthy(test, 1 << 28, (m.node for m in ranks), (r, ranks)), fair * CEILING)
            out.append(GroupResult(ranks, test, "ok", round(bw, 3), exp, round=r, phase=phase, label=label,
                                   size_bytes=1 << 28, duration_s=round((1 << 28) * 8 / max(bw, 1e-3) / 1e9, 4)))
        return out

    def run(self, rounds: Sequence[Sequence[tuple[PortRef, PortRef]]] = ()) -> SimResult:
        """A whole simulated sweep: ``rounds`` of tests, two counter samples, states and events."""
        pairs = self.bandwidth(rounds)
        before, after = self.counters(pairs)
        obs = Observations(
            before=before,
            after=after,
            states=self.port_states(),
            events=self.events(),
            pairs=pairs,
            interval_s=self.interval_s,
        )
        result = SimResult(self.truth, obs, self.faults)
        for f in self.faults:
            if f.kind in SWITCH_FAULT_KINDS:
                result.faulty_switches.add(f.switch)  # type: ignore[arg-type]
            else:
                result.faulty_links.add(f.link(self.fabric))
        return result


def _max(name: str) -> int:
    """The largest value a counter holds (it saturates there)."""
    cdef = lookup(name)
    return (1 << (cdef.width_bits if cdef else 64)) - 1


def random_faults(
    fabric: Fabric,
    count: int,
    rng: np.random.Generator,
    kinds: Sequence[str] = ("slow", "degraded", "lossy", "down", "flapping", "congested"),
    where: Callable[[LinkKey], bool] | None = None,
) -> list[Fault]:
    """``count`` faults on distinct, randomly chosen links (for tests and benchmarks)."""
    keys = [k for k in fabric.links if where is None or where(k)]
    chosen = rng.choice(len(keys), size=count, replace=False)
    out = []
    for c in chosen:
        key = keys[int(c)]
        kind = str(rng.choice(list(kinds)))
        out.append(Fault(kind=kind, port=key.a))
    return out


def rerouted_lfts(fabric: Fabric) -> dict[str, dict[int, int]]:
    """Min-hop forwarding tables over the live links, as a subnet manager computes them after a failure.

    Each switch forwards a destination LID to a live port one hop closer to it; among
    equally close ports the LID picks one (LID mod count), spreading destinations.
    Switches that cannot reach a destination get no entry for it.
    """
    live: dict[str, list[tuple[PortRef, str]]] = {n: [] for n in fabric.nodes}
    for key, link in fabric.links.items():
        if link.state != "down":
            live[key.a.node].append((key.a, key.b.node))
            live[key.b.node].append((key.b, key.a.node))
    tables: dict[str, dict[int, int]] = {sw.id: {} for sw in fabric.switches()}
    switch_ids = set(tables)
    between_switches = nx.Graph()  # the live switch-to-switch cabling: hop counts to each leaf
    between_switches.add_nodes_from(switch_ids)
    between_switches.add_edges_from((here, far) for here in switch_ids for _port, far in live[here] if far in switch_ids)
    to_leaf: dict[str, dict[str, int]] = {}
    for dst, lid in sorted(fabric.port_lids.items(), key=lambda kv: kv[1]):
        link = fabric.link_at(dst)
        if link is None or link.state == "down" or fabric.nodes[dst.node].kind != "host":
            continue
        leaf = link.key.other(dst)
        if leaf.node not in switch_ids:
            continue
        tables[leaf.node][lid] = leaf.port
        if leaf.node not in to_leaf:
            to_leaf[leaf.node] = nx.single_source_shortest_path_length(between_switches, leaf.node)
        dist = to_leaf[leaf.node]
        for sw, d in dist.items():
            if d == 0:
                continue
            ports = sorted(p.port for p, far in live[sw] if dist.get(far) == d - 1)
            tables[sw][lid] = ports[lid % len(ports)]
    return {sw: t for sw, t in tables.items() if t}
