"""Speed of the AllReduce what-if: ms per ``ImpactModel.what_if`` call after the one-time setup.

Usage: python benchmarks/bench_impact.py [HOSTS ...]   (default: 1024 8192)
Rail-optimized fabrics with 8 rails, 32 hosts per scalable unit, 8 spines; one
leaf-spine link at half capacity; each what-if drains one or two hosts.
Prints setup seconds and milliseconds per call (ring, and ring+tree), and the seconds
the report's whole impact section takes (busbw both algorithms, best drains, job cost).
"""

from __future__ import annotations

import random
import sys
import time

from fabricdoc.fabric.generators import rail_optimized
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.impact.section import impact_section
from fabricdoc.model.evidence import PairSample, SlowPairsEvidence
from fabricdoc.model.findings import Finding


def bench(hosts: int, calls: int = 20) -> None:
    t0 = time.perf_counter()
    fabric = rail_optimized(units=hosts // 32, hosts_per_unit=32, rails=8, spines=8)
    t1 = time.perf_counter()
    finding = Finding("F001", "link", "half", "degraded_bandwidth", "error", 0.9,
                      [SlowPairsEvidence(tests=4, slow=4, worst_ratio=0.5, median_ratio=0.5, slow_pairs=(PairSample(("gpu0001", 1), ("gpu0005", 1), "ok", 200.0, 400.0, 0.5),))],
                      [("leaf-su01-r1", 33), ("spine01", 1)], ["leaf-su01-r1", "spine01"])
    model = ImpactModel(fabric, [finding])
    t2 = time.perf_counter()
    rng = random.Random(1)
    names = model.job_hosts
    drains = [rng.sample(names, rng.choice((1, 2))) for _ in range(calls)]
    model.what_if(drains[0])  # first call warms the nominal figure
    t3 = time.perf_counter()
    for d in drains:
        model.what_if(d)
    ring_ms = (time.perf_counter() - t3) / calls * 1000
    tree = "skipped"
    if hosts <= 8192:
        t4 = time.perf_counter()
        for d in drains[:5]:
            model.what_if(d, ("ring", "tree"))
        tree = f"{(time.perf_counter() - t4) / 5 * 1000:.0f} ms/call"
    t5 = time.perf_counter()
    section = impact_section(fabric, [finding], [])
    took = time.perf_counter() - t5
    print(
        f"{hosts:>6} hosts x 8 rails: generate {t1 - t0:.2f} s, setup {t2 - t1:.2f} s, "
        f"what_if ring {ring_ms:.1f} ms/call, ring+tree {tree} "
        f"(busbw now {model.busbw():.0f} of {model.busbw(state='nominal'):.0f} Gb/s); "
        f"impact section {took:.1f} s (tree {'skipped' if 'skipped' in section['by_algorithm']['tree'] else 'included'})"
    )


if __name__ == "__main__":
    sizes = [int(a) for a in sys.argv[1:]] or [1024, 8192]
    for n in sizes:
        bench(n)
