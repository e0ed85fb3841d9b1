"""Adaptive fault isolation with group tests: screen, split what fails, confirm, probe across the boundary.

Screening rounds (:func:`fabricdoc.bandwidth.groups.screen_rounds`) run whole
groups at once. A failing group is split along the topology into halves that
run in the next round; a failing half is chased on its own, down to a host
tested against a known-good host (one from a group that passed). Below that
first split one half runs at a time (a passing one puts the fault in the other,
split without running it), and what this left untested runs as one group beside
the confirmations: one test per halving where both halves ran before. When both
halves pass but the whole failed, the fault only shows under the whole group's
load (a cable, a spine or a switch buffer that collapses when many flows meet):
half of the suspect hosts at a time are kept and the group filled back to its
size with known-good hosts (the same load on the kept hosts' cables and
uplinks), or, with no known-good hosts outside the group, halves of each side
are tried across the boundary (one that fails loading nothing beyond what passed runs once more);
then the cable directions the last failing group overloaded (for a cross probe, where nothing passing
says otherwise, beyond what a passing round showed full) are bisected with one-way ``fan`` probes carrying the flows that
crossed them, and the last one probed with its senders split and its load moved
to other hosts. When no probe pointed at a cable or a host, the switches the
failing groups loaded beyond what passed are probed, as many in a round as the
hosts allow, each with its own one-way fan that makes an egress of it the
bottleneck (:mod:`fabricdoc.bandwidth.switch_probes`), every other suspect
switch no harder than a passing test loaded it; a failing one-way probe that crossed a suspect
switch points at it as much as at its cables, so the suspect switches it crossed are probed too, by
other cables. The switches are probed as soon as one chase ends with its probes failing and none
pointing at a part (the other chases may use up the rounds), or with its failing one-way probes all
through suspect switches that chases still running cross; a switch whose own probe then fails
twice (by other cables where the hosts allow; else in two halves that load it alike, both failing, or
both passing and the whole failing again) explains the groups through it, and their chases end. Localization (:mod:`fabricdoc.analysis.grouptomo`) names the part
from all the groups' routed paths and the pair tests together.

All failing groups are chased at once: every round runs the next step of each,
as long as no host is in two tests of the round. A failing group holding a
smaller failing group, or crossing a cable other evidence already blamed that explains how slow it
was, is not chased.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Collection, Generator, Mapping, Sequence
from dataclasses import dataclass, field

from fabricdoc.bandwidth.groups import GroupTest, expected_round, split
from fabricdoc.bandwidth.switch_probes import Crossings, switch_probes
from fabricdoc.errors import TopologyError
from fabricdoc.model.expectation import GroupJudge, Judged, explains
from fabricdoc.model.groups import (
    channel_load,
    fan,
    fan_senders,
    group_cables,
    group_edges,
    routed_flows,
    shown_full,
    switch_load,
)
from fabricdoc.model.paths import Channel, channel_ends, channel_name, directed
from fabricdoc.model.records import GroupResult, LinkKey, PortRef
from fabricdoc.model.topology import Fabric

# runner(round number, tests, expected busbw of each) -> one GroupResult per test, in order.
GroupRoundRunner = Callable[[int, list[GroupTest], list[float | None]], list[GroupResult]]
Expect = Callable[[Fabric, Sequence[GroupTest]], list[float | None]]
# A step of one chase: the tests it wants run next; it is sent their results.
_Chase = Generator[list[GroupTest], list[GroupResult], list[GroupTest]]


@dataclass
class Isolation:
    """What an isolation ran: every group result, how many rounds and tests."""

    results: list[GroupResult] = field(default_factory=list)
    rounds: int = 0
    tests: int = 0
    judge: GroupJudge = field(default_factory=GroupJudge)
    unfinished: int = 0  # failing groups still being chased when the round cap stopped isolation

    @property
    def failing(self) -> list[GroupResult]:
        """The group tests that failed (hung, or slower than healthy groups by more than noise explains)."""
        return [g for g in self.results if self.judge.failed(g)]


class _State:
    def __init__(self, fabric: Fabric, judge: GroupJudge) -> None:
        self.fabric = fabric
        self.judge = judge
        self.good: set[PortRef] = set()
        self.passing_load: Counter[Channel] = Counter()  # most flows a passing test put on each direction
        # each round's routed flows per test (None: not routable), and which tests passed
        self.rounds: list[tuple[list[list[list[Channel]] | None], list[bool]]] = []
        self._filled: Counter[Channel] = Counter()  # :meth:`passing_filled`, over rounds[:_filled_from]
        self._filled_from = 0
        self.passing_switch: Counter[str] = Counter()  # most flows through each switch in a round a test passed
        self.failing_loads: dict[str, list[int]] = {}  # flows through each switch in each failing test's round
        self.round_load: dict[GroupTest, Counter[str]] = {}  # each failing test: flows through its switches, its round's
        self.few_failed: set[GroupTest] = set()  # failed where most of their round passed: rerun before probing
        self.sibling: dict[GroupTest, GroupTest] = {}  # each confirmation of a failing pair -> the other's
        self.whole: set[GroupTest] = set()  # failing halves narrowed once already: split into both halves now
        self.skipped: dict[GroupTest, tuple[PortRef, ...]] = {}  # halves narrowing did not run, by the chase's group
        self.named: set[str] = set()  # switches whose own probe failed twice
        # failing switch probes a probe of the same switch by other cables cleared it of: chased as any failing
        # one-way load (:func:`_bisect_switches`)
        self.unswitched: list[GroupTest] = []
        self.parent: dict[GroupTest, tuple[GroupTest, tuple[PortRef, ...], tuple[PortRef, ...]]] = {}  # failing pair -> the group it was split from, and that group's halves
        self.kept: dict[GroupTest, tuple[PortRef, ...]] = {}  # failing substitution probe -> the suspects it kept
        self.ports: set[PortRef] = set()  # host ports probed one way each (:func:`_host_port`)
        self.passed: dict[tuple[tuple[PortRef, ...], str], int] = {}  # each passing test's hosts and kind -> round it first passed
        self.failed_runs: Counter[tuple[tuple[PortRef, ...], str]] = Counter()  # failing runs of each hosts and kind
        self.half_of: dict[GroupTest, tuple[GroupTest, tuple[PortRef, ...], tuple[PortRef, ...]]] = {}  # a failing second half run whole -> as ``parent``
        # tests whose bisection ended on a direction that carried the load, or (failing twice) found none
        self.refill: list[GroupTest] = []

    def failing_switch(self, sw: str) -> int:
        """Most flows through ``sw`` in a round a test failed."""
        return max(self.failing_loads.get(sw, (0,)))

    def saw(self, tests: Sequence[GroupTest], results: Sequence[GroupResult]) -> None:
        """One round's results: the hosts and cable-direction loads of the tests that passed, and the
        switch loads of the whole round (its tests run at once: their flows meet in a switch)."""
        flows = [routed_flows(self.fabric, t.members, t.test) for t in tests]
        loads = [switch_load(self.fabric, f) if f is not None else Counter() for f in flows]
        total: Counter[str] = Counter()
        for load in loads:
            total.update(load)
        failing = [t for t, r in zip(tests, results, strict=True) if r.status in ("ok", "hung") and self.judge.failed(r)]
        if 2 * len(failing) < len(tests):
            self.few_failed.update(failing)
        passed = [False] * len(tests)
        self.rounds.append((flows, passed))
        for i, (t, r, f, load) in enumerate(zip(tests, results, flows, loads, strict=True)):
            if r.status not in ("ok", "hung"):
                continue
            failed = self.judge.failed(r)
            if failed:
                self.round_load[t] = Counter({sw: total[sw] for sw in load})
                self.failed_runs[(t.members, t.test)] += 1
            for sw in load:
                if failed:
                    self.failing_loads.setdefault(sw, []).append(total[sw])
                else:
                    self.passing_switch[sw] = max(self.passing_switch[sw], total[sw])
            if failed or r.status != "ok":
                continue
            passed[i] = True
            self.passed.setdefault((t.members, t.test), len(self.rounds) - 1)
            self.good.update(t.members)
            for chan, n in channel_load(f or []).items():
                if n > self.passing_load[chan]:
                    self.passing_load[chan] = n

    def passed_before(self, test: GroupTest | GroupResult) -> bool:
        """Whether the same hosts passed ``test``'s test in a round before the last one."""
        return self.passed.get((test.members, test.test), len(self.rounds)) < len(self.rounds) - 1

    def passing_filled(self) -> Counter[Channel]:
        """Most flows a passing test put on each direction where its round, passing, showed it full
        (:func:`~fabricdoc.model.groups.shown_full`). Worked out when asked, for the rounds since last
        asked: only a bisection with nothing else to go on needs it."""
        for flows, passed in self.rounds[self._filled_from:]:
            full = shown_full(self.fabric, [f for f in flows if f is not None])
            for f, ok in zip(flows, passed, strict=True):
                for chan, n in channel_load(f if ok else []).items():
                    if chan in full and n > self._filled[chan]:
                        self._filled[chan] = n
        self._filled_from = len(self.rounds)
        return self._filled


