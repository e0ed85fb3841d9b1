"""Speed of the AllReduce what-if: ms per ``ImpactModel.what_if`` call after the one-time setup.

Usage: python benchmarks/bench_impact.py [HOSTS | k=K ...]   (default: 1024 8192)
HOSTS: rail-optimized fabrics with 8 rails, 32 hosts per scalable unit, 8 spines; one
leaf-spine link at half capacity; each what-if drains one or two hosts.
k=K: the 3-level fat-tree of K-port switches (k=64: 65,536 hosts) as a sweep that found a
dead cable leaves it: one aggregation-core cable down in the fabric, a ``down`` finding on
another, so "nominal" and "now" are each routed on a fabric of their own.
Prints setup seconds, the first what-if (it pays for whatever setup left behind) and
milliseconds per call after it (ring, and ring+tree), and the seconds the report's whole
impact section takes (busbw both algorithms, best drains, job cost).
"""

from __future__ import annotations

import random
import sys
import time

from fabricdoc.fabric.generators import fat_tree_3, rail_optimized
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.impact.section import impact_section
from fabricdoc.model.evidence import PairSample, SlowPairsEvidence
from fabricdoc.model.findings import Finding


def _fat_tree(k: int) -> tuple[object, Finding]:
    """A k-ary 3-level fat-tree with one cable down and a ``down`` finding on another."""
    fabric = fat_tree_3(k)
    uplinks = sorted(key for key in fabric.links if key.a.node.startswith("agg"))
    fabric.links[uplinks[5]].state = "down"
    fabric.invalidate()
    key = uplinks[len(uplinks) // 2]
    finding = Finding("F001", "link", "dead", "down", "error", 0.9, [], [(key.a.node, key.a.port), (key.b.node, key.b.port)],
                      [key.a.node, key.b.node])
    fabric.path(*fabric.host_ports()[:2])  # the sweep has routed this fabric already
    return fabric, finding


def bench(hosts: int, calls: int = 20, fat_tree_k: int | None = None) -> None:
    t0 = time.perf_counter()
    if fat_tree_k:
        fabric, finding = _fat_tree(fat_tree_k)
        hosts = len(fabric.hosts())
    else:
        fabric = rail_optimized(units=hosts // 32, hosts_per_unit=32, rails=8, spines=8)
        finding = Finding("F001", "link", "half", "degraded_bandwidth", "error", 0.9,
                          [SlowPairsEvidence(tests=4, slow=4, worst_ratio=0.5, median_ratio=0.5, slow_pairs=(PairSample(("gpu0001", 1), ("gpu0005", 1), "ok", 200.0, 400.0, 0.5),))],
                          [("leaf-su01-r1", 33), ("spine01", 1)], ["leaf-su01-r1", "spine01"])
    t1 = time.perf_counter()
    model = ImpactModel(fabric, [finding])
    t2 = time.perf_counter()
    rng = random.Random(1)
    names = model.job_hosts
    drains = [rng.sample(names, rng.choice((1, 2))) for _ in range(calls)]
    model.what_if(drains[0])  # first call warms the nominal figure
    t3 = time.perf_counter()
    first = t3 - t2
    for d in drains:
        model.what_if(d)
    ring_ms = (time.perf_counter() - t3) / calls * 1000
    tree = "skipped"
    if hosts <= 8192 and not fat_tree_k:
        t4 = time.perf_counter()
        for d in drains[:5]:
            model.what_if(d, ("ring", "tree"))
        tree = f"{(time.perf_counter() - t4) / 5 * 1000:.0f} ms/call"
    t5 = time.perf_counter()
    section = impact_section(fabric, [finding], [])  # as the sweep runs it: its own model
    took = time.perf_counter() - t5
    shape = f"fat-tree k={fat_tree_k}, {hosts:,} hosts" if fat_tree_k else f"{hosts:>6} hosts x 8 rails"
    print(
        f"{shape}: generate {t1 - t0:.2f} s, setup {t2 - t1:.2f} s, first what_if {first:.2f} s, "
        f"what_if ring {ring_ms:.1f} ms/call, ring+tree {tree} "
        f"(busbw now {model.busbw():.0f} of {model.busbw(state='nominal'):.0f} Gb/s); "
        f"impact section {took:.1f} s (tree {'skipped' if section.by_algorithm['tree'].skipped else 'included'})"
    )


if __name__ == "__main__":
    for arg in sys.argv[1:] or ["1024", "8192"]:
        if arg.startswith("k="):
            bench(0, fat_tree_k=int(arg[2:]))
        else:
            bench(int(arg))
