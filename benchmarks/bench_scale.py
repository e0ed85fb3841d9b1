"""The whole simulated sweep at scale, stage by stage, and how its cost grows (issue 16).

Each size runs in its own child process, so the peak memory printed is that
process's maximum resident set (``getrusage`` of the child), not a leftover of
an earlier size. Stages, as ``fabricdoc sweep`` runs them on the simulator:

- build: generate the fabric
- counters: the simulator's two counter samples, port states and events
- plan: :func:`plan_sweep` on the fabric as discovery shows it
- measure: every planned round measured through the runner (max-min fair share)
- localize: :func:`localize` on a cold route cache (the plan keeps none)
- retest: the targeted re-test round and a second localization (when suspects)
- report: :meth:`Report.build`

"rounds/budget+re": the sweep plan's rounds, its round budget, and the
re-test rounds. "faults named" counts the injected faults some finding names (the same
localization result at every size: all of them). Between two sizes of one
family the growth exponent is
``log(t2 / t1) / log(hosts2 / hosts1)`` for the whole sweep (1.0 is linear).
Targets: the 8,192-host x 8-rail fabric (65,536 GPUs) under 120 s and 4 GiB,
the k=64 fat-tree (65,536 hosts) under 60 s, localization under 1 s at
1,024 x 8 and under 10 s at 8,192 x 8.

Usage: python benchmarks/bench_scale.py [--sizes small|big] [--faults N] [--seed S]
"""

from __future__ import annotations

import argparse
import json
import math
import resource
import subprocess
import sys
import time

# family, label, generator call (evaluated in the child), hosts (host count, not ports)
SIZES = {
    "small": [
        ("rail", "rail-optimized 64 x 8 rails", "rail_optimized(2, 32, 8, 32)", 64),
        ("rail", "rail-optimized 128 x 8 rails", "rail_optimized(4, 32, 8, 32)", 128),
        ("fat-tree", "3-level fat-tree k=8", "fat_tree_3(8)", 128),
        ("fat-tree", "3-level fat-tree k=12", "fat_tree_3(12)", 432),
    ],
    "big": [
        ("rail", "rail-optimized 1,024 x 8 rails", "rail_optimized(32, 32, 8, 32)", 1024),
        ("rail", "rail-optimized 4,096 x 8 rails", "rail_optimized(128, 32, 8, 32)", 4096),
        ("rail", "rail-optimized 8,192 x 8 rails", "rail_optimized(256, 32, 8, 32)", 8192),
        ("fat-tree", "3-level fat-tree k=32", "fat_tree_3(32)", 8192),
        ("fat-tree", "3-level fat-tree k=64", "fat_tree_3(64)", 65536),
    ],
}
STAGES = ("build", "counters", "plan", "measure", "localize", "retest", "report")


