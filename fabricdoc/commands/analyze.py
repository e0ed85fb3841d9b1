"""`fabricdoc analyze`: build a report from saved records, without touching the fabric."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "analyze",
        help="build a report from saved records (probe output, nccl-tests logs)",
        description="Localize faults from records gathered earlier: `fabricdoc probe` JSON from every node "
        "(counters, link states, flaps, GPU health), bandwidth results, or a directory of nccl-tests logs "
        "(each test's hosts are read from the log itself).",
        epilog="exit codes: 0 healthy, 1 faults found, 2 could not run",
    )
    p.add_argument("--topology", "--fabric", dest="topology", required=True, metavar="SPEC",
                   help="the fabric: a YAML fabric file, a bundled name (demo), or saved ibnetdiscover output")
    p.add_argument("--records", nargs="+", default=[], metavar="FILE", help="fabricdoc-records JSON files (from `fabricdoc probe`)")
    p.add_argument("--nccl-logs", metavar="DIR", help="directory of nccl-tests logs (sendrecv_perf, all_reduce_perf)")
    p.add_argument("--routes", metavar="FILE", help="ibroute output of every switch (concatenated) so paths follow the LFTs")
    p.add_argument("--rules", metavar="FILE", help="TOML threshold rules overriding the defaults")
    p.add_argument("--slow-ratio", type=float, default=0.80, metavar="R",
                   help="a test below R x its expected bandwidth is slow (default 0.8)")
    p.add_argument("-o", "--output", metavar="FILE", help="write the JSON report here (atomically)")
    p.add_argument("--json", action="store_true", help="print the JSON report instead of the summary")
    p.add_argument("--no-topology", action="store_true", help="leave the topology out of the JSON report")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc import counters as ctr
    from fabricdoc.analyze import analyze, load_records, merge
    from fabricdoc.commands._common import emit_report
    from fabricdoc.errors import ConfigError
    from fabricdoc.fabricfile import load_fabric
    from fabricdoc.localize import Options

    fabric, _ = load_fabric(args.topology)
    if args.routes:
        from fabricdoc.ibfabric import apply_routes_file

        apply_routes_file(fabric, args.routes)
    parts = []
    if args.records:
        parts.append(load_records(args.records))
    if args.nccl_logs:
        from fabricdoc.nccl_source import observations_from_nccl_logs

        parts.append(observations_from_nccl_logs(fabric, args.nccl_logs))
    if not parts:
        raise ConfigError("nothing to analyze: give --records and/or --nccl-logs")
    options = Options(slow_ratio=args.slow_ratio)
    if args.rules:
        options.rules = ctr.load_rules(args.rules)
    report = analyze(fabric, merge(parts), options, include_topology=not args.no_topology)
    return emit_report(report, args)
