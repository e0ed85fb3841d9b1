"""Multi-rail leaf/spine planning, cable by cable: each round's capacity is the spine-to-leaf cables its receivers descend."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field

from fabricdoc.bandwidth.builder import PlanBuilder, Test, shift_offset
from fabricdoc.bandwidth.leaf_spine_bidir import bidir_leaf_spine_rounds
from fabricdoc.errors import TopologyError
from fabricdoc.model.records import LinkKey, PortRef


@dataclass(frozen=True)
class LeafSpine:
    """A two-level fabric as both leaf/spine planners read it, derived once per plan.

    The routing facts rounds are built from (the uplink position each receiver climbs
    from another leaf, the spine-to-leaf cable it descends), with the builder and the
    cover wanted, so the planners' helpers take this and only what varies per call.
    The tables are fixed for the plan; cover and rounds live in the builder.
    """

    b: PlanBuilder
    need: int  # tests wanted on every cable
    leaves: list[str]  # the leaf switches, by name
    ups: dict[str, list[LinkKey]]  # leaf -> its live uplinks; the index is the uplink's position
    leaf_of: dict[PortRef, str]  # host port -> its leaf
    climb: dict[PortRef, int]  # receiver port -> uplink position a test to it climbs from another leaf
    groups: dict[str, list[tuple[LinkKey, list[PortRef]]]]  # leaf -> (cable descended, its receivers), by cable
    host_cable: dict[PortRef, LinkKey]  # host port -> its host-to-leaf cable


def leaf_spine_rounds(b: PlanBuilder, budget: int, need: int, reachable: set[LinkKey], pair_hosts: bool) -> bool:
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
    ls = _leaf_spine(b, need)
    if ls is None:
        return False
    if b.bidir:
        bidir_leaf_spine_rounds(ls, budget, reachable)
    else:
        _one_way_rounds(ls, budget, reachable, pair_hosts)
    _fill_host_cables(ls)
    return True


def _leaf_spine(b: PlanBuilder, need: int) -> LeafSpine | None:
    """The fabric's :class:`LeafSpine` tables, from one route per receiver port; None when it is not two-level."""
    f = b.f
    leaves = sorted(b.under_switch)
    if len(leaves) < 2 or any(b.level.get(sw, 0) != 1 for sw in leaves):
        return None
    ups: dict[str, list[LinkKey]] = {}
    for leaf in leaves:
        mine: list[LinkKey] = []
        for link in f.node_links(leaf):
            other = link.key.b if link.key.a.node == leaf else link.key.a
            if b.level.get(other.node, 0) == 2:
                if link.state == "up":
                    mine.append(link.key)
            elif b.level.get(other.node, 0) > 2:
                return None  # three levels or more: the general rounds
        ups[leaf] = mine
    up_pos = {leaf: {k: i for i, k in enumerate(keys)} for leaf, keys in ups.items()}
    leaf_of = {p: b.f.peer(p).node for p in b.ports}  # type: ignore[union-attr]
    live = [leaf for leaf in leaves if any(f.links[f._port_link[p]].state == "up" for p in b.under_switch[leaf])]
    if len(live) < 2:
        return None
    refs = [next(p for p in b.under_switch[leaf] if f.links[f._port_link[p]].state == "up") for leaf in live[:2]]
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
            return None
        pos = up_pos[leaf_of[ref]].get(path[1])
        if pos is None:
            return None
        climb[d] = pos
        by_down[leaf_of[d]].setdefault(path[2], []).append(d)
    f.clear_route_cache(since=mark)
    groups = {leaf: [(k, v[k]) for k in sorted(v, key=str)] for leaf, v in by_down.items()}
    host_cable = {p: b.f._port_link[p] for p in b.ports}
    return LeafSpine(b, need, leaves, ups, leaf_of, climb, groups, host_cable)


@dataclass
class _Round:
    """One one-way round in the making: the ports sending and receiving in it, the uplinks it climbs.

    :func:`_partner` and :func:`_sender` read it so a port sends once per round and a
    leaf's uplink position is climbed once; ``partners`` lets a host pairing placed on
    one rail be sought first on the host's other rails.
    """

    ls: LeafSpine
    r: int  # the round's index
    sent: set[PortRef] = field(default_factory=set)  # ports sending in this round
    got: set[PortRef] = field(default_factory=set)  # ports receiving in this round
    upbusy: set[tuple[str, int]] = field(default_factory=set)  # (leaf, uplink position) climbed
    partners: dict[str, list[str]] = field(default_factory=dict)  # receiver host -> its sender hosts

    def take(self, test: Test) -> None:
        """Add ``test`` to the round; its ports, the uplink it climbs and its host pairing are taken."""
        ls, (src, dst) = self.ls, test
        host_of = ls.b.host_of
        ls.b.add(self.r, test)
        mates = self.partners.setdefault(host_of[dst.node], [])
        if host_of[src.node] not in mates:
            mates.append(host_of[src.node])
        self.sent.add(src)
        self.got.add(dst)
        self.upbusy.add((ls.leaf_of[src], ls.climb[dst]))