def isolate(
    fabric: Fabric,
    runner: GroupRoundRunner,
    screens: Sequence[Sequence[GroupTest]],
    *,
    judge: GroupJudge | None = None,
    first_round: int = 0,
    expect: Expect = expected_round,
    max_rounds: int = 48,
    probes: int = 8,
    chase: bool = True,
    explained: Mapping[LinkKey, float | None] | None = None,
    progress: Callable[[int, int], None] | None = None,
    reference: Sequence[GroupTest] = (),
    carried: Collection[PortRef] = (),
    before: Sequence[Sequence[tuple[GroupTest, GroupResult]]] = (),
) -> Isolation:
    """Run ``screens`` and chase every failing group until each is isolated (or ``max_rounds`` more pass:
    the chases' own, after the screens and the reference);
    ``chase=False`` runs the screens only. The ``reference`` round (groups no spine carries) runs after
    them when their groups leave the healthy figure in doubt (:meth:`GroupJudge.doubtful`). ``judge`` says
    which results failed (default: against what the healthy groups seen so far reach); a slow group, screen
    or probe, whose routes cross an ``explained`` cable (one other evidence already blamed, with the relative
    figure its tests reached; None: no figure) does not fail where that cable explains it
    (:func:`~fabricdoc.model.expectation.explains`): it is not chased, and a chase reads it as passing.
    ``progress(done, known)`` is told after every round: group tests run, and those known so far (screens
    plus the chases' probes, which grow as isolation finds more to chase). ``carried``: host ports whose
    pair tests all passed, so carried what a two-host confirmation loads (one flow each way): a failing
    confirmation of such a host (beside a known-good one) runs once more even where its sibling passed.
    ``before``: rounds of group tests that passed in an earlier isolation of this fabric (each round's
    passing tests and their results), which say from the start which hosts are known good and what loads
    passed."""
    judge = judge or GroupJudge()
    if explained:
        blamed = dict(explained)

        def excused(group: GroupResult, got: Judged) -> bool:
            crossed = group_cables(fabric, group.members, group.test) & blamed.keys()
            return any(explains(blamed[k], got, judge.slow_ratio) for k in crossed)

        judge.excuse(excused)

    def primed() -> _State:
        """A fresh state that has seen the rounds of ``before``."""
        fresh = _State(fabric, judge)
        for earlier in before:
            fresh.saw([t for t, _ in earlier], [r for _, r in earlier])
        return fresh

    state = primed()
    out = Isolation(judge=judge)
    cleared = set(carried)

    screened = sum(len(s) for s in screens)
    cap = max_rounds  # the round isolation stops at: the chases' rounds counted from the screens' end

    def more() -> bool:
        """Whether isolation may run another round."""
        return out.rounds < cap

    def _other_passed(t: GroupTest, tests: list[GroupTest], results: list[GroupResult]) -> bool:
        """Whether the other member of the failing pair ``t`` confirms passed in the same round: the pair's
        failure is this host's then, and a transient slowdown cannot have picked it (no run again)."""
        other = state.sibling.get(t)
        return any(o == other and r.status == "ok" and not judge.failed(r)
                   for o, r in zip(tests, results, strict=True))

    def run(tests: list[GroupTest], again: bool = True) -> list[GroupResult]:
        results = runner(first_round + out.rounds, tests, expect(fabric, tests))
        out.rounds += 1
        out.tests += len(tests)
        if progress is not None:
            progress(out.tests, max(out.tests, screened))
        out.results.extend(results)
        judge.see(results)
        state.saw(tests, results)
        # A failing confirmation names a host: run it once more before it does (unless its pair's other
        # host passed beside it and the host it names did not pass its pair tests). A transient slowdown
        # (a neighbour's checkpoint) passes the second time, and the chase goes on from that.
        redo = [i for i, (t, r) in enumerate(zip(tests, results, strict=True))
                if again and t.phase == "confirm" and r.status == "ok" and judge.failed(r)
                and (not _other_passed(t, tests, results) or set(t.members) - state.good <= cleared)]
        if redo and more():
            for i, r in zip(redo, run([tests[i] for i in redo], again=False), strict=True):
                if r.status == "ok" and not judge.failed(r):
                    results[i] = r
        return results

    failing: list[GroupTest] = []
    seen: list[tuple[list[GroupTest], list[GroupResult]]] = []
    for screen in screens:
        if screen:
            results = run(list(screen))
            failing += [t for t, r in zip(screen, results, strict=True) if judge.failed(r)]
            seen.append((list(screen), results))
    if reference and judge.doubtful(reference[0].test):
        seen.append((list(reference), run(list(reference))))
        # The screens judged again next to groups no spine carries, now that what a healthy group reaches
        # is known: which failed, and which hosts and loads passed (a screen judged before the reference
        # ran may have passed against a figure its own failing round set).
        failing = [t for tests, results in seen for t, r in zip(tests, results, strict=True) if judge.failed(r)]
        state = primed()
        for tests, results in seen:
            state.saw(tests, results)
    cap = out.rounds + max_rounds
    chases: list[_Chase] = []
    wants: dict[int, list[GroupTest]] = {}
    ran: dict[int, list[tuple[GroupTest, GroupResult]]] = {}  # each chase's probes and their results
    roots: dict[int, GroupTest] = {}  # each chase's failing group
    switches_probed = False
    early_probed = False  # switches probed once a chase from a round where most failed found nothing

    def start(tests: list[GroupTest], refill: bool = False) -> None:
        for t in tests:
            chase = _refill(t, state, probes) if refill else _chase(t, state, probes)
            try:
                wants[id(chase)] = next(chase)
                chases.append(chase)
                roots[id(chase)], ran[id(chase)] = t, []
            except StopIteration as stop:
                start(stop.value or [])

    def end(chase: _Chase) -> list[tuple[GroupTest, GroupResult]]:
        """Take ``chase`` out of the running (its id may be reused): the probes it ran, with their results."""
        chases.remove(chase)
        del wants[id(chase)], roots[id(chase)]
        return ran.pop(id(chase))

    def end_named() -> None:
        """A switch that failed its own probe explains the groups through it: their chases end."""
        for other in [c for c in chases if _loads(fabric, roots[id(c)])[1].keys() & state.named]:
            end(other)

    def drive() -> None:
        while chases and more():
            advance()

    def probe_switches(avoid: Collection[LinkKey] = (), among: Collection[str] | None = None) -> bool:
        """:func:`_bisect_switches`, then a chase of each failing switch probe a probe of its switch by other
        cables passed beside (its cables, not the switch, failed it); they run in :func:`drive`."""
        cleared = _bisect_switches(state, run, more, avoid, among)
        unswitched, state.unswitched = state.unswitched, []
        start(unswitched)
        return cleared

    def passed_again(t: GroupTest | GroupResult) -> bool:
        """Whether the same hosts ran ``t``'s test again and passed: its failure was a transient's."""
        return any(r.members == t.members and r.test == t.test and r.status == "ok" and not judge.failed(r)
                   for r in out.results[screened:])

    def switches_pointed(probed: list[tuple[GroupTest, GroupResult]]) -> tuple[set[LinkKey], set[str]] | None:
        """When every probe of a chase that failed and pointed at a part is a one-way load through suspect
        switches: the cables those loads overloaded, and those switches; else None."""
        pointed = [t for t, r in probed if r.status in ("ok", "hung") and judge.failed(r) and _points(t)
                   and not passed_again(t)]
        suspects = _suspect_switches(state)
        fans = [_loads(fabric, t) for t in pointed if t.phase == "cross"]
        hits = [(chans, sws) for chans, sws in fans if sws.keys() & suspects]
        if not hits or len(hits) != len(pointed):
            return None
        over = {c[0] for chans, _ in hits for c, n in chans.items() if n > state.passing_load[c]}
        return over, {sw for _, sws in hits for sw in sws} & suspects

    def advance() -> None:
        """One round: the next step of every chase whose hosts no other chase of the round uses."""
        used: set[str] = set()
        batch: list[tuple[_Chase, list[GroupTest]]] = []
        for chase in chases:
            step = wants[id(chase)]
            nodes = {n for t in step for n in t.nodes}
            if not nodes & used:
                used |= nodes
                batch.append((chase, step))
        nonlocal switches_probed, early_probed
        results = run([t for _, step in batch for t in step])
        at = 0
        for chase, step in batch:
            mine, at = results[at:at + len(step)], at + len(step)
            if chase not in chases:
                continue  # ended this round: a switch named since explains its group
            ran[id(chase)].extend(zip(step, mine, strict=True))
            try:
                wants[id(chase)] = chase.send(mine)
            except StopIteration as stop:
                root = roots[id(chase)]
                probed = end(chase)
                if not stop.value and not switches_probed and _together(probed, judge):
                    # This chase's probes failed and none pointed at a part: a load together (a switch)
                    # showed it. Probe the switches now, before the other chases spend the rounds left.
                    switches_probed = True
                    probe_switches()
                    end_named()
                elif (not stop.value and not switches_probed and not early_probed and root.phase == "screen"
                      and root not in state.few_failed and not _pointed(probed, judge)):
                    # Its group failed in a round where most failed, and its own probes found nothing: the
                    # round's load together (a switch all those groups crossed) showed it. The other chases
                    # of that round would each find nothing too; probe the switches now, where a probe can load
                    # each as hard as that group did (early, passing tests may have loaded the others too
                    # little for that; where none is named, they are probed again once the chases end).
                    # Weighed once: building the probes is the cost.
                    early_probed = True
                    if _probes_reach(state, root):
                        probe_switches()
                        switches_probed = bool(state.named)
                    end_named()
                elif not stop.value and (hit := switches_pointed(probed)) is not None:
                    # Its failing one-way loads all crossed suspect switches (a throttling spine slows the
                    # egress its fan converged on): when chases still running cross them too, probe those
                    # switches now, by other cables, rather than chase the same switch again.
                    over, crossed = hit
                    if any(_loads(fabric, roots[id(c)])[1].keys() & crossed for c in chases):
                        probe_switches(over, crossed)
                        end_named()
                start(stop.value or [])

    if chase:
        # A failing group holding a smaller failing group is left to that one's chase (its failure most
        # likely is that one's); one crossing a cable other evidence blamed is explained already. Held by
        # ports, not host names: on a rail-optimized fabric a pair of leaves holds the same hosts as either
        # leaf alone, on other rails.
        minimal = [t for t in failing if not any(o is not t and set(o.members) < set(t.members) for o in failing)]
        start(minimal)
        drive()
        # ... unless every smaller one passed when run again (a transient): then it is chased itself.
        later = [t for t in failing if t not in minimal
                 and all(passed_again(o) for o in failing if o is not t and set(o.members) < set(t.members))]
        start(later)
        drive()
    out.unfinished = len(chases)
    # No probe pointed at a part (a one-way load of cable directions or a host with a known-good one
    # that failed, and did not pass again), or every probe passed but one (a transient slowdown): only a
    # load together showed the fault, as a switch that collapses under many flows does.
    pointed = [g for g in out.failing if not passed_again(g) and _points(g)]
    # A one-way load that failed through a suspect switch points at its cable as much as at the switch (a
    # throttling spine slows the egress the fan converged on): the switch is probed too, by other cables.
    suspects = _suspect_switches(state)
    fans = [_loads(state.fabric, g) for g in pointed if g.phase == "cross"]
    at_switch = [(chans, sws) for chans, sws in fans if sws.keys() & suspects]
    if chase and out.failing and (not pointed or sum(1 for g in out.failing if g.phase in CHASED) <= TRANSIENTS):
        if not switches_probed:
            probe_switches()
            drive()
    elif chase and at_switch and len(at_switch) == len(pointed):
        # The suspect switches those loads crossed, each by cables other than the ones they point at; when
        # they are cleared and failing tests those cables do not explain remain, every suspect switch.
        over = {c for chans, _ in at_switch for c, n in chans.items() if n > state.passing_load[c]}
        crossed = {sw for _, sws in at_switch for sw in sws} & suspects
        if (probe_switches({c[0] for c in over}, crossed)
                and any(not passed_again(g) and not _loads(state.fabric, g)[0].keys() & over for g in out.failing)):
            probe_switches()
        drive()
    # Hosts a failing confirmation with a known-good one named (and that did not pass again) explain the
    # tests they were in.
    hosts = {p for g in out.failing if g.phase == "confirm" and len(g.members) == 2 and not passed_again(g)
             for p in g.members}
    refill = [t for t in dict.fromkeys(state.refill) if not hosts & set(t.members)]
    if chase and refill and not state.named and out.rounds + _refill_rounds(probes) <= cap:
        # A bisection that came down to a direction carrying the load alone, or found none beyond what passing
        # tests carried, and no switch or host explains the failure: the directions the test loaded beyond
        # what passing tests showed full, bisected once more (where the rounds left are enough to finish it:
        # one cut off by the cap would only be reported so).
        start(refill, refill=True)
        drive()
        out.unfinished = len(chases)
    return out


