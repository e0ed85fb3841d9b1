"""Group tests and adaptive isolation on the simulator: tests and rounds, localization of load-only faults.

1. Tests and rounds against hosts N and bad hosts d (a host cable at 30% of its rate, seen by any test
   through it: the "bad node" of NVIDIA's Cluster Readiness Engine), group testing alone (screen pairs
   of leaves, and every leaf alone when they leave the healthy figure in doubt; split failing groups;
   confirm against known-good hosts), next to CRE's
   published figures (N=232, d=1: 22 tests in 7 rounds; healthy: 28 tests in 3 rounds) and the
   information bound d log2(N/d).
2. Localization of load-only faults (a cable that collapses above 2 concurrent flows, a PFC pause storm
   into a host port above 2, a spine whose shared buffer collapses above twice the leaf count, which a
   pair round never reaches) through the sweep's own loop (pair rounds,
   re-test, then a full-load round and group isolation): recall (the injected part named), precision (findings naming it),
   mean confidence, over seeds; and healthy fabrics (false positives). Findings count when they name a part
   (warning or worse); the simulator runs with its default realistic noise (fabricdoc.fabric.realism).
3. Which faults pair rounds miss and group rounds find, per fault kind.
4. The same load-only faults on other fabric shapes (oversubscribed and odd leaf/spine, parallel cables,
   three-level fat-trees, rail-optimized): a collapsing cable among every switch-to-switch cable (agg-core
   too), an incast into any host port, a collapsing switch among every switch above the leaves (cores too),
   and a switch there that throttles (forwards its cable count of flows' worth of line rate at most). Also
   how many located faults were named as what happened (incast_collapse, load_collapse, switch_throttle).

5. Faults the other sections do not inject, on section 4's shapes: two collapsing switch cables at once,
   a collapsing cable beside a host cable at 0.4x (which the pair rounds name), an incast into a switch
   port (into a leaf or a spine, either end of a switch cable; a direction no route uses is not run) and a
   cable that collapses above 4 flows:
   recall per injected part, precision, and the injected parts neither named nor behind a failing group
   test the report leaves unexplained (silent).

Prints figures, asserts nothing. Usage: python benchmarks/bench_groups.py [--sizes small|full] [--seeds N]
[--shapes-only] [--mixed-only] [--group-test alltoall|all_reduce|fan] (section 4's screening collective)
"""

from __future__ import annotations

import argparse
import math
import time
from collections import defaultdict

import numpy as np

from fabricdoc.analysis.localize import Options
from fabricdoc.bandwidth.groups import screening
from fabricdoc.bandwidth.isolate import isolate
from fabricdoc.bandwidth.simulated import SimMeasure
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2, fat_tree_3, rail_optimized
from fabricdoc.model.groups import channel_load, routed_flows
from fabricdoc.model.records import LinkKey, Observations
from fabricdoc.sources.sim.simulator import Simulator
from fabricdoc.sweep import group_expectation, measure_and_retest

CRE = {(232, 1): (22, 7), (232, 0): (28, 3)}  # NVIDIA CRE (2026): (tests, rounds)
SIZES = {"small": [(4, 4, 4), (8, 4, 8)], "full": [(4, 4, 8), (8, 4, 8), (16, 8, 8), (29, 8, 8), (32, 8, 16)]}


def _fabric(leaves: int, spines: int, per_leaf: int):
    return fat_tree_2(leaves=leaves, spines=spines, hosts_per_leaf=per_leaf)


def group_testing(fabric, d: int, seed: int) -> tuple[int, int, bool]:
    """Tests and rounds of pure group testing with ``d`` bad host cables; whether they were all confirmed."""
    rng = np.random.default_rng(seed)
    hosts = fabric.host_ports()
    bad = [hosts[int(i)] for i in rng.choice(len(hosts), size=d, replace=False)]
    sim = Simulator(fabric, [Fault("slow", port=p, factor=0.3) for p in bad], seed=seed)
    measure = SimMeasure(sim)
    into: list = []
    plan = screening(sim.truth, hosts)
    done = isolate(sim.truth, measure.group_round(into), plan.rounds, expect=group_expectation, reference=plan.reference)
    confirmed = {p for g in done.failing if g.phase == "confirm" for p in g.members}
    return done.tests, done.rounds, set(bad) <= confirmed


