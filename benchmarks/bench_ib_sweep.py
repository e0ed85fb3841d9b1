"""Time to discover and sample an ibsim fabric, split into time in the tools and in fabricdoc.

    python3 benchmarks/bench_ib_sweep.py [--leaves 32 --spines 16 --hosts-per-leaf 32]

Starts ibsim + OpenSM on a generated 2-level fat-tree (default: the largest this
machine's ibsim was seen to run, see --help), runs ``ibsource.discover`` and one
``ibsource.collect`` (two whole-fabric samples, interval 0), and localizes.
"Tools" is the wall time of the infiniband-diags processes; "fabricdoc" is
everything else (parsing, model building, analysis). Target: fabricdoc under 10%.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from fabricdoc.probes.health import HealthRecorder
from fabricdoc.probes.ib.ibsim import IbSim
from fabricdoc.probes.ib.runner import IbRunner, busy_time

from fabricdoc.analysis.localize import localize
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.fabric.netfile import write_netfile
from fabricdoc.sources import infiniband as ibsource


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--leaves", type=int, default=32)
    ap.add_argument("--spines", type=int, default=16)
    ap.add_argument("--hosts-per-leaf", type=int, default=32)
    ap.add_argument("--timeout", type=float, default=600.0, help="seconds per tool run")
    ap.add_argument("--perfquery", action="store_true",
                    help="also time one sample taken the other way: perfquery -l and -x -l on every node")
    args = ap.parse_args()
    fabric = fat_tree_2(args.leaves, args.spines, args.hosts_per_leaf)
    with tempfile.TemporaryDirectory(prefix="fabricdoc-bench-ib-") as tmp:
        net = Path(tmp) / "bench.net"
        net.write_text(write_netfile(fabric))
        t0 = time.monotonic()
        with IbSim(net, start_timeout_s=600) as sim:
            t_up = time.monotonic() - t0
            runner = IbRunner.for_sim(sim, timeout_s=args.timeout)
            phases = []
            for name, fn in (
                ("discover", lambda: ibsource.discover(runner, HealthRecorder())),
            ):
                n0, w0 = len(runner.runs), time.monotonic()
                live = fn()
                phases.append((name, time.monotonic() - w0, busy_time(runner.runs[n0:]), len(runner.runs) - n0))
            n0, w0 = len(runner.runs), time.monotonic()
            obs = ibsource.collect(runner, live, HealthRecorder(), interval_s=0.0)
            phases.append(("collect", time.monotonic() - w0, busy_time(runner.runs[n0:]), len(runner.runs) - n0))
            w0 = time.monotonic()
            findings = localize(live, obs)
            phases.append(("localize", time.monotonic() - w0, 0.0, 0))
            if args.perfquery:
                lids = sorted({n.lid for n in live.switches() if n.lid} | set(live.port_lids.values()))
                n0, w0 = len(runner.runs), time.monotonic()
                for lid in lids:
                    port = None if lid in {n.lid for n in live.switches()} else 1
                    runner.perfquery(lid, port)
                    runner.perfquery(lid, port, extended=True)
                per = (time.monotonic() - w0, busy_time(runner.runs[n0:]), len(runner.runs) - n0)
                print(f"one sample with perfquery per node: {per[0]:.3f}s wall in {per[2]} runs "
                      f"(ibqueryerrors: 2 runs per sample)")
    s = live.summary()
    print(f"fabric: fat_tree_2({args.leaves}, {args.spines}, {args.hosts_per_leaf}): "
          f"{s['hosts']} HCAs, {s['switches']} switches, {s['links']} links; ibsim+OpenSM up in {t_up:.2f}s")
    print(f"{'phase':<18}{'wall s':>9}{'tools s':>9}{'fabricdoc s':>13}{'fabricdoc %':>13}{'runs':>6}")
    tw = tt = 0.0
    for name, wall, tools, runs in phases:
        tw += wall
        tt += tools
        print(f"{name:<18}{wall:>9.3f}{tools:>9.3f}{wall - tools:>13.3f}{100 * (wall - tools) / max(wall, 1e-9):>12.1f}%{runs:>6}")
    print(f"{'total':<18}{tw:>9.3f}{tt:>9.3f}{tw - tt:>13.3f}{100 * (tw - tt) / tw:>12.1f}%")
    print(f"ports sampled: {len(obs.after)}; findings: {len(findings)}; "
          f"tool failures: {len(ibsource.tool_failures(obs))}")
    for line in ibsource.tool_failures(obs):
        print(f"  {line}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
