"""Group tomography: name the cable direction or switch behind failing group tests, from their routed paths.

Every test (group collectives and pair tests alike) puts some number of
concurrent flows on each cable direction and through each switch it crosses,
together with the other tests of its round (they run at once).
A load-only fault keeps its rate up to some load and collapses above it, so a
part can explain a failing group test when the test loaded it with more flows
than any passing test ever did (or than the same hosts' same test did when it
passed run again: the first failure was then a transient's), and no passing test at as much load
moved more through a cable direction than the failing test can have (:class:`_Moved`). The fewest such
parts that explain every failing group test are named (greedy set cover; one
part already named (a cable's other direction) before a new one; a cable whose two directions together
explain more of them (one that collapses fails both ways) before one that explains fewer; one that more of
them loaded beyond what any passing test carried, filled or not, before one a
passing test carried as many flows in some of them; one part alone before one of
several explaining the same tests; a switch whose own probe failed before a cable
explaining the same tests; else a cable before a switch; what a named cable's other
direction explains is that cable's, not a new part's); parts that explain
exactly the same tests are named as equally likely, unless one cable's two directions together explain
more than the other's. A group test that could not run is no evidence; a
failing group already crossing a cable other evidence blamed needs no new part. The fault
is ``load_collapse`` only when a test crossed the part at a lower load and passed; when
none did (a job's communicators alone, say) it is ``degraded_bandwidth``. A switch whose
failing tests slow with the load they put through it (each flow gets its share of a fixed
rate) throttles (``switch_throttle``); a collapse drops to one figure whatever the load. A throttling
switch also explains the failing tests it slowed to its share, below the load a passing test held back
elsewhere put through it (a share worked out from the test's round: its flows max-min shared with the
switch's egresses cut to the flows' worth it forwards, read from its failing tests, over the flows
crossing it).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable
from dataclasses import dataclass, field

import numpy as np

from fabricdoc.analysis.blame import Blame, slow_figure
from fabricdoc.analysis.confidence import confidence, severity_for, slow_severity
from fabricdoc.errors import TopologyError
from fabricdoc.model.evidence import GroupLoadEvidence, GroupSample
from fabricdoc.model.expectation import TestJudgement, explains
from fabricdoc.model.findings import Finding
from fabricdoc.model.flows import maxmin
from fabricdoc.model.groups import (
    channel_load,
    group_flows,
    shown_full,
    switch_load,
    switch_probe_label,
)
from fabricdoc.model.paths import (
    FINISHED,
    Channel,
    channel_ends,
    channel_name,
    is_bidirectional,
    test_flows,
)
from fabricdoc.model.records import GroupResult, LinkKey, Observations, PortRef
from fabricdoc.model.severity import Severity
from fabricdoc.model.topology import Fabric

LOAD_FAULT = "load_collapse"  # fine at a lower load (a passing test crossed it), collapsed above
INCAST_FAULT = "incast_collapse"  # only the direction into one port collapses: the other way carried as many
SLOW_FAULT = "degraded_bandwidth"  # no passing test ever crossed it
THROTTLE_FAULT = "switch_throttle"  # a switch that forwards a fixed rate: the more flows, the slower each
# A switch throttles when its failing tests' figures fall with their load through it at least this steeply
# (log figure over log flows; a share of a fixed rate falls as -1, a collapse stays level at 0) ...
THROTTLE_SLOPE = -0.5
THROTTLE_SPAN = 1.25  # ... over loads at least this far apart (closer ones cannot tell the two apart)
THROTTLE_MARGIN = 0.2  # a test slower than a throttle's share L/T by more than this is not the throttle's alone
THROTTLE_STEPS = 10  # bisection steps reading a throttle's limit from its failing tests
MOVED_MARGIN = 1.3  # a passing test refutes a cable where it moved more through it than this times a failing one
MANY_ALIKE = 3  # this many parts equally likely: isolation did not narrow it down, nothing is named


@dataclass
class _Test:
    load: Counter[Hashable]  # ("chan", Channel) or ("switch", node id) -> concurrent flows
    failed: bool
    group: GroupResult | None
    flows: list[list[Channel]] = field(default_factory=list)
    shown: frozenset[Channel] = frozenset()  # directions its round, passing, shows full (model.groups.shown_full)
    relative: float | None = None  # measured over what healthy tests of its kind reach here
    round_flows: list[list[Channel]] = field(default_factory=list)  # every flow of its round, its own among them
    span: tuple[int, int] = (0, 0)  # where its own flows are in ``round_flows``


def _switch_load(fabric: Fabric, flows: list[list[Channel]]) -> Counter[Hashable]:
    return Counter({("switch", node): n for node, n in switch_load(fabric, flows).items()})


def _tests(fabric: Fabric, obs: Observations, judged: TestJudgement) -> list[_Test]:
    """Every usable test with the load on each part it crosses: the whole round's, since a round's tests
    run at once (two groups through one spine load it together)."""
    out = _own_tests(fabric, obs, judged)
    rounds: dict[tuple[bool, int], Counter[Hashable]] = {}
    round_tests: dict[tuple[bool, int], list[list[list[Channel]]]] = {}
    for t, r in out:
        rounds.setdefault((t.group is None, r), Counter()).update(t.load)
        round_tests.setdefault((t.group is None, r), []).append(t.flows)
    full = {k: shown_full(fabric, tests) for k, tests in round_tests.items()}
    flat = {k: [f for test in tests for f in test] for k, tests in round_tests.items()}
    at: Counter[tuple[bool, int]] = Counter()
    made = []
    for t, r in out:
        k = (t.group is None, r)
        made.append(_Test(Counter({e: rounds[k][e] for e in t.load}), t.failed, t.group, shown=full[k],
                          relative=t.relative, round_flows=flat[k], span=(at[k], at[k] + len(t.flows))))
        at[k] += len(t.flows)
    return made


def _own_tests(fabric: Fabric, obs: Observations, judged: TestJudgement) -> list[tuple[_Test, int]]:
    out = []
    for i, p in enumerate(obs.pairs):
        if p.status not in FINISHED:
            continue
        try:
            flows = test_flows(fabric, p.src, p.dst, is_bidirectional(p.test))
        except TopologyError:
            continue
        load: Counter[Hashable] = Counter({("chan", c): n for c, n in channel_load(flows).items()})
        load.update(_switch_load(fabric, flows))
        out.append((_Test(load, judged.pair_slow(i, p), None, flows), p.round))
    for j, g in enumerate(obs.groups):
        if g.status not in ("ok", "hung"):
            continue
        try:
            flows = group_flows(fabric, g.members, g.test)
        except TopologyError:
            continue
        load = Counter({("chan", c): n for c, n in channel_load(flows).items()})
        load.update(_switch_load(fabric, flows))
        out.append((_Test(load, judged.group_failed(j, g), g, flows, relative=judged.groups[j].relative), g.round))
    return out


def from_groups(fabric: Fabric, obs: Observations, judged: TestJudgement,
                blame: dict[LinkKey, Blame]) -> list[Finding]:
    """Blame the parts that explain the failing group tests (cables into ``blame``); return switch findings.
    A test fails as ``judged`` says: below what healthy tests of its kind reach by more than noise explains."""
    if not any(g.status in ("ok", "hung") for g in obs.groups):
        return []
    tests = _tests(fabric, obs, judged)
    # Cables other evidence names (warning or worse; a suspect to re-test explains nothing yet).
    blamed = {k for k, b in blame.items() if any(sev.rank > Severity.INFO.rank for sev in b.faults.values())}
    figures = {k: slow_figure(blame[k].evidence) for k in blamed}
    index = {id(g): j for j, g in enumerate(obs.groups)}

    def excused(t: _Test) -> bool:
        """A cable other evidence blamed explains this failing group (as slow as that cable makes it)."""
        crossed = {e[1][0] for e in t.load if e[0] == "chan"} & blamed  # type: ignore[index]
        got = judged.groups[index[id(t.group)]]
        return any(explains(figures[k], got, judged.expectations.slow_ratio) for k in crossed)

    failing = [i for i, t in enumerate(tests) if t.failed and t.group is not None and not excused(t)]
    if not failing:
        return []
    passing: Counter[Hashable] = Counter()
    carried: Counter[Hashable] = Counter()  # most flows a passing test put on it, filled or not
    for t in tests:
        if not t.failed:
            for e, n in t.load.items():
                carried[e] = max(carried[e], n)
                if e[0] == "chan" and e[1] not in t.shown:  # type: ignore[index]
                    continue  # not filled: passing says nothing of this many flows
                passing[e] = max(passing[e], n)
    again = _again(tests)
    healthy = _Healthy(fabric)
    moved = _Moved(healthy, tests)
    covers: dict[Hashable, set[int]] = {}
    beyond: dict[Hashable, set[int]] = {}  # of those, the tests that loaded it beyond what any passing test carried
    for i in failing:
        g = tests[i].group
        cleared = again.get((g.members, g.test), Counter()) if g is not None else Counter()
        for e, n in tests[i].load.items():
            if n > passing.get(e, 0) and n > cleared.get(e, 0) and not moved.refutes(e, i):
                covers.setdefault(e, set()).add(i)
                if n > carried[e]:
                    beyond.setdefault(e, set()).add(i)
    # A switch whose own probe failed (isolation's one-way load through it, spread over its egresses) comes
    # before a cable explaining the same tests: that probe was built so no cable is its bottleneck alone.
    probed = {e: _own_probe(fabric, e, tests, c) for e, c in covers.items() if e[0] == "switch"}
    # What each part explains: a cable both ways (one that collapses fails both ways: its other direction's
    # failing tests are its too), a switch its own.
    whole: dict[Hashable, frozenset[int]] = {}
    for e, c in covers.items():
        whole[_part(e)] = whole.get(_part(e), frozenset()) | c
    # How many parts explain exactly the same tests: one part alone beats one of many alike.
    alike = Counter(c for _, c in {(_part(e), frozenset(c)) for e, c in covers.items()})
    chosen: list[Hashable] = []
    own: dict[Hashable, set[int]] = {}  # the failing tests each part explained when it was chosen
    left = set(failing)
    while left:
        # Among parts explaining as many tests, one already named (a cable's other direction) adds no part.
        named = {_part(e) for e in chosen}
        best = max(covers, key=lambda e: (len(covers[e] & left), _part(e) in named, len(whole[_part(e)] & left),
                                          len(beyond.get(e, set()) & left),
                                          -alike[frozenset(covers[e])],
                                          probed.get(e, False), e[0] == "chan", -passing.get(e, 0), str(e)),
                   default=None)
        if best is None or not covers[best] & left:
            break
        chosen.append(best)
        covers[best] |= _throttled(healthy, best, tests, covers[best], left)
        own[best] = covers[best] & left
        left -= covers[best]
        if best[0] == "chan":
            # The same cable's other direction: what it explains is this part's too, not a new part's.
            left -= covers.get(("chan", (best[1][0], 1 - best[1][1])), set())  # type: ignore[index]
    switches = []
    for e in chosen:
        # Equally likely parts: other cables or switches explaining the same tests (a cable's
        # other direction is the same part).
        twins = sorted({_part(o): o for o, c in covers.items() if c == covers[e] and _part(o) != _part(e)
                        and not whole[_part(o)] < whole[_part(e)]}.values(), key=str)
        sure = confidence(len(covers[e]), 1 + len(twins), digits=3)
        either_way = e[0] == "chan" and covers.get(("chan", (e[1][0], 1 - e[1][1]))) == covers[e]  # type: ignore[index]
        ev = _evidence(fabric, e, tests, covers[e], passing.get(e, 0), twins, either_way)
        rels = [tests[i].relative for i in covers[e] if tests[i].relative is not None]
        severity = slow_severity(min(rels) if rels else ev.worst_ratio)
        if (len(own[e]) < 2 and not any(tests[i].group is not None and tests[i].group.status == "hung"
                                        for i in own[e])) or len(twins) + 1 >= MANY_ALIKE:
            # One failing test alone explains it (a transient slowdown is as likely as a part), or it is a
            # guess among many parts alike: a suspect to re-test, not a named fault.
            severity = "info"
        # Load-only only when some test crossed it at a lower load and passed; a part that no passing
        # test crossed was slow under every load seen, which says nothing about load.
        fault = LOAD_FAULT if ev.passing_flows > 0 else SLOW_FAULT
        if fault == LOAD_FAULT and _one_way(e, passing, ev.failing_flows) and not _both_ways(e, chosen):
            fault = INCAST_FAULT
        elif fault == LOAD_FAULT and _throttles(e, tests, covers[e]):
            fault = THROTTLE_FAULT
        if e[0] == "chan":  # type: ignore[index]
            key = e[1][0]  # type: ignore[index]
            blame[key].add(fault, severity, sure, ev)
        else:
            sw = e[1]  # type: ignore[index]
            switches.append(Finding("", "switch", fabric.label(sw), fault, severity_for(Severity(severity), sure), sure, [ev],
                                    None, [sw]))
    return switches


class _Healthy:
    """Each test's slowest own flow on a healthy fabric: its round's flows max-min shared over the cables'
    rates (worked out once per round, when first asked)."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self._rounds: dict[int, np.ndarray] = {}  # id(round_flows) -> healthy max-min rates
        self._slowest: dict[int, float] = {}  # id(test) -> its slowest own flow's healthy rate

    def capacity(self, k: LinkKey) -> float:
        return self.fabric.links[k].capacity_gbps

    def slowest(self, t: _Test) -> float:
        if id(t) not in self._slowest:
            key = id(t.round_flows)
            if key not in self._rounds:
                self._rounds[key] = maxmin(t.round_flows, self.capacity)
            a, b = t.span
            self._slowest[id(t)] = float(self._rounds[key][a:b].min()) if b > a else 0.0
        return self._slowest[id(t)]