def _uplinks(fabric) -> list[LinkKey]:
    return [k for k in fabric.links if fabric.nodes[k.a.node].kind == fabric.nodes[k.b.node].kind == "switch"]


def load_fault(kind: str, fabric, rng) -> tuple[Fault, object]:
    """One load-only (or plain slow) fault and the part it sits on (a LinkKey or a switch id)."""
    if kind == "load_collapse":
        key = _uplinks(fabric)[int(rng.integers(len(_uplinks(fabric))))]
        return Fault(kind, port=key.a, flows=2), key
    if kind == "incast_pfc":
        host = fabric.host_ports()[int(rng.integers(len(fabric.host_ports())))]
        return Fault(kind, port=host, flows=2), fabric.link_at(host).key
    if kind == "switch_collapse":
        spines = sorted(n.id for n in fabric.switches() if n.id.startswith("spine"))
        sw = spines[int(rng.integers(len(spines)))]
        # a spine that throttles at full bisection: above what a pair round puts through it (one flow per
        # cable direction, two cables per leaf)
        leaves = sum(1 for n in fabric.switches() if n.id.startswith("leaf"))
        return Fault(kind, switch=sw, flows=2 * leaves), sw
    key = _uplinks(fabric)[int(rng.integers(len(_uplinks(fabric))))]
    return Fault("slow", port=key.a, factor=0.4), key


def shape_fault(kind: str, fabric, rng) -> tuple[Fault, object]:
    """A load-only fault anywhere on any fabric shape: a collapsing switch-to-switch cable, an incast into a
    host port, or a switch above the leaves that collapses above twice its cable count of flows (more than
    a pair round, one flow per cable direction, ever puts through it) or throttles to its cable count's worth."""
    if kind in ("switch_collapse", "switch_throttle"):
        hosts_at = {fabric.peer(p).node for p in fabric.host_ports()}
        upper = sorted(n.id for n in fabric.switches() if n.id not in hosts_at)
        sw = upper[int(rng.integers(len(upper)))]
        # a throttle forwards its cable count of flows' worth of line rate: as much as a pair round puts through it
        cables = len(fabric.node_links(sw))
        return Fault(kind, switch=sw, flows=cables if kind == "switch_throttle" else 2 * cables), sw
    return load_fault(kind, fabric, rng)


# The fault a finding should name for each injected kind ("what happened").
NAMED_AS = {"load_collapse": "load_collapse", "incast_pfc": "incast_collapse", "switch_collapse": "load_collapse",
            "switch_throttle": "switch_throttle"}


SHAPES = {
    "leaf-spine 2:1, 8x8": lambda: fat_tree_2(leaves=8, spines=4, hosts_per_leaf=8),
    "leaf-spine odd, 7x4": lambda: fat_tree_2(leaves=7, spines=4, hosts_per_leaf=4),
    "parallel cables 4x2x2": lambda: fat_tree_2(leaves=4, spines=2, hosts_per_leaf=4, links_per_spine=2),
    "fat-tree 3L k=4": lambda: fat_tree_3(4),
    "fat-tree 3L k=6": lambda: fat_tree_3(6),
    "rail-opt 2x4x4": lambda: rail_optimized(units=2, hosts_per_unit=4, rails=4, spines=4),
}


def names(finding, fabric, part) -> bool:
    if isinstance(part, str):
        return finding.kind == "switch" and part in finding.node_ids
    if finding.kind == "switch" or not finding.endpoints or len(finding.node_ids) < 2:
        return False
    ends = {(finding.node_ids[0], finding.endpoints[0][1]), (finding.node_ids[1], finding.endpoints[1][1])}
    return ends == {(part.a.node, part.a.port), (part.b.node, part.b.port)}


