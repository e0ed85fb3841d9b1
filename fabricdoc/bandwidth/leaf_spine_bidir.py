"""Bidirectional tests on a multi-rail leaf/spine fabric: a round-robin between rails, each test descending into both ends' leaves."""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Callable

from fabricdoc.bandwidth.builder import PlanBuilder
from fabricdoc.model.records import LinkKey, PortRef


def bidir_leaf_spine_rounds(b: PlanBuilder, budget: int, need: int, reachable: set[LinkKey], leaves: list[str],
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