def one(spec: str, faults: int, seed: int) -> dict[str, object]:
    """Run one sweep in this process; the stage times, counts and peak memory."""
    import numpy as np

    from fabricdoc.analysis.localize import Options, localize
    from fabricdoc.analysis.suspects import retest_suspects
    from fabricdoc.bandwidth.plan import plan_sweep, round_budget
    from fabricdoc.bandwidth.retest import retest_plan
    from fabricdoc.bandwidth.runner import run_plan
    from fabricdoc.fabric import generators
    from fabricdoc.model.records import Observations
    from fabricdoc.report.report import Report
    from fabricdoc.sources.sim.simulator import Simulator, random_faults

    times: dict[str, float] = {}
    t = time.perf_counter()
    name, _, args = spec.partition("(")
    fabric = getattr(generators, name)(*(int(x) for x in args.rstrip(")").split(",")))
    times["build"] = time.perf_counter() - t

    t = time.perf_counter()
    sim = Simulator(fabric, random_faults(fabric, faults, np.random.default_rng(seed)), seed=seed)
    observed = sim.truth  # what discovery shows: the sweep plans and localizes on it
    before, after = sim.counters()
    obs = Observations(before=before, after=after, states=sim.port_states(), events=sim.events())
    times["counters"] = time.perf_counter() - t

    t = time.perf_counter()
    plan = plan_sweep(observed)
    times["plan"] = time.perf_counter() - t

    def measure(p, first_round):
        def one_round(specs):
            return sim.measure_round(specs[0].round, [(s.src, s.dst) for s in specs],
                                     [s.expected_gbps for s in specs], bidirectional=p.bidirectional)

        return run_plan(observed, p, round_runner=one_round, first_round=first_round, into=obs.pairs)

    t = time.perf_counter()
    measure(plan, 0)
    times["measure"] = time.perf_counter() - t

    observed.clear_route_cache()  # cold: localization routes every tested pair itself
    options = Options()
    t = time.perf_counter()
    findings = localize(observed, obs, options)
    times["localize"] = time.perf_counter() - t

    t = time.perf_counter()
    rounds = len(plan.rounds)
    suspects = retest_suspects(observed, findings)
    if suspects:
        again = retest_plan(observed, suspects)
        measure(again, rounds)
        rounds += len(again.rounds)
        findings = localize(observed, obs, options)
    times["retest"] = time.perf_counter() - t

    t = time.perf_counter()
    report = Report.build(observed, findings, obs, rounds=rounds)
    times["report"] = time.perf_counter() - t
    truth = sorted(f"{f.kind} {f.port or f.switch}" for f in sim.faults)
    names = [str(f.name) for f in findings]
    found = sum(1 for f in sim.faults if any(_names_fault(fabric, f, n) for n in names))
    return {
        "times": times,
        "rounds": rounds,
        "plan_rounds": len(plan.rounds),
        "budget": round_budget(plan.hosts),
        "tests": len(obs.pairs),
        "ports": len(obs.after),
        "findings": len(report.findings),
        "found": found,
        "injected": len(sim.faults),
        "named": sorted(str(f.name) for f in findings)[:6],
        "faults": truth,
        "maxrss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def _names_fault(fabric, fault, name: str) -> bool:
    """Whether a finding's name points at the injected fault's cable (either end) or switch."""
    if fault.port is None:
        return str(fault.switch) in name
    key = fault.link(fabric)
    return any(f"{end.node}[{end.port}]" in name or f"{end.node} port {end.port}" in name for end in (key.a, key.b))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", choices=sorted(SIZES), default="big")
    ap.add_argument("--faults", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--one", help=argparse.SUPPRESS)  # the child: one generator call
    args = ap.parse_args()
    if args.one:
        print(json.dumps(one(args.one, args.faults, args.seed)))
        return 0
    head = (f"{'fabric':34} {'hosts':>6} {'ports':>7} {'tests':>7} {'rounds/budget+re':>16} | "
            + " ".join(f"{s:>8}" for s in STAGES) + f" | {'total':>7} {'peak MiB':>8} {'exp':>5} | faults named | findings")
    print(head)
    print("-" * len(head))
    last: dict[str, tuple[int, float]] = {}
    failed = 0
    for family, label, spec, hosts in SIZES[args.sizes]:
        child = subprocess.run(
            [sys.executable, __file__, "--one", spec, "--faults", str(args.faults), "--seed", str(args.seed)],
            capture_output=True, text=True,
        )
        if child.returncode != 0:
            print(f"{label:34} FAILED: {child.stderr.strip().splitlines()[-1:]}")
            failed += 1
            continue
        got = json.loads(child.stdout.strip().splitlines()[-1])
        times = got["times"]
        total = sum(times.values())
        exp = ""
        if family in last:
            h0, t0 = last[family]
            exp = f"{math.log(total / t0) / math.log(hosts / h0):5.2f}"
        last[family] = (hosts, total)
        rounds = f"{got['plan_rounds']}/{got['budget']}+{got['rounds'] - got['plan_rounds']}"
        print(f"{label:34} {hosts:>6} {got['ports']:>7} {got['tests']:>7} {rounds:>16} | "
              + " ".join(f"{times[s]:>7.2f}s" for s in STAGES)
              + f" | {total:>6.1f}s {got['maxrss_mib']:>8.0f} {exp:>5} | {got['found']:>5}/{got['injected']:<6} | "
              f"{got['findings']} "
              f"({'; '.join(got['named'])[:70]})", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
