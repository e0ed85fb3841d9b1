"""``fabricdoc resume``: resume nodes fabricdoc drained once a later report shows them clear."""

from __future__ import annotations

import argparse

from fabricdoc.cli import args as a
from fabricdoc.cli.slurmargs import NAME_HELP, add_slurm_args

EPILOG = NAME_HELP + """
which nodes:
  Without --since, the candidates are the nodes Slurm lists as drained with a
  reason starting 'fd:' (or 'fabricdoc:', as earlier versions wrote; read with
  sinfo -R); an admin's own drains are
  never touched. With --since EARLIER.json, the candidates are that report's
  drain list (with --apply they are still checked against sinfo -R). A node is
  resumed only when the later report tested it and no longer drains it.

exit codes:
  0  commands printed or applied (or nothing to resume)
  2  could not run: unreadable report, sinfo failed, refused name, scontrol failure
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "resume",
        help="print (or --apply) scontrol commands that resume nodes whose findings cleared",
        description="Compare a later report with what fabricdoc drained and print the "
        "'scontrol update nodename=N state=resume' commands for nodes that are clear now.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_report(p)
    p.add_argument("--since", metavar="EARLIER", help="earlier report whose drain list gives the candidates")
    add_slurm_args(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import name_map
    from fabricdoc.cli.slurmargs import emit, slurm_tools
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler import slurm

    later = Report.load(a.report_path(args))
    names = name_map(args)
    tools = slurm_tools(args)
    current = None
    if args.since:
        earlier = Report.load(args.since)
        candidates = [names.to_slurm(d.node) for d in earlier.drain]
    else:
        current = tools.reasons()
        candidates = slurm.fabricdoc_drained(current)
    actions, skipped = slurm.plan_resume(later, candidates, names, scontrol=args.scontrol)
    results = None
    if args.apply:
        if current is None:
            current = tools.reasons()
        ours = set(slurm.fabricdoc_drained(current))
        for act in [x for x in actions if x.node not in ours]:
            actions.remove(act)
            skipped.append(slurm.Skipped(act.fabric_name, act.node, "not drained by fabricdoc in Slurm now: left alone"))
        results = slurm.apply(actions, tools.run)
    emit("resume", actions, skipped, results, args.json)
    if any(s.refused for s in skipped) or (results and not all(r.ok for r in results)):
        return 2
    return 0