def sweep(fabric, faults, seed: int, groups: bool, group_test: str = "alltoall"):
    sim = Simulator(fabric, faults, seed=seed)
    obs = Observations()
    found = measure_and_retest(sim.truth, obs, SimMeasure(sim), Options(), groups=groups, full_load=groups,
                               group_test=group_test)
    return found, obs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", choices=sorted(SIZES), default="full")
    ap.add_argument("--seeds", type=int, default=10)
    ap.add_argument("--shapes-only", action="store_true", help="run section 4 (other fabric shapes) alone")
    ap.add_argument("--mixed-only", action="store_true", help="run section 5 (two faults at once, beside a "
                    "slow host cable, incast into a switch, collapse above 4 flows) alone")
    ap.add_argument("--group-test", choices=("alltoall", "all_reduce", "fan"), default="alltoall",
                    help="section 4's screening collective, as sweep --group-test (default alltoall)")
    args = ap.parse_args()
    sizes = SIZES[args.sizes]
    if args.shapes_only:
        shapes(min(args.seeds, 5), args.group_test)
        return
    if args.mixed_only:
        mixed(args.seeds, args.group_test)  # alone, every seed asked for (in the full run at most 5, as section 4)
        return

    print("1. group testing: tests and rounds against hosts N and bad hosts d "
          f"(mean over {args.seeds} seeds; bound d log2(N/d); CRE's published figures where it has them)")
    print(f"{'N':>5} {'d':>3} {'tests':>7} {'rounds':>7} {'bound':>6} {'tests/bound':>11} {'all found':>9} "
          f"{'CRE tests':>9} {'CRE rounds':>10}")
    for leaves, spines, per in sizes:
        fabric = _fabric(leaves, spines, per)
        n = len(fabric.host_ports())
        for d in (0, 1, 2, 4):
            if d >= n // 4:
                continue
            runs = [group_testing(fabric, d, seed) for seed in range(args.seeds)]
            tests = float(np.mean([r[0] for r in runs]))
            rounds = float(np.mean([r[1] for r in runs]))
            bound = d * math.log2(n / d) if d else 0.0
            ratio = f"{tests / bound:11.2f}" if bound else f"{'-':>11}"
            cre = CRE.get((n, d))
            print(f"{n:>5} {d:>3} {tests:7.1f} {rounds:7.1f} {bound:6.1f} {ratio} "
                  f"{sum(r[2] for r in runs):>4}/{len(runs):<4} {cre[0] if cre else '-':>9} {cre[1] if cre else '-':>10}")

    print("\n2. load-only faults through the sweep's loop (pairs, re-test, full-load round, group isolation): localization")
    print(f"{'fabric':>22} {'fault':>16} {'recall':>7} {'precision':>9} {'confidence':>10} {'tests':>6} "
          f"{'rounds':>6} {'s/sweep':>8}")
    seen: dict[str, list[tuple[bool, bool]]] = defaultdict(list)
    for leaves, spines, per in sizes[:3]:
        fabric = _fabric(leaves, spines, per)
        label = f"{leaves} leaves x {per} hosts"
        for kind in ("load_collapse", "incast_pfc", "switch_collapse", "healthy"):
            hit = named = total = 0
            confs, tests, rounds, secs = [], [], [], []
            for seed in range(args.seeds):
                rng = np.random.default_rng(1000 + seed)
                faults, part = ([], None) if kind == "healthy" else (lambda fp: ([fp[0]], fp[1]))(
                    load_fault(kind, fabric, rng))
                t0 = time.perf_counter()
                found, obs = sweep(fabric, faults, seed, groups=True)
                secs.append(time.perf_counter() - t0)
                blaming = [f for f in found.findings if f.severity != "info"]  # info: noise, suspects to re-test
                total += len(blaming)
                tests.append(found.planned_tests + len(obs.groups))  # pair tests and group tests
                rounds.append(found.rounds)
                if part is not None:
                    good = [f for f in blaming if names(f, fabric, part)]
                    hit += bool(good)
                    named += len(good)
                    confs += [f.confidence for f in good]
                    pairs_only, _ = sweep(fabric, faults, seed, groups=False)
                    seen[kind].append((any(names(f, fabric, part) for f in pairs_only.findings
                                           if f.severity != "info"), bool(good)))
            recall = f"{hit / args.seeds:7.2f}" if kind != "healthy" else f"{'-':>7}"
            precision = f"{named / total:9.2f}" if total else f"{'-':>9}"
            conf = f"{np.mean(confs):10.2f}" if confs else f"{'-':>10}"
            extra = f"  false positives: {total}" if kind == "healthy" else ""
            print(f"{label:>22} {kind:>16} {recall} {precision} {conf} {np.mean(tests):6.1f} {np.mean(rounds):6.1f} "
                  f"{np.mean(secs):8.2f}{extra}")

    print("\n3. which faults pair rounds miss and group rounds find (share of seeds the injected part was named)")
    rng = np.random.default_rng(7)
    fabric = _fabric(*sizes[0])
    for seed in range(args.seeds):
        fault, part = load_fault("slow", fabric, rng)
        pairs_only, _ = sweep(fabric, [fault], seed, groups=False)
        found, _ = sweep(fabric, [fault], seed, groups=True)
        seen["slow (not load-only)"].append((any(names(f, fabric, part) for f in pairs_only.findings),
                                             any(names(f, fabric, part) for f in found.findings)))
    print(f"{'fault':>22} {'pair rounds':>12} {'with groups':>12}")
    for kind, rows in seen.items():
        print(f"{kind:>22} {np.mean([r[0] for r in rows]):12.2f} {np.mean([r[1] for r in rows]):12.2f}")

    shapes(min(args.seeds, 5), args.group_test)
    mixed(min(args.seeds, 5), args.group_test)


