"""Bidirectional tests on a multi-rail leaf/spine fabric: a round-robin between rails, each test descending into both ends' leaves."""

from __future__ import annotations

from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fabricdoc.model.records import LinkKey, PortRef

if TYPE_CHECKING:  # leaf_spine builds the tables and calls this planner
    from fabricdoc.bandwidth.leaf_spine import LeafSpine

Slot = tuple[LinkKey, int, list[PortRef]]  # (cable its ports descend, uplink position they climb, the ports)
Found = tuple[PortRef, PortRef, str, LinkKey, int]  # (p, q, partner leaf, its descent, its position)


@dataclass
class _Bidir:
    """Bidirectional planning state: the fabric's slots, the slot pairs tested so far, the round in the making.

    ``paired`` and ``met`` last the whole plan: they steer tests away from slot and port
    pairings already tested, so no two cables share their covering tests. ``r`` to
    ``want`` are the round being built, reset by :meth:`begin`; the helpers read them to
    keep a port, a descent and a leaf's uplink position to one test per round.
    """

    ls: LeafSpine
    slots: dict[str, list[Slot]]  # leaf -> its slots: ports descending one cable and climbing at one position
    by_climb: dict[int, list[str]]  # uplink position -> leaves with a slot at it
    # Slot pairs tested (a second test would repeat both uplinks), and (port, the position its
    # partner climbs to) pairs tested.
    paired: set[tuple[str, int, str, int]] = field(default_factory=set)
    met: set[tuple[PortRef, int]] = field(default_factory=set)
    r: int = 0  # the round being built
    used: set[PortRef] = field(default_factory=set)  # ports in a test of the round
    down_busy: set[LinkKey] = field(default_factory=set)  # descents taken in the round
    up_busy: set[tuple[str, int]] = field(default_factory=set)  # (leaf, uplink position) climbed in the round
    want: list[deque[str]] = field(default_factory=list)  # per position, leaves whose uplink there lacks cover

    def begin(self, r: int) -> None:
        """Start round ``r``: nothing taken yet, and per uplink position the leaves short of cover there, rotated."""
        self.r = r
        self.used, self.down_busy, self.up_busy = set(), set(), set()
        self.want = []
        for pos in range(max(len(v) for v in self.ls.ups.values())):
            q = [leaf for leaf in self.ls.leaves if self.short_up(leaf, pos)]
            if q:
                shift = (r * 7919) % len(q)
                q = q[shift:] + q[:shift]
            self.want.append(deque(q))

    def short_up(self, leaf: str, pos: int) -> bool:
        """Whether ``leaf`` has an uplink at ``pos`` still short of cover."""
        ups = self.ls.ups[leaf]
        return pos < len(ups) and self.ls.b.cover[ups[pos]] < self.ls.need

    def port_in(self, ports: list[PortRef], other: PortRef | None, far: int) -> PortRef | None:
        """The slot's free port, least covered, not yet tested with a partner at position ``far``:
        its cable and that uplink would otherwise share their covering tests."""
        host_of = self.ls.b.host_of
        best, low = None, (0, 0)
        n = len(ports)
        for i in range(n):
            p = ports[(self.r + i) % n]
            if p in self.used or (other is not None and host_of[p.node] == host_of[other.node]):
                continue
            c = ((p, far) in self.met, self.ls.b.cover[self.ls.host_cable[p]])
            if best is None or c < low:
                best, low = p, c
        return best

    def commit(self, p: PortRef, q: PortRef, x: str, pos_x: int, y: str, pos_y: int) -> bool:
        """Add test (p, q) between slots at ``pos_x`` of ``x`` and ``pos_y`` of ``y`` to the round
        if it fits there and adds cover."""
        b = self.ls.b
        if not (b.fits(self.r, (p, q)) and b.gain((p, q), self.ls.need)):
            return False
        b.add(self.r, (p, q))
        self.used.update((p, q))
        self.met.update(((p, pos_y), (q, pos_x)))
        self.paired.update(((x, pos_x, y, pos_y), (y, pos_y, x, pos_x)))
        return True

    def place(self, x: str, slot_x: Slot, y: str, slot_y: Slot) -> bool:
        """A test between a port of each slot, committed to the round if it can be."""
        _, pos_x, ports_x = slot_x
        _, pos_y, ports_y = slot_y
        p = self.port_in(ports_x, None, pos_y)
        q = self.port_in(ports_y, p, pos_x) if p is not None else None
        return p is not None and q is not None and self.ls.b.ok_pair(p, q) and self.commit(p, q, x, pos_x, y, pos_y)


