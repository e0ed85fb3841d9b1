"""Group tests chosen from the topology, and the busbw each should reach on today's routes.

Pair rounds keep tests off each other's cables, so they never load a cable
direction with more than one flow; a fault that only shows when many flows
meet (a buffer that collapses under incast, a link that falls apart at full
load, a switch that throttles at full bisection) passes them. Group tests load
the fabric on purpose: every leaf's hosts at once (loading the host cables),
pairs of leaves (loading the uplinks and spines between them), and optionally
every host at once (a full-load round). Ranks follow the sorted port order (a
job's ring: :func:`fabricdoc.impact.collectives.job_ring` sorts hosts the same way).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from fabricdoc.errors import TopologyError
from fabricdoc.model.flows import maxmin
from fabricdoc.model.groups import (
    LOADED_FLOWS,
    busbw_from_rates,
    fan,
    filled_flows,
    group_flows,
    most_flows,
)
from fabricdoc.model.paths import Channel
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric

# An alltoall over n ranks is n(n-1) flows: larger groups are cut into chunks of this many ports.
MAX_ALLTOALL = 64
# The full-load alltoall (every host at once) runs only up to this many ports.
MAX_FULL_ALLTOALL = 512
# Rounds the incast screens take at most: a round holds as many leaves' incasts as that needs, each from as
# many senders as the hosts not receiving then leave it (one leaf a round, from every other host, where the
# leaves are few).
INCAST_ROUNDS = 8


@dataclass(frozen=True)
class GroupTest:
    """One planned group collective: ``members`` (rank order), ``test``, why it runs and its name."""

    __test__ = False  # not a pytest class

    members: tuple[PortRef, ...]
    test: str = "alltoall"
    phase: str = "screen"
    label: str = ""

    @property
    def nodes(self) -> set[str]:
        return {p.node for p in self.members}


def leaf_of(fabric: Fabric, port: PortRef) -> str:
    """The switch a host port is cabled to (its leaf); the port's own node when it has none."""
    peer = fabric.peer(port)
    return peer.node if peer is not None else port.node


def by_leaf(fabric: Fabric, ports: Iterable[PortRef]) -> dict[str, list[PortRef]]:
    """Host ports grouped by leaf switch, each group in rank (sorted) order."""
    out: dict[str, list[PortRef]] = defaultdict(list)
    for p in sorted(ports):
        out[leaf_of(fabric, p)].append(p)
    return dict(sorted(out.items()))


