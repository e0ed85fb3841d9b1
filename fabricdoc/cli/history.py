"""``fabricdoc history``: add a report to the local sweep history, and read rates, flaps and failure rates."""

from __future__ import annotations

import argparse
import sys

from fabricdoc.cli import args as a
from fabricdoc.model.severity import SEVERITIES

EPILOG = """The history is one SQLite file (--history DB; default $FABRICDOC_HISTORY, else
~/.local/share/fabricdoc/history.sqlite). 'fabricdoc sweep --history DB' appends every
sweep with its counters and link events; 'history add' stores a saved report's
findings and drain list (a report file carries no raw counters).

views:
  rates     counter deltas and rates between consecutive samples of each port
  flaps     link flaps per port per ISO week
  failures  fault episodes per component, and per kind per component-hour
  sweeps    the stored sweeps

--json and --history may come before or after the view.
"""


def _common(p: argparse.ArgumentParser, *, top: bool) -> None:
    # Before the view they set the default; after it they override (SUPPRESS keeps the default).
    kw = {} if top else {"default": argparse.SUPPRESS}
    a.add_history(p, "--db", **kw)
    a.add_json(p, suppress_default=not top)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "history",
        help="store reports in the local sweep history and show rates, flaps and failure rates",
        description="Read or extend the local sweep history.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    _common(p, top=True)
    views = p.add_subparsers(dest="view", metavar="VIEW", required=True)
    add = views.add_parser("add", help="append saved reports")
    add.add_argument("reports", nargs="+", metavar="REPORT", help="fabricdoc JSON reports to store")
    rates = views.add_parser("rates", help="counter rates between samples")
    rates.add_argument("--counter", metavar="NAME", help="canonical counter name, e.g. symbol_errors")
    rates.add_argument("--node-id", metavar="ID", help="only this fabric node (its id: a GUID on InfiniBand)")
    flaps = views.add_parser("flaps", help="link flaps per port per week")
    fail = views.add_parser("failures", help="failure episodes per component and per kind")
    fail.add_argument("--min-severity", default="error", choices=SEVERITIES,
                      help="count findings of this severity and worse (default error)")
    sweeps = views.add_parser("sweeps", help="stored sweeps")
    for view in (add, rates, flaps, fail, sweeps):
        _common(view, top=False)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.model.text import escape
    from fabricdoc.report.history import History
    from fabricdoc.report.report import Report

    with History(args.history) as h:
        if args.view == "add":
            for path in args.reports:
                sid = h.append(Report.load(path))
                print(f"{escape(path)}: sweep {sid}")
            return 0
        if args.view == "rates":
            frames = [h.counter_rates(node=args.node_id, counter=args.counter)]
        elif args.view == "flaps":
            frames = [h.flaps_per_week()]
        elif args.view == "failures":
            frames = [h.component_failures(args.min_severity), h.kind_failure_rates(args.min_severity)]
        else:
            frames = [h.sweeps()]
        if h.undecodable:
            print(f"fabricdoc history: {escape(str(h.path))}: {h.undecodable} text cells are not valid UTF-8; "
                  "shown with U+FFFD in place of their bad bytes", file=sys.stderr)
    for df in frames:
        if args.json:
            print(df.to_json(orient="records"))
        else:
            # Node names and descriptions come from the fabric: control characters made visible.
            shown = df.map(lambda v: escape(v) if isinstance(v, str) else v)
            print("(none)" if df.empty else shown.to_string(index=False))
    return 0
