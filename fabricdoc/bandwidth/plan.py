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
cable by cable instead (:func:`_leaf_spine_rounds`): there a round's capacity
is set by the spine-to-leaf cables each receiver descends, and trying
candidate pairs grows faster than the fabric; bidirectional tests there, which descend
into both ends' leaves, are scheduled as a round-robin between rails where the fabric
has that shape (:func:`_bidir_leaf_spine_rounds`). The planner keeps no candidate
routes: the fabric's route cache is cleared when a plan is made.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict, deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field

from fabricdoc.errors import TopologyError
from fabricdoc.fabric.identity import host_index
from fabricdoc.model.memory import gc_paused
from fabricdoc.model.paths import Channel, test_channels, tested_links
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric

Test = tuple[PortRef, PortRef]

_GOLDEN = (math.sqrt(5) - 1) / 2


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


class PlanBuilder:
    """Mutable state while a plan is assembled: rounds, their busy directions, coverage."""

    def __init__(self, fabric: Fabric, bidirectional: bool, seed: int) -> None:
        self.f = fabric
        self.bidir = bidirectional
        self.rng = random.Random(seed)
        self.ports = fabric.host_ports()
        # HCA node -> its host: a multi-HCA host is one host, never paired with itself.
        self.host_of = {nid: name for name, ids in host_index(fabric).items() for nid in ids}
        if len(self.ports) < 2:
            raise TopologyError(f"fabric {fabric.name!r} has fewer than two cabled host ports")
        self.index = {p: i for i, p in enumerate(self.ports)}
        self.rounds: list[list[Test]] = []
        self.busy: list[set[Channel]] = []
        self.cover: Counter[LinkKey] = Counter()
        self.sig: dict[LinkKey, list[int]] = defaultdict(list)
        self.tests: list[Test] = []
        self.planned: set[Test] = set()
        self._edges: dict[Test, list[Channel]] = {}
        self.under_switch: dict[str, list[PortRef]] = defaultdict(list)
        for p in self.ports:
            peer = fabric.peer(p)
            if peer is not None:
                self.under_switch[peer.node].append(p)
        self.level = fabric.levels()
        self._below: dict[str, list[PortRef]] = {}

    def below(self, switch: str) -> list[PortRef]:
        """Host ports reachable from ``switch`` by going only down (toward hosts)."""
        got = self._below.get(switch)
        if got is None:
            mine = self.level.get(switch, 0)
            if mine <= 1:
                got = list(self.under_switch.get(switch, ()))
            else:
                seen: dict[PortRef, None] = {}
                for link in self.f.node_links(switch):
                    other = link.key.b if link.key.a.node == switch else link.key.a
                    if link.state == "up" and self.level.get(other.node, 0) == mine - 1:
                        seen.update(dict.fromkeys(self.below(other.node)))
                got = list(seen)
            self._below[switch] = got
        return got

    # -- primitives ---------------------------------------------------------
    def edges(self, test: Test) -> list[Channel] | None:
        got = self._edges.get(test)
        if got is None:
            src, dst = test
            try:
                got = test_channels(self.f, src, dst, self.bidir)
            except TopologyError:
                got = []
            self._edges[test] = got
        return got or None

    def links(self, test: Test) -> set[LinkKey]:
        return {k for k, _ in self.edges(test) or ()}

    def fits(self, r: int, test: Test) -> bool:
        while len(self.rounds) <= r:
            self.rounds.append([])
            self.busy.append(set())
        e = self.edges(test)
        return e is not None and not any(x in self.busy[r] for x in e)

    def gain(self, test: Test, need: int) -> int:
        return sum(1 for k in self.links(test) if self.cover[k] < need)

    def add(self, r: int, test: Test) -> None:
        while len(self.rounds) <= r:
            self.rounds.append([])
            self.busy.append(set())
        self.rounds[r].append(test)
        self.busy[r].update(self.edges(test) or ())
        tid = len(self.tests)
        self.tests.append(test)
        self.planned.add(test)
        for k in self.links(test):
            self.cover[k] += 1
            self.sig[k].append(tid)

    def place(self, test: Test, max_rounds: int | None = None) -> int | None:
        """Put a test in the first round it fits, opening a new round if allowed."""
        for r in range(len(self.rounds)):
            if self.fits(r, test):
                self.add(r, test)
                return r
        if max_rounds is None or len(self.rounds) < max_rounds:
            self.rounds.append([])
            self.busy.append(set())
            r = len(self.rounds) - 1
            self.add(r, test)
            return r
        return None

    def ok_pair(self, src: PortRef, dst: PortRef) -> bool:
        return self.host_of[src.node] != self.host_of[dst.node] and (src, dst) not in self.planned

    # -- searches -----------------------------------------------------------
    def through(self, link: LinkKey, tries: int) -> Iterator[Test]:
        """Candidate tests whose path loads ``link``, found by probing near its ends."""
        near: list[PortRef] = []
        ends = [e for e in (link.a, link.b) if e.node in self.f.nodes]
        hosts = [e for e in ends if self.f.nodes[e.node].kind == "host"]
        if hosts:
            near = hosts
        elif ends:
            # A cable between switches carries traffic of the hosts below its lower end.
            lower = min(ends, key=lambda e: self.level.get(e.node, 0))
            near = self.below(lower.node)
        if not near:
            near = self.ports
        for _ in range(tries):
            a = self.rng.choice(near)
            b = self.rng.choice(self.ports)
            src, dst = (a, b) if self.rng.random() < 0.5 else (b, a)
            if not self.ok_pair(src, dst):
                continue
            if link in self.links((src, dst)):
                yield (src, dst)


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
    structured = multi_rail and _leaf_spine_rounds(b, budget, min_cover, reachable, pair_hosts)
    cover = b.cover
    for r in range(0 if not structured else budget, budget):
        if all(cover[k] >= min_cover for k in reachable):  # stops at the first short cable
            break
        added = _host_shift_round(b, r, by_host, host_names, min_cover) if multi_rail else 0
        if not multi_rail:
            k = _shift(r, m)
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