class _Moved:
    """What passing tests moved through each cable direction, to refute a cable as a failing test's cause.

    A load-only fault keeps a capacity that does not grow with its load. A passing test whose round put
    ``n`` flows on a direction moved at least its own flows there times its slowest flow's rate (its
    relative figure times the healthy max-min rate of that flow in its round). A failing test the direction
    slowed moved at most its round's flows there times its own slowest rate (the flows bottlenecked there
    are the test's slowest; no flow there runs faster). So where a passing test at no less load moved more
    (beyond :data:`MOVED_MARGIN` of noise), that direction cannot have slowed the failing test: a transient
    slowdown or another part did. Tests with no relative figure (pair tests, hung groups) refute nothing and
    are never refuted."""

    def __init__(self, healthy: _Healthy, tests: list[_Test]) -> None:
        self.healthy = healthy
        self.tests = tests
        # direction -> (round load, its own flows there times its relative figure), per passing test; times
        # the test's healthy slowest rate (worked out when asked), what it moved there at least
        self.passed: dict[Channel, list[tuple[int, float, int]]] = {}
        for i, t in enumerate(tests):
            if not t.failed and t.relative and t.group is not None:
                for c, own in channel_load(t.round_flows[t.span[0]:t.span[1]]).items():
                    self.passed.setdefault(c, []).append((t.load[("chan", c)], own * t.relative, i))

    def _healthy_slowest(self, i: int) -> float:
        return self.healthy.slowest(self.tests[i])

    def refutes(self, e: Hashable, i: int) -> bool:
        """Whether a passing test refutes cable direction ``e`` as the cause of failing test ``i``."""
        t = self.tests[i]
        if e[0] != "chan" or not t.relative or t.group is None:  # type: ignore[index]
            return False
        chan = e[1]  # type: ignore[index]
        n = t.load[e]
        others = [(w, j) for m, w, j in self.passed.get(chan, ()) if m >= n]
        if not others:
            return False
        most = n * t.relative * self._healthy_slowest(i) * MOVED_MARGIN
        return any(w * self._healthy_slowest(j) > most for w, j in others)