def _refill_rounds(probes: int) -> int:
    """Rounds a bisection of ``probes`` directions takes at most: halving, then the direction's own fan,
    the other way, its senders split (a failing half once more), and moved."""
    return math.ceil(math.log2(max(probes, 2))) + 7


def _refill(test: GroupTest, state: _State, probes: int) -> _Chase:
    """Bisect ``test``'s cable directions again, beyond what passing tests showed full (:func:`isolate`); once
    more where a transient slowdown decided that bisection (the half it dropped is bisected then)."""
    if (yield from _bisect_channels(test, state, probes, filled=True)):
        yield from _bisect_channels(test, state, probes, filled=True)
    return []


def _failed_probes(probes: list[tuple[GroupTest, GroupResult]], judge: GroupJudge) -> list[GroupTest]:
    """A chase's own probes that failed and did not pass when run again (the same hosts' same test)."""
    def passed(t: GroupTest) -> bool:
        return any(o.members == t.members and o.test == t.test and r.status == "ok" and not judge.failed(r)
                   for o, r in probes)

    return [t for t, r in probes if r.status in ("ok", "hung") and judge.failed(r) and not passed(t)]


def _together(probes: list[tuple[GroupTest, GroupResult]], judge: GroupJudge) -> bool:
    """Whether more of a chase's own probes failed than transient slowdowns explain, and none of them
    pointed at a part (a one-way load or a host with a known-good one that failed and did not pass when
    run again)."""
    failed = _failed_probes(probes, judge)
    return len(failed) > TRANSIENTS and not any(_points(t) for t in failed)


def _probes_reach(state: _State, root: GroupTest) -> bool:
    """Whether the probes :func:`_bisect_switches` would run now (its first round) put at least as many
    flows through each suspect ``root`` crossed as ``root``'s round did when it failed (early, the hosts
    shared among many probes may load each too little to show anything)."""
    through = state.round_load.get(root, Counter())
    suspects = sorted(_suspect_switches(state))
    if not through.keys() & set(suspects):
        return False
    got = _switch_batch(state, suspects, suspects, set(), Crossings(state.fabric))
    return got is not None and all(_loads(state.fabric, t)[1][sw] >= through[sw]
                                   for sw, t in zip(*got, strict=True) if sw in through)


def _pointed(probes: list[tuple[GroupTest, GroupResult]], judge: GroupJudge) -> bool:
    """Whether one of a chase's probes that points at a part (:func:`_points`) failed and did not pass
    when run again."""
    return any(_points(t) for t in _failed_probes(probes, judge))


def _points(probe: GroupTest | GroupResult) -> bool:
    """Whether ``probe``, failing, points at a part: a one-way load of chosen cable directions, or a host
    run with a known-good one."""
    return (probe.phase == "cross" and fan_senders(probe.test) is not None) or (probe.phase == "confirm" and len(probe.members) == 2)


def _suspect_switches(state: _State) -> set[str]:
    """Switches above the leaves a failing round loaded beyond what any passing round did."""
    levels = state.fabric.levels()
    return {sw for sw in state.failing_loads if state.failing_switch(sw) > state.passing_switch[sw] and levels[sw] > 1}


def _loads(fabric: Fabric, result: GroupTest | GroupResult) -> tuple[Counter[Channel], Counter[str]]:
    """The flows ``result``'s test put on each cable direction and through each switch."""
    flows = routed_flows(fabric, result.members, result.test)
    if flows is None:
        return Counter(), Counter()
    return channel_load(flows), switch_load(fabric, flows)


CHASED = ("split", "confirm", "cross", "switch")  # phases of isolation's own probes
TRANSIENTS = 1  # failing probes one isolation may see from transient slowdowns alone (1-2% of tests)


def _bisect_switches(state: _State, run: Callable[[list[GroupTest]], list[GroupResult]],
                     more: Callable[[], bool], avoid: Collection[LinkKey] = (),
                     among: Collection[str] | None = None) -> bool:
    """Failing groups no probe of theirs explained: only a load together showed the fault, and the part
    all of them loaded beyond what passed may be a switch (a buffer that collapses under full bisection)
    when several are equally likely. Each round probes as many of them as the hosts allow (all, else
    half, ... else one), each with its own one-way fan (:mod:`fabricdoc.bandwidth.switch_probes`) that
    loads it beyond what passed with an egress its bottleneck, and every other candidate no harder than a
    passing test did. A switch whose probe passes is cleared; a failing probe runs once more (a
    transient slowdown passes the second time), and one that fails again is left to localization with
    the cables it crossed (:mod:`fabricdoc.analysis.grouptomo` weighs them). Only switches of ``among`` are
    probed when it is given, and no probe crosses a cable of ``avoid`` (those a failing one-way load
    already points at). Returns whether every candidate was probed and cleared."""
    suspects = sorted(_suspect_switches(state))  # above the leaves: where a round's flows from many leaves meet
    cands = [c for c in suspects if among is None or c in among]
    cleared: set[str] = set()
    crossed = Crossings(state.fabric)
    short: list[str] = []  # passed beside other probes with fewer flows than their failing rounds: probed alone

    # A last candidate is left to localization (the others cleared, it alone explains the failures), unless
    # a failing one-way load points at its cables as much as at it.
    while len(cands) > (0 if among is not None else 1) and more():
        got = _switch_batch(state, short[:1] or cands, suspects, cleared, crossed, avoid)
        if got is None:
            return False
        batch, tests = got
        results = run(tests)
        if any(r.status not in ("ok", "hung") for r in results):
            return False  # could not test: no evidence either way
        failed = [t for t, r in zip(tests, results, strict=True) if state.judge.failed(r)]
        if failed and more():
            failed = _probe_again(state, run, more, [sw for sw, t in zip(batch, tests, strict=True) if t in failed],
                                  failed, suspects, cleared, crossed, avoid)
        if failed:
            # Each probe crossed no other suspect switch: a failing one names its own.
            state.named.update(sw for sw, t in zip(batch, tests, strict=True) if t in failed)
            return False
        if state.unswitched:
            return False  # a probe whose switch other cables cleared failed again: its cables are chased first
        # A probe that shared the hosts with others may have loaded its switch far less than its failing rounds
        # did and than it alone could (a buffer that collapses beyond twice its cables' flows passes it): such a
        # switch is probed again alone.
        under = [sw for sw, t in zip(batch, tests, strict=True)
                 if len(batch) > 1 and _short(state, sw, _loads(state.fabric, t)[1][sw], suspects, cleared, crossed,
                                              avoid)]
        short = [sw for sw in short if sw not in batch] + under
        cleared.update(sw for sw in batch if sw not in under)
        cands = [c for c in cands if (c not in batch or c in under) and state.failing_switch(c) > state.passing_switch[c]]
    return not cands