def _shift(r: int, m: int) -> int:
    """Shift of round r: spread over the port ring by the golden ratio, never 0."""
    if m < 2:
        return 1
    k = int(round(m * ((_GOLDEN * (r + 1)) % 1.0))) % m
    return k or 1


def _host_shift_round(
    b: PlanBuilder, r: int, by_host: dict[str, list[PortRef]], hosts: list[str], need: int
) -> int:
    """Multi-rail hosts: host i tests host i+k on every rail it can, so a round is one host pairing.

    Each NIC of the sender takes the first NIC of the receiver (its own rail
    first) whose path is free in this round and adds coverage; on rail fabrics
    routed by global index a cross-rail partner is what reaches the other uplinks.
    """
    k = _shift(r, len(hosts))
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


def _leaf_spine_rounds(b: PlanBuilder, budget: int, need: int, reachable: set[LinkKey], pair_hosts: bool) -> bool:
    """Rounds for multi-rail hosts on a two-level (leaf/spine) fabric, each cable sought directly.

    Where a test goes up from its source leaf and down to its receiver is, under
    destination-based routing (D-mod-K or LFTs), a property of the receiver: one
    route per receiver port (from a reference port on another leaf) tells which
    leaf uplink it climbs (by position) and which spine-to-leaf cable it descends.
    Each round then gives every descending cable one receiver and a sender on a
    leaf whose uplink of that position still lacks cover: preferably a port of a
    host that already sends to the receiver's host this round (one host pairing
    then runs on many rails at once, like one multi-rail job), else the least
    covered port. Uplinks that are also some leaf's descending cable are left to
    the descents, which are the scarce resource (they set the round count).
    Every test is checked against its real route before it is placed, so a
    fabric that routes otherwise only costs rounds, never a wrong plan. Work and
    memory are linear in the ports; no candidate is held beyond the round.
    Returns False (nothing planned) when the fabric is not two-level.
    """
    f = b.f
    leaves = sorted(b.under_switch)
    if len(leaves) < 2 or any(b.level.get(sw, 0) != 1 for sw in leaves):
        return False
    ups: dict[str, list[LinkKey]] = {}
    for leaf in leaves:
        mine: list[LinkKey] = []
        for link in f.node_links(leaf):
            other = link.key.b if link.key.a.node == leaf else link.key.a
            if b.level.get(other.node, 0) == 2:
                if link.state == "up":
                    mine.append(link.key)
            elif b.level.get(other.node, 0) > 2:
                return False  # three levels or more: the general rounds
        ups[leaf] = mine
    up_pos = {leaf: {k: i for i, k in enumerate(keys)} for leaf, keys in ups.items()}
    leaf_of = {p: b.f.peer(p).node for p in b.ports}  # type: ignore[union-attr]
    live = [leaf for leaf in leaves if any(f.links[f._port_link[p]].state == "up" for p in b.under_switch[leaf])]
    if len(live) < 2:
        return False
    refs = [next(p for p in b.under_switch[leaf] if f.links[f._port_link[p]].state == "up") for leaf in live[:2]]
    # Receiver port -> (uplink position it climbs from another leaf, cable it descends).
    by_down: dict[str, dict[LinkKey, list[PortRef]]] = {leaf: {} for leaf in leaves}
    climb: dict[PortRef, int] = {}
    mark = f.routes_cached()
    for d in b.ports:
        ref = refs[0] if leaf_of[d] != leaf_of[refs[0]] else refs[1]
        try:
            path = f.path(ref, d)
        except TopologyError:
            continue
        if len(path) != 4:
            return False
        pos = up_pos[leaf_of[ref]].get(path[1])
        if pos is None:
            return False
        climb[d] = pos
        by_down[leaf_of[d]].setdefault(path[2], []).append(d)
    f.clear_route_cache(since=mark)
    groups = {leaf: [(k, v[k]) for k in sorted(v, key=str)] for leaf, v in by_down.items()}
    width = max(len(v) for v in ups.values())
    # An uplink that is also a leaf's descending cable is covered by the tests it receives:
    # climbing it would spend a scarce descent elsewhere (the plan's rounds are set by descents).
    descends = {down for v in by_down.values() for down in v}
    short_at = [[leaf for leaf in leaves if pos < len(ups[leaf]) and ups[leaf][pos] not in descends]
                for pos in range(width)]
    host_cable = {p: b.f._port_link[p] for p in b.ports}
    by_host: dict[str, list[PortRef]] = defaultdict(list)
    for p in b.ports:
        by_host[b.host_of[p.node]].append(p)
    host_names = list(by_host)
    host_at = {h: i for i, h in enumerate(host_names)}
    cover = b.cover
    n_leaves = len(leaves)
    if b.bidir:
        _bidir_leaf_spine_rounds(b, budget, need, reachable, leaves, ups, groups, climb, host_cable)
    for r in range(0 if not b.bidir else budget, budget):
        if not any(cover[k] < need for k in reachable):
            break
        # Per uplink position, the leaves whose cable there still lacks cover, rotated per round.
        want: list[deque[str]] = []
        for pos in range(width):
            q = short_at[pos] = [leaf for leaf in short_at[pos] if cover[ups[leaf][pos]] < need]
            if q:
                shift = (r * 7919) % len(q)
                q = q[shift:] + q[:shift]
            want.append(deque(q))
        sent: set[PortRef] = set()
        got: set[PortRef] = set()
        upbusy: set[tuple[str, int]] = set()
        partners: dict[str, list[str]] = {}  # receiver host -> its sender hosts this round
        shift = _shift(r, len(host_names))
        fill = r  # rotating start for senders chosen only for host-cable cover
        added = 0
        start = (r * 104729) % n_leaves
        for li in range(n_leaves):
            dleaf = leaves[(start + li) % n_leaves]
            for down, group in groups[dleaf]:
                free = [d for d in group if d not in got]
                if not free:
                    continue
                off = r % len(free)
                free = free[off:] + free[:off]
                # A receiver whose host already pairs with a sender host this round, on a
                # cable that still needs cover: one host pairing runs on many rails at once.
                test = None
                for d in free:
                    for hs in partners.get(b.host_of[d.node], ()) if pair_hosts else ():
                        spare = not want[climb[d]] and (cover[host_cable[d]] < need or cover[down] < need)
                        test = _partner(b, by_host[hs], d, climb[d], dleaf, sent, upbusy, ups, leaf_of, need, spare)
                        if test is not None:
                            break
                    if test is not None:
                        break
                if test is not None:
                    d = test[1]
                else:
                    d = min(free, key=lambda p: cover[host_cable[p]])
                pos = climb[d]
                dst_short = cover[host_cable[d]] < need or cover[down] < need
                q = want[pos]
                for _ in range(min(len(q), 4) if test is None else 0):
                    sleaf = q.popleft()
                    if sleaf == dleaf or (sleaf, pos) in upbusy:
                        q.append(sleaf)
                        continue
                    test = _sender(b, sleaf, sent, d, r, host_cable)
                    if test is not None:
                        break
                    q.append(sleaf)
                if test is None and dst_short and pair_hosts:
                    # No uplink to seek: the host ``shift`` places before this one sends (host shift rounds).
                    hs = host_names[(host_at[b.host_of[d.node]] - shift) % len(host_names)]
                    test = _partner(b, by_host[hs], d, pos, dleaf, sent, upbusy, ups, leaf_of, need, True)
                if test is None and dst_short:
                    for _ in range(min(n_leaves, 8)):
                        sleaf = leaves[fill % n_leaves]
                        fill += 1
                        if sleaf == dleaf or (sleaf, pos) in upbusy or pos >= len(ups[sleaf]):
                            continue
                        test = _sender(b, sleaf, sent, d, r, host_cable)
                        if test is not None:
                            break
                if test is None:
                    continue
                sleaf = leaf_of[test[0]]
                if b.fits(r, test) and b.gain(test, need):
                    b.add(r, test)
                    mates = partners.setdefault(b.host_of[d.node], [])
                    if b.host_of[test[0].node] not in mates:
                        mates.append(b.host_of[test[0].node])
                    sent.add(test[0])
                    got.add(d)
                    upbusy.add((sleaf, pos))
                    added += 1
        if not added:
            break
    # Host cables still short: a test to a neighbour under the same leaf loads no switch
    # cable, so it fits into a round already planned.
    for p in b.ports:
        if cover[host_cable[p]] >= need:
            continue
        mates = b.under_switch[leaf_of[p]]
        for i in range(len(mates)):
            q = mates[(mates.index(p) + 1 + i) % len(mates)]
            for test in ((p, q), (q, p)):
                if cover[host_cable[p]] < need and b.ok_pair(*test):
                    b.place(test, max(len(b.rounds), 1))
            if cover[host_cable[p]] >= need:
                break
    return True