def _again(tests: list[_Test]) -> dict[tuple[tuple[PortRef, ...], str], Counter[Hashable]]:
    """Per group (its hosts and test), the most load on each part from its runs that passed. A failing run
    of the same group is cleared there whether or not those runs filled the part: a load-only fault trips
    on its load, so the failure at no more load was a transient's (a neighbour's burst)."""
    out: dict[tuple[tuple[PortRef, ...], str], Counter[Hashable]] = {}
    for o in tests:
        if not o.failed and o.group is not None:
            most = out.setdefault((o.group.members, o.group.test), Counter())
            for e, n in o.load.items():
                most[e] = max(most[e], n)
    return out


def _one_way(e: Hashable, passing: Counter[Hashable], flows: int) -> bool:
    """A cable direction that collapsed while a test that passed filled its other direction with as many
    flows (isolation's reverse probe): what breaks is traffic converging on the port it flows into (an
    incast: PFC pauses or egress drops there), not the cable, which carries that load the other way."""
    if e[0] != "chan":  # type: ignore[index]
        return False
    key, d = e[1]  # type: ignore[index]
    back = ("chan", (key, 1 - d))
    return passing.get(back, 0) >= flows


def _both_ways(e: Hashable, chosen: list[Hashable]) -> bool:
    """A cable direction whose other direction explains failing tests of its own: the cable fails both
    ways, not traffic converging on one port."""
    if e[0] != "chan":  # type: ignore[index]
        return False
    key, d = e[1]  # type: ignore[index]
    return ("chan", (key, 1 - d)) in chosen


