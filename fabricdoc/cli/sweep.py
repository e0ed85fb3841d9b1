"""``fabricdoc sweep``: probe the fabric, test bandwidth, localize faults, report."""

from __future__ import annotations

import argparse

from fabricdoc.cli import args as a

FABRIC_HELP = """which fabric to sweep (--fabric):
  demo            the bundled demo fabric, simulated with faults (nothing to install)
  sim:PATH        simulate a fabric file (YAML; see topologies/) with its faults
  PATH            same as sim:PATH
  ibsim:NETFILE   start ibsim + OpenSM on an ibnetdiscover-format net file and sweep it
                  with the real infiniband-diags tools
  ib              sweep the InfiniBand fabric this host is attached to (infiniband-diags)
  roce            sweep a RoCE/Ethernet fabric described by --expected FILE: `fabricdoc probe`
                  on every host (--launcher local|netns|srun|mpirun), then bandwidth rounds"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "sweep",
        help="sweep a fabric: counters, bandwidth tests, localization, verdict",
        description="Probe every node, run planned pairwise bandwidth rounds, re-test suspects, "
        "name the faulty links, switches and NICs, predict the AllReduce cost, and say which "
        "hosts to drain.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=FABRIC_HELP + "\n\n" + a.EXIT_CODES + "\n" + a.FINDING_IDS,
    )
    add_sweep_options(p)
    p.add_argument("--journal", metavar="FILE",
                   help="journal of finished bandwidth tests (JSON lines): a new sweep starts it afresh")
    p.add_argument("--resume", action="store_true",
                   help="continue the sweep in --journal: skip its finished tests (refused for another plan)")
    a.add_history(p)
    a.add_drain_policy(p)
    a.add_output(p)
    a.add_json(p)
    a.add_no_topology(p)
    a.add_progress(p)
    p.set_defaults(func=run)


def add_sweep_options(p: argparse.ArgumentParser) -> None:
    """The options that say which fabric to sweep and how (``sweep`` and ``watch`` share them)."""
    a.add_fabric(p, "demo")
    p.add_argument("--expected", metavar="PATH",
                   help="the fabric as it should be: an earlier ibnetdiscover output or an ibdiagnet2 output "
                   "directory (ib: cables missing now are reported; an ibdiagnet run's PORTS also give each link's "
                   "expected width and speed), or the RoCE fabric file naming hosts, ports and interfaces (roce)")
    p.add_argument("--topology", dest="expected", metavar="FILE", help=a.HIDDEN)
    p.add_argument("--faults", metavar="FILE", help="fault file for a simulated fabric (replaces the file's own faults)")
    p.add_argument("--seed", type=int, default=0, metavar="N", help="simulator seed (default 0): same seed, same findings")
    p.add_argument("--interval", type=float, default=10.0, metavar="S",
                   help="seconds between the two counter samples (default 10)")
    p.add_argument("--baseline", metavar="FILE", help="compare counters with a sample saved by --save-sample instead of waiting")
    p.add_argument("--save-sample", metavar="FILE", help="save this sweep's counter sample for a later --baseline (InfiniBand)")
    a.add_judging(p)
    p.add_argument("--no-retest", action="store_true", help="skip the targeted re-test round around suspects")
    a.add_job_hosts(p)
    a.add_job_cost(p)
    a.add_timeout(p, 60.0)
    p.add_argument("--hosts", metavar="HOSTLIST",
                   help="roce: only these hosts, a Slurm hostlist such as 'node[01-04],gpu7' (default: every host "
                   "of --expected)")
    p.add_argument("--launcher", choices=("local", "netns", "srun", "mpirun"), default="local",
                   help="where probes and bandwidth tests run (default local). roce: probes and tests on "
                   "each host; ib: srun or mpirun adds bandwidth rounds between the HCAs' hosts")
    p.add_argument("--no-bandwidth", action="store_true", help="probes only, no bandwidth rounds")
    p.add_argument("--test-timeout", type=float, default=120.0, metavar="S",
                   help="kill a bandwidth test after S seconds and record it as hung (default 120)")
    p.add_argument("--size", type=int, default=1 << 24, metavar="BYTES", help="bandwidth test message size (default 16 MiB)")
    p.add_argument("--pair-parallel", type=a.positive_count, default=8, metavar="N",
                   help="run at most N pair tests of a round at once (default 8). A round's pairs share no cable, "
                   "so fewer at once changes no cable's load: 1 keeps tests on hosts that share CPUs (network "
                   "namespaces or containers on one machine) from slowing each other")
    p.add_argument("--backend", choices=("gloo", "nccl"), default="gloo", help="torch.distributed backend (default gloo)")
    p.add_argument("--nccl-tests", metavar="BINARY",
                   help="run nccl-tests binaries (MPI build) instead of fabricdoc's torch test; BINARY is "
                   "sendrecv_perf / all_reduce_perf or their directory. Pairs run that binary (a directory: its "
                   "sendrecv_perf); --groups / --full-load run all_reduce_perf / alltoall_perf from the same "
                   "directory (a missing one: that group is not tested). Not with --group-test fan. Needs "
                   "--launcher mpirun")
    p.add_argument("--groups", action="store_true",
                   help="after the pairs, group tests that load the fabric (pairs of leaves; each leaf's hosts alone "
                   "where a pair cannot hold them or the pairs leave the healthy figure in doubt) "
                   "and adaptive isolation of failing groups: finds faults that only show when many flows meet")
    p.add_argument("--full-load", action="store_true",
                   help="a full-load round: every host at once (all_reduce, then alltoall up to 512 ports)")
    p.add_argument("--group-test", choices=("alltoall", "all_reduce", "fan"), default=None,
                   help="the collective of --groups screening groups (default alltoall: loads every cable; fan: "
                   "the alltoall rounds, then an incast into each leaf from hosts of every other leaf, in at most 8 "
                   "rounds); needs --groups")


def config_from_args(args: argparse.Namespace):
    """The SweepConfig these flags describe (the TUI's --sweep and ``watch`` use it too; ``watch`` has no
    --journal/--resume)."""
    from fabricdoc.model.hostlist import hosts_arg, read_host_list
    from fabricdoc.sweep import SweepConfig

    return SweepConfig(
        fabric=args.fabric, faults=args.faults, seed=args.seed, interval_s=args.interval, rules=args.rules,
        retest=not args.no_retest, baseline=args.baseline, expected=args.expected, save_sample=args.save_sample,
        include_topology=not args.no_topology,
        job_hosts=read_host_list(args.job_hosts) if args.job_hosts else None,
        hours=args.hours, checkpoint_minutes=args.checkpoint_minutes, timeout_s=args.timeout, history=args.history,
        hosts=hosts_arg(args.hosts, "--hosts") if args.hosts is not None else None, launcher=args.launcher,
        bandwidth=not args.no_bandwidth, test_timeout_s=args.test_timeout, size_bytes=args.size,
        pair_parallel=args.pair_parallel,
        backend=args.backend, journal=getattr(args, "journal", None), resume=getattr(args, "resume", False),
        slow_ratio=args.slow_ratio,
        nccl_tests=args.nccl_tests, drain_policy=a.drain_policy_of(args),
        groups=args.groups, full_load=args.full_load, group_test=_group_test(args),
    )


def _group_test(args: argparse.Namespace) -> str:
    """The screening collective; asked for without --groups it would silently do nothing: refused."""
    if args.group_test is not None and not args.groups:
        from fabricdoc.errors import ConfigError

        raise ConfigError(f"--group-test {args.group_test} chooses the --groups screening collective: add --groups")
    return args.group_test or "alltoall"


def run(args: argparse.Namespace) -> int:
    import sys

    from fabricdoc.cli.common import emit_report, progress_bar
    from fabricdoc.model.text import escape
    from fabricdoc.sweep import SweepInterrupted, run_sweep

    cfg = config_from_args(args)
    try:
        with progress_bar(not (args.no_progress or args.quiet or args.json)) as progress:
            report = run_sweep(cfg, progress)
    except SweepInterrupted as stop:
        # Whatever finished is kept: the partial report (marked incomplete) is printed and written.
        emit_report(stop.report, args)
        where = f"the partial report is in {escape(args.output)}" if args.output else "no -o: nothing was written"
        print(f"fabricdoc sweep: interrupted; finished tests were kept ({where})", file=sys.stderr)
        return 130
    return emit_report(report, args)
