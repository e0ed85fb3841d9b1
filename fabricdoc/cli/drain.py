"""``fabricdoc drain``: the scontrol commands that drain a report's faulty hosts; run only with --apply."""

from __future__ import annotations

import argparse

from fabricdoc.cli import args as a
from fabricdoc.cli.slurmargs import NAME_HELP, add_slurm_args
from fabricdoc.model.verdict import EXIT_FAULTS, EXIT_OK

EPILOG = NAME_HELP + """
never over an admin:
  Slurm is asked first (sinfo -N, scontrol show res). A node that is already
  drained, draining or down, carries someone else's reason, or sits in an active
  reservation (maintenance included) is left alone and listed; a node Slurm does
  not know is refused. Without --apply a Slurm that cannot be asked gives the
  commands unchecked, with a warning; with --apply it is an error.

the reason:
  fd:<fault> <id> <details>: the fault and the finding's id (see finding ids)
  fit sinfo -R's default 20-character column (fd:symbol_err 3fa2c1 ...). Only
  reasons starting fd: (or fabricdoc:) are fabricdoc's: resume never touches
  others.

drain policy:
  The report's drain list already went through the sweep's drain policy (cap,
  confirmation, maintenance list; see --drain-policy of sweep/analyze): what it
  held back is listed and never drained. --comment-only (or mode = "comment" in
  the report's policy) writes the reason as the node's comment instead of
  draining it.

exit codes:
  0    nothing to drain: an empty drain list, or every host on it left alone
       (already drained, down or reserved) or held back by the drain policy
  1    hosts to drain (printed, or drained / commented with --apply)
  2    could not run, nothing drained: an unreadable or invalid report; a stale
       report (older than --max-report-age-h, or dated in the future); Slurm
       unreachable with --apply; a bad option. Or could not finish: a refused
       node name (unsafe, or unknown to Slurm) or a failed scontrol call (the
       other hosts' commands are still printed, or run with --apply)
  130  interrupted (Ctrl-C or SIGTERM)
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "drain",
        help="print (or --apply) scontrol commands that drain the report's faulty hosts",
        description="Print the 'scontrol update nodename=N state=drain reason=\"fd:<fault> <id> ...\"' "
        "command for every host in the report's drain list that Slurm has in service. Nothing is "
        "changed without --apply.",
        epilog=EPILOG + "\n" + a.FINDING_IDS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_report(p)
    add_slurm_args(p)
    a.add_comment_only(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import name_map, why_exit_2
    from fabricdoc.cli.slurmargs import emit, mode_of, slurm_now
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler.freshness import staleness
    from fabricdoc.scheduler.protocol import back_end
    from fabricdoc.scheduler.slurm import Skipped

    report = Report.load(a.report_path(args))
    mode = mode_of(args, report)
    stale = staleness(report.generated_at, a.max_report_age(args))
    if stale:
        from fabricdoc.errors import ConfigError

        raise ConfigError(f"{a.report_path(args)}: {stale}: nothing drained")
    tools, now = slurm_now(args, "drain", comments=mode == "comment")
    scheduler = back_end("slurm", names=name_map(args), scontrol=args.scontrol, mode=mode)
    actions, skipped = scheduler.plan_drain(report, now)
    skipped += [Skipped(h.node, None, f"held back by the drain policy: {h.why}") for h in report.drain_held]
    results = scheduler.apply(actions, tools.run) if args.apply else None
    emit("drain", actions, skipped, results, args.json)
    if any(s.refused for s in skipped) or (results and not all(r.ok for r in results)):
        return why_exit_2("drain", sum(1 for s in skipped if s.refused), sum(1 for r in results or [] if not r.ok))
    return EXIT_FAULTS if actions else EXIT_OK
