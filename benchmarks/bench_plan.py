"""Sweep plan size and planning time next to all-pairs round-robin, for the fabrics of issue 4.

Run: ``python benchmarks/bench_plan.py``. Targets: tests <= 5% of all-pairs,
rounds <= 2 * ceil(log2 N) + 4 for N hosts; (a) and (b) are re-checked from
scratch with ``verify_plan``. All-pairs round-robin pairs every host with every
other host once (N-1 rounds), rail by rail on multi-rail hosts, so its test
count is rails * N(N-1)/2 port tests; "hostpairs" counts a host pairing that
runs all its rails at once as one test, against N(N-1)/2.
"""

from __future__ import annotations

import argparse
import time

from fabricdoc.bandwidth.plan import plan_sweep, round_budget, verify_plan
from fabricdoc.fabric.generators import fat_tree_2, rail_optimized

CASES = [
    ("fat-tree 2L, 512 hosts (16 leaves x 32, 16 spines)", lambda: fat_tree_2(16, 16, 32)),
    ("fat-tree 2L, 512 hosts (32 leaves x 16, 16 spines)", lambda: fat_tree_2(32, 16, 16)),
    ("rail-optimized, 256 hosts x 8 rails (8 SUs, 4 spines)", lambda: rail_optimized(8, 32, 8, 4)),
    ("rail-optimized, 256 hosts x 8 rails (8 SUs, 32 spines)", lambda: rail_optimized(8, 32, 8, 32)),
    ("rail-optimized, 8,192 hosts x 8 rails (256 SUs, 32 spines)", lambda: rail_optimized(256, 32, 8, 32)),
]
SMALL = [
    ("fat-tree 2L, 16 hosts (4 leaves x 4, 2 spines)", lambda: fat_tree_2(4, 2, 4)),
    ("rail-optimized, 32 hosts x 8 rails (1 SU, 32 spines)", lambda: rail_optimized(1, 32, 8, 32)),
]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", choices=("small", "big"), default="big", help="small: a quick run (for a test)")
    cases = SMALL if ap.parse_args().sizes == "small" else CASES
    head = f"{'fabric':58} {'mode':7} {'rounds':>6} {'budget':>6} {'tests':>6} {'all-pairs':>18} {'tests%':>7} {'hostpairs':>9} {'of N(N-1)/2':>11} {'cover 0/1/2+':>14} {'ambig':>5} {'ok':>3} {'secs':>6}"
    print(head)
    print("-" * len(head))
    for name, make in cases:
        fabric = make()
        for bidirectional in (False, True):
            t0 = time.perf_counter()
            plan = plan_sweep(fabric, bidirectional=bidirectional)
            secs = time.perf_counter() - t0
            s = plan.stats()
            ok = not verify_plan(fabric, plan)
            budget = round_budget(plan.hosts)
            ap = f"{s['all_pairs_rounds']}r/{s['all_pairs_tests']}t"
            meets = ok and s["rounds"] <= budget and s["test_fraction"] <= 0.05
            print(
                f"{name:58} {'bidir' if bidirectional else 'oneway':7} {s['rounds']:>6} {budget:>6} {s['tests']:>6} "
                f"{ap:>18} {100 * s['test_fraction']:>6.2f}% {s['host_pair_tests']:>9} "
                f"{100 * s['host_pair_tests'] / s['all_pairs_host_tests']:>10.2f}% "
                f"{s['covered_0']:>4}/{s['covered_1']}/{s['covered_2plus']:<5} {s['ambiguous_links']:>5} "
                f"{'yes' if meets else 'NO':>3} {secs:>6.1f}"
            )


if __name__ == "__main__":
    main()