def _throttles(e: Hashable, tests: list[_Test], covers: set[int]) -> bool:
    """A switch whose failing tests slow with the flows they put through it: each flow gets its share of a
    fixed rate (thermal or power throttling), where a collapsed buffer drops every load to one figure."""
    if e[0] != "switch":  # type: ignore[index]
        return False
    seen = [(tests[i].load[e], tests[i].relative) for i in covers if tests[i].relative]
    if len(seen) < 2:
        return False
    flows = np.log([n for n, _ in seen])
    if flows.max() - flows.min() < math.log(THROTTLE_SPAN):
        return False
    slope = float(np.polyfit(flows, np.log([r for _, r in seen]), 1)[0])
    return slope <= THROTTLE_SLOPE


def _throttled(healthy: _Healthy, e: Hashable, tests: list[_Test], covers: set[int], left: set[int]) -> set[int]:
    """Failing tests a throttling switch ``e`` explains beyond those that loaded it past what passed: one
    that forwards L flows' worth keeps L/T of each egress's rate when T flows cross it, and a passing test
    that loaded it as hard may have been held back elsewhere. L is read from its failing tests (relative
    figure times flows); a test of ``left`` that crossed it with more flows is its too when it is no slower
    (less :data:`THROTTLE_MARGIN`) than its round's flows, max-min shared with the switch's egresses so cut,
    make it."""
    if not _throttles(e, tests, covers):
        return set()
    share = _ThrottledShare(healthy, e[1])  # type: ignore[index]
    limit = _throttle_limit(share, tests, covers)
    return {i for i in left if tests[i].relative and tests[i].load.get(e, 0) > limit
            and tests[i].relative >= (1 - THROTTLE_MARGIN) * share(limit, tests[i])}


