"""Bandwidth tomography: name the cables no counter shows, from which tests sat low.

Each test is judged against what healthy tests of its shape reach here
(:mod:`fabricdoc.model.expectation`) and the fair share its round allowed on today's
routes (a reroute around a dead link does not blame innocent links). A test two spreads
low is evidence against the cables it crossed (one that started and never finished,
``hung``, too; one that could not run is no evidence at all). A cable is a suspect when
more than half its tests are low; the suspects that best explain the low tests are chosen
by a weighted cover (tests at the cable's one rate for it, fine tests through it
against it, other evidence on it first). A chosen cable is named when the tests it alone
explains sit far enough below the noise together; else it, like a cable whose tests merely
sit low around an unexplained one, is a suspect to re-test (``info``). Slow tests nothing
explains are returned, never dropped.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Iterable
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

from fabricdoc.analysis.blame import Blame
from fabricdoc.analysis.confidence import confidence, slow_severity
from fabricdoc.errors import TopologyError
from fabricdoc.model.evidence import (
    CandidatesEvidence,
    PairSample,
    SlowPairsEvidence,
    StateEvidence,
)
from fabricdoc.model.expectation import MIN_DROP, TestJudgement
from fabricdoc.model.flows import maxmin, shares_channels
from fabricdoc.model.paths import directed, expected_gbps, is_bidirectional
from fabricdoc.model.records import LinkKey, Observations, PairResult, PortRef
from fabricdoc.model.topology import Fabric

HARD_FAULTS = frozenset({"down", "width_degraded", "speed_degraded", "not_responding", "not_discovered"})
# Hard faults that leave a link up at a lower rate: they explain a slow test only as far as that rate does.
SLOWING_FAULTS = frozenset({"width_degraded", "speed_degraded"})


def _contention(
    fabric: Fabric, pairs: list[PairResult], paths: list[tuple[LinkKey, ...]], channels: list[list]
) -> dict[int, float]:
    """Per pair, the fraction of its path's rate its round allowed it on today's routes.

    Tests planned not to share links may share them after the fabric rerouted
    around a failure; such a pair is slow because of its neighbours, not its path.
    """
    by_round: dict[int, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        if p.status == "ok" and paths[i]:
            by_round[p.round].append(i)
    out: dict[int, float] = {}
    for members in by_round.values():
        flows = [channels[i] for i in members]
        if not shares_channels(flows):
            continue
        fair = maxmin(flows, lambda k: fabric.links[k].capacity_gbps)
        for j, i in enumerate(members):
            p = pairs[i]
            alone = expected_gbps(fabric, p.src, p.dst, is_bidirectional(p.test))  # the one bottleneck rule
            if alone and fair[j] < alone * 0.999:
                out[i] = float(fair[j] / alone)
    return out


@dataclass
class Unexplained:
    """Slow tests no suspect explains (reported as such, never dropped), and whether each repeated
    (its pair was slow in another test too): a lone one is noise, a repeated one is a warning."""

    pairs: list[PairResult]
    repeated: list[bool]
    relative: list[float | None]


MASK_SHARE = 0.8  # a link trained low below this share of its path's other cables held the test to its rate
WEAK_Z = 2.0  # a test this many spreads low (and MIN_DROP) is evidence against the cables it crossed
NAMED_Z = 5.0  # a cable's own low tests this far below the noise together name it (combined_z)
Z_CAP = 10.0  # one test counts at most this many spreads: a transient outlier does not decide alone
RETEST_Z = 1.5  # a cable whose tests sit this low (upper median) around an unexplained low test: re-test it
RETEST_DROP = 0.06  # ...and this far below it: hosts differ by a few percent (a host's every test with it)
RETEST_LIMIT = 256  # suspects to re-test listed at most (the lowest first)
CAP_TOLERANCE = 0.15  # tests through one slow cable sit within this (log units) of each other: hosts differ
NAMED_DROP = 0.10  # a cable named slow sits at least this far below what healthy tests reach (hosts alone
# differ by a few percent each way, so their pairs by up to ~8%; a gray fault is 0.85x)
# ...or, with less weight together (two tests of one host at 4% jitter: a 0.85x cable's sit ~4.3 spreads low),
# this far below and this far: beyond what a host at the edge of how hosts differ (6%) reaches with two tests'
# jitter (2 spreads of their median at 4%: 5.7%); a healthy host's pair read 0.876 and 0.878 at 0.12.
NAMED_Z_CLEAR = 4.0
NAMED_DROP_CLEAR = 0.125


def from_pairs(fabric: Fabric, obs: Observations, judged: TestJudgement, suspect_fraction: float,
               blame: dict[LinkKey, Blame]) -> Unexplained:
    """Blame the fewest cables that explain the slow tests no hard evidence explains; return the
    slow tests that nothing explains. A test is slow as ``judged`` says (against what healthy tests of
    its shape reach here, by more than the noise explains) and low two spreads below it. A cable is a
    suspect when more than ``suspect_fraction`` of the tests through it were low (at least half); the
    suspects chosen by :func:`_cover` are named or listed as suspects to re-test by :func:`_blame_slow`,
    and cables whose tests sit low around an unexplained one by :func:`_to_retest`."""
    tests_through: dict[LinkKey, list[int]] = defaultdict(list)
    slow: set[int] = set()
    pairs = obs.pairs
    slowed = {k: trained_share(fabric, k, b) for k, b in blame.items()
              if SLOWING_FAULTS & set(b.faults) and k in fabric.links}
    paths: list[tuple[LinkKey, ...]] = []
    channels: list[list] = []
    for i, p in enumerate(pairs):
        try:
            path = fabric.path(p.src, p.dst)
            chan = directed(path, p.src)
            if is_bidirectional(p.test):
                back = fabric.path(p.dst, p.src)
                chan += directed(back, p.dst)
                path = tuple(dict.fromkeys((*path, *back)))
        except TopologyError:
            path, chan = (), []
        paths.append(path)
        channels.append(chan)
        if p.status in ("wrong", "error"):
            # Corruption is judged separately; a test that could not run says nothing about
            # the fabric (the report lists it as not tested), never a hardware fault.
            continue
        if judged.pair_slow(i, p):
            slow.add(i)
        elif _masked(fabric, p, path, slowed):
            # A link trained low was this test's bottleneck: it ran at that link's rate and says
            # nothing of the other cables on its path (a slow one may hide behind it).
            for key in path:
                if key in slowed:
                    tests_through[key].append(i)
            continue
        for key in path:
            tests_through[key].append(i)
    relative = [j.relative for j in judged.pairs]
    below = [judged.threshold(i) for i in range(len(pairs))]
    shared = _contention(fabric, pairs, paths, channels)
    if shared:
        slow = {i for i in slow if i not in shared or (relative[i] or 0.0) / shared[i] < below[i]}
    # Slow pairs already explained by hard evidence need no suspect. A link gone (down, silent,
    # undiscovered) explains every slow test on it; a down link also slows the pairs rerouted
    # around it, so its pairs' routes before the failure count too. A link trained low explains
    # a test only as far as its lower rate accounts for the test's ratio: a test slower than
    # that has a second fault on its path, and stays evidence for the next suspect.
    hard = {k for k, b in blame.items() if HARD_FAULTS & set(b.faults)}
    gone = {k for k in hard if set(blame[k].faults) & (HARD_FAULTS - SLOWING_FAULTS)}
    down = [k for k in hard if "down" in blame[k].faults]
    before = fabric.with_all_links_up() if down and not fabric.lfts else None

    def explained(i: int, rerouting: bool = True) -> bool:
        if gone.intersection(paths[i]):
            return True
        on_path = [k for k in paths[i] if k in slowed]
        if on_path:
            accounted = accounted_ratio(fabric, pairs[i], on_path, slowed)
            rel = relative[i]
            if rel is not None and pairs[i].status == "ok" and rel >= below[i] * accounted:
                return True
        if before is None or not rerouting:
            return False
        try:
            old = before.path(pairs[i].src, pairs[i].dst)
            if is_bidirectional(pairs[i].test):
                old = (*old, *before.path(pairs[i].dst, pairs[i].src))
            return bool(hard.intersection(old))
        except TopologyError:
            return False

    # How far below its shape's healthy figure each test sat, its round's contention taken out. A test
    # two spreads low (and MIN_DROP) is evidence against the cables it crossed: a gray fault in noise
    # leaves some of its tests just short of slow, and a cable is judged on all of them together.
    z = [None if j.z is None or j.baseline is None else j.z - math.log(shared.get(i, 1.0)) / j.baseline.spread
         for i, j in enumerate(judged.pairs)]
    unexplained = {i for i in slow if not explained(i)}
    # A given --slow-ratio replaces every noise-derived threshold, this one too: a drop the user called noise
    # is no evidence (a lab whose concurrent tests share two cores differs by 30% from round to round).
    given = judged.expectations.slow_ratio
    is_low = {i for i, zi in enumerate(z) if zi is not None and zi < -WEAK_Z
              and (relative[i] or 0.0) / shared.get(i, 1.0) < (1.0 - MIN_DROP if given is None else given)}
    low = {i for i in is_low if not explained(i)}
    evidence = unexplained | low
    # A test rerouted around a down link may be slow for its new path's neighbours: the down link is
    # reason enough to leave it unreported, but a cable that explains it with the rest of its tests (a
    # host's cable whose every test is slow, whatever route it took) still takes it into account, unless
    # a cable with evidence of its own (errors on its counters) lies on its path and explains it as well.
    moved = {i for i in (slow | is_low) - evidence if not explained(i, rerouting=False)
             and not any(k in blame for k in paths[i])}
    if not evidence and not moved:
        return Unexplained([], [], [])
    fraction = max(0.5, min(1.0, suspect_fraction))
    suspects: dict[LinkKey, set[int]] = {}
    considered: dict[LinkKey, list[int]] = {}
    for key, crossed in tests_through.items():
        if key in slowed:
            continue  # trained low: it slows its tests as far as its rate does, and a slower one has more
        # A slow test another cable's hard fault explains says nothing of this one, either way.
        tests = [i for i in crossed if i not in slow or i in unexplained or i in moved]
        covers = {i for i in tests if i in evidence or i in moved}
        # More than ``fraction`` of its tests low (all of them at 1.0): a slow cable caps every test
        # through it, a healthy one shows a transient outlier now and then.
        if covers and (len(covers) > fraction * len(tests) or len(covers) == len(tests)):
            suspects[key] = covers
            considered[key] = tests
    level = {i: math.log(max(1e-9, (relative[i] or 0.0) / shared.get(i, 1.0))) for i in evidence | moved
             if relative[i]}
    agree = {key: _at_its_cap(covers, level, judged) for key, covers in suspects.items()}
    # A failed connection is explained as well by the fabric cable it crossed as by a host's own cable
    # when only that host's connections crossed it: the fabric cable is named first (its equal, the
    # host, an alternative), so a host is drained only when its failures are more than any cable's.
    fabric_side = {k for k, c in suspects.items() if all(pairs[i].status == "hung" for i in c)
                   and fabric.nodes[k.a.node].kind != "host" and fabric.nodes[k.b.node].kind != "host"}
    first = _cover(evidence | moved, suspects, agree, considered, blame, fabric_side)
    # Overlapping faults: a test slower than the named suspects on its path account for (each
    # suspect's own slowdown is its least slow test) has a second fault on its path; the
    # suspects hidden behind the first ones (all their tests crossed them) explain the rest, if
    # every test through them is that much slower (one noisy test does not make a second fault).
    residual = _slower_than_explained(unexplained, first, agree, pairs, paths, judged)
    others = {k: c for k, c in suspects.items() if k not in first and c <= residual}
    second = _cover(residual, others, agree, considered, blame, fabric_side) if residual else []
    by_first = set().union(*(suspects[k] for k in first))
    by_second = set().union(*(suspects[k] for k in second))
    left = sorted((unexplained - by_first - by_second) | (residual - by_second))
    chosen = first + second
    owned = _attribute(first, suspects, evidence | moved) | _attribute(second, suspects, residual)
    picked = set(chosen)
    named_twins: set[LinkKey] = set()
    for key in chosen:
        carried = _carried(key, suspects[key], considered[key], channels, pairs, judged)
        own = set() if carried else owned[key]
        blamed = key in blame  # before blaming it: its twins must match this
        alike = _blame_slow(fabric, key, suspects, considered, pairs, judged, z, blame, own & agree[key], slow,
                            picked, carried)
        if alike is None:
            continue  # not named
        twins = _twins(fabric, key, suspects, considered, picked, blamed, blame, fabric_side)
        if set(alike) != set(twins):
            continue  # a host's cable is as likely as they are: the cover's pick stands
        for twin in twins:
            _blame_slow(fabric, twin, suspects, considered, pairs, judged, z, blame, own & agree[key], slow,
                        picked - {key}, carried)
            named_twins.add(twin)
    explained_low = set().union(*(suspects[k] for k in chosen))
    _to_retest(fabric, tests_through, evidence - explained_low, explained_low,
               set(chosen) | named_twins | set(slowed), z, pairs, judged, blame)
    # A pair slow again in another test repeats: a warning, when it is that much slower than hosts differ.
    seen: dict[tuple[PortRef, PortRef], int] = defaultdict(int)
    for i in slow:
        if (relative[i] or 0.0) / shared.get(i, 1.0) < 1.0 - NAMED_DROP:
            seen[_pair_key(pairs[i])] += 1
    return Unexplained([pairs[i] for i in left], [seen[_pair_key(pairs[i])] > 1 for i in left],
                       [relative[i] for i in left])


def _pair_key(p: PairResult) -> tuple[PortRef, PortRef]:
    return (p.src, p.dst) if (p.src.node, p.src.port) <= (p.dst.node, p.dst.port) else (p.dst, p.src)


def _carried(key: LinkKey, covers: set[int], tests: list[int], channels: list[list], pairs: list[PairResult],
             judged: TestJudgement) -> int:
    """How many tests crossed the cable the same way as its slow tests, faster than the best of them by more
    than tests at one cable's rate differ (:func:`_cap_tolerance`: three spreads of a difference of two
    tests): a cable carries what it carried, so those slow tests have another cause (two transient
    slowdowns at a like level, most often). The cable is then listed as a suspect to re-test, never named
    from them."""
    def ways(i: int) -> set[int]:
        return {c[1] for c in channels[i] if c[0] == key}

    def rel(i: int) -> float:
        return judged.pairs[i].relative or 0.0

    slow = [i for i in covers if pairs[i].status == "ok" and judged.pairs[i].relative is not None]
    if not slow:
        return 0  # hung tests: nothing says how much the cable carried for them
    top = max(rel(i) for i in slow)
    level = math.log(top) if top > 0.0 else -math.inf  # a slow test that read 0: any that ran was carried
    slow_ways = set().union(*(ways(i) for i in slow))
    return sum(1 for i in tests if i not in covers and pairs[i].status == "ok" and rel(i) > 0.0
               and math.log(rel(i)) - level > _cap_tolerance(judged, i) and ways(i) & slow_ways)


def _twins(fabric: Fabric, key: LinkKey, suspects: dict[LinkKey, set[int]], considered: dict[LinkKey, list[int]],
           picked: AbstractSet[LinkKey], blamed: bool, blame: dict[LinkKey, Blame],
           prefer: AbstractSet[LinkKey]) -> list[LinkKey]:
    """Switch-to-switch cables the evidence cannot tell from the named fabric cable ``key``: the same tests
    crossed them, the same ones slow, and nothing else speaks for either (no other evidence on one only). The
    cover's pick among them is a tie broken on the name, so each is named, the others as its equally likely
    alternatives: a scheduler acting on the report takes every one of them out rather than half the time the
    healthy one (on a rail-optimized fabric of two units, sendrecv tests across the units cross each leaf's
    uplink to a spine and the other unit's leaf's uplink to it alike). A host's cable is never named this way: the fabric cable
    is named first and the host is an alternative (and then the twins are not named either: they are named
    only where they are all the equally likely cables). ``blamed``: whether ``key`` held blame before it was
    named (a twin's must be the same)."""
    def fabric_cable(k: LinkKey) -> bool:
        return fabric.nodes[k.a.node].kind != "host" and fabric.nodes[k.b.node].kind != "host"

    if not fabric_cable(key):
        return []
    through = set(considered[key])
    return sorted((k for k, c in suspects.items() if c == suspects[key] and k != key and k not in picked
                   and fabric_cable(k) and set(considered[k]) == through
                   and (k in blame) == blamed and (k in prefer) == (key in prefer)), key=str)


def _confidence(tests: int, together: float | None, twins: int, hung: bool) -> float:
    """Grows with the tests behind a suspect and how far below the noise they sit together, split among
    equally likely suspects: (1 - 0.5^k) x (1 - exp(-(z/5)^2)) / twins, ``z`` their combined z.

    >>> _confidence(2, -5.0, 1, False), _confidence(6, -10.0, 1, False), _confidence(6, -20.0, 2, False)
    (0.47, 0.97, 0.49)
    """
    distance = 1.0 if hung or together is None else 1.0 - math.exp(-((together / NAMED_Z) ** 2))
    return confidence(tests, twins, distance)


def combined_z(zs: list[float]) -> float | None:
    """How far a cable's own tests sit below the noise together: their z (each at most ``Z_CAP`` low, so
    one transient outlier does not decide) summed over the square root of their number.

    >>> combined_z([-2.4, -2.4, -2.4, -2.4]), combined_z([-30.0, -30.0])
    (-4.8, -14.14)
    """
    if not zs:
        return None
    return round(sum(max(-Z_CAP, v) for v in zs) / math.sqrt(len(zs)), 2)


def far_enough(together: float, median_relative: float) -> bool:
    """Whether a cable's own tests sit far enough below the noise to name it: :data:`NAMED_Z` spreads
    together and :data:`NAMED_DROP` below what healthy tests reach, or, with less weight
    (:data:`NAMED_Z_CLEAR`), :data:`NAMED_DROP_CLEAR` below, beyond what a slow host and jitter reach.

    >>> far_enough(-5.2, 0.89), far_enough(-4.3, 0.89), far_enough(-4.3, 0.85), far_enough(-3.8, 0.70)
    (True, False, True, False)
    """
    return ((together <= -NAMED_Z and median_relative < 1.0 - NAMED_DROP)
            or (together <= -NAMED_Z_CLEAR and median_relative < 1.0 - NAMED_DROP_CLEAR))


def _blame_slow(fabric: Fabric, key: LinkKey, suspects: dict[LinkKey, set[int]], considered: dict[LinkKey, list[int]],
                pairs: list[PairResult], judged: TestJudgement, z: list[float | None], blame: dict[LinkKey, Blame],
                own: set[int], slow: set[int], chosen: AbstractSet[LinkKey] = frozenset(),
                carried: int = 0) -> list[LinkKey] | None:
    """Blame one chosen suspect with its low tests as evidence; return its equally likely alternatives when it
    was named, else None. ``own`` are the tests it alone explains at its cap: it is named (warning or worse)
    when there are two or more of them (or one that hung), and they with the tests through it that were fine
    sit far enough below the noise together and below what healthy tests reach (:func:`far_enough`); else it
    is listed as a suspect to re-test (``info``)."""
    covers = suspects[key]
    # Equivalent candidates explain exactly the same slow pairs: split the confidence,
    # and name them so a targeted re-test can tell them apart.
    healthy = len(considered[key]) - len(covers)
    # A cable not chosen that explains every test this one alone explains, with no more fine tests through
    # it, is as likely from the evidence (its other slow tests another named cable explains as well).
    alternatives = sorted((k for k, c in suspects.items()
                           if k != key and k not in chosen and len(considered[k]) - len(c) <= healthy
                           and (c == covers or (own and own <= c))), key=str)
    twins = 1 + len(alternatives)
    n = len(considered[key])
    worst, median = _ratio_figures(pairs, covers)
    # Judged on the tests it alone explains and the ones through it that were fine: a gray fault's
    # tests sit low together, a healthy cable's two transient outliers sit among fine tests.
    judged_on = own | (set(considered[key]) - covers)
    rels = [judged.pairs[i].relative for i in judged_on if judged.pairs[i].relative is not None]
    together = combined_z([zi for i in judged_on for zi in [z[i]] if zi is not None])
    median_rel = float(statistics.median(rels)) if rels else None
    hung = sum(1 for i in covers if pairs[i].status == "hung")
    confidence = _confidence(len(own), together, twins, bool(hung))
    # A sweep re-tests a cable named from bandwidth alone: one that was not low again in any re-test was
    # slowed by something that passed (a noisy round, a neighbour's burst), and stays a suspect.
    retests = [] if judged.retest_from is None else [i for i in considered[key]
                                                      if pairs[i].round >= judged.retest_from]
    cleared = bool(retests) and not covers.intersection(retests)
    named = bool(hung) or (len(own) >= 2 and together is not None and not cleared and median_rel is not None
                           and far_enough(together, median_rel))
    if not named:
        severity = "info"  # a suspect to re-test, not a named fault
    else:
        severity = "error" if hung else slow_severity(median_rel)
    fault = "hung" if hung == len(covers) else "degraded_bandwidth"
    efficiency = _efficiency(judged, covers)
    slow_pairs = tuple(_sample(fabric, pairs[i], judged.pairs[i].relative) for i in sorted(covers)[:20])
    alts = tuple(((k.a.node, k.a.port), (k.b.node, k.b.port)) for k in alternatives[:8])
    blame[key].add(fault, severity, confidence, SlowPairsEvidence(
        tests=n, slow=sum(1 for i in covers if i in slow), worst_ratio=worst, median_ratio=median,
        equivalent_suspects=twins, alternatives=alts, slow_pairs=slow_pairs,
        median_relative=None if median_rel is None else round(median_rel, 4), healthy_efficiency=efficiency,
        suspect_only=not named, carried=carried))
    if alternatives:
        blame[key].add(fault, severity, confidence, _candidates(fabric, key, alternatives[:8], pairs, covers))
    return alternatives if named else None


def _to_retest(fabric: Fabric, tests_through: dict[LinkKey, list[int]], low: set[int], explained: set[int],
               skip: set[LinkKey], z: list[float | None], pairs: list[PairResult], judged: TestJudgement,
               blame: dict[LinkKey, Blame], limit: int = RETEST_LIMIT) -> None:
    """Cables a low test nothing explains crossed, whose other tests sit low as a whole (at least half of
    them 1.5 spreads and :data:`RETEST_DROP` below what healthy tests reach; tests a named cable explains left
    out): a gray fault among noise looks like this before it has enough tests to be named. Each is listed (``info``, a
    suspect to re-test; ``fabricdoc sweep`` re-tests it), the lowest first, at most ``limit``."""
    found = []
    for key, crossed in tests_through.items():
        if key in skip or low.isdisjoint(crossed):
            continue
        zs = [zi for i in crossed if i not in explained for zi in [z[i]] if zi is not None]
        rels = [r for i in crossed if i not in explained for r in [judged.pairs[i].relative] if r is not None]
        # ...and RETEST_DROP low: a host a few percent slower than the rest is how hosts differ
        if zs and statistics.median_high(zs) < -RETEST_Z and statistics.median_high(rels) < 1.0 - RETEST_DROP:
            found.append((statistics.median(zs), str(key), key))
    for _, _, key in sorted(found)[:limit]:
        tests = tests_through[key]
        mine = sorted(i for i in tests if i in low)
        worst, median = _ratio_figures(pairs, mine)
        rels = [judged.pairs[i].relative for i in tests if judged.pairs[i].relative is not None]
        blame[key].add("degraded_bandwidth", "info", 0.0, SlowPairsEvidence(
            tests=len(tests), slow=sum(1 for i in tests if judged.pair_slow(i, pairs[i])),
            worst_ratio=worst, median_ratio=median,
            slow_pairs=tuple(_sample(fabric, pairs[i], judged.pairs[i].relative) for i in mine[:20]),
            median_relative=round(float(statistics.median(rels)), 4) if rels else None,
            healthy_efficiency=_efficiency(judged, set(tests)), suspect_only=True))


def _ratio_figures(pairs: list[PairResult], tests: Iterable[int]) -> tuple[float, float]:
    """The worst and the median measured/nominal of ``tests`` (0.0 when none measured), rounded as reported."""
    ratios = [r for i in tests for r in [pairs[i].ratio] if r is not None]
    if not ratios:
        return 0.0, 0.0
    return round(min(ratios), 4), round(float(statistics.median(ratios)), 4)


def _efficiency(judged: TestJudgement, tests: set[int]) -> float | None:
    effs = [j.baseline.efficiency for i in tests for j in [judged.pairs[i]] if j.baseline is not None]
    return round(float(statistics.median(effs)), 4) if effs else None


def _sample(fabric: Fabric, p: PairResult, relative: float | None) -> PairSample:
    return PairSample((fabric.label(p.src.node), p.src.port), (fabric.label(p.dst.node), p.dst.port), p.status,
                      p.busbw_gbps, p.expected_gbps, None if p.ratio is None else round(p.ratio, 4),
                      None if relative is None else round(relative, 4))


def trained_share(fabric: Fabric, key: LinkKey, blame: Blame) -> float:
    """The fraction of its nominal rate a link trained at, from the fabric and the states reported."""
    link = fabric.links[key]
    share = link.capacity_gbps / link.nominal_gbps if link.nominal_gbps else 1.0
    for ev in blame.evidence:
        if not isinstance(ev, StateEvidence):
            continue
        said = 1.0
        if ev.lanes and ev.supported_lanes:
            said *= min(1.0, ev.lanes / ev.supported_lanes)
        if ev.lane_gbps and ev.supported_lane_gbps:
            said *= min(1.0, ev.lane_gbps / ev.supported_lane_gbps)
        share = min(share, said)
    return share


def accounted_ratio(fabric: Fabric, pair: PairResult, keys: list[LinkKey], slowed: dict[LinkKey, float]) -> float:
    """The ratio links trained low (``keys``, with their ``slowed`` shares) leave a test: their trained
    rate over the rate the test was judged against (1.0 when its expectation already counted it)."""
    expected = pair.expected_gbps
    if not expected:
        return 1.0
    rate = min(fabric.links[k].nominal_gbps * slowed[k] for k in keys)
    return min(1.0, rate / expected)


def _masked(fabric: Fabric, pair: PairResult, path: tuple[LinkKey, ...], slowed: dict[LinkKey, float]) -> bool:
    """Whether a link trained low held the test well below what its path's other cables carry."""
    if not slowed or not pair.expected_gbps or not any(k in slowed for k in path):
        return False
    others = [fabric.links[k].capacity_gbps for k in path if k not in slowed]
    return bool(others) and pair.expected_gbps < MASK_SHARE * min(others)


# A slow test through a slow cable against one through a healthy cable (a transient outlier, noise):
# log(0.9 / 0.03); a test that was not slow through a slow cable (a gray fault in noise) against one
# through a healthy cable: log(0.97 / 0.15). The greedy cover names a cable while its slow tests
# outweigh the healthy ones that crossed it.
SLOW_WEIGHT = math.log(0.9 / 0.03)
HEALTHY_WEIGHT = math.log(0.97 / 0.15)
# A cable other evidence already blames (errors, flaps, congestion) explains slow tests more likely than
# one nothing else points at: worth about one slow test.
KNOWN_BAD = SLOW_WEIGHT


def _at_its_cap(covers: set[int], level: dict[int, float], judged: TestJudgement) -> set[int]:
    """The slow tests through a cable that sit at one rate, the least slow of them: a slow cable caps every
    test through it alike (a test further below has something more on its path), while transient outliers
    land anywhere. A hung test always counts."""
    levels = {i: level[i] for i in covers if i in level}
    if not levels:
        return set(covers)
    cap = max(levels.values())
    out = {i for i in covers if i not in levels}
    for i, v in levels.items():
        if v >= cap - _cap_tolerance(judged, i):
            out.add(i)
    return out


def _cap_tolerance(judged: TestJudgement, i: int) -> float:
    """How far (log units) test ``i`` may sit below the others through one slow cable and still be at its
    rate: three spreads of a difference of two tests, at least :data:`CAP_TOLERANCE`."""
    b = judged.pairs[i].baseline
    return max(CAP_TOLERANCE, 3.0 * math.sqrt(2.0) * (b.spread if b is not None else 0.05))


def _cover(remaining: set[int], suspects: dict[LinkKey, set[int]], agree: dict[LinkKey, set[int]],
           considered: dict[LinkKey, list[int]], blame: dict[LinkKey, Blame],
           prefer: set[LinkKey] = frozenset()) -> list[LinkKey]:  # type: ignore[assignment]
    """Weighted greedy set cover: the suspects that best explain ``remaining`` slow tests, each scored by
    the slow tests it would newly explain at its cap (:func:`_at_its_cap`) against the tests through it
    that were not slow (:data:`SLOW_WEIGHT`, :data:`HEALTHY_WEIGHT`), plus :data:`KNOWN_BAD` for a cable
    other evidence blames, while that score is positive (ties
    broken by fewer slow tests far below its cap, other evidence on the cable, ``prefer`` (a fabric
    cable over a host's, for failed connections), how many tests crossed it);
    then a suspect whose slow tests the
    others explain too is dropped (the one with the most healthy tests first): a cable some healthy tests
    crossed is not named beside the cables that explain its slow ones."""
    chosen: list[LinkKey] = []
    left = set(remaining)
    healthy = {k: len(considered[k]) - len(c) for k, c in suspects.items()}
    while left:
        best, best_score = None, None
        for key, covers in suspects.items():
            gain = covers & left
            if not gain or key in chosen:
                continue
            fits = len(gain & agree[key])
            weight = SLOW_WEIGHT * fits - HEALTHY_WEIGHT * healthy[key] + (KNOWN_BAD if key in blame else 0.0)
            # Ties: fewer slow tests it would explain only below its cap (they need a second fault anyway).
            score = (weight, fits - len(gain), len(gain), key in blame, key in prefer, len(considered[key]), str(key))
            if best_score is None or score > best_score:
                best, best_score = key, score
        if best is None or best_score is None or best_score[0] <= 0:
            break  # slow tests no suspect explains better than noise does
        chosen.append(best)
        left -= suspects[best]
    for key in sorted(chosen, key=lambda k: (-healthy[k], str(k))):
        if not healthy[key]:
            break  # every test through it was slow: nothing speaks for dropping it
        others = [k for k in chosen if k != key]
        if others and (suspects[key] & remaining) <= set().union(*(suspects[k] for k in others)):
            chosen.remove(key)
    return chosen


def _attribute(chosen: list[LinkKey], suspects: dict[LinkKey, set[int]], remaining: set[int]) -> dict[LinkKey, set[int]]:
    """Each chosen suspect's slow tests, in the order chosen: a test goes to the first suspect explaining it."""
    left = set(remaining)
    out = {}
    for key in chosen:
        out[key] = suspects[key] & left
        left -= out[key]
    return out


def _slower_than_explained(unexplained: set[int], chosen: list[LinkKey], agree: dict[LinkKey, set[int]],
                           pairs: list[PairResult], paths: list[tuple[LinkKey, ...]], judged: TestJudgement) -> set[int]:
    """Slow tests well below what the chosen suspects on their path explain: under a suspect's cap (the
    median rate of its tests at one rate) by more than tests through one cable differ
    (:func:`_at_its_cap`'s tolerance). A slow cable caps every test through it at one rate, so rates
    are compared in Gb/s: tests judged against different expectations (one also crossed a link trained
    low) still measure the same cap. A hung test is below every cap of a cable whose tests ran."""
    cap: dict[LinkKey, float] = {}
    for key in chosen:
        rates = [r for i in agree[key] for r in [pairs[i].busbw_gbps] if r is not None and pairs[i].ratio is not None]
        if rates:
            cap[key] = float(statistics.median(rates))
    # A cable whose tests hang explains a hung test; one whose tests run, however slowly, does not.
    hangs = {key for key in chosen if all(pairs[i].status == "hung" for i in agree[key])}
    out = set()
    for i in unexplained:
        if pairs[i].status == "hung":
            on_path = [k for k in paths[i] if k in chosen]
            if on_path and not hangs.intersection(on_path):
                out.add(i)
            continue
        rate = pairs[i].busbw_gbps if pairs[i].ratio is not None else None
        named = [cap[k] for k in paths[i] if k in cap]
        if rate is None or not named:
            continue
        if rate < min(named) * math.exp(-_cap_tolerance(judged, i)):
            out.add(i)
    return out


def _candidates(fabric: Fabric, key: LinkKey, alternatives: list[LinkKey], pairs: list[PairResult],
                covers: set[int]) -> CandidatesEvidence:
    """The equally likely cables, and for each a host pair whose test crosses this cable but not it."""
    names = [_cable_name(fabric, k) for k in (key, *alternatives)]
    tests = []
    for alt in alternatives:
        test = separating_test(fabric, key, alt, [pairs[i] for i in sorted(covers)])
        if test is not None:
            tests.append(((fabric.label(test[0].node), test[0].port), (fabric.label(test[1].node), test[1].port)))
    return CandidatesEvidence(tuple(names), "they explain exactly the same slow tests; a test through one "
                              "and not the other tells them apart (fabricdoc sweep re-tests suspects)", tuple(tests))


def _cable_name(fabric: Fabric, key: LinkKey) -> str:
    return f"cable {fabric.label(key.a.node)}[{key.a.port}] -- {fabric.label(key.b.node)}[{key.b.port}]"


def separating_test(fabric: Fabric, through: LinkKey, avoid: LinkKey, slow: list[PairResult],
                    tries: int = 64) -> tuple[PortRef, PortRef] | None:
    """A host pair whose route crosses ``through`` but not ``avoid``: the slow tests' ends against
    the hosts nearest ``through`` first, a bounded number of routes looked up."""
    ends = [p.src for p in slow] + [p.dst for p in slow]
    near = [e for e in (through.a, through.b) if fabric.nodes[e.node].kind == "host"]
    for end in (through.a, through.b):
        for link in fabric.node_links(end.node):
            for e in (link.key.a, link.key.b):
                if fabric.nodes[e.node].kind == "host":
                    near.append(e)
    hosts = list(dict.fromkeys(near + ends))
    looked = 0
    for src in hosts:
        for dst in hosts:
            if src.node == dst.node:
                continue
            looked += 1
            if looked > tries:
                return None
            try:
                path = fabric.path(src, dst)
            except TopologyError:
                continue
            if through in path and avoid not in path:
                return src, dst
    return None
