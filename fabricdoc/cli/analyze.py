"""``fabricdoc analyze``: build a report from saved records, without touching the fabric."""

from __future__ import annotations

import argparse

from fabricdoc.cli import args as a


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="build a report from saved records (probe output, nccl-tests logs)",
        description="Localize faults from records gathered earlier: `fabricdoc probe` JSON from every node "
        "(counters, link states, flaps, GPU health), bandwidth results, or a directory of nccl-tests logs "
        "(each test's hosts are read from the log itself).",
        epilog=a.EXIT_CODES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_fabric(p)
    p.add_argument("--topology", dest="fabric", metavar="SPEC", help=a.HIDDEN)
    p.add_argument("--records", nargs="+", default=[], metavar="FILE", help="fabricdoc-records JSON files (from `fabricdoc probe`)")
    p.add_argument("--nccl-logs", metavar="DIR", help="directory of nccl-tests logs (sendrecv_perf, all_reduce_perf)")
    p.add_argument("--routes", metavar="FILE", help="ibroute output of every switch (concatenated) so paths follow the LFTs")
    a.add_judging(p)
    a.add_output(p)
    a.add_json(p)
    a.add_no_topology(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.analysis.localize import Options
    from fabricdoc.analysis.rules import load_rules
    from fabricdoc.cli.common import emit_report
    from fabricdoc.errors import ConfigError
    from fabricdoc.model.records import Observations
    from fabricdoc.report.coverage import Planned, host_ports
    from fabricdoc.sources.fabrics import load_fabric
    from fabricdoc.sources.records import load_records
    from fabricdoc.sweep import analyze

    if not args.fabric:
        raise ConfigError("analyze needs --fabric SPEC: the fabric the records come from")
    fabric, _ = load_fabric(args.fabric)
    if args.routes:
        from fabricdoc.sources.infiniband import apply_routes_file

        apply_routes_file(fabric, args.routes)
    parts = []
    planned = Planned()
    if args.records:
        parts.append(load_records(args.records))
        # Records come from the hosts' probes: every host of the fabric should have sent some.
        planned = Planned(hosts={n.id for n in fabric.hosts()}, ports=host_ports(fabric))
    if args.nccl_logs:
        from fabricdoc.sources.nccl_logs import observations_from_nccl_logs

        parts.append(observations_from_nccl_logs(fabric, args.nccl_logs))
    if not parts:
        raise ConfigError("nothing to analyze: give --records and/or --nccl-logs")
    options = Options(slow_ratio=args.slow_ratio)
    if args.rules:
        options.rules = load_rules(args.rules)
    report = analyze(fabric, Observations.merged(parts), options, include_topology=not args.no_topology,
                     planned=planned)
    return emit_report(report, args)