def _one_way_rounds(ls: LeafSpine, budget: int, reachable: set[LinkKey], pair_hosts: bool) -> None:
    """The one-way rounds of :func:`leaf_spine_rounds`, until every reachable cable has cover
    or a round adds nothing."""
    b, need, leaves, ups, climb, host_cable = ls.b, ls.need, ls.leaves, ls.ups, ls.climb, ls.host_cable
    width = max(len(v) for v in ups.values())
    # An uplink that is also a leaf's descending cable is covered by the tests it receives:
    # climbing it would spend a scarce descent elsewhere (the plan's rounds are set by descents).
    descends = {down for v in ls.groups.values() for down, _ in v}
    short_at = [[leaf for leaf in leaves if pos < len(ups[leaf]) and ups[leaf][pos] not in descends]
                for pos in range(width)]
    by_host: dict[str, list[PortRef]] = defaultdict(list)
    for p in b.ports:
        by_host[b.host_of[p.node]].append(p)
    host_names = list(by_host)
    host_at = {h: i for i, h in enumerate(host_names)}
    cover = b.cover
    n_leaves = len(leaves)
    for r in range(budget):
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
        rnd = _Round(ls, r)
        shift = shift_offset(r, len(host_names))
        fill = r  # rotating start for senders chosen only for host-cable cover
        added = 0
        start = (r * 104729) % n_leaves
        for li in range(n_leaves):
            dleaf = leaves[(start + li) % n_leaves]
            for down, group in ls.groups[dleaf]:
                free = [d for d in group if d not in rnd.got]
                if not free:
                    continue
                off = r % len(free)
                free = free[off:] + free[:off]
                # A receiver whose host already pairs with a sender host this round, on a
                # cable that still needs cover: one host pairing runs on many rails at once.
                test = None
                for d in free:
                    for hs in rnd.partners.get(b.host_of[d.node], ()) if pair_hosts else ():
                        spare = not want[climb[d]] and (cover[host_cable[d]] < need or cover[down] < need)
                        test = _partner(rnd, by_host[hs], d, spare)
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
                    if sleaf == dleaf or (sleaf, pos) in rnd.upbusy:
                        q.append(sleaf)
                        continue
                    test = _sender(rnd, sleaf, d)
                    if test is not None:
                        break
                    q.append(sleaf)
                if test is None and dst_short and pair_hosts:
                    # No uplink to seek: the host ``shift`` places before this one sends (host shift rounds).
                    hs = host_names[(host_at[b.host_of[d.node]] - shift) % len(host_names)]
                    test = _partner(rnd, by_host[hs], d, True)
                if test is None and dst_short:
                    for _ in range(min(n_leaves, 8)):
                        sleaf = leaves[fill % n_leaves]
                        fill += 1
                        if sleaf == dleaf or (sleaf, pos) in rnd.upbusy or pos >= len(ups[sleaf]):
                            continue
                        test = _sender(rnd, sleaf, d)
                        if test is not None:
                            break
                if test is None:
                    continue
                if b.fits(r, test) and b.gain(test, need):
                    rnd.take(test)
                    added += 1
        if not added:
            break


def _fill_host_cables(ls: LeafSpine) -> None:
    """Host cables still short: a test to a neighbour under the same leaf loads no switch
    cable, so it fits into a round already planned."""
    b, cover, host_cable = ls.b, ls.b.cover, ls.host_cable
    for p in b.ports:
        if cover[host_cable[p]] >= ls.need:
            continue
        mates = b.under_switch[ls.leaf_of[p]]
        for i in range(len(mates)):
            q = mates[(mates.index(p) + 1 + i) % len(mates)]
            for test in ((p, q), (q, p)):
                if cover[host_cable[p]] < ls.need and b.ok_pair(*test):
                    b.place(test, max(len(b.rounds), 1))
            if cover[host_cable[p]] >= ls.need:
                break


def _partner(rnd: _Round, ports: list[PortRef], dst: PortRef, spare: bool) -> Test | None:
    """A port of the partner host (``ports``) that can send to ``dst`` this round over an uplink still
    short of cover (any uplink when ``spare``: no leaf needs that uplink position any more)."""
    ls = rnd.ls
    pos, dleaf = ls.climb[dst], ls.leaf_of[dst]
    for src in ports:
        leaf = ls.leaf_of[src]
        if src in rnd.sent or leaf == dleaf or (leaf, pos) in rnd.upbusy or pos >= len(ls.ups[leaf]):
            continue
        if (ls.b.cover[ls.ups[leaf][pos]] < ls.need or spare) and ls.b.ok_pair(src, dst):
            return (src, dst)
    return None


def _sender(rnd: _Round, leaf: str, dst: PortRef) -> Test | None:
    """The least covered port under ``leaf`` free to send to ``dst`` this round (ties rotate by round)."""
    b = rnd.ls.b
    ports = b.under_switch[leaf]
    n = len(ports)
    best: PortRef | None = None
    low = 0
    for i in range(n):
        src = ports[(rnd.r + i) % n]
        if src in rnd.sent or not b.ok_pair(src, dst):
            continue
        c = b.cover[rnd.ls.host_cable[src]]
        if best is None or c < low:
            best, low = src, c
    return None if best is None else (best, dst)
