"""Localization time and peak memory on large generated fabrics (issue targets: a
1,024-host rail-optimized fabric under 1 s, an 8,192-host k=32 fat-tree under 10 s).

The sweep's records are simulated first (not timed); localization then runs on a
fabric with a cold route cache, so the time includes routing every tested pair.
Peak memory (Python allocations during localization) comes from a second run
under tracemalloc, which would distort the timing.
Usage: python benchmarks/bench_localize.py [--faults N] [--seed S] [--sizes small|big]
(``big`` adds the 8,192-host x 8-rail fabric: target under 10 s.)
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc

import numpy as np

from fabricdoc.analysis.localize import localize
from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.fabric.generators import fat_tree_3, rail_optimized
from fabricdoc.sources.sim.simulator import Simulator, random_faults


def bench(name, fabric, faults, seed):
    t0 = time.perf_counter()
    plan = plan_sweep(fabric)
    t1 = time.perf_counter()
    result = Simulator(fabric, random_faults(fabric, faults, np.random.default_rng(seed)), seed=seed).run(plan.rounds)
    t2 = time.perf_counter()
    observed = result.observed
    observed.invalidate()  # cold: localization routes every pair itself
    t3 = time.perf_counter()
    findings = localize(observed, result.observations)
    t4 = time.perf_counter()
    # Peak memory in a second cold run: tracemalloc slows Python too much to time under it.
    observed.invalidate()
    tracemalloc.start()
    localize(observed, result.observations)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    named = {str(f.name) for f in findings}
    obs = result.observations
    print(
        f"{name:<34} hosts {len(fabric.hosts()):>5}  links {len(fabric.links):>6}  "
        f"tests {len(obs.pairs):>6}  ports {len(obs.after):>6} | plan {t1 - t0:6.2f}s  sim {t2 - t1:6.2f}s | "
        f"localize {t4 - t3:6.2f}s  peak {peak / 2**20:7.1f} MiB | findings {len(findings)} "
        f"(faults {len(result.faulty_links)}) {'; '.join(sorted(named))[:80]}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--faults", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--sizes", choices=("small", "default", "big"), default="default",
                    help="small: a quick run (for a test); big: also 8,192 hosts x 8 rails")
    args = ap.parse_args()
    if args.sizes == "small":
        bench("rail-optimized 64 hosts x 8 rails", rail_optimized(2, 32, 8, 32), args.faults, args.seed)
        bench("3-level fat-tree k=8", fat_tree_3(8), args.faults, args.seed)
    else:
        bench("rail-optimized 1,024 hosts x 8 rails", rail_optimized(32, 32, 8, 32), args.faults, args.seed)
        bench("3-level fat-tree k=32", fat_tree_3(32), args.faults, args.seed)
    if args.sizes == "big":
        bench("rail-optimized 8,192 hosts x 8 rails", rail_optimized(256, 32, 8, 32), args.faults, args.seed)
    print(f"max RSS {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB")


if __name__ == "__main__":
    main()