def mixed_faults(kind: str, fabric, rng) -> tuple[list[Fault], list[LinkKey]]:
    """Section 5's faults of ``kind`` and the cables they sit on."""
    ups, hosts = _uplinks(fabric), fabric.host_ports()
    key = ups[int(rng.integers(len(ups)))]
    if kind == "two_collapse":
        other = ups[int(rng.choice([i for i in range(len(ups)) if ups[i] != key]))]
        return [Fault("load_collapse", port=key.a, flows=2), Fault("load_collapse", port=other.a, flows=2)], [key, other]
    if kind == "collapse+slow":
        host = hosts[int(rng.integers(len(hosts)))]
        return ([Fault("load_collapse", port=key.a, flows=2), Fault("slow", port=host, factor=0.4)],
                [key, fabric.link_at(host).key])
    if kind == "incast_switch":
        into = key.a if rng.random() < 0.5 else key.b
        if (key, 0 if into == key.b else 1) not in channel_load(routed_flows(fabric, tuple(hosts), "alltoall") or []):
            return [], []  # a direction no route uses (a parallel cable's): no job's traffic could show it
        return [Fault("incast_pfc", port=into, flows=2)], [key]
    return [Fault("load_collapse", port=key.a, flows=4)], [key]  # collapse_above_4


def mixed(seeds: int, group_test: str = "alltoall") -> None:
    """Section 5: the faults of :func:`mixed_faults` on section 4's shapes."""
    print(f"\n5. two faults at once, beside a slow host cable, incast into a switch port, collapse above 4 "
          f"flows ({seeds} seeds each; groups ({group_test}) and the full-load round): recall per injected part, "
          "precision; silent: parts neither named nor behind a failing group test left unexplained")
    print(f"{'fabric':>22} {'faults':>17} {'recall':>7} {'precision':>9} {'fail':>5} {'silent':>6} {'tests':>6} "
          f"{'rounds':>6} {'capped':>6}")
    totals = defaultdict(lambda: [0, 0, 0, 0, 0])  # parts named, parts, findings naming one, findings, silent
    for label, make in SHAPES.items():
        fabric = make()
        for kind in ("two_collapse", "collapse+slow", "incast_switch", "collapse_above_4"):
            hit = parts = named = total = fails = silent = capped = unused = 0
            tests, rounds = [], []
            for seed in range(seeds):
                faults, keys = mixed_faults(kind, fabric, np.random.default_rng(3000 + seed))
                if not faults:
                    unused += 1
                    continue
                found, obs = sweep(fabric, faults, seed, groups=True, group_test=group_test)
                blaming = [f for f in found.findings if f.severity != "info"]
                total += len(blaming)
                named += sum(1 for f in blaming if any(names(f, fabric, k) for k in keys))
                tests.append(found.planned_tests + len(obs.groups))
                rounds.append(found.rounds)
                capped += bool(found.isolation_left)
                for k in keys:
                    good = [f for f in blaming if names(f, fabric, k)]
                    parts += 1
                    hit += bool(good)
                    fails += any(str(f.severity) in ("error", "critical") for f in good)
                    silent += not good and not found.groups_unexplained and not found.isolation_left
            for key in (kind, "all"):
                t = totals[key]
                for i, v in enumerate((hit, parts, named, total, silent)):
                    t[i] += v
            print(f"{label:>22} {kind:>17} {hit / max(parts, 1):7.2f} {(named / total if total else float('nan')):9.2f} "
                  f"{fails:>5} {silent:>6} {np.mean(tests):6.1f} {np.mean(rounds):6.1f} {capped:>6}"
                  + (f"  ({unused} seeds drew a direction no route uses: not run)" if unused else ""))
    for key, (hit, parts, named, total, silent) in totals.items():
        print(f"{'all shapes':>22} {key:>17} {hit / max(parts, 1):7.2f} {(named / total if total else float('nan')):9.2f} "
              f"{'':>5} {silent:>6}")


