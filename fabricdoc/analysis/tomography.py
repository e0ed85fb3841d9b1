"""Bandwidth tomography: name the cables no counter shows, from which tests were slow.

A cable is a suspect when every test through it was slow (or started and never
finished: ``hung``); a test that could not run is no evidence at all. The slow tests are
explained by the fewest suspects (greedy set cover, ties broken by how slow and
how well covered). Tests are judged against the fair share their round allowed
on today's routes, so a reroute around a dead link does not blame innocent links.
"""

from __future__ import annotations

from collections import defaultdict

from fabricdoc.analysis.blame import Blame
from fabricdoc.errors import TopologyError
from fabricdoc.model.evidence import (
    CandidatesEvidence,
    PairSample,
    SlowPairsEvidence,
    StateEvidence,
)
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


def from_pairs(fabric: Fabric, obs: Observations, slow_ratio: float, suspect_fraction: float,
               blame: dict[LinkKey, Blame]) -> list[PairResult]:
    """Blame the fewest cables that explain the slow tests no hard evidence explains; return the
    slow tests that nothing explains (reported as such, never dropped)."""
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
        if p.status == "hung" or (p.ratio is not None and p.ratio < slow_ratio):
            slow.add(i)
        elif _masked(fabric, p, path, slowed, slow_ratio):
            # A link trained low was this test's bottleneck: it ran at that link's rate and says
            # nothing of the other cables on its path (a slow one may hide behind it).
            for key in path:
                if key in slowed:
                    tests_through[key].append(i)
            continue
        for key in path:
            tests_through[key].append(i)
    if not slow:
        return []
    shared = _contention(fabric, pairs, paths, channels)
    if shared:
        slow = {i for i in slow if i not in shared or (pairs[i].ratio or 0.0) / shared[i] < slow_ratio}
        if not slow:
            return []
    # Slow pairs already explained by hard evidence need no suspect. A link gone (down, silent,
    # undiscovered) explains every slow test on it; a down link also slows the pairs rerouted
    # around it, so its pairs' routes before the failure count too. A link trained low explains
    # a test only as far as its lower rate accounts for the test's ratio: a test slower than
    # that has a second fault on its path, and stays evidence for the next suspect.
    hard = {k for k, b in blame.items() if HARD_FAULTS & set(b.faults)}
    gone = {k for k in hard if set(blame[k].faults) & (HARD_FAULTS - SLOWING_FAULTS)}
    down = [k for k in hard if "down" in blame[k].faults]
    before = fabric.with_all_links_up() if down and not fabric.lfts else None

    def explained(i: int) -> bool:
        if gone.intersection(paths[i]):
            return True
        on_path = [k for k in paths[i] if k in slowed]
        if on_path:
            accounted = accounted_ratio(fabric, pairs[i], on_path, slowed)
            ratio = pairs[i].ratio
            if ratio is not None and pairs[i].status == "ok" and ratio >= slow_ratio * accounted:
                return True
        if before is None:
            return False
        try:
            old = before.path(pairs[i].src, pairs[i].dst)
            if is_bidirectional(pairs[i].test):
                old = (*old, *before.path(pairs[i].dst, pairs[i].src))
            return bool(hard.intersection(old))
        except TopologyError:
            return False

    unexplained = {i for i in slow if not explained(i)}
    suspects: dict[LinkKey, set[int]] = {}
    for key, tests in tests_through.items():
        n_slow = sum(1 for i in tests if i in slow)
        if tests and n_slow >= suspect_fraction * len(tests) and n_slow:
            suspects[key] = {i for i in tests if i in slow}
    first = _cover(set(unexplained), suspects, pairs, blame, tests_through)
    # Overlapping faults: a test slower than the named suspects on its path account for (each
    # suspect's own slowdown is its least slow test) has a second fault on its path; the
    # suspects hidden behind the first ones (all their tests crossed them) explain the rest, if
    # every test through them is that much slower (one noisy test does not make a second fault).
    residual = _slower_than_explained(unexplained, first, suspects, pairs, paths, slow_ratio)
    others = {k: c for k, c in suspects.items() if k not in first and c <= residual}
    second = _cover(residual, others, pairs, blame, tests_through) if residual else []
    by_first = set().union(*(suspects[k] for k in first))
    by_second = set().union(*(suspects[k] for k in second))
    left = sorted((unexplained - by_first - by_second) | (residual - by_second))
    chosen = first + second
    for key in chosen:
        covers = suspects[key]
        # Equivalent candidates explain exactly the same slow pairs: split the confidence,
        # and name them so a targeted re-test can tell them apart.
        alternatives = sorted((k for k, c in suspects.items() if c == covers and k != key), key=str)
        twins = 1 + len(alternatives)
        n = len(tests_through[key])
        ratios = [pairs[i].ratio for i in covers if pairs[i].ratio is not None]
        worst = min(ratios) if ratios else 0.0
        median = sorted(ratios)[len(ratios) // 2] if ratios else 0.0
        hung = sum(1 for i in covers if pairs[i].status == "hung")
        confidence = min(0.99, (1.0 / twins) * (1 - 0.5 ** n))
        severity = "error" if (median < 0.7 or hung) else "warning"
        fault = "hung" if hung == len(covers) else "degraded_bandwidth"
        slow_pairs = tuple(
            PairSample((fabric.label(pairs[i].src.node), pairs[i].src.port),
                       (fabric.label(pairs[i].dst.node), pairs[i].dst.port), pairs[i].status,
                       pairs[i].busbw_gbps, pairs[i].expected_gbps,
                       None if pairs[i].ratio is None else round(pairs[i].ratio, 4))
            for i in sorted(covers)[:20]
        )
        alts = tuple(((k.a.node, k.a.port), (k.b.node, k.b.port)) for k in alternatives[:8])
        blame[key].add(fault, severity, confidence, SlowPairsEvidence(
            tests=n, slow=len(covers), worst_ratio=round(worst, 4), median_ratio=round(median, 4),
            equivalent_suspects=twins, alternatives=alts, slow_pairs=slow_pairs))
        if alternatives:
            blame[key].add(fault, severity, confidence, _candidates(fabric, key, alternatives[:8], pairs, covers))
    return [pairs[i] for i in left]


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


def _masked(fabric: Fabric, pair: PairResult, path: tuple[LinkKey, ...], slowed: dict[LinkKey, float],
            slow_ratio: float) -> bool:
    """Whether a link trained low held the test well below what its path's other cables carry."""
    if not slowed or not pair.expected_gbps or not any(k in slowed for k in path):
        return False
    others = [fabric.links[k].capacity_gbps for k in path if k not in slowed]
    return bool(others) and pair.expected_gbps < slow_ratio * min(others)


def _cover(remaining: set[int], suspects: dict[LinkKey, set[int]], pairs: list[PairResult],
           blame: dict[LinkKey, Blame], tests_through: dict[LinkKey, list[int]]) -> list[LinkKey]:
    """Greedy set cover: the fewest suspects that explain ``remaining`` slow tests (ties broken by
    other evidence on the cable, how many tests crossed it, how slow they were)."""
    chosen: list[LinkKey] = []
    remaining = set(remaining)
    while remaining:
        best, best_score = None, None
        for key, covers in suspects.items():
            gain = len(covers & remaining)
            if not gain:
                continue
            ratios = [pairs[i].ratio or 0.0 for i in covers]
            score = (gain, key in blame, len(tests_through[key]), -sum(ratios) / len(ratios), str(key))
            if best_score is None or score > best_score:
                best, best_score = key, score
        if best is None:
            break  # slow pairs no single suspect explains (noise, or a fault off the tested paths)
        chosen.append(best)
        remaining -= suspects[best]
    return chosen


def _slower_than_explained(unexplained: set[int], chosen: list[LinkKey], suspects: dict[LinkKey, set[int]],
                           pairs: list[PairResult], paths: list[tuple[LinkKey, ...]], slow_ratio: float) -> set[int]:
    """Slow tests well below what the chosen suspects on their path explain. A slow cable caps every
    test through it at one rate, so rates are compared in Gb/s: tests judged against different
    expectations (one also crossed a link trained low) still measure the same cap."""
    own: dict[LinkKey, float] = {}
    for key in chosen:
        rates = [pairs[i].busbw_gbps for i in suspects[key] if pairs[i].ratio is not None]
        if rates:
            own[key] = max(r for r in rates if r is not None)
    out = set()
    for i in unexplained:
        rate = pairs[i].busbw_gbps if pairs[i].ratio is not None else None
        named = [own[k] for k in paths[i] if k in own]
        if rate is not None and named and rate < slow_ratio * min(named):
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
