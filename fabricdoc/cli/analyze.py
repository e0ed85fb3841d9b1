"""``fabricdoc analyze``: build a report from saved records, without touching the fabric."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from fabricdoc.cli import args as a

IBDIAGNET_HELP = ("an ibdiagnet output directory (ibdiagnet2.db_csv or .lst, and .pm, .fdbs, .cables when there): "
                  "the fabric, link states, counters and routes of that run; replaces --fabric")
PERFQUERY_HELP = ("saved `perfquery` output (plain, -x, -l, -E; one or more runs per file): each file is one counter "
                  "sample, taken at the file's modification time; LIDs are placed on the fabric given by --fabric "
                  "(a LID it does not have is listed as not seen). Two dumps of the same ports give deltas and "
                  "rates; one dump gives totals since the counters were last cleared, and no verdict on them")
HOST_MAP_HELP = ("HCA -> host map for HCAs whose node description names no host (CSV or YAML: guid, lid or "
                 "description; host; rail)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="build a report from saved records (probe output, nccl-tests logs, NCCL debug logs, an ibdiagnet run)",
        description="Localize faults from records gathered earlier: `fabricdoc probe` JSON from every node "
        "(counters, link states, flaps, GPU health), bandwidth results, a directory of nccl-tests logs "
        "(each test's hosts are read from the log itself), or the output directory of an ibdiagnet run "
        "(its fabric, link states, counters over ibdiagnet's own pause, and routes).",
        epilog=a.EXIT_CODES + "\n" + a.FINDING_IDS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_fabric(p)
    p.add_argument("--topology", dest="fabric", metavar="SPEC", help=a.HIDDEN)
    p.add_argument("--ibdiagnet", metavar="DIR", help=IBDIAGNET_HELP)
    p.add_argument("--host-map", metavar="FILE", help=HOST_MAP_HELP)
    p.add_argument("--records", nargs="+", default=[], metavar="FILE", help="fabricdoc-records JSON files (from `fabricdoc probe`)")
    p.add_argument("--perfquery", nargs="+", default=[], metavar="FILE", help=PERFQUERY_HELP)
    p.add_argument("--nccl-logs", metavar="DIR", help="directory of nccl-tests logs (sendrecv_perf, all_reduce_perf)")
    p.add_argument("--nccl-debug", nargs="+", default=[], metavar="FILE",
                   help="a job's NCCL_DEBUG=INFO (or WARN) output, one or more files, any line prefix: its failed "
                   "connections (data or acknowledgement path) localize the cable, its working ones clear theirs; "
                   "NIC events and other error lines are findings on that NIC or host (never pass); the transports "
                   "it used (NET/Socket, no GDRDMA) are host_config findings")
    p.add_argument("--nccl-ras", nargs="+", default=[], metavar="FILE",
                   help="saved `ncclras` output (text, `-f json`, or monitor mode `-m`) of a running job: the hosts "
                   "of missing, dead, failed or out-of-step ranks are placed on the fabric (by name, the fabric's "
                   "addresses, or the addresses in --nccl-debug) and joined with what else was found there")
    p.add_argument("--nccl-inspector", nargs="+", default=[], metavar="PATH",
                   help="the NCCL Inspector plugin's output (its dump directory or files): each communicator that "
                   "spans hosts is judged against its peers of the same shape, and group tomography names the "
                   "cable or switch the slow ones share")
    p.add_argument("--routes", metavar="FILE",
                   help="saved forwarding tables so paths follow the LFTs: ibroute of every switch (concatenated), "
                   "dump_fts, or ibdiagnet2.fdbs")
    a.add_judging(p)
    a.add_drain_policy(p)
    a.add_history(p)
    a.add_output(p)
    a.add_json(p)
    a.add_quiet(p)
    a.add_no_topology(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.analysis.localize import Options
    from fabricdoc.analysis.rules import load_rules
    from fabricdoc.cli.common import emit_report
    from fabricdoc.errors import ConfigError
    from fabricdoc.model.records import Observations
    from fabricdoc.report.coverage import Planned, cabled_ports, host_ports
    from fabricdoc.sources.records import load_records
    from fabricdoc.sweep import analyze

    host_map = _host_map(args)
    fabric, parts = _fabric(args, host_map)
    if args.routes:
        from fabricdoc.sources.infiniband import apply_routes_file

        parts.append(Observations(probes=apply_routes_file(fabric, args.routes)))
    hosts: set[str] | None = None
    ports = set()
    if args.ibdiagnet:
        ports |= cabled_ports(fabric)  # ibdiagnet reads every port: each should have two samples
    if args.records:
        parts.append(load_records(args.records))
        # Records come from the hosts' probes: every host of the fabric should have sent some.
        hosts = {n.id for n in fabric.hosts()}
        ports |= host_ports(fabric)
    if args.perfquery:
        from fabricdoc.model.records import PortRef
        from fabricdoc.sources.perfquery import read_perfquery

        dumped = read_perfquery(args.perfquery, fabric)
        parts.append(dumped)
        # Every port a dump placed on the fabric should have two samples (a delta).
        ports |= {PortRef(c.node, c.port) for c in dumped.after}
    if args.nccl_logs:
        from fabricdoc.sources.nccl_logs import observations_from_nccl_logs

        parts.append(observations_from_nccl_logs(fabric, args.nccl_logs))
    if args.nccl_debug:
        from fabricdoc.analysis.runtime import observations_from_nccl_debug
        from fabricdoc.sources.nccl_debug import read_nccl_debug

        parts.append(observations_from_nccl_debug(fabric, [read_nccl_debug(f) for f in args.nccl_debug]))
    if args.nccl_ras:
        parts.append(_ras(args.nccl_ras))
    if args.nccl_inspector:
        from fabricdoc.analysis.inspector import observations_from_inspector
        from fabricdoc.sources.nccl_inspector import read_inspector

        parts.append(observations_from_inspector(fabric, read_inspector(args.nccl_inspector)))
    if not (args.records or args.perfquery or args.nccl_logs or args.ibdiagnet or args.nccl_debug or args.nccl_ras
            or args.nccl_inspector):
        raise ConfigError("nothing to analyze: give --records, --perfquery, --nccl-logs, --nccl-debug, --nccl-ras, "
                          "--nccl-inspector and/or --ibdiagnet")
    options = Options(slow_ratio=args.slow_ratio)
    if args.rules:
        options.rules = load_rules(args.rules)
    planned = Planned(hosts=hosts, ports=ports or None)
    report = analyze(fabric, Observations.merged(parts), options, include_topology=not args.no_topology,
                     planned=planned,
                     drain_policy=a.drain_policy_of(args), history=args.history)
    return emit_report(report, args)


def _ras(files: list[str]) -> Any:
    """What NCCL RAS said about ranks, and a probe record per report (warning: lines it did not understand)."""
    from fabricdoc.model.records import Observations, ProbeRun
    from fabricdoc.sources.nccl_ras import read_ncclras

    obs = Observations()
    for f in files:
        rep = read_ncclras(f)
        obs.ranks += rep.signals
        notes = list(rep.notes)
        if rep.timeouts:
            notes.append(f"NCCL RAS hit {rep.timeouts} communication timeouts while gathering: some data may be missing")
        obs.probes.append(ProbeRun("nccl-ras", f, "warning" if notes else "ok", 0.0,
                                   "; ".join(notes)[:500] or None))
    return obs


def _host_map(args: argparse.Namespace) -> Any:
    if not args.host_map:
        return None
    from fabricdoc.fabric.hostmap import load_host_map

    return load_host_map(args.host_map)


def _fabric(args: argparse.Namespace, host_map: Any) -> tuple[Any, list[Any]]:
    """The fabric to analyze on, and what reading it observed (an ibdiagnet run's states and
    counters, the tools' warnings in a saved ibnetdiscover output)."""
    from fabricdoc.errors import ConfigError
    from fabricdoc.model.records import Observations

    if args.ibdiagnet:
        if args.fabric:
            raise ConfigError("give --fabric or --ibdiagnet, not both: the ibdiagnet run describes its fabric")
        from fabricdoc.sources.ibdiagnet import read_ibdiagnet_dir

        run = read_ibdiagnet_dir(args.ibdiagnet, host_map)
        return run.fabric, [run.observations]
    if not args.fabric:
        raise ConfigError("analyze needs --fabric SPEC (the fabric the records come from) or --ibdiagnet DIR")
    path = Path(args.fabric.removeprefix("sim:"))
    if path.is_file() and path.suffix.lower() not in (".yaml", ".yml"):
        from fabricdoc.sources.infiniband import read_ibnetdiscover_file

        saved = read_ibnetdiscover_file(path, host_map)
        return saved.fabric, [Observations(probes=saved.probes)]
    from fabricdoc.sources.fabrics import load_fabric

    fabric, _ = load_fabric(args.fabric)
    if host_map is not None:
        from fabricdoc.fabric.identity import identify

        return fabric, [Observations(probes=identify(fabric, host_map).probe_runs(args.fabric))]
    return fabric, []
