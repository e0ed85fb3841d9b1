"""``fabricdoc summary``: a short Markdown or plain-text summary of a report or some findings, for a ticket."""

from __future__ import annotations

import argparse
import sys

from fabricdoc.cli import args as a

HELP = "print a short Markdown or plain-text summary of a report, or of some findings, for a ticket"
EPILOG = """The exit code is the report's verdict, as for impact. The summary holds the verdict and fabric, what could not be seen, each finding with all its
evidence and what to do, the busbw figures and the recommended remedy, and the drain list. Fabric
names are escaped (control characters shown as codes; in Markdown, Markdown's own characters
backslashed), so a hostile node description cannot move a terminal's cursor or form a link.

examples:
  fabricdoc summary r.json > ticket.md          the whole report, Markdown
  fabricdoc summary r.json --finding 3fa2c1     one finding (a leading part of its id will do)
  fabricdoc summary r.json --text               plain text
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("summary", help=HELP, description=HELP[0].upper() + HELP[1:] + ".",
                       epilog=EPILOG + "\n" + a.EXIT_CODES + "\n" + a.FINDING_IDS,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    a.add_report(p)
    p.add_argument("--finding", action="append", default=[], metavar="ID",
                   help="only this finding (repeatable): its id as every output shows it, or a leading part")
    p.add_argument("--text", action="store_true", help="plain text instead of Markdown (Markdown reads as text too)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.cli.common import verdict_exit
    from fabricdoc.report.report import Report
    from fabricdoc.report.ticket import ticket

    report = Report.load(a.report_path(args))
    sys.stdout.write(ticket(report, args.finding, "text" if args.text else "markdown"))
    return verdict_exit(report, args.command)
