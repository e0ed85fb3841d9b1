"""``fabricdoc history``: add a report to the local sweep history, and read rates, flaps and failure rates."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from fabricdoc.cli import args as a
from fabricdoc.errors import ConfigError
from fabricdoc.model.severity import SEVERITIES
from fabricdoc.model.verdict import EXIT_OK

EPILOG = """The history is one SQLite file (--history DB; default $FABRICDOC_HISTORY, else
~/.local/share/fabricdoc/history.sqlite). 'fabricdoc sweep --history DB' appends every
sweep with its counters and link events; 'history add' stores a saved report's
findings and drain list (a report file carries no raw counters).

views:
  rates     counter deltas and rates between consecutive samples of each port
  flaps     link flaps per port per ISO week
  failures  fault episodes per component (with the finding id every output shows),
            and per kind per component-hour
  sweeps    the stored sweeps

--part NAME (a host or switch name, a node id or a GUID), or --part NAME[PORT]
(leaf07[3]), narrows rates, flaps and failures to one node or port: failures keeps
the components that touch it (a cable, by either end).

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
    flaps = views.add_parser("flaps", help="link flaps per port per week")
    fail = views.add_parser("failures", help="failure episodes per component and per kind")
    fail.add_argument("--min-severity", default="error", choices=SEVERITIES,
                      help="count findings of this severity and worse (default error)")
    for view in (rates, flaps, fail):
        view.add_argument("--part", dest="node", metavar="NAME[PORT]",
                          help="only this host or switch (its name, fabric node id or GUID), or one port of it "
                          "as the report names ports: leaf07[3]")
        view.add_argument("--node-id", dest="node", help=a.HIDDEN)  # earlier spelling
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
            return EXIT_OK
        node, port = _part(getattr(args, "node", None))
        ids = h.node_ids(node) if node is not None else None
        if ids is not None and not ids:
            raise ConfigError(f"--part {escape(node)}: no host or switch of that name, node id or GUID in the "
                             f"store's {h.sweep_count()} sweeps")
        if args.view == "rates":
            frames = [_only(h.counter_rates(counter=args.counter), ids, port)]
        elif args.view == "flaps":
            frames = [_only(h.flaps_per_week(), ids, port)]
        elif args.view == "failures":
            frames = [_only_components(h.component_failures(args.min_severity), ids, port),
                      h.kind_failure_rates(args.min_severity)]
            if ids is not None:
                frames = frames[:1]  # the per-kind rates are over the whole fabric, not one node
        else:
            frames = [h.sweeps()]
        where = f"{escape(node)}" + (f" port {port}" if port is not None else "")
        empty_why = _empty_why(h, args.view) if ids is None else f"nothing on {where} in the store's {args.view}"
        if h.undecodable:
            print(f"fabricdoc history: {escape(str(h.path))}: {h.undecodable} text cells are not valid UTF-8; "
                  "shown with U+FFFD in place of their bad bytes", file=sys.stderr)
    if args.json:
        for df in frames:
            print(df.to_json(orient="records"))
        return EXIT_OK
    for df in frames:
        print(_for_people(df, args.view, empty_why))
    return EXIT_OK


def _part(text: str | None) -> tuple[str | None, int | None]:
    """``--part``: a node name, or ``name[port]`` as the report writes a port."""
    import re

    if text is None:
        return None, None
    m = re.fullmatch(r"(.+)\[(\d{1,3})\]", text.strip())
    if not m:
        return text, None
    if int(m.group(2)) > 255:
        raise ConfigError(f"--part {text!r}: a port number is 0 to 255")
    return m.group(1), int(m.group(2))


def _only(df: Any, ids: set[str] | None, port: int | None) -> Any:
    """The rows of one node (any of ``ids``) and port; all rows when no filter is given."""
    if ids is not None:
        df = df[df["node"].astype(str).isin(ids)]
    if port is not None:
        df = df[df["port"] == port]
    return df.reset_index(drop=True)


def _only_components(df: Any, ids: set[str] | None, port: int | None) -> Any:
    """The failure rows whose component touches one node (a cable, by either end), and that port of it."""
    if ids is None or df.empty:
        return df
    keep = [bool(ids & set(n)) and (port is None or any(f"{i}/{port}" in comp.split(":", 1)[-1].split("~")
                                                         for i in ids))
            for n, comp in zip(df["node_ids"], df["component"], strict=True)]
    return df[keep].reset_index(drop=True)


def _iso(ts: Any) -> str:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M:%S") if ts == ts else "-"


def _for_people(df: Any, view: str, empty_why: str) -> str:
    """A history table as people read it: UTC times, units in the column names, rounded figures, names
    escaped (they come from the fabric), and an empty table that says why and what to run."""
    from fabricdoc.model.text import escape

    if df.empty:
        return f"(none: {empty_why})"
    df = df.copy()
    note = ""
    if view == "sweeps":
        df = df.drop(columns=["generated_at"], errors="ignore")
        df["at"] = [_iso(t) for t in df["at"]]
        df = df.rename(columns={"at": "at (UTC)"})
    elif view == "rates":
        zero = int((df["delta"] == 0).sum())
        df = df[df["delta"] != 0]
        note = f"\n({zero} counter intervals with no change not shown; --json lists every one)" if zero else ""
        if df.empty:
            return f"(no counter changed in any interval: {zero} intervals, all 0){note}"
        df["t0"] = [_iso(t) for t in df["t0"]]
        df["t1"] = [_iso(t) for t in df["t1"]]
        df["per_second"] = df["per_second"].round(4)
        df["delta"] = df["delta"].map(lambda v: int(v) if float(v).is_integer() else round(float(v), 4))
        if df["ifname"].isna().all():
            df = df.drop(columns=["ifname"])
        df = df.rename(columns={"t0": "from (UTC)", "t1": "to (UTC)", "interval_s": "interval (s)",
                                "per_second": "per second"})
    elif view == "failures" and "episodes_per_day" in df:
        df = df.drop(columns=["node_ids"], errors="ignore")  # --json carries them
        if df["episodes_per_day"].isna().all():
            note = "\n(episodes per day need at least a day of history; the sweeps span less)"
        df["observed_days"] = df["observed_days"].round(3)
        df["episodes_per_day"] = df["episodes_per_day"].map(lambda v: "-" if v != v or v is None else round(v, 3))
    elif view == "failures" and "per_component_hour" in df:
        df["hours"] = df["hours"].round(2)
        df["per_component_hour"] = df["per_component_hour"].map(lambda v: "-" if v != v or v is None else f"{v:.3g}")
    shown = df.map(lambda v: escape(v) if isinstance(v, str) else v)
    return shown.to_string(index=False) + note


def _empty_why(h: Any, view: str) -> str:
    """Why a view of the store is empty, and what to run."""
    sweeps = h.sweep_count()
    if not sweeps:
        return f"the store {h.path} holds no sweeps: run a sweep with --history {h.path}, or history add REPORT"
    if view == "rates":
        return (f"the store's {sweeps} sweeps hold no counter samples (a report added with history add carries "
                "none): sweeps run with --history store theirs")
    if view == "flaps":
        return f"no link went down in the store's {sweeps} sweeps"
    if view == "failures":
        return f"no finding at or above the chosen severity in the store's {sweeps} sweeps"
    return f"the store holds {sweeps} sweeps"
