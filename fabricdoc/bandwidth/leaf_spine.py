"""Multi-rail leaf/spine planning, cable by cable: each round's capacity is the spine-to-leaf cables its receivers descend."""

from __future__ import annotations

from collections import defaultdict, deque

from fabricdoc.bandwidth.builder import PlanBuilder, Test, shift_offset
from fabricdoc.bandwidth.leaf_spine_bidir import bidir_leaf_spine_rounds
from fabricdoc.errors import TopologyError
from fabricdoc.model.records import LinkKey, PortRef


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
        bidir_leaf_spine_rounds(b, budget, need, reachable, leaves, ups, groups, climb, host_cable)
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
        shift = shift_offset(r, len(host_names))
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
