"""``fabricdoc history``: add a report to the local sweep history, and read rates, flaps and failure rates."""

from __future__ import annotations

import argparse

from fabricdoc.history import History, default_path
from fabricdoc.report import Report

EPILOG = """The history is one SQLite file (default $FABRICDOC_HISTORY, else
~/.local/share/fabricdoc/history.sqlite). 'fabricdoc sweep' appends every sweep
with its counters and link events; 'history add' stores a saved report's
findings and drain list (a report file carries no raw counters).

views:
  rates     counter deltas and rates between consecutive samples of each port
  flaps     link flaps per port per ISO week
  failures  fault episodes per component, and per kind per component-hour
  sweeps    the stored sweeps
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "history",
        help="store reports in the local sweep history and show rates, flaps and failure rates",
        description="Read or extend the local sweep history.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--db", help=f"history file (default {default_path()})")
    p.add_argument("--json", action="store_true", help="print JSON records instead of a table")
    views = p.add_subparsers(dest="view", metavar="VIEW", required=True)
    add = views.add_parser("add", help="append saved reports")
    add.add_argument("reports", nargs="+")
    rates = views.add_parser("rates", help="counter rates between samples")
    rates.add_argument("--counter", help="canonical counter name, e.g. symbol_errors")
    rates.add_argument("--node")
    views.add_parser("flaps", help="link flaps per port per week")
    fail = views.add_parser("failures", help="failure episodes per component and per kind")
    fail.add_argument("--min-severity", default="error", choices=("info", "warning", "error", "critical"))
    views.add_parser("sweeps", help="stored sweeps")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.render import safe

    with History(args.db) as h:
        if args.view == "add":
            for path in args.reports:
                sid = h.append(Report.load(path))
                print(f"{safe(path)}: sweep {sid}")
            return 0
        if args.view == "rates":
            frames = [h.counter_rates(node=args.node, counter=args.counter)]
        elif args.view == "flaps":
            frames = [h.flaps_per_week()]
        elif args.view == "failures":
            frames = [h.component_failures(args.min_severity), h.kind_failure_rates(args.min_severity)]
        else:
            frames = [h.sweeps()]
    for df in frames:
        if args.json:
            print(df.to_json(orient="records"))
        else:
            # Node names and descriptions come from the fabric: control characters made visible.
            shown = df.map(lambda v: safe(v) if isinstance(v, str) else v)
            print("(none)" if df.empty else shown.to_string(index=False))
    return 0