def _throttle_limit(share: _ThrottledShare, tests: list[_Test], covers: set[int]) -> float:
    """The flows' worth a throttling switch forwards, as its failing tests read: the limit at which they
    are, in the median, as slow as ``share`` makes them (bisected; the share grows with it)."""
    seen = [tests[i] for i in covers if tests[i].relative]
    lo, hi = 0.0, float(max(t.load[("switch", share.switch)] for t in seen))
    for _ in range(THROTTLE_STEPS):
        mid = (lo + hi) / 2
        shares = [share(mid, t) for t in seen]
        if float(np.median([t.relative / s if s > 0 else math.inf for t, s in zip(seen, shares, strict=True)])) > 1:
            lo = mid  # slower predicted than measured: it forwards more
        else:
            hi = mid
    return (lo + hi) / 2


class _ThrottledShare:
    """The share of its healthy figure a test keeps when ``switch`` forwards ``limit`` flows' worth: its
    round's flows max-min shared, every egress of the switch cut to limit over the flows crossing it. Each
    test's healthy slowest rate comes from ``healthy`` (worked out once: the limit is bisected over the same
    tests, and refuting cables asks for it too)."""

    def __init__(self, healthy: _Healthy, switch: str) -> None:
        self.healthy = healthy
        self.switch = switch

    def __call__(self, limit: float, test: _Test) -> float:
        flows = test.round_flows
        a, b = test.span
        through = test.load[("switch", self.switch)]
        if b <= a:
            return limit / through
        if through <= limit:
            return 1.0
        healthy = self.healthy.slowest(test)
        cut = {c: limit / through for hops in flows for c in hops if channel_ends(c)[0].node == self.switch}
        return float(min(maxmin(flows, self.healthy.capacity, cut)[a:b])) / healthy if healthy > 0 else 0.0