ALONE_GAIN = 1.5  # times the flows a switch's probe alone must put through it beyond its probe beside others


def _short(state: _State, sw: str, flows: int, suspects: list[str], cleared: Collection[str], crossed: Crossings,
           avoid: Collection[LinkKey]) -> bool:
    """Whether ``flows`` through ``sw`` (its probe's, beside other switches' probes) were fewer than its failing
    rounds put through it, and a probe of it alone, with every host, would put :data:`ALONE_GAIN` times as many."""
    if flows >= state.failing_switch(sw):
        return False
    alone = _probes_of(state, [sw], suspects, cleared, crossed, avoid)
    return alone is not None and _loads(state.fabric, alone[0])[1][sw] >= ALONE_GAIN * flows


def _probe_again(state: _State, run: Callable[[list[GroupTest]], list[GroupResult]], more: Callable[[], bool],
                 sws: list[str], failed: list[GroupTest], suspects: list[str], cleared: Collection[str],
                 crossed: Crossings, avoid: Collection[LinkKey]) -> list[GroupTest]:
    """Failing probes ``failed`` of switches ``sws``, probed once more; returns those whose switch failed twice.
    Where the hosts allow, the second probes cross none of the cables the first ones loaded beyond what passed
    (a cable that collapses under a probe's flows fails it as much as its switch would): one that fails too
    names its switch; where one passes, its first probe runs once more, and failing again (not a transient) it
    is left to be chased as a failing one-way load (``state.unswitched``). Where no such probes exist, each
    runs in two halves that load the switch alike (:func:`_split_halves`)."""
    over = {c[0] for t in failed for c, n in _loads(state.fabric, t)[0].items() if n > state.passing_load[c]}
    other = _probes_of(state, sws, suspects, cleared, crossed, {*avoid, *over})
    if other is None:
        return _split_halves(state, run, more, list(zip(sws, failed, strict=True)))
    got = run([GroupTest(t.members, t.test, t.phase, f"{t.label}, by other cables") for t in other])
    named = [t for t, r in zip(failed, got, strict=True) if state.judge.failed(r)]
    rest = [t for t in failed if t not in named]
    if rest and more():
        again = run([_again(t, t.phase) for t in rest])
        state.unswitched += [t for t, r in zip(rest, again, strict=True) if state.judge.failed(r)]
    return named


def _split_halves(state: _State, run: Callable[[list[GroupTest]], list[GroupResult]], more: Callable[[], bool],
                  failed: list[tuple[str, GroupTest]]) -> list[GroupTest]:
    """Failing switch probes ``failed`` with no probe of their switch by other cables: each one's load in two
    halves that load the switch alike (:func:`_halves`), one round each, or where it cannot be split, the
    probe once more (a transient slowdown passes the second time). A switch that collapses or throttles under
    load fails both halves or neither: both failing names it, and both passing runs the probe once more (the
    halves may load it too little; a transient passes); failing again, it names the switch, unless the
    halves left cable directions it overloaded less busy and halves split the other way (each leaf's hosts
    together), which keep those as busy, fail: one failing twice points at its cables. One half failing,
    the other passing, points at that half's own cables once it fails again (as do both failing where each
    loaded the switch no harder than a passing round did): the probe is left to be chased as a failing
    one-way load (``state.unswitched``).
    Returns the probes whose switches are named."""
    split = {t: got for sw, t in failed if (got := _halves(state, t, sw)) is not None}
    halves = {t: h for t, (h, _, _) in split.items()}
    # each half loads the switch no harder than a passing round did: a switch fault cannot fail it
    light = {t for sw, t in failed if t in split and split[t][1] <= state.passing_switch[sw]}
    seen: dict[GroupTest, list[bool]] = {t: [] for t in halves}
    for i in (0, 1):
        if not halves or not more():
            break
        results = run([h[i] for h in halves.values()])
        for t, r in zip(halves, results, strict=True):
            seen[t].append(state.judge.failed(r))
    done = {t for t, got in seen.items() if len(got) == 2}
    bad = [t for t in done if all(seen[t]) and t in light]
    named = [t for t in done if all(seen[t]) and t not in light]
    one = [t for t in done if seen[t][0] != seen[t][1]]
    again = [t for _, t in failed if t not in done or not any(seen[t])]  # not split, or both halves passed
    tests = [_again(halves[t][seen[t].index(True)], t.phase) for t in one] + [_again(t, t.phase) for t in again]
    if tests and more():
        results = run(tests)
        bad += [t for t, r in zip(one, results[:len(one)], strict=True) if state.judge.failed(r)]
        named += [t for t, r in zip(again, results[len(one):], strict=True) if state.judge.failed(r)]
    # Both halves passing shows the switch only where they kept every direction the whole overloaded as
    # busy as it was: receivers halved keep the cables into each receiver but halve the senders' uplinks
    # (a cable that collapses above 2 flows passes with 2 each and fails the whole with 4). Where they did
    # not, the load split the other way keeps those: passing both, the switch is named; one half failing
    # twice points at its cables (``state.unswitched``).
    for sw, t in [(sw, t) for sw, t in failed if t in named and t in halves and not any(seen[t])]:
        rest = _uncovered(state, t, halves[t])
        if not rest:
            continue
        other = _halves(state, t, sw, [s for s in ("receivers", "senders") if s != split[t][2]])
        if other is None or rest & _uncovered(state, t, other[0]) or not more():
            continue
        results = run([other[0][0]])
        results += run([other[0][1]]) if more() else []
        failing = [h for h, r in zip(other[0], results, strict=False) if state.judge.failed(r)]
        if failing and more() and state.judge.failed(run([_again(failing[0], t.phase)])[0]):
            named.remove(t)
            bad.append(t)
    state.unswitched += bad
    return [t for _, t in failed if t in named]


def _uncovered(state: _State, whole: GroupTest, halves: tuple[GroupTest, GroupTest]) -> set[Channel]:
    """The cable directions ``whole`` loaded beyond what passed that neither of ``halves`` loaded as much."""
    busy = _loads(state.fabric, whole)[0]
    kept = [_loads(state.fabric, h)[0] for h in halves]
    return {c for c, n in busy.items() if n > state.passing_load[c] and all(k[c] < n for k in kept)}


def _halves(state: _State, probe: GroupTest, sw: str, sides: Sequence[str] = ("receivers", "senders")
            ) -> tuple[tuple[GroupTest, GroupTest], int, str] | None:
    """``probe``'s one-way load into each half of its receivers (routed by destination, each receiver's flows
    take their own cables: a half keeps the load on those), else from each half of its senders, where the
    halves load ``sw`` alike: the two halves, the flows each puts through ``sw`` and the side split; else
    None. ``sides``: the sides it may split; one side alone splits with each leaf's hosts together (the
    other way of a split that halved the cables on that side)."""
    k = fan_senders(probe.test) or 0
    senders, receivers = probe.members[:k], probe.members[k:]
    if not senders or not receivers:
        return None

    def half(i: int, part: tuple[PortRef, ...], side: str) -> GroupTest:
        ends = (senders, part) if side == "receivers" else (part, receivers)
        return GroupTest((*ends[0], *ends[1]), fan(len(ends[0])), probe.phase, f"{probe.label}, {side} {i} of 2")

    for side, parts in (("receivers", receivers), ("senders", senders)):
        if side not in sides or len(parts) < 2 or len(parts) % 2:
            continue
        if len(sides) == 1:  # the other way for the cables the first split halved: each leaf's hosts together
            parts = tuple(sorted(parts, key=lambda p: (state.fabric.peer(p).node, p)))
        cut = len(parts) // 2
        halves = (half(1, parts[:cut], side), half(2, parts[cut:], side))
        through = {_loads(state.fabric, h)[1][sw] for h in halves}
        if len(through) == 1:
            return halves, through.pop(), side
    return None


def _probes_of(state: _State, load: list[str], suspects: list[str], cleared: Collection[str], crossed: Crossings,
               avoid: Collection[LinkKey]) -> list[GroupTest] | None:
    """One probe per switch of ``load`` (:func:`~fabricdoc.bandwidth.switch_probes.switch_probes`): each loads
    its switch beyond what passed (up to its failing rounds' load), every other suspect not ``cleared`` no
    harder than a passing test did, crossing no cable of ``avoid``; None when a switch gets none."""
    return switch_probes(state.fabric, state.good, load, crossed, floor=state.passing_switch,
                         want={sw: max(state.failing_switch(sw), state.passing_switch[sw] + 1) for sw in load},
                         limit={c: state.passing_switch[c] for c in suspects if c not in load and c not in cleared},
                         avoid=avoid)