def _chunks(ports: list[PortRef], size: int) -> list[list[PortRef]]:
    if len(ports) <= size:
        return [ports]
    n = -(-len(ports) // size)
    step = -(-len(ports) // n)
    return [ports[i:i + step] for i in range(0, len(ports), step)]


@dataclass(frozen=True)
class Screening:
    """The screening plan: ``rounds`` always run, and the ``reference`` round (every leaf's hosts alone,
    no spine between them), run only when the rounds' groups leave what a healthy group reaches in
    doubt (:meth:`fabricdoc.model.expectation.GroupJudge.doubtful`): a spine that slows every pair of
    leaves alike is a fault only next to groups no spine carries."""

    rounds: list[list[GroupTest]]
    reference: list[GroupTest]


def screen_rounds(fabric: Fabric, ports: Sequence[PortRef], test: str = "alltoall",
                  max_size: int = MAX_ALLTOALL) -> list[list[GroupTest]]:
    """The screening rounds: every leaf's hosts at once, then pairs of leaves (their uplinks and spines).

    Groups of one round share no host; leaf groups share no cable either. A leaf with
    one host is screened with its neighbour leaf only. ``test="fan"``: the alltoall rounds (every leaf's
    group always among them), then each leaf receives from hosts of every other leaf at once, one way
    (an incast into the leaf: what a collective's fan-in does to a switch buffer; :func:`_incast_rounds`).
    """
    if test == "fan":
        return screen_rounds(fabric, ports, "alltoall", max_size) + _incast_rounds(fabric, ports, max_size)
    return _leaves_then_pairs(fabric, ports, test, max_size)[1]


def _incast_rounds(fabric: Fabric, ports: Sequence[PortRef], max_size: int) -> list[list[GroupTest]]:
    """One-way incasts into every leaf: its hosts receive from senders spread over every other leaf (their
    flows cross every spine and level between), in at most :data:`INCAST_ROUNDS` rounds, the incasts of a
    round sharing out the hosts not receiving then (no host in two)."""
    leaves = {leaf: members for leaf, members in by_leaf(fabric, ports).items() if members}
    names = list(leaves)
    if len(names) < 2:
        return []
    hosts = max(len(m) for m in leaves.values())
    per_round = -(-len(names) // INCAST_ROUNDS)
    want = max(1, min(max_size - hosts, (len(ports) - per_round * hosts) // per_round))
    rounds = []
    for at in range(0, len(names), per_round):
        into = names[at:at + per_round]
        # Every other leaf's hosts dealt out to the incasts in turn (each leaf starting at the next incast),
        # each incast's senders then taken one leaf after another: every incast has senders on every leaf.
        rest = [leaves[n] for n in names if n not in into]
        dealt: list[list[list[PortRef]]] = [[[] for _ in rest] for _ in into]
        for q, members in enumerate(rest):
            for i, p in enumerate(members):
                dealt[(i + q) % len(into)][q].append(p)
        each = max(1, min(want, sum(map(len, rest)) // len(into)))
        round_ = []
        for j, leaf in enumerate(into):
            mine = dealt[j]
            senders = [m[i] for i in range(max(map(len, mine))) for m in mine if i < len(m)][:each]
            round_.append(GroupTest((*senders, *leaves[leaf]), fan(len(senders)), "screen",
                                    f"incast into leaf {fabric.label(leaf)}"))
        rounds.append(round_)
    return rounds


def _fan_reference(fabric: Fabric, ports: Sequence[PortRef]) -> list[GroupTest]:
    """Within every leaf, half its hosts sending to the other half (one way, no spine between): the figure
    a healthy fan reaches, where every incast crossed one slow part (a spine under them all)."""
    out = []
    for leaf, members in by_leaf(fabric, ports).items():
        if len(members) >= 2:
            half = len(members) // 2
            out.append(GroupTest(tuple(members), fan(half), "screen", f"fan within leaf {fabric.label(leaf)}"))
    return out


def _leaves_then_pairs(fabric: Fabric, ports: Sequence[PortRef], test: str,
                       max_size: int) -> tuple[list[GroupTest], list[list[GroupTest]]]:
    """Every leaf's group (one round, maybe empty) and the screening rounds, that round first when it is
    not empty, then the pairs of leaves."""
    leaves = by_leaf(fabric, ports)
    size = max_size if test == "alltoall" else max(max_size, len(ports))
    first = []
    for leaf, members in leaves.items():
        parts = _chunks(members, size)
        for i, chunk in enumerate(parts):
            if len(chunk) >= 2:
                suffix = f" part {i + 1}" if len(parts) > 1 else ""
                first.append(GroupTest(tuple(chunk), test, "screen", f"leaf {fabric.label(leaf)}{suffix}"))
    names = list(leaves)

    def round_of(pairs: list[tuple[str, ...]]) -> list[GroupTest]:
        out = []
        for trio in pairs:
            members = [p for leaf in trio for p in leaves[leaf]]
            share = max(1, size // len(trio))
            if len(members) > size:  # as many of each leaf as fit, so the uplinks still carry many flows
                members = [p for leaf in trio for p in leaves[leaf][:share]]
            out.append(GroupTest(tuple(sorted(members)), test, "screen",
                                 "leaves " + "+".join(fabric.label(leaf) for leaf in trio)))
        return out

    rounds = [r for r in (first, round_of(_far_pairs(names))) if r]
    # Then pairs of leaves at other distances, a round each, while one loads switch cables the rounds so
    # far did not (on a rail-optimized fabric: the spines between different rails), at most EXTRA_ROUNDS.
    loaded = _loaded(fabric, rounds)
    todo = _switch_cables(fabric) - loaded
    for pairs in (m for offset in _offsets(len(names)) for m in _pairs_at(names, offset)):
        if not todo or len(rounds) >= 2 + EXTRA_ROUNDS:
            break
        extra = round_of(pairs)
        gained = _loaded(fabric, [extra]) & todo
        if gained:
            rounds.append(extra)
            todo -= gained
    return first, rounds


def screening(fabric: Fabric, ports: Sequence[PortRef], test: str = "alltoall",
              max_size: int = MAX_ALLTOALL) -> Screening:
    """:func:`screen_rounds`, with every leaf's group alone held back as the :attr:`Screening.reference`
    where pairs of leaves already hold every host: each pair loads its hosts' cables and leaves as their
    own groups would, and isolation splits a failing pair into its leaves. (A ``fan`` screen runs every
    round, the leaves' among them; its reference is half of each leaf sending to the other half.)"""
    if test == "fan":
        return Screening(screen_rounds(fabric, ports, test, max_size), _fan_reference(fabric, ports))
    first, rounds = _leaves_then_pairs(fabric, ports, test, max_size)
    rest = rounds[1:] if first else rounds
    covered = {p for tests in rest for t in tests for p in t.members}
    if not first or not rest or any(p not in covered for t in first for p in t.members):
        return Screening(rounds, [])
    if not _host_ports_filled(fabric, rest, [p for t in first for p in t.members]):
        # The pairs' flows are held back by the leaves' uplinks (oversubscribed, or a rail's one spine
        # cable): they never fill a host port, and an incast into one would pass them. Each leaf's group
        # alone loads its hosts' ports at full rate.
        return Screening(rounds, [])
    return Screening(rest, first)


def _host_ports_filled(fabric: Fabric, rounds: Sequence[Sequence[GroupTest]], ports: Sequence[PortRef]) -> bool:
    """Whether some round fills the direction into each of ``ports`` (:func:`~fabricdoc.model.groups.shown_full`)
    with more than :data:`LOADED_FLOWS` flows."""
    filled = filled_flows(fabric, [[(t.members, t.test) for t in tests] for tests in rounds])
    for p in ports:
        link = fabric.link_at(p)
        if link is None or filled[(link.key, 0 if link.key.b == p else 1)] <= LOADED_FLOWS:
            return False
    return True


EXTRA_ROUNDS = 8  # pair rounds beyond the far pairing, each only when it loads cables the others did not


def _far_pairs(names: list[str]) -> list[tuple[str, ...]]:
    """Leaves paired far apart in name order (the first half with the second): leaves named in pod or
    unit order are then paired across pods (loading agg-core cables and cores) and across units on the
    same rail (loading every spine plane), not only with their neighbours. An odd leaf joins the last pair."""
    half = len(names) // 2
    pairs: list[tuple[str, ...]] = [(names[i], names[i + half]) for i in range(half)]
    if len(names) % 2 and pairs:
        pairs[-1] = (*pairs[-1], names[-1])
    return pairs


def _offsets(n: int) -> list[int]:
    """Leaf distances to try after the far one: neighbours first, then the rest."""
    return [o for o in range(1, n) if o != n // 2 and o <= n - o]


def _pairs_at(names: list[str], offset: int) -> list[list[tuple[str, ...]]]:
    """Every pair of leaves ``offset`` apart in name order (wrapping around), as rounds of disjoint
    pairs (each a greedy matching of the pairs the rounds before did not take)."""
    n = len(names)
    left = list(dict.fromkeys(tuple(sorted((i, (i + offset) % n))) for i in range(n) if (i + offset) % n != i))
    rounds: list[list[tuple[str, ...]]] = []
    while left:
        used: set[int] = set()
        now, later = [], []
        for i, j in left:
            if i in used or j in used:
                later.append((i, j))
            else:
                used |= {i, j}
                now.append((names[i], names[j]))
        rounds.append(now)
        left = later
    return rounds


def _switch_cables(fabric: Fabric) -> set[LinkKey]:
    return {k for k, link in fabric.links.items() if link.state == "up"
            and fabric.nodes[k.a.node].kind == "switch" and fabric.nodes[k.b.node].kind == "switch"}


def _loaded(fabric: Fabric, rounds: Sequence[Sequence[GroupTest]]) -> set[LinkKey]:
    """Cables some round put :data:`LOADED_FLOWS` flows on at once (in a direction routes use: on a
    rail-optimized fabric a spine cable between rails carries one direction only)."""
    most = most_flows(fabric, ([(t.members, t.test) for t in tests] for tests in rounds))
    return {key for (key, _), n in most.items() if n >= LOADED_FLOWS}


def full_load_rounds(ports: Sequence[PortRef]) -> list[list[GroupTest]]:
    """Every host at once: a job-sized ring all_reduce, then an alltoall where it is not too large."""
    members = tuple(sorted(ports))
    if len(members) < 2:
        return []
    out = [[GroupTest(members, "all_reduce", "full_load", "all hosts (all_reduce)")]]
    if len(members) <= MAX_FULL_ALLTOALL:
        out.append([GroupTest(members, "alltoall", "full_load", "all hosts (alltoall)")])
    return out


def split(fabric: Fabric, test: GroupTest) -> tuple[tuple[PortRef, ...], tuple[PortRef, ...]]:
    """Two halves of a group along the topology: members ordered by leaf, cut in the middle
    (so a two-leaf group splits into its leaves)."""
    ordered = sorted(test.members, key=lambda p: (leaf_of(fabric, p), p))
    leaves = by_leaf(fabric, ordered)
    if len(leaves) == 2:
        a, b = leaves.values()
        return tuple(sorted(a)), tuple(sorted(b))
    mid = len(ordered) // 2
    return tuple(sorted(ordered[:mid])), tuple(sorted(ordered[mid:]))


def expected_round(fabric: Fabric, tests: Sequence[GroupTest]) -> list[float | None]:
    """What each group of one round should reach together: max-min fair rates of all their flows over
    ``fabric``'s capacities on today's routes, as nccl-tests busbw (None where a member has no route)."""
    flows: list[list[Channel]] = []
    spans: list[tuple[int, int] | None] = []
    for t in tests:
        try:
            mine = group_flows(fabric, t.members, t.test)
        except TopologyError:
            spans.append(None)
            continue
        if any(fabric.links[k].state == "down" for hops in mine for k, _ in hops):
            spans.append(None)
            continue
        spans.append((len(flows), len(flows) + len(mine)))
        flows.extend(mine)
    rates = maxmin(flows, lambda k: fabric.links[k].capacity_gbps)
    return [None if s is None else busbw_from_rates(t.test, len(t.members), rates[s[0]:s[1]])
            for t, s in zip(tests, spans, strict=True)]
