"""Which host-port pairs to bandwidth-test in which rounds, so one slow link can be named.

A *test* sends from host port ``src`` to host port ``dst``; its links are
``fabric.path(src, dst)`` (and, for a bidirectional test such as a two-rank
all_reduce or nccl-tests ``sendrecv_perf``, also ``fabric.path(dst, src)``).

"Share a link" is judged **per direction**: links are full duplex, so within
one round no two tests may send over the same link in the same direction. A
one-way test uses each of its links in one direction only, so one host port
may be the sender of one test and the receiver of another in the same round;
a bidirectional test occupies both directions of every link it touches.

Coverage is counted per cable (undirected :class:`LinkKey`), host-to-leaf
cables included: every cable a tested path can reach should lie on at least
``min_cover`` tests. Two distinct tests always have distinct paths (the host
cables at either end differ), so this gives (b) of the design. The planner
also separates cables whose sets of covering tests are identical, so a single
slow cable has a unique signature.

How rounds are built: each round starts from a *shift permutation* of the
host ports (port i sends to port i+k), which D-mod-K routing carries without
contention on a full-bisection fat-tree: one round then uses every directed
cable once. Tests that would clash or add no new coverage are dropped, and the
senders left idle try a few other receivers. A final repair pass searches tests
through every cable still short of ``min_cover`` and packs them into the first
round they fit. Routing is a black box (``fabric.path``), so LFT-routed fabrics
from OpenSM plan the same way.

Multi-rail hosts on a leaf/spine fabric (rail-optimized clusters) are planned
cable by cable instead (:func:`leaf_spine_rounds`): there a round's capacity
is set by the spine-to-leaf cables each receiver descends, and trying
candidate pairs grows faster than the fabric; bidirectional tests there, which descend
into both ends' leaves, are scheduled as a round-robin between rails where the fabric
has that shape (:func:`bidir_leaf_spine_rounds`). The planner keeps no candidate
routes: the fabric's route cache is cleared when a plan is made.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field

from fabricdoc.bandwidth.builder import PlanBuilder, Test, shift_offset
from fabricdoc.bandwidth.leaf_spine import leaf_spine_rounds
from fabricdoc.model.memory import gc_paused
from fabricdoc.model.paths import Channel, test_channels, tested_links
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric


@dataclass
class Plan:
    """Rounds of tests; within a round the tests share no cable direction.

    ``rounds[r]`` lists ``(src, dst)`` host-port pairs. ``coverage`` counts, per
    cable of the fabric, how many tests of the plan load it. ``targets`` (retest
    plans only) names the suspect cable each test probes, ``None`` for a control.
    """

    fabric_name: str
    rounds: list[list[Test]]
    bidirectional: bool
    min_cover: int
    coverage: dict[LinkKey, int]
    hosts: int
    ports_per_host: int
    ambiguous: int = 0
    purpose: str = "sweep"
    targets: dict[Test, LinkKey | None] = field(default_factory=dict)
    host_of: dict[str, str] = field(default_factory=dict)  # HCA node id -> host name

    def tests(self) -> Iterator[tuple[int, PortRef, PortRef]]:
        """Every test as ``(round, src, dst)`` in run order."""
        for r, tests in enumerate(self.rounds):
            for src, dst in tests:
                yield r, src, dst

    @property
    def test_count(self) -> int:
        return sum(len(r) for r in self.rounds)

    def stats(self) -> dict[str, int | float]:
        """Rounds, tests, cables covered 0/1/2+ times, and the all-pairs round-robin it replaces.

        All-pairs round-robin pairs every host with every other once
        (N-1 rounds for even N, N for odd), each pairing run rail by rail, so it
        costs ``ports_per_host * N(N-1)/2`` port tests. ``host_pair_tests``
        counts distinct (round, sender host, receiver host): on multi-rail hosts
        one host pairing runs all its rails at once, like one nccl-tests job.
        """
        counts = Counter(min(c, 2) for c in self.coverage.values())
        n = self.hosts
        ap_tests = self.ports_per_host * n * (n - 1) // 2
        ap_rounds = n - 1 if n % 2 == 0 else n
        host = self.host_of.get
        host_pairs = len({(r, host(s.node, s.node), host(d.node, d.node)) for r, s, d in self.tests()})
        return {
            "rounds": len(self.rounds),
            "tests": self.test_count,
            "host_pair_tests": host_pairs,
            "all_pairs_host_tests": n * (n - 1) // 2,
            "links": len(self.coverage),
            "covered_0": counts.get(0, 0),
            "covered_1": counts.get(1, 0),
            "covered_2plus": counts.get(2, 0),
            "ambiguous_links": self.ambiguous,
            "all_pairs_rounds": ap_rounds,
            "all_pairs_tests": ap_tests,
            "test_fraction": (self.test_count / ap_tests) if ap_tests else 0.0,
        }


def round_budget(hosts: int) -> int:
    """The most rounds a sweep plan may take: 2 * ceil(log2 N) + 4 for N hosts."""
    return 2 * math.ceil(math.log2(max(hosts, 2))) + 4


@gc_paused()  # routes and candidate tests by the hundred thousand: collection passes would dominate
def plan_sweep(
    fabric: Fabric,
    min_cover: int = 2,
    *,
    bidirectional: bool = False,
    max_rounds: int | None = None,
    tries: int = 3,
    repair_tries: int = 600,
    separate: bool = True,
    seed: int = 0,
) -> Plan:
    """Plan bandwidth rounds covering every reachable cable ``min_cover`` times.

    The shift rounds stop at ``max_rounds`` (default :func:`round_budget` of the
    host count); repair may add rounds beyond the default on tiny fabrics,
    where cover matters more than the budget, but never beyond an explicit ``max_rounds``.
    ``tries`` is how many other receivers an idle sender tries per round;
    ``repair_tries`` bounds the probing for each cable still short of cover.
    With ``separate`` the planner adds tests until no two cables share the
    same set of covering tests (where it can find one).
    """
    args = (fabric, min_cover, bidirectional, max_rounds, tries, repair_tries, separate, seed)
    plan = _build(*args, pair_hosts=True)
    if max_rounds is None and plan.ports_per_host > 1 and len(plan.rounds) > round_budget(plan.hosts):
        # Rounds at their lower bound (small rail fabrics): pairing whole hosts can cost a round.
        other = _build(*args, pair_hosts=False)
        if len(other.rounds) < len(plan.rounds):
            plan = other
    return plan


def _build(fabric: Fabric, min_cover: int, bidirectional: bool, max_rounds: int | None, tries: int,
           repair_tries: int, separate: bool, seed: int, *, pair_hosts: bool) -> Plan:
    mark = fabric.routes_cached()
    b = PlanBuilder(fabric, bidirectional, seed)
    hosts = {b.host_of[p.node] for p in b.ports}
    budget = max_rounds or round_budget(len(hosts))
    m = len(b.ports)
    reachable = {k for k, link in fabric.links.items() if link.state == "up"}

    def short() -> set[LinkKey]:
        return {k for k in reachable if b.cover[k] < min_cover}

    by_host: dict[str, list[PortRef]] = defaultdict(list)
    for p in b.ports:
        by_host[b.host_of[p.node]].append(p)
    host_names = list(by_host)
    multi_rail = max(len(v) for v in by_host.values()) > 1
    # Multi-rail hosts under one leaf layer: rounds built cable by cable, linear in the fabric.
    structured = multi_rail and leaf_spine_rounds(b, budget, min_cover, reachable, pair_hosts)
    cover = b.cover
    for r in range(0 if not structured else budget, budget):
        if all(cover[k] >= min_cover for k in reachable):  # stops at the first short cable
            break
        added = _host_shift_round(b, r, by_host, host_names, min_cover) if multi_rail else 0
        if not multi_rail:
            k = shift_offset(r, m)
            order = list(range(m))
            b.rng.shuffle(order)
            idle: list[int] = []
            for i in order:
                test = (b.ports[i], b.ports[(i + k) % m])
                if b.ok_pair(*test) and b.fits(r, test) and b.gain(test, min_cover):
                    b.add(r, test)
                    added += 1
                else:
                    idle.append(i)
            for i in idle:
                src = b.ports[i]
                for _ in range(tries):
                    test = (src, b.rng.choice(b.ports))
                    if b.ok_pair(*test) and b.fits(r, test) and b.gain(test, min_cover):
                        b.add(r, test)
                        added += 1
                        break
        if not added:
            break
    keep = [i for i, t in enumerate(b.rounds) if t]
    b.rounds = [b.rounds[i] for i in keep]
    b.busy = [b.busy[i] for i in keep]

    # Repair: cables still short of cover get tests found by probing near them.
    for link in sorted(short(), key=str):
        for test in b.through(link, repair_tries):
            if b.cover[link] >= min_cover:
                break
            b.place(test, max_rounds)
    in_order = sorted(reachable, key=str)  # once: naming 10^5 cables is not free
    if separate:
        _separate(b, in_order, repair_tries, max_rounds)
    b.rounds = [t for t in b.rounds if t]
    # Candidate routes the planner looked at are not worth keeping: the runner and
    # localization route the tests they meet (scoped to the plan, never held after it).
    fabric.clear_route_cache(since=mark)
    return Plan(
        fabric_name=fabric.name,
        rounds=b.rounds,
        bidirectional=bidirectional,
        min_cover=min_cover,
        coverage={k: b.cover[k] for k in in_order},
        hosts=len(hosts),
        ports_per_host=max(Counter(b.host_of[p.node] for p in b.ports).values()),
        ambiguous=_ambiguous_count(b, in_order),
        host_of=b.host_of,
    )


def _host_shift_round(
    b: PlanBuilder, r: int, by_host: dict[str, list[PortRef]], hosts: list[str], need: int
) -> int:
    """Multi-rail hosts: host i tests host i+k on every rail it can, so a round is one host pairing.

    Each NIC of the sender takes the first NIC of the receiver (its own rail
    first) whose path is free in this round and adds coverage; on rail fabrics
    routed by global index a cross-rail partner is what reaches the other uplinks.
    """
    k = shift_offset(r, len(hosts))
    order = list(range(len(hosts)))
    b.rng.shuffle(order)
    added = 0
    for i in order:
        srcs = list(by_host[hosts[i]])
        dsts = by_host[hosts[(i + k) % len(hosts)]]
        b.rng.shuffle(srcs)
        for src in srcs:
            same = [d for d in dsts if d.port == src.port]
            for dst in same + [d for d in dsts if d.port != src.port]:
                test = (src, dst)
                if b.ok_pair(src, dst) and b.fits(r, test) and b.gain(test, need):
                    b.add(r, test)
                    added += 1
                    break
    return added


def _groups(b: PlanBuilder, in_order: list[LinkKey]) -> list[list[LinkKey]]:
    """Cables sharing one set of covering tests; ``in_order`` is the cables sorted by name
    (a set's order follows the per-process string hash)."""
    by_sig: dict[tuple[int, ...], list[LinkKey]] = defaultdict(list)
    for k in in_order:
        if b.cover[k]:
            by_sig[tuple(b.sig[k])].append(k)
    return [sorted(g, key=str) for g in by_sig.values() if len(g) > 1]


def _ambiguous_count(b: PlanBuilder, in_order: list[LinkKey]) -> int:
    return sum(len(g) for g in _groups(b, in_order))


def _separate(b: PlanBuilder, in_order: list[LinkKey], tries: int, budget: int | None) -> None:
    """Add tests until cables that share a signature are told apart (where possible)."""
    for _ in range(3):
        groups = _groups(b, in_order)
        if not groups:
            return
        for group in groups:
            for link in group[1:]:
                others = set(group) - {link}
                for test in b.through(link, tries // 4 or 1):
                    if not others <= b.links(test):
                        b.place(test, budget)
                        break


def verify_plan(fabric: Fabric, plan: Plan) -> list[str]:
    """Check a plan from scratch: per-direction disjoint rounds and cover; returns the violations."""
    problems: list[str] = []
    cover: Counter[LinkKey] = Counter()
    for r, tests in enumerate(plan.rounds):
        used: dict[Channel, Test] = {}
        for src, dst in tests:
            for e in test_channels(fabric, src, dst, plan.bidirectional):
                if e in used:
                    o = used[e]
                    problems.append(f"round {r}: {src}->{dst} and {o[0]}->{o[1]} share {e[0]}")
                used[e] = (src, dst)
            for k in tested_links(fabric, src, dst, plan.bidirectional):
                cover[k] += 1
    if plan.purpose == "sweep":
        for k, link in fabric.links.items():
            if link.state == "up" and cover[k] < plan.min_cover:
                problems.append(f"{k} covered {cover[k]} times, want {plan.min_cover}")
    return problems
