"""``fabricdoc drain``: the scontrol commands that drain a report's faulty hosts; run only with --apply."""

from __future__ import annotations

import argparse

from fabricdoc import slurm
from fabricdoc.commands._slurmargs import NAME_HELP, add_slurm_args, emit, name_map
from fabricdoc.report import Report

EPILOG = (
    NAME_HELP
    + """
exit codes:
  0  nothing to drain
  1  hosts to drain (printed, or drained with --apply)
  2  could not run: unreadable report, a refused node name, or an scontrol failure
"""
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "drain",
        help="print (or --apply) scontrol commands that drain the report's faulty hosts",
        description="Print the 'scontrol update nodename=N state=drain reason=\"fabricdoc: ...\"' "
        "command for every host in the report's drain list. Nothing is changed without --apply.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("report", help="fabricdoc JSON report (from 'fabricdoc sweep' or 'analyze')")
    add_slurm_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    report = Report.load(args.report)
    actions, skipped = slurm.plan_drain(report, name_map(args), scontrol=args.scontrol)
    results = slurm.apply(actions, timeout_s=args.timeout, slurm_conf=args.slurm_conf) if args.apply else None
    emit("drain", actions, skipped, results, args.json)
    if any(s.refused for s in skipped) or (results and not all(r.ok for r in results)):
        return 2
    return 1 if actions else 0