def _bidir_leaf_spine_rounds(b: PlanBuilder, budget: int, need: int, reachable: set[LinkKey], leaves: list[str],
                             ups: dict[str, list[LinkKey]], groups: dict[str, list[tuple[LinkKey, list[PortRef]]]],
                             climb: dict[PortRef, int], host_cable: dict[PortRef, LinkKey]) -> None:
    """Rounds of bidirectional tests on a leaf/spine fabric, each test placed for the uplinks it covers.

    A bidirectional test between port p (leaf X) and port q (leaf Y) descends into both
    leaves (the cables its two receivers descend, one per port: the scarce resource, as in
    one-way rounds) and climbs one uplink at each end: X's at the position q is reached
    by, Y's at p's. Ports descending the same cable by the same position form a slot; a
    slot's least covered free port is taken, one not yet tested against that position first.
    Where the fabric has the shape, a round-robin between rails covers every uplink twice
    in the fewest rounds (:func:`_bidir_schedule`). Otherwise (and for what is left) every
    round gives each free descent of X a partner leaf whose uplink at p's position still
    lacks cover, through a descent of that leaf at a position where X's uplink still lacks
    cover; failing that, one of the two. Uplinks still short then get a test in a planned
    round with room. A slot pair is tested once where it can be, so no two cables share
    their covering tests. Work is linear in the ports per round.
    """
    cover = b.cover
    n_leaves = len(leaves)
    slots: dict[str, list[tuple[LinkKey, int, list[PortRef]]]] = {}
    by_climb: dict[int, list[str]] = defaultdict(list)  # position -> leaves with a slot at it
    for leaf in leaves:
        mine: dict[tuple[LinkKey, int], list[PortRef]] = {}
        for down, ports in groups[leaf]:
            for p in ports:
                mine.setdefault((down, climb[p]), []).append(p)
        slots[leaf] = [(down, pos, ports) for (down, pos), ports in mine.items()]
        for pos in sorted({pos for _, pos, _ in slots[leaf]}):
            by_climb[pos].append(leaf)
    width = max(len(v) for v in ups.values())

    def short_up(leaf: str, pos: int) -> bool:
        return pos < len(ups[leaf]) and cover[ups[leaf][pos]] < need

    paired: set[tuple[str, int, str, int]] = set()  # slot pairs tested: a second test would repeat both uplinks
    met: set[tuple[PortRef, int]] = set()  # (port, the position its partner climbs to) tested already

    def port_in(ports: list[PortRef], used: set[PortRef], other: PortRef | None, far: int,
                r: int) -> PortRef | None:
        """The slot's free port, least covered, not yet tested with a partner at position ``far``:
        its cable and that uplink would otherwise share their covering tests."""
        best, low = None, (0, 0)
        n = len(ports)
        for i in range(n):
            p = ports[(r + i) % n]
            if p in used or (other is not None and b.host_of[p.node] == b.host_of[other.node]):
                continue
            c = ((p, far) in met, cover[host_cable[p]])
            if best is None or c < low:
                best, low = p, c
        return best

    def commit(r: int, p: PortRef, q: PortRef, x: str, pos_x: int, y: str, pos_y: int, used: set[PortRef]) -> bool:
        """Add test (p, q) to round r if it fits there and adds cover."""
        if not (b.fits(r, (p, q)) and b.gain((p, q), need)):
            return False
        b.add(r, (p, q))
        used.update((p, q))
        met.update(((p, pos_y), (q, pos_x)))
        paired.update(((x, pos_x, y, pos_y), (y, pos_y, x, pos_x)))
        return True

    def place(r: int, x: str, pos_x: int, ports_x: list[PortRef], y: str, pos_y: int, ports_y: list[PortRef],
              used: set[PortRef]) -> bool:
        p = port_in(ports_x, used, None, pos_y, r)
        q = port_in(ports_y, used, p, pos_x, r) if p is not None else None
        return p is not None and q is not None and b.ok_pair(p, q) and commit(r, p, q, x, pos_x, y, pos_y, used)

    first = _bidir_schedule(leaves, slots, budget, place)
    for r in range(first, budget):
        if not any(cover[k] < need for k in reachable):
            break
        used: set[PortRef] = set()
        down_busy: set[LinkKey] = set()
        up_busy: set[tuple[str, int]] = set()
        want: list[deque[str]] = []
        for pos in range(width):
            q = [leaf for leaf in leaves if short_up(leaf, pos)]
            if q:
                shift = (r * 7919) % len(q)
                q = q[shift:] + q[:shift]
            want.append(deque(q))
        added = 0
        start = (r * 104729) % n_leaves
        for li in range(n_leaves):
            x = leaves[(start + li) % n_leaves]
            mine = slots[x]
            for si in range(len(mine)):
                down_x, pos_x, ports_x = mine[(r + si) % len(mine)]
                if down_x in down_busy:
                    continue
                test = _bidir_partner(b, x, down_x, pos_x, ports_x, want, slots, by_climb, used, down_busy,
                                      up_busy, paired, short_up, port_in, r)
                if test is None:
                    continue
                p, q, y, down_y, pos_y = test
                if commit(r, p, q, x, pos_x, y, pos_y, used):
                    down_busy.update((down_x, down_y))
                    up_busy.update(((x, pos_y), (y, pos_x)))
                    added += 1
        if not added:
            break
    # Uplinks still short: a test into some round that has the two descents and uplinks free.
    in_round = [{p for t in tests for p in t} for tests in b.rounds]
    for x in leaves:
        for pos in range(len(ups[x])):
            for y in by_climb.get(pos, ()):
                if not short_up(x, pos):
                    break
                if y != x:
                    _bidir_fill(b, x, y, ups[x][pos], pos, slots, in_round, paired, need)


