"""``fabricdoc resume``: resume nodes fabricdoc drained once a later report shows them clear."""

from __future__ import annotations

import argparse

from fabricdoc.cli import args as a
from fabricdoc.cli.slurmargs import NAME_HELP, add_slurm_args
from fabricdoc.model.verdict import EXIT_OK

EPILOG = NAME_HELP + """
which nodes:
  Without --since, the candidates are the nodes Slurm lists as drained with a
  reason starting 'fd:' (or 'fabricdoc:', as earlier versions wrote), read with
  sinfo. With --since EARLIER.json, the candidates are that report's drain list.
  Either way a node is resumed only when, now, its reason is still fabricdoc's
  own (an admin's drain, even of a node fabricdoc once drained, is never
  touched), the later report tested it and no longer drains it, and the later
  report saw everything it planned (an incomplete sweep resumes nothing).
  --comment-only clears fabricdoc's comments instead (see drain --comment-only).

exit codes:
  0  commands printed or applied (or nothing to resume)
  2  could not run: unreadable or stale report, sinfo failed, refused name, scontrol failure
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
    a.add_comment_only(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import name_map, why_exit_2
    from fabricdoc.cli.slurmargs import emit, mode_of, slurm_now
    from fabricdoc.errors import ConfigError
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler.freshness import staleness
    from fabricdoc.scheduler.protocol import back_end

    later = Report.load(a.report_path(args))
    stale = staleness(later.generated_at, a.max_report_age(args))
    if stale:
        raise ConfigError(f"{a.report_path(args)}: {stale}: nothing resumed")
    names = name_map(args)
    mode = mode_of(args, later)
    tools, now = slurm_now(args, "resume", comments=mode == "comment", required=True)
    scheduler = back_end("slurm", names=names, scontrol=args.scontrol, mode=mode)
    candidates = None  # the nodes whose reason (or comment) is fabricdoc's now
    if args.since:
        earlier = Report.load(args.since)
        candidates = [scheduler.node_name(d.node) for d in earlier.drain]
    actions, skipped = scheduler.plan_undrain(later, now, candidates)
    results = scheduler.apply(actions, tools.run) if args.apply else None
    emit("resume", actions, skipped, results, args.json)
    if any(s.refused for s in skipped) or (results and not all(r.ok for r in results)):
        return why_exit_2("resume", sum(1 for s in skipped if s.refused), sum(1 for r in results or [] if not r.ok))
    return EXIT_OK
