"""``fabricdoc drain``: the scontrol commands that drain a report's faulty hosts; run only with --apply."""

from __future__ import annotations

import argparse

from fabricdoc.cli import args as a
from fabricdoc.cli.slurmargs import NAME_HELP, add_slurm_args

EPILOG = NAME_HELP + """
exit codes:
  0  nothing to drain
  1  hosts to drain (printed, or drained with --apply)
  2  could not run: unreadable report, a refused node name, or an scontrol failure
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "drain",
        help="print (or --apply) scontrol commands that drain the report's faulty hosts",
        description="Print the 'scontrol update nodename=N state=drain reason=\"fd:<fault> <tag> ...\"' "
        "command for every host in the report's drain list. Nothing is changed without --apply. "
        "The reason starts with the fault and a 6-hex tag of the finding's stable key, within "
        "sinfo -R's 20-character column (fd:symbol_err 3fa2c1 ...).",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_report(p)
    add_slurm_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import name_map
    from fabricdoc.cli.slurmargs import emit, slurm_tools
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler import slurm

    report = Report.load(a.report_path(args))
    actions, skipped = slurm.plan_drain(report, name_map(args), scontrol=args.scontrol)
    results = slurm.apply(actions, slurm_tools(args).run) if args.apply else None
    emit("drain", actions, skipped, results, args.json)
    if any(s.refused for s in skipped) or (results and not all(r.ok for r in results)):
        return 2
    return 1 if actions else 0