def shapes(seeds: int, group_test: str = "alltoall") -> None:
    """Section 4: load-only faults on fabric shapes the other sections do not use (screening groups of
    ``group_test``, the sweep's ``--group-test``)."""
    print(f"\n4. load-only faults on other fabric shapes ({seeds} seeds each; the sweep's loop with groups "
          f"({group_test}) and the full-load round): location recall and precision; false positives where "
          "nothing is injected")
    print("  (fail: located at error or worse; as: located faults named as what happened, NAMED_AS)")
    print(f"{'fabric':>22} {'fault':>16} {'recall':>7} {'precision':>9} {'fail':>5} {'as':>4} {'tests':>6} "
          f"{'rounds':>6} {'capped':>6}")
    totals = defaultdict(lambda: [0, 0, 0, 0, 0])  # hits, faults, naming, findings, named as what happened
    for label, make in SHAPES.items():
        fabric = make()
        for kind in ("load_collapse", "incast_pfc", "switch_collapse", "switch_throttle", "healthy"):
            hit = named = total = fails = capped = right = 0
            tests, rounds = [], []
            for seed in range(seeds):
                rng = np.random.default_rng(2000 + seed)
                faults, part = ([], None) if kind == "healthy" else (lambda fp: ([fp[0]], fp[1]))(
                    shape_fault(kind, fabric, rng))
                found, obs = sweep(fabric, faults, seed, groups=True, group_test=group_test)
                blaming = [f for f in found.findings if f.severity != "info"]
                total += len(blaming)
                tests.append(found.planned_tests + len(obs.groups))
                rounds.append(found.rounds)
                capped += bool(found.isolation_left)
                if part is not None:
                    good = [f for f in blaming if names(f, fabric, part)]
                    hit += bool(good)
                    named += len(good)
                    fails += any(str(f.severity) in ("error", "critical") for f in good)
                    right += any(f.fault == NAMED_AS[kind] for f in good)
            if kind != "healthy":
                for key in (kind, "all"):
                    t = totals[key]
                    t[0] += hit
                    t[1] += seeds
                    t[2] += named
                    t[3] += total
                    t[4] += right
            recall = f"{hit / seeds:7.2f}" if kind != "healthy" else f"{'-':>7}"
            precision = f"{named / total:9.2f}" if total and kind != "healthy" else f"{'-':>9}"
            extra = f"  false positives: {total}" if kind == "healthy" else ""
            print(f"{label:>22} {kind:>16} {recall} {precision} {fails if kind != 'healthy' else '-':>5} "
                  f"{right if kind != 'healthy' else '-':>4} {np.mean(tests):6.1f} {np.mean(rounds):6.1f} "
                  f"{capped:>6}{extra}")
    for key, (hits, faults, naming, findings, right) in totals.items():
        print(f"{'all shapes':>22} {key:>16} {hits / faults:7.2f} "
              f"{(naming / findings if findings else float('nan')):9.2f} {'':>5} {right / max(hits, 1):4.2f}")


if __name__ == "__main__":
    main()