def bidir_leaf_spine_rounds(ls: LeafSpine, budget: int, reachable: set[LinkKey]) -> None:
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
    b, leaves = ls.b, ls.leaves
    cover = b.cover
    n_leaves = len(leaves)
    slots: dict[str, list[Slot]] = {}
    by_climb: dict[int, list[str]] = defaultdict(list)
    for leaf in leaves:
        mine: dict[tuple[LinkKey, int], list[PortRef]] = {}
        for down, ports in ls.groups[leaf]:
            for p in ports:
                mine.setdefault((down, ls.climb[p]), []).append(p)
        slots[leaf] = [(down, pos, ports) for (down, pos), ports in mine.items()]
        for pos in sorted({pos for _, pos, _ in slots[leaf]}):
            by_climb[pos].append(leaf)
    st = _Bidir(ls, slots, by_climb)

    first = _bidir_schedule(st, budget)
    for r in range(first, budget):
        if not any(cover[k] < ls.need for k in reachable):
            break
        st.begin(r)
        added = 0
        start = (r * 104729) % n_leaves
        for li in range(n_leaves):
            x = leaves[(start + li) % n_leaves]
            mine_x = slots[x]
            for si in range(len(mine_x)):
                slot = mine_x[(r + si) % len(mine_x)]
                down_x, pos_x, _ = slot
                if down_x in st.down_busy:
                    continue
                test = _bidir_partner(st, x, slot)
                if test is None:
                    continue
                p, q, y, down_y, pos_y = test
                if st.commit(p, q, x, pos_x, y, pos_y):
                    st.down_busy.update((down_x, down_y))
                    st.up_busy.update(((x, pos_y), (y, pos_x)))
                    added += 1
        if not added:
            break
    # Uplinks still short: a test into some round that has the two descents and uplinks free.
    in_round = [{p for t in tests for p in t} for tests in b.rounds]
    for x in leaves:
        for pos in range(len(ls.ups[x])):
            for y in by_climb.get(pos, ()):
                if not st.short_up(x, pos):
                    break
                if y != x:
                    _bidir_fill(st, x, y, pos, in_round)


def _bidir_schedule(st: _Bidir, budget: int) -> int:
    """The rounds of a round-robin tournament between rails, when the fabric has the shape for it.

    Leaves whose slots sit at the same uplink positions form a class (a rail, on a rail-optimized
    fabric routed D-mod-K). When every leaf's slots are at distinct positions, the classes partition
    the positions and hold equally many leaves, class pairs taken as in a round-robin (circle
    method) cover every uplink twice in 2 x (classes - 1) rounds: paired leaves run one test per
    slot, slot i against the partner's slot i + s, with s (and the partner leaf) changed the second
    time a pairing comes round, so no two cables share their covering tests. Returns the rounds
    made (0 where the shape does not hold or the tournament would pass ``budget``).
    """
    slots = st.slots
    by_class: dict[tuple[int, ...], list[str]] = defaultdict(list)
    for leaf in st.ls.leaves:
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
        st.begin(r)
        for ca, cb in pairs:
            if max(ca, cb) >= len(classes):
                continue  # the bye
            for u in range(units):
                x, y = classes[ca][u], classes[cb][(u + (second and units > 1)) % units]
                sx = sorted(slots[x], key=lambda s: s[1])
                sy = sorted(slots[y], key=lambda s: s[1])
                shift = 1 if second and units == 1 else 0
                for i, slot_x in enumerate(sx):
                    st.place(x, slot_x, y, sy[(i + shift) % len(sy)])
    return rounds


def _bidir_fill(st: _Bidir, x: str, y: str, pos: int, in_round: list[set[PortRef]]) -> None:
    """Cover leaf ``x``'s uplink at ``pos`` with tests to ``y``'s slot at ``pos``, each in the first
    planned round it fits (slot pairs not tested yet first), until it has cover; ``in_round``
    holds the ports each planned round already tests."""
    b, need = st.ls.b, st.ls.need
    uplink = st.ls.ups[x][pos]
    for _, pos_y, ports_y in st.slots[y]:
        if pos_y != pos:
            continue
        for fresh in (True, False):
            for _, pos_x, ports_x in st.slots[x]:
                if fresh == ((x, pos_x, y, pos_y) in st.paired):
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
                    st.paired.update(((x, pos_x, y, pos_y), (y, pos_y, x, pos_x)))
                    if b.cover[uplink] >= need:
                        return


def _bidir_partner(st: _Bidir, x: str, slot: Slot) -> Found | None:
    """A partner in round ``st.r`` for a port of ``slot`` of leaf ``x``: the test, the partner's
    leaf, descent and position. Both climbed uplinks short of cover first, then either one."""
    _, pos_x, ports_x = slot

    def fit(y: str, need_x: bool) -> Found | None:
        if y == x or (y, pos_x) in st.up_busy:
            return None
        mine = st.slots[y]
        for si in range(len(mine)):
            down_y, pos_y, ports_y = mine[(st.r + si) % len(mine)]
            if down_y in st.down_busy or (x, pos_y) in st.up_busy or (x, pos_x, y, pos_y) in st.paired:
                continue
            if need_x and not st.short_up(x, pos_y):
                continue
            p = st.port_in(ports_x, None, pos_y)
            if p is None:
                return None
            q = st.port_in(ports_y, p, pos_x)
            if q is None or not st.ls.b.ok_pair(p, q):
                continue
            return p, q, y, down_y, pos_y
        return None

    # The partner leaf climbs at pos_x: its uplink there should lack cover (both ends gain).
    want = st.want
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
        if not st.short_up(x, pos) or (x, pos) in st.up_busy:
            continue
        cands = st.by_climb.get(pos, [])
        for i in range(min(len(cands), 4)):
            got = fit(cands[(st.r + i) % len(cands)], True)
            if got is not None:
                return got
    return None