def _own_probe(fabric: Fabric, e: Hashable, tests: list[_Test], covers: set[int]) -> bool:
    """Whether switch ``e`` explains a failing probe isolation built for it (phase ``switch``)."""
    mine = switch_probe_label(fabric.label(e[1]))  # type: ignore[index]
    return any(g.phase == "switch" and (g.label == mine or g.label.startswith(mine + ","))
               for i in covers for g in [tests[i].group] if g is not None)


def _part(e: Hashable) -> Hashable:
    return e[1][0] if e[0] == "chan" else e  # type: ignore[index]


def _name(fabric: Fabric, e: Hashable) -> str:
    kind, what = e  # type: ignore[misc]
    if kind == "switch":
        return f"switch {fabric.label(what)}"
    return channel_name(fabric, what)


def _evidence(fabric: Fabric, e: Hashable, tests: list[_Test], covers: set[int], passing: int,
              twins: list[Hashable], either_way: bool) -> GroupLoadEvidence:
    """``either_way``: the cable's other direction explains the same tests (no direction is claimed)."""
    through = [t for t in tests if t.load.get(e, 0)]
    ratios = [tests[i].group.ratio for i in covers if tests[i].group is not None and tests[i].group.ratio is not None]
    samples = tuple(GroupSample(g.label, g.test, len(g.members), g.status,
                                None if g.ratio is None else round(g.ratio, 4), tests[i].load[e])
                    for i in sorted(covers)[:12] for g in [tests[i].group] if g is not None)
    toward = None
    if e[0] == "chan":  # type: ignore[index]
        end = channel_ends(e[1])[1]  # type: ignore[index]
        if not either_way:
            toward = (fabric.label(end.node), end.port)
    return GroupLoadEvidence(
        tests=sum(1 for t in through if t.group is not None), failing=len(covers),
        failing_flows=min(tests[i].load[e] for i in covers), passing_flows=passing,
        worst_ratio=round(min(ratios), 4) if ratios else 0.0, toward=toward,
        pair_tests=sum(1 for t in through if t.group is None),
        pair_slow=sum(1 for t in through if t.group is None and t.failed),
        equivalent_suspects=1 + len(twins), alternatives=tuple(_name(fabric, o) for o in twins[:8]),
        failing_groups=samples)