def _bidir_schedule(leaves: list[str], slots: dict[str, list[tuple[LinkKey, int, list[PortRef]]]], budget: int,
                    place: Callable[[int, str, int, list[PortRef], str, int, list[PortRef], set[PortRef]], bool]) -> int:
    """The rounds of a round-robin tournament between rails, when the fabric has the shape for it.

    Leaves whose slots sit at the same uplink positions form a class (a rail, on a rail-optimized
    fabric routed D-mod-K). When every leaf's slots are at distinct positions, the classes partition
    the positions and hold equally many leaves, class pairs taken as in a round-robin (circle
    method) cover every uplink twice in 2 x (classes - 1) rounds: paired leaves run one test per
    slot, slot i against the partner's slot i + s, with s (and the partner leaf) changed the second
    time a pairing comes round, so no two cables share their covering tests. Returns the rounds
    made (0 where the shape does not hold or the tournament would pass ``budget``).
    """
    by_class: dict[tuple[int, ...], list[str]] = defaultdict(list)
    for leaf in leaves:
        positions = tuple(sorted(pos for _, pos, _ in slots[leaf]))
        if len(set(positions)) != len(positions) or not positions:
            return 0
        by_class[positions].append(leaf)
    classes = list(by_class.values())
    flat = [pos for key in by_class for pos in key]
    if len(classes) < 2 or len(set(flat)) != len(flat) or len({len(c) for c in classes}) != 1:
        return 0
    teams = len(classes) + len(classes) % 2  # an odd count gets a bye
    rounds = 2 * (teams - 1)
    if rounds > budget:
        return 0
    units = len(classes[0])
    for r in range(rounds):
        m, second = r % (teams - 1), r >= teams - 1
        pairs = [(teams - 1, m)] + [((m + i) % (teams - 1), (m - i) % (teams - 1)) for i in range(1, teams // 2)]
        used: set[PortRef] = set()
        for ca, cb in pairs:
            if max(ca, cb) >= len(classes):
                continue  # the bye
            for u in range(units):
                x, y = classes[ca][u], classes[cb][(u + (second and units > 1)) % units]
                sx = sorted(slots[x], key=lambda s: s[1])
                sy = sorted(slots[y], key=lambda s: s[1])
                shift = 1 if second and units == 1 else 0
                for i, (_, pos_x, ports_x) in enumerate(sx):
                    _, pos_y, ports_y = sy[(i + shift) % len(sy)]
                    place(r, x, pos_x, ports_x, y, pos_y, ports_y, used)
    return rounds


def _bidir_fill(b: PlanBuilder, x: str, y: str, uplink: LinkKey, pos: int,
                slots: dict[str, list[tuple[LinkKey, int, list[PortRef]]]], in_round: list[set[PortRef]],
                paired: set[tuple[str, int, str, int]], need: int) -> None:
    """Cover ``uplink`` (leaf ``x``'s at ``pos``) with tests to ``y``'s slot at ``pos``, each in the first
    planned round it fits (slot pairs not tested yet first), until it has cover."""
    for _, pos_y, ports_y in slots[y]:
        if pos_y != pos:
            continue
        for fresh in (True, False):
            for _, pos_x, ports_x in slots[x]:
                if fresh == ((x, pos_x, y, pos_y) in paired):
                    continue
                for r, busy in enumerate(in_round):
                    p = next((p for p in ports_x if p not in busy), None)
                    if p is None:
                        continue
                    q = next((q for q in ports_y if q not in busy and b.ok_pair(p, q)), None)
                    if q is None or not (b.fits(r, (p, q)) and b.gain((p, q), need)):
                        continue
                    b.add(r, (p, q))
                    busy.update((p, q))
                    paired.update(((x, pos_x, y, pos_y), (y, pos_y, x, pos_x)))
                    if b.cover[uplink] >= need:
                        return


def _bidir_partner(b: PlanBuilder, x: str, down_x: LinkKey, pos_x: int, ports_x: list[PortRef],
                   want: list[deque[str]], slots: dict[str, list[tuple[LinkKey, int, list[PortRef]]]],
                   by_climb: dict[int, list[str]], used: set[PortRef], down_busy: set[LinkKey],
                   up_busy: set[tuple[str, int]], paired: set[tuple[str, int, str, int]],
                   short_up: Callable[[str, int], bool],
                   port_in: Callable[[list[PortRef], set[PortRef], PortRef | None, int, int], PortRef | None],
                   r: int) -> tuple[PortRef, PortRef, str, LinkKey, int] | None:
    """A partner for a port of slot (``down_x``, ``pos_x``) of leaf ``x``: the test, the partner's
    leaf, descent and position. Both climbed uplinks short of cover first, then either one."""

    def fit(y: str, need_x: bool) -> tuple[PortRef, PortRef, str, LinkKey, int] | None:
        if y == x or (y, pos_x) in up_busy:
            return None
        mine = slots[y]
        for si in range(len(mine)):
            down_y, pos_y, ports_y = mine[(r + si) % len(mine)]
            if down_y in down_busy or (x, pos_y) in up_busy or (x, pos_x, y, pos_y) in paired:
                continue
            if need_x and not short_up(x, pos_y):
                continue
            p = port_in(ports_x, used, None, pos_y, r)
            if p is None:
                return None
            q = port_in(ports_y, used, p, pos_x, r)
            if q is None or not b.ok_pair(p, q):
                continue
            return p, q, y, down_y, pos_y
        return None

    # The partner leaf climbs at pos_x: its uplink there should lack cover (both ends gain).
    queue = want[pos_x] if pos_x < len(want) else deque()
    for _ in range(min(len(queue), 8)):
        y = queue.popleft()
        got = fit(y, True)
        if got is not None:
            queue.append(y)
            return got
        queue.append(y)
    for _ in range(min(len(queue), 4)):
        y = queue.popleft()
        queue.append(y)
        got = fit(y, False)
        if got is not None:
            return got
    # Else any leaf with a slot at a position where x's uplink still lacks cover.
    for pos in range(len(want)):
        if not short_up(x, pos) or (x, pos) in up_busy:
            continue
        cands = by_climb.get(pos, [])
        for i in range(min(len(cands), 4)):
            got = fit(cands[(r + i) % len(cands)], True)
            if got is not None:
                return got
    return None


def _partner(b: PlanBuilder, ports: list[PortRef], dst: PortRef, pos: int, dleaf: str, sent: set[PortRef],
             upbusy: set[tuple[str, int]], ups: dict[str, list[LinkKey]], leaf_of: dict[PortRef, str],
             need: int, spare: bool) -> Test | None:
    """A port of the partner host that can send to ``dst`` over an uplink still short of cover
    (any uplink when ``spare``: no leaf needs that uplink position any more)."""
    for src in ports:
        leaf = leaf_of[src]
        if src in sent or leaf == dleaf or (leaf, pos) in upbusy or pos >= len(ups[leaf]):
            continue
        if (b.cover[ups[leaf][pos]] < need or spare) and b.ok_pair(src, dst):
            return (src, dst)
    return None


def _sender(b: PlanBuilder, leaf: str, sent: set[PortRef], dst: PortRef, r: int,
            host_cable: dict[PortRef, LinkKey]) -> Test | None:
    """The least covered port under ``leaf`` free to send to ``dst`` this round (ties rotate)."""
    ports = b.under_switch[leaf]
    n = len(ports)
    best: PortRef | None = None
    low = 0
    for i in range(n):
        src = ports[(r + i) % n]
        if src in sent or not b.ok_pair(src, dst):
            continue
        c = b.cover[host_cable[src]]
        if best is None or c < low:
            best, low = src, c
    return None if best is None else (best, dst)


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
