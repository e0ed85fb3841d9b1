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
from fabricdoc.model.evidence import PairSample, SlowPairsEvidence
from fabricdoc.model.flows import maxmin, shares_channels
from fabricdoc.model.paths import directed, is_bidirectional
from fabricdoc.model.records import LinkKey, Observations, PairResult
from fabricdoc.model.topology import Fabric

HARD_FAULTS = frozenset({"down", "width_degraded", "speed_degraded"})


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
            alone = min(fabric.links[k].capacity_gbps for k in paths[i])
            if alone > 0 and fair[j] < alone * 0.999:
                out[i] = float(fair[j] / alone)
    return out


def from_pairs(fabric: Fabric, obs: Observations, slow_ratio: float, suspect_fraction: float,
               blame: dict[LinkKey, Blame]) -> None:
    """Blame the fewest cables that explain the slow tests no hard evidence explains."""
    tests_through: dict[LinkKey, list[int]] = defaultdict(list)
    slow: set[int] = set()
    pairs = obs.pairs
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
        for key in path:
            tests_through[key].append(i)
    if not slow:
        return
    shared = _contention(fabric, pairs, paths, channels)
    if shared:
        slow = {i for i in slow if i not in shared or (pairs[i].ratio or 0.0) / shared[i] < slow_ratio}
        if not slow:
            return
    # Slow pairs already explained by hard evidence (down, width) need no suspect. A down
    # link also slows the pairs rerouted around it, so its pairs' routes before the
    # failure count too.
    hard = {k for k, b in blame.items() if HARD_FAULTS & set(b.faults)}
    down = [k for k in hard if "down" in blame[k].faults]
    before = fabric.with_all_links_up() if down and not fabric.lfts else None

    def explained(i: int) -> bool:
        if hard.intersection(paths[i]):
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
    chosen: list[LinkKey] = []
    remaining = set(unexplained)
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