def _switch_batch(state: _State, cands: list[str], suspects: list[str], cleared: Collection[str],
                  crossed: Crossings, avoid: Collection[LinkKey] = ()) -> tuple[list[str], list[GroupTest]] | None:
    """The candidate switches one round probes, and their probes: as many as the hosts allow, most
    unexplained failing rounds first (all, else half, ..., else the first one alone that can be probed);
    each probe loads its switch beyond what passed and every other suspect not ``cleared`` no harder than a
    passing test did, crossing no cable of ``avoid``. None: no candidate can be probed."""
    def unexplained(sw: str) -> int:
        """Failing tests whose round loaded ``sw`` beyond what any passing test's round did."""
        return sum(1 for n in state.failing_loads.get(sw, ()) if n > state.passing_switch[sw])

    def probes(load: list[str]) -> list[GroupTest] | None:
        return _probes_of(state, load, suspects, cleared, crossed, avoid)

    order = sorted(cands, key=lambda sw: (-unexplained(sw), sw))
    batch, tests = order, probes(order)
    while tests is None and len(batch) > 1:
        batch = batch[: len(batch) // 2]
        tests = probes(batch)
    for sw in order[1:] if tests is None else ():
        batch, tests = [sw], probes([sw])
        if tests is not None:
            break
    return None if tests is None else (batch, tests)


def _chase(test: GroupTest, state: _State, probes: int) -> _Chase:
    """Isolate one failing group: split it, recurse into failing halves (returned), or probe the
    boundary when both halves pass (a failing half the same hosts passed before counts as passing)."""
    fabric, slow = state.fabric, state.judge
    if len(test.members) <= 2:
        found = yield from _confirm_rest(test, state)
        if found is None and (test in state.few_failed or test in state.parent):
            # Each host passes with a known-good one: where most of its round passed, or where it is the
            # failing half of a group, run the pair once more (a transient slowdown passes the second time,
            # and is then not left unexplained).
            results = yield [_again(test)]
            if test in state.parent and not slow.failed(results[0]):
                # A transient: the group it came from failed with both halves passing, as a fault only that
                # group's load together shows does.
                parent, a, b = state.parent.pop(test)
                return (yield from _whole_failed(parent, state, a, b, probes))
        return found or []
    if fan_senders(test.test) is not None:
        # A one-way load (an incast screen): halves along the topology would mix its senders and receivers.
        # Its cable directions are bisected with one-way probes of their own, once it failed again where
        # most of its round passed (a transient slowdown passes the second time).
        if test in state.few_failed:
            results = yield [_again(test)]
            if not slow.failed(results[0]):
                return []
        yield from _bisect_channels(test, state, probes)
        return []
    a, b = split(fabric, test)
    halves = [_half(h, i, test, state) for i, h in enumerate((a, b), 1)]
    halves = [h for h in halves if h is not None]
    if test.phase == "split" and test not in state.whole and len(halves) == 2 and min(len(a), len(b)) > 2:
        state.whole.add(test)
        found = yield from _narrow(test, halves, state)
        if found is not None:
            return found
        results = yield [halves[1]]  # nothing inside the second half failed alone: the half whole
        if slow.failed(results[0]):
            state.whole.add(halves[1])
            state.half_of[halves[1]] = (test, a, b)
            return [halves[1]]
    else:
        results = yield halves
        bad = [h for h, r in zip(halves, results, strict=True) if slow.failed(r)]
        bad = [h for h in bad if len(h.members) > 2 or h.phase != "confirm"]
        # A half the same hosts' same test passed in an earlier round failed from a transient slowdown (its
        # hosts alone load nothing more now): not chased, as if it passed.
        bad = [h for h in bad if not state.passed_before(h)]
        if bad:
            _hand_on(test, bad[0], (), state)
            if len(bad) == 1 and len(bad[0].members) == 2:
                state.parent[bad[0]] = (test, a, b)
            return bad
        if any(slow.failed(r) for h, r in zip(halves, results, strict=True)
               if not state.passed_before(h)):
            return (yield from _rest_round(test, state)) or []
    return (yield from _whole_failed(test, state, a, b, probes))


def _whole_failed(test: GroupTest, state: _State, a: tuple[PortRef, ...], b: tuple[PortRef, ...],
                  probes: int) -> Generator[list[GroupTest], list[GroupResult], list[GroupTest]]:
    """``test`` failed and its halves ``a`` and ``b`` passed: a fault only its load together shows."""
    # Where most of its round passed, run the whole once more first: a transient slowdown (a neighbour's
    # checkpoint) passes the second time, a fault its own load shows does not. (Where most of the round
    # failed, the round's load together may be the cause.)
    if test in state.few_failed or test in state.half_of:
        # (Or where it is a failing group's second half, run whole once the first passed: a transient may have
        # failed it, and then that group failed with both halves passing.)
        results = yield [_again(test)]
        if not state.judge.failed(results[0]):
            if test in state.half_of:
                parent, pa, pb = state.half_of.pop(test)
                return (yield from _whole_failed(parent, state, pa, pb, probes))
            return (yield from _rest_round(test, state)) or []
    last = yield from _substitute(test, state)
    if last is None:
        last = yield from _cross_halves(test, state, a, b)
    yield from _bisect_channels(last or test, state, probes)
    return (yield from _rest_round(test, state)) or []


def _again(test: GroupTest, phase: str = "split") -> GroupTest:
    """``test`` run once more, as it was (a transient slowdown passes the second time), in ``phase``."""
    return GroupTest(test.members, test.test, phase, f"{test.label}, again")


def _narrow(test: GroupTest, halves: list[GroupTest],
            state: _State) -> Generator[list[GroupTest], list[GroupResult], list[GroupTest] | None]:
    """One half of failing ``test`` at a time: run the first half; a failing one is chased and the second
    is not run yet. When the first passes the fault is in the second, which is not run either but
    narrowed the same way, down to its pair's confirmations. The halves not run are run together beside
    those confirmations (:func:`_confirm_rest`), so a second fault in them is still found. Returns the
    failing groups to chase ([] when a confirmation named a host), or None when nothing inside the
    second half failed alone (a fault only the half's load together shows, or a transient slowdown)."""
    fabric, slow = state.fabric, state.judge
    results = yield [halves[0]]
    if slow.failed(results[0]):
        _hand_on(test, halves[0], halves[1].members, state)
        return [halves[0]]
    group = halves[1]
    _hand_on(test, group, (), state)
    while len(group.members) > 2:
        a, b = split(fabric, group)
        first, second = _half(a, 1, group, state), _half(b, 2, group, state)
        if first is None or second is None or "confirm" in (first.phase, second.phase):
            return None
        results = yield [first]
        if slow.failed(results[0]):
            _hand_on(group, first, second.members, state)
            return [first]
        _hand_on(group, second, (), state)
        group = second
    return (yield from _confirm_rest(group, state))


def _hand_on(parent: GroupTest, child: GroupTest, skipped: tuple[PortRef, ...], state: _State) -> None:
    """``child`` carries on ``parent``'s chase: the hosts narrowing left untested so far, ``skipped`` added."""
    rest = (*state.skipped.pop(parent, ()), *skipped)
    if rest:
        state.skipped[child] = rest


def _rest_test(test: GroupTest, state: _State) -> GroupTest | None:
    rest = tuple(sorted(state.skipped.pop(test, ())))
    if len(rest) < 2:
        return None
    return GroupTest(rest, test.test, "split", f"the hosts left untested beside {test.label}")


def _rest_round(test: GroupTest, state: _State) -> Generator[list[GroupTest], list[GroupResult], list[GroupTest] | None]:
    """Run the hosts narrowing left untested on the way to ``test`` (when there are any): [it] when it fails."""
    rest = _rest_test(test, state)
    if rest is None:
        return None
    results = yield [rest]
    return [rest] if state.judge.failed(results[0]) else None


def _confirm_rest(group: GroupTest, state: _State) -> Generator[list[GroupTest], list[GroupResult], list[GroupTest] | None]:
    """Each member of the failing pair ``group`` against a known-good host, with the hosts narrowing left
    untested on the way to it as one more group in the same round. Returns the groups to chase (the
    untested hosts when they fail), [] when a confirmation named a host, or None when nothing failed (the
    pair was only inferred to fail, or its failure was the round's load or a transient slowdown)."""
    confirms = _confirm(group, state)
    rest = _rest_test(group, state)
    tests = [*confirms, *([rest] if rest is not None else [])]
    if not tests:
        return None
    results = yield tests
    if rest is not None and state.judge.failed(results[-1]):
        return [rest]
    return [] if any(state.judge.failed(r) for r in results[: len(confirms)]) else None


def _cross_halves(test: GroupTest, state: _State, a: tuple[PortRef, ...],
                  b: tuple[PortRef, ...]) -> Generator[list[GroupTest], list[GroupResult], GroupTest | None]:
    """Halves of each side across the boundary (A1+B1 with A2+B2, then A1+B2 with A2+B1), for a group with
    no known-good hosts outside it; returns the first failing one. One that failed while loading no cable
    direction beyond what passed runs once more first: a transient slowdown is as likely there as a fault,
    and passes the second time (in the gloo lab's shape one such probe ended the chase on nothing)."""
    if len(a) < 2 or len(b) < 2:
        return None
    a1, a2 = split(state.fabric, GroupTest(a, test.test))
    b1, b2 = split(state.fabric, GroupTest(b, test.test))
    for pairs in (((a1, b1), (a2, b2)), ((a1, b2), (a2, b1))):
        probes = [GroupTest(tuple(sorted((*x, *y))), test.test, "cross", f"across {test.label} ({len(x)}+{len(y)})")
                  for x, y in pairs if len(x) + len(y) >= 2]
        results = yield probes
        for probe, r in zip(probes, results, strict=True):
            if not state.judge.failed(r):
                continue
            if any(n > state.passing_load[c] for c, n in _loads(state.fabric, probe)[0].items()):
                return probe
            again = yield [_again(probe, "cross")]
            if state.judge.failed(again[0]):
                return probe
    return None


def _substitute(test: GroupTest, state: _State) -> Generator[list[GroupTest], list[GroupResult], GroupTest | None]:
    """Keep half of the suspect hosts and fill the group back to its size with known-good hosts (the same
    load on the kept hosts' cables and on the uplinks their flows take); follow the half that fails, else
    the other half. Returns the last failing probe."""
    fabric, slow = state.fabric, state.judge
    n = len(test.members)
    suspects = tuple(sorted(test.members))
    last = None
    while len(suspects) > 1:
        first, second = split(fabric, GroupTest(suspects, test.test))
        if len(first) > len(second):
            first, second = second, first
        probe = _with_good(test, state, first, n)
        if probe is None:
            break
        results = yield [probe]
        if slow.failed(results[0]):
            suspects, last = first, probe
            state.kept[probe] = first
            continue
        probe = _with_good(test, state, second, n)
        if probe is None:
            break
        results = yield [probe]
        if not slow.failed(results[0]):
            break  # neither half fails with good company: the fault needs both halves' flows
        suspects, last = second, probe
        state.kept[probe] = second
    return last


def _with_good(test: GroupTest, state: _State, keep: tuple[PortRef, ...], size: int) -> GroupTest | None:
    good = [g for g in sorted(state.good) if g not in set(test.members)]
    if len(good) < size - len(keep) or len(keep) + len(good) < 2:
        return None
    members = tuple(sorted({*keep, *good[: size - len(keep)]}))
    who = ", ".join(str(p) for p in keep[:3]) + (f" and {len(keep) - 3} more" if len(keep) > 3 else "")
    return GroupTest(members, test.test, "confirm", f"{who} of {test.label} with known-good hosts")


def _bisect_channels(test: GroupTest, state: _State, limit: int, filled: bool = False
                     ) -> Generator[list[GroupTest], list[GroupResult], bool | None]:
    """Bisect the cable directions ``test`` overloaded with one-way probes (where it overloaded none and
    substitution kept one host in it, that host port's two directions: :func:`_host_port`): a ``fan`` from
    the ranks whose flows crossed one half of them to the ranks they sent to (the same load there, nothing
    flowing back); the failing half is bisected again, down to one direction (directions the same flows all
    cross are probed one at a time with flows of their own: :func:`_into_port`, :func:`_alone`), which is
    then probed the other way (the same flows reversed: a cable that carries them back is not the fault, the
    port they converge on is; a failing reverse probe runs once more, as it alone decides that), with its
    senders split (telling it from their own cables; a failing half runs once more) and with its load moved
    to other known-good hosts (telling it from the cables its flows crossed next; when the load into one host
    passed moved to other receivers, or failed moved to other senders, that host's port is probed the other
    way too). A probe that could not run (``error``: a runner without one-way tests, such as nccl-tests
    binaries) is no evidence either way: the bisection stops there, and so do the split and moved probes
    when the direction's own probe could not run. ``filled``: the directions loaded beyond what passing
    tests showed full (:meth:`_State.passing_filled`), for a test whose first bisection ended on a direction
    that passed or, failing twice, found none beyond what passing tests carried."""
    if test.phase == "full_load":
        # The all-hosts test overloads more directions than any other, some only a few flows beyond what
        # passing tests carried (a cable that collapses above k flows passed with k, and ranks below directions
        # passing tests loaded less): twice as many are bisected.
        limit *= 2
    candidates = (_overloaded(test, state, limit, state.passing_filled()) if filled
                  else _overloaded(test, state, limit) or _host_port(test, state))
    if not candidates and not filled and test.phase == "cross" and not _suspect_switches(state):
        # A group with no known-good hosts outside it failed across its halves beyond nothing that passed,
        # and no switch a failing round loaded beyond a passing one's: the loads that passed may have left
        # those directions half empty (an all-hosts alltoall held back by its host ports), which says
        # nothing of that many flows. Beyond what a round showed full, then.
        candidates = _overloaded(test, state, limit, state.passing_filled())
    if not candidates and not filled and state.failed_runs[(test.members, test.test)] > 1:
        # It failed twice yet loaded nothing beyond what passing tests carried, but they may have carried it
        # held back elsewhere (an incast's flows slowed at the receivers' downlinks pass a collapsed uplink):
        # bisected once the chases end, beyond what passing rounds showed full.
        state.refill.append(test)
    crossed = Crossings(state.fabric)
    ran: set[tuple[str, tuple[PortRef, ...]]] = set()
    picked: list[tuple[Channel, list[tuple[PortRef, PortRef]]]] | None = None  # a failing fan's one direction

    def fresh(probe: GroupTest | None) -> bool:
        if probe is None or (probe.test, probe.members) in ran:
            return False
        ran.add((probe.test, probe.members))
        return True

    while len(candidates) > 1:
        first = _one_way(candidates[: len(candidates) // 2])
        second = [c for c in candidates if c not in first]
        probe = _fan(test, state, [e for _, edges in first for e in edges], channel_name(state.fabric, first[0][0])
                     + (f" and {len(first) - 1} more" if len(first) > 1 else ""))
        if not fresh(probe):
            break
        before = {c: state.passing_load[c] for c, _ in second}  # what passed before it (its own pass raises it)
        results = yield [probe]  # type: ignore[list-item]
        if results[0].status == "error":
            return
        if state.judge.failed(results[0]):
            # One direction into a switch: its flows may have loaded directions of the other half beyond
            # what passed too (flows from one leaf into a host behind another cross both uplinks), and those
            # stay suspects beside it. (Into a host port the probes below tell it from the rest already;
            # keeping more there named a sibling uplink on the odd leaf-spine.)
            into_switch = state.fabric.nodes[channel_ends(first[0][0])[1].node].kind != "host"
            load = _loads(state.fabric, probe)[0] if len(first) == 1 and into_switch else Counter()
            kept = [c for c in second if load.get(c[0], 0) > before.get(c[0], 0)]
            picked = first if kept else picked
            candidates = first + kept
            if len(candidates) == len(first) + len(second):
                break  # it told nothing apart: the directions are probed alone below
        else:
            # It passed with flows on directions of the other half too, held back by the half it was built
            # for: where they did not fill one, that says nothing of that many flows on it (27 flows up one
            # core uplink left 9 down a core -> agg direction that collapses above 4 at 1/27 of line rate
            # each, and a probe beside it then loaded it with 9 as if they had passed).
            full = shown_full(state.fabric, [routed_flows(state.fabric, probe.members, probe.test) or []])
            for c, n in before.items():
                if state.passing_load[c] > n and c not in full:
                    state.passing_load[c] = n
            candidates = second
    if len(candidates) > 1:
        # Directions the same flows always cross together (a host's chain: on a fat-tree with routes by
        # destination, every flow into a host from beyond its leaf comes down one agg -> leaf direction): a
        # fan into the host port from senders that leave the others no busier than passing tests did.
        probe, into = _into_port(test, state, candidates, crossed)
        if probe is not None and fresh(probe):
            left = yield from _read_alone(probe, into, candidates, state)
            if left is None:
                return
            candidates = left
    # Still several: each alone, with flows that cross it and none of the others (a chain's directions
    # each carry flows of their own too: into other hosts behind them, or from other pods into them); then
    # (``within``) each loaded beyond what passed with the others no busier than passing tests were (a host's
    # chain on a fat-tree routed by destination: every flow down its agg -> leaf direction goes on into the
    # host, so neither is loaded without the other, but the one that fails at the lower load shows).
    for within in (False, True):
        for cand in list(candidates) if len(candidates) > 1 else ():
            probe = _alone(test, state, cand, {c for c, _ in candidates if c != cand[0]}, crossed, within=within)
            if probe is None or not fresh(probe):
                continue
            left = yield from _read_alone(probe, cand, candidates, state)
            if left is None:
                return
            candidates = left
            if len(candidates) == 1:
                break
    if len(candidates) > 1:
        # Still several, loaded only together (a chain into one host, routed by destination): a cable that
        # collapses fails both ways, so each one's other direction is loaded alone, beyond what passed. The
        # one whose other direction fails too is the cable (an incast into a port fails one way only).
        left = yield from _other_ways(test, state, candidates, crossed)
        if left is None:
            return
        candidates = left
    if len(candidates) != 1 and picked is not None and picked[0] in candidates:
        # No probe alone could tell them apart (a small fabric: too few hosts to load one without the
        # other): the direction the failing fan was built for, as the bisection would have ended.
        candidates = picked
    if len(candidates) != 1:
        return
    chan, edges = candidates[0]
    name = channel_name(state.fabric, chan)
    senders = sorted({a for a, _ in edges})
    # The same flows the other way: a cable that carries them back fine is not what collapses, the port
    # they converge on is (an incast); a cable that fails both ways is the cable.
    probes = [_fan(test, state, edges, name), _reverse(test, state, chan, edges, name)]
    splits = []
    if len(senders) > 1:
        half = len(senders) // 2
        for part in (senders[:half], senders[half:]):
            probes.append(_fan(test, state, [e for e in edges if e[0] in part], f"{name}, senders split"))
            splits.append(probes[-1])
    elsewhere = None  # the probe with the load moved to other receivers
    others = None  # ... and to other senders
    for side in ("senders", "receivers"):
        moved = _moved(chan, edges, state, side, crossed)
        if moved is not None:
            probes.append(_fan(test, state, moved, f"{name}, moved to other {side}"))
            elsewhere = probes[-1] if side == "receivers" else elsewhere
            others = probes[-1] if side == "senders" else others
    own_failed = True  # the direction's own fan: when it ran in the bisection, it was the half that failed
    moved_passed = False
    senders_failed = False  # the load from other senders failed too
    others_failed = False  # a split or moved probe failed
    for i, probe in enumerate(probes):
        if not fresh(probe):
            continue
        if i == 1:
            yield from _decisive(probe, state)  # type: ignore[arg-type]
            continue
        results = yield [probe]  # type: ignore[list-item]
        if i == 0 and results[0].status == "error":
            return  # the split and moved probes are read against this one
        if i == 0:
            own_failed = state.judge.failed(results[0])
        others_failed = others_failed or (i > 1 and state.judge.failed(results[0]))
        if probe in splits and state.judge.failed(results[0]):
            # A failing half alone points at its senders' cables, below the load the whole fan failed at: a
            # transient slowdown must not decide that (in the gloo lab's shape, a fan from one host read 0.29
            # of its figure once, its sibling's 0.94), and a sender's bad cable fails again.
            yield [_again(probe, probe.phase)]
        if probe is elsewhere:
            moved_passed = not state.judge.failed(results[0])
        if probe is others:
            senders_failed = state.judge.failed(results[0])
    own = probes[0]
    if (own_failed and own is not None and splits and not others_failed
            and state.failed_runs[(own.members, own.test)] == 1):
        # Only the direction's own fan failed, and once: its halves (and its load moved elsewhere) passed.
        # An incast into the port reads so, and so does a transient slowdown of that one fan (7x4, after a
        # named uplink, a fan into a leaf at 0.4 of its figure named a healthy spine egress an incast): it
        # runs once more, and a transient passes.
        results = yield [_again(own, own.phase)]
        own_failed = results[0].status != "ok" or state.judge.failed(results[0])
        if not own_failed and filled:
            return True  # a transient decided the bisection: the caller bisects once more
    if not own_failed and not filled:
        # The direction the bisection came down to carried the load alone: the fault may be among those the
        # test loaded beyond only what passing tests showed full (a passing test that left a direction half
        # empty, its flows held back elsewhere, says nothing of that many flows). Bisected again at the
        # end, when no switch explains it (:func:`isolate`).
        state.refill.append(test)
        return
    into = _receiver_port(state, chan, edges) if own_failed and (moved_passed or senders_failed) else None
    if into is not None:
        # The load failed into one host and passed moved to other receivers (or failed from other senders
        # too): that host's port is a suspect, and the same flows the other way out of it tell an incast
        # into it from its cable.
        state.ports.add(channel_ends(into)[1])
        back = _reverse(test, state, into, edges, channel_name(state.fabric, into))
        if fresh(back):
            yield from _decisive(back, state)  # type: ignore[arg-type]


def _decisive(probe: GroupTest, state: _State) -> Generator[list[GroupTest], list[GroupResult], GroupResult | None]:
    """A probe that alone decides (incast or cable, one direction or another), run once more when it fails: a
    transient slowdown (a neighbour's burst) passes the second time where a fault does not. Its last result;
    None when it could not run (``error``: no evidence either way)."""
    results = yield [probe]
    if results[0].status == "error":
        return None
    if state.judge.failed(results[0]):
        results = yield [_again(probe, probe.phase)]
    return results[0]


def _receiver_port(state: _State, chan: Channel, edges: list[tuple[PortRef, PortRef]]) -> Channel | None:
    """The direction into the one host ``edges`` all flow into, when that host's port is not ``chan``'s own
    and was not probed one way already; None otherwise."""
    receivers = {b for _, b in edges}
    if len(receivers) != 1:
        return None
    (host,) = receivers
    link = state.fabric.link_at(host)
    if link is None or host in state.ports or host in (chan[0].a, chan[0].b):
        return None
    return directed((link.key,), link.key.other(host))[0]


def _into_port(test: GroupTest, state: _State, candidates: list[tuple[Channel, list[tuple[PortRef, PortRef]]]],
               crossed: Crossings) -> tuple[GroupTest | None, tuple[Channel, list[tuple[PortRef, PortRef]]]]:
    """A fan into the host port one of ``candidates`` flows into (or all their flows end at), from known-good
    senders chosen so that it loads that direction beyond what passed (up to the failing load) and every
    other candidate no more than passing tests did, or than one flow (a pair test's, which a load-only fault
    carries at full rate); the host's leaf siblings first: they cross none of the others. None if no such
    fan loads it beyond what passed."""
    fabric = state.fabric
    into = next((c for c in candidates if fabric.nodes[channel_ends(c[0])[1].node].kind == "host"), None)
    if into is None:
        # Every candidate's flows end at one host (the ranking by load over what passed left its own port
        # out): that port is as much a suspect as the directions above it.
        ends = {b for _, edges in candidates for _, b in edges}
        link = fabric.link_at(next(iter(ends))) if len(ends) == 1 else None
        if link is None:
            return None, candidates[0]
        into = ((link.key, 0 if link.key.b in ends else 1), sorted({e for _, edges in candidates for e in edges}))
    chan, edges = into
    host = channel_ends(chan)[1]
    others = {c for c, _ in candidates if c != chan}
    adds: list[tuple[PortRef, set[Channel]]] = []  # each known-good sender into the host: the others it crosses
    for g in sorted(state.good - {host}):
        hops = set(crossed(g, host)[1])
        if chan in hops:
            adds.append((g, hops & others))
    load: Counter[Channel] = Counter()
    senders: list[PortRef] = []
    for g, hit in sorted(adds, key=lambda t: len(t[1])):  # stable: hosts in order within a count
        if len(senders) >= len(edges):
            break
        if all(load[c] + 1 <= max(1, state.passing_load.get(c, 0)) for c in hit):
            senders.append(g)
            load.update(hit)
    if len(senders) <= state.passing_load.get(chan, 0):
        return None, into  # no more than passed: it would say nothing
    return _fan(test, state, [(g, host) for g in senders], f"{channel_name(fabric, chan)} alone"), into


def _read_alone(probe: GroupTest, cand: tuple[Channel, list[tuple[PortRef, PortRef]]],
                candidates: list[tuple[Channel, list[tuple[PortRef, PortRef]]]], state: _State
                ) -> Generator[list[GroupTest], list[GroupResult], list[tuple[Channel, list[tuple[PortRef, PortRef]]]] | None]:
    """Run ``probe``, which loads ``cand``'s direction and none of the other candidates: the candidates left
    (``cand`` alone when it failed twice: a transient slowdown passes the second time, and this decides;
    all but ``cand`` when it passed carrying the failing load), or None when it could not run."""
    result = yield from _decisive(probe, state)
    if result is None:
        return None
    if state.judge.failed(result):
        return [cand]
    if len(cand[1]) <= state.passing_load.get(cand[0], 0):  # it carried the failing load: not the fault
        return [c for c in candidates if c is not cand]
    return candidates


def _alone(test: GroupTest, state: _State, cand: tuple[Channel, list[tuple[PortRef, PortRef]]], others: set[Channel],
           crossed: Crossings, within: bool = False) -> GroupTest | None:
    """A fan among known-good hosts that loads ``cand``'s direction beyond what passed (up to its failing
    load), crosses none of ``others`` (``within``: loads them no more than passing tests did) and puts no
    more flows through any switch than a passing round did (a switch that collapses under load must not
    fail it): into the one receiver most such senders reach, or from the one sender that reaches most
    such receivers. None when it cannot load the direction beyond what passed."""
    chan, edges = cand
    good = sorted(state.good)
    ok = [(s, r) for s in good for r in good
          if s != r and chan in crossed(s, r)[1] and (within or not others.intersection(crossed(s, r)[1]))]
    into: dict[PortRef, list[tuple[PortRef, PortRef]]] = {}
    out_of: dict[PortRef, list[tuple[PortRef, PortRef]]] = {}
    for s, r in ok:
        into.setdefault(r, []).append((s, r))
        out_of.setdefault(s, []).append((s, r))
    best: list[tuple[PortRef, PortRef]] = []
    for _, pairs in sorted(into.items()) + sorted(out_of.items()):
        through: Counter[str] = Counter()
        on: Counter[Channel] = Counter()  # flows on the other candidates
        kept = []
        for s, r in pairs:
            if len(kept) >= len(edges):
                break
            adds, hops = crossed(s, r)
            hit = others.intersection(hops)
            if all(through[sw] + n <= state.passing_switch[sw] for sw, n in adds.items()) and all(
                    on[c] + 1 <= state.passing_load[c] for c in hit):
                kept.append((s, r))
                through.update(adds)
                on.update(hit)
        if len(kept) > len(best):
            best = kept
    if len(best) <= state.passing_load.get(chan, 0):
        return None
    return _fan(test, state, best, f"{channel_name(state.fabric, chan)} alone")


def _other_ways(test: GroupTest, state: _State, candidates: list[tuple[Channel, list[tuple[PortRef, PortRef]]]],
                crossed: Crossings
                ) -> Generator[list[GroupTest], list[GroupResult], list[tuple[Channel, list[tuple[PortRef, PortRef]]]] | None]:
    """Each candidate's other direction, loaded alone (:func:`_across`: no other candidate either way) with
    as many flows as its failing load, where that is beyond what passed; a failing one runs once more (a
    transient passes then). The candidates left: the one whose other direction failed twice, where exactly
    one did; all of them otherwise; None when a probe could not run."""
    both = {(c[0], d) for c, _ in candidates for d in (0, 1)}
    failed = []
    for cand in candidates:
        (key, d), edges = cand
        back = (key, 1 - d)
        pairs = _across(state, back, both - {back}, len(edges), crossed)
        if len(pairs) <= state.passing_load.get(back, 0):
            continue
        probe = _fan(test, state, pairs, f"{channel_name(state.fabric, back)} alone, the other way of "
                     f"{channel_name(state.fabric, cand[0])}")
        if probe is None:
            continue
        results = yield [probe]
        if results[0].status == "error":
            return None
        if state.judge.failed(results[0]):
            results = yield [_again(probe, probe.phase)]
            if state.judge.failed(results[0]):
                failed.append(cand)
    return failed if len(failed) == 1 else candidates


def _across(state: _State, chan: Channel, others: set[Channel], want: int,
            crossed: Crossings) -> list[tuple[PortRef, PortRef]]:
    """The flows of the fan among known-good hosts (every sender to every receiver) that crosses ``chan`` with
    each flow and none of ``others``, with the most flows (senders added until it carries ``want``), and no
    more flows through any switch than a passing round put through it (a switch that collapses under load
    must not fail it)."""
    good = sorted(state.good)
    reach: dict[PortRef, set[PortRef]] = {}
    for s in good:
        for r in good:
            if s != r and chan in (hops := crossed(s, r)[1]) and not others.intersection(hops):
                reach.setdefault(s, set()).add(r)
    best: list[tuple[PortRef, PortRef]] = []
    for rs in dict.fromkeys(frozenset(reach[s]) for s in sorted(reach)):  # each receiver set once
        senders = [s for s in sorted(reach) if rs <= reach[s] and s not in rs]
        receivers = sorted(rs)
        through: Counter[str] = Counter()
        kept: list[tuple[PortRef, PortRef]] = []
        for s in senders:
            if len(kept) >= want:
                break
            flows = [(s, r) for r in receivers]
            adds: Counter[str] = Counter()
            for p in flows:
                adds.update(crossed(*p)[0])
            if any(through[sw] + n > state.passing_switch[sw] for sw, n in adds.items()):
                continue
            kept += flows
            through.update(adds)
        if len(kept) > len(best):
            best = kept
    return best


def _reverse(test: GroupTest, state: _State, chan: Channel, edges: list[tuple[PortRef, PortRef]],
             name: str) -> GroupTest | None:
    """The flows of ``edges`` the other way, when ``chan`` flows into a host port (an incast there is what this
    tells from a bad cable) and every reversed flow crosses ``chan``'s other direction (routes need not be
    symmetric: a probe that goes around it says nothing of it); None otherwise."""
    key, d = chan
    if state.fabric.nodes[channel_ends(chan)[1].node].kind != "host":
        return None  # into a switch the reversed flows reroute (in the gloo lab they named another uplink)
    back = [(b, a) for a, b in edges]
    try:
        if not all((key, 1 - d) in directed(state.fabric.path(s, t), s) for s, t in back):
            return None
    except TopologyError:
        return None
    return _fan(test, state, back, f"{name}, the other way")


def _one_way(cands: list[tuple[Channel, list[tuple[PortRef, PortRef]]]]) -> list[tuple[Channel, list[tuple[PortRef, PortRef]]]]:
    """The candidates (in order) whose flows can run together one way: no sender of one is a receiver of another."""
    senders: set[PortRef] = set()
    receivers: set[PortRef] = set()
    out = []
    for chan, edges in cands:
        s, r = {a for a, _ in edges}, {b for _, b in edges}
        if s & (receivers | r) or r & senders:
            continue
        senders |= s
        receivers |= r
        out.append((chan, edges))
    return out


def _fan(test: GroupTest, state: _State, edges: list[tuple[PortRef, PortRef]], what: str) -> GroupTest | None:
    """A one-way probe from the senders of ``edges`` to their receivers (every sender to every receiver)."""
    senders = sorted({a for a, _ in edges})
    receivers = sorted({b for _, b in edges} - set(senders))
    if not senders or not receivers:
        return None
    return GroupTest((*senders, *receivers), fan(len(senders)), "cross", f"one-way load of {what}, from {test.label}")


def _half(members: tuple[PortRef, ...], i: int, parent: GroupTest, state: _State) -> GroupTest | None:
    label = f"half {i} of {parent.label}"
    if len(members) >= 2:
        return GroupTest(members, parent.test, "split", label)
    good = sorted(state.good - set(parent.members))
    if not good:
        return None  # one host and nobody known good to test it against
    return GroupTest(tuple(sorted((members[0], good[0]))), parent.test, "confirm",
                     f"{members[0]} with known-good {good[0]}")


def _confirm(test: GroupTest, state: _State) -> list[GroupTest]:
    """Each member of a failing pair against its own known-good host."""
    good = [g for g in sorted(state.good) if g.node not in test.nodes]
    out = []
    for m, g in zip(test.members, good, strict=False):
        out.append(GroupTest(tuple(sorted((m, g))), test.test, "confirm", f"{m} with known-good {g}"))
    if len(out) == 2:
        state.sibling[out[0]], state.sibling[out[1]] = out[1], out[0]
    return out


def _overloaded(test: GroupTest, state: _State, limit: int, passed: Mapping[Channel, int] | None = None
                ) -> list[tuple[Channel, list[tuple[PortRef, PortRef]]]]:
    """The cable directions ``test`` loaded beyond what any passing test did (``passed``: the most flows on
    each that passed; default every passing test's), with the flows that crossed each: the ``limit`` most
    overloaded (relative to what passed), ordered by where they start."""
    passing = state.passing_load if passed is None else passed
    crossing: dict[Channel, list[tuple[PortRef, PortRef]]] = {}
    for src, dst in group_edges(test.members, test.test):
        try:
            hops = directed(state.fabric.path(src, dst), src)
        except TopologyError:
            continue
        for chan in hops:
            crossing.setdefault(chan, []).append((src, dst))
    ranked = sorted(((-len(e) / (passing.get(c, 0) + 1), str(c[0]), c[1], c) for c, e in crossing.items()
                     if len(e) > passing.get(c, 0)))[:limit]
    chans = sorted((c for *_, c in ranked), key=lambda c: (channel_ends(c)[0], str(c[0])))
    return [(c, crossing[c]) for c in chans]


def _host_port(test: GroupTest, state: _State) -> list[tuple[Channel, list[tuple[PortRef, PortRef]]]]:
    """The two directions of the one host port ``test`` kept among known-good hosts (a substitution that
    came down to one host), with ``test``'s flows into and out of it, when no direction was loaded beyond
    what passed (a larger test that passed loaded it as much, held back elsewhere): which way fails, and
    whether the cable carries the load the other way, tells a cable from an incast."""
    kept = state.kept.get(test, ())
    if len(kept) != 1 or kept[0] in state.ports:  # another chase came down to it: probed once is enough
        return []
    host = kept[0]
    state.ports.add(host)
    link = state.fabric.link_at(host)
    if link is None:
        return []
    edges = group_edges(test.members, test.test)
    out = directed((link.key,), host)[0]
    cands = [(out, [e for e in edges if e[0] == host]), ((link.key, 1 - out[1]), [e for e in edges if e[1] == host])]
    return sorted((c for c in cands if c[1]), key=lambda c: (channel_ends(c[0])[0], str(c[0][0])))


def _moved(chan: Channel, edges: list[tuple[PortRef, PortRef]], state: _State,
           side: str, crossed: Crossings) -> list[tuple[PortRef, PortRef]] | None:
    """``chan``'s flows with one ``side`` (senders or receivers) replaced by as many known-good hosts whose
    flows cross ``chan`` too; None when there are not enough such hosts."""
    senders = sorted({s for s, _ in edges})
    receivers = sorted({t for _, t in edges})
    old = set(senders) | set(receivers)
    pool = [g for g in sorted(state.good) if g not in old]
    if side == "senders":
        want = len(senders)

        def crosses(g: PortRef) -> bool:
            return all(chan in crossed(g, r)[1] for r in receivers)
    else:
        want = len(receivers)

        def crosses(g: PortRef) -> bool:
            return all(chan in crossed(s, g)[1] for s in senders)
    chosen: list[PortRef] = []
    for g in pool:
        if len(chosen) >= want:
            break
        if crosses(g):  # a pair with no route crosses nothing
            chosen.append(g)
    if len(chosen) < want:
        return None
    if side == "senders":
        return [(g, r) for g in chosen for r in receivers]
    return [(s, g) for s in senders for g in chosen]
