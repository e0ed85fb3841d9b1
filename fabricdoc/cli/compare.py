"""``fabricdoc compare OLD NEW``: what changed between two sweeps' reports, and whether it got worse."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from fabricdoc.cli import args as a
from fabricdoc.model.verdict import EXIT_FAULTS, EXIT_OK

BUSBW_LABELS = {"after_drain": "after drain"}  # as the sweep summary, impact and the TUI label them
HELP = "compare two reports: new, cleared and persisting findings, drains, busbw, tests, coverage"

EPILOG = """matching:
  Findings are matched by their key (kind:component:fault, fabric ids and ports, never labels), so the
  same fault on the same part is the same finding in both reports: "new" is in NEW only, "cleared" in
  OLD only, "persisting" in both, with its severity's move (warning -> error is worse). Verdicts rank
  pass < incomplete < degraded < fail. Reports of different fabrics, or a NEW older than OLD, are still
  compared; a note says so.

exit codes:
  0  nothing got worse: no new finding of warning or worse, no finding of higher severity, a verdict
     no worse (faults that persist unchanged, and new info findings, are listed but are not news)
  1  something got worse: a new finding of warning or worse, a finding of higher severity, or a worse
     verdict
  2  could not run: an unreadable or invalid report (one line on stderr says which and why), a bad option
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "compare",
        help=HELP,
        description="Compare two fabricdoc reports of one fabric (OLD, then NEW): findings new in NEW, "
        "cleared since OLD and persisting (with severity changes), hosts added to or removed from the "
        "drain list, the verdicts, AllReduce busbw, test counts and coverage.",
        epilog=EPILOG + "\n" + a.FINDING_IDS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("old", metavar="OLD", help="the earlier fabricdoc JSON report")
    p.add_argument("new", metavar="NEW", help="the later fabricdoc JSON report")
    a.add_json(p)
    a.add_quiet(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.report.compare import compare_reports
    from fabricdoc.report.report import Report

    comparison = compare_reports(Report.load(args.old), Report.load(args.new))
    if args.json:
        sys.stdout.write(json.dumps(comparison.to_dict(), indent=2, allow_nan=False) + "\n")
    else:
        lines = comparison_lines(comparison)
        print("\n".join(lines[:1] if args.quiet else lines))
    return EXIT_FAULTS if comparison.got_worse else EXIT_OK


def _n(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.2f}" if isinstance(x, float) else f"{x:,}"


def _signed(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:+,.2f}" if isinstance(x, float) else f"{x:+,}"


def _finding(f: Any, extra: str = "") -> str:
    from fabricdoc.model.text import escape

    return f"  {escape(f.id):<8}  {escape(f.severity):<8}  {escape(f.kind):<6}  {escape(f.fault):<18}  {escape(f.name)}{extra}"


def comparison_lines(c: Any) -> list[str]:
    """The comparison as text lines, the header first; every string from a report is escaped."""
    from dataclasses import replace

    from fabricdoc.model.text import escape

    def side(s: Any) -> str:
        return f"{escape(s.verdict)} ({escape(s.fabric)}, {escape(s.generated_at)})"

    summary = (f"{len(c.new_findings)} new ({len(c.new_faults)} warning or worse), {len(c.worse)} worse, "
               f"{len(c.cleared)} cleared, "
               f"{len(c.persisting)} persisting")
    lines = [f"compare: {side(c.old)} -> {side(c.new)}: verdict {c.verdict_change}; "
             f"{'WORSE' if c.got_worse else 'nothing worse'} ({summary})"]
    lines += [f"note: {escape(n)}" for n in c.notes]
    lines.append(f"new findings ({len(c.new_findings)})")
    lines += [_finding(f) for f in c.new_findings]
    lines.append(f"cleared ({len(c.cleared)})")
    lines += [_finding(f) for f in c.cleared]
    lines.append(f"persisting ({len(c.persisting)})")
    for p in c.persisting:
        moved = [] if p.old.severity == p.new.severity else [f"{escape(p.old.severity)} -> {escape(p.new.severity)}, "
                                                              f"{p.change}"]
        moved += [] if p.old.confidence == p.new.confidence else [f"confidence {p.old.confidence:.2f} -> "
                                                                  f"{p.new.confidence:.2f}"]
        lines.append(_finding(p.new, f"  ({'; '.join(moved)})" if moved else ""))
    lines.append(f"drain added ({len(c.drain_added)}): {', '.join(escape(h) for h in c.drain_added) or '-'}")
    lines.append(f"drain removed ({len(c.drain_removed)}): {', '.join(escape(h) for h in c.drain_removed) or '-'}")
    busbw = tuple(replace(d, name=BUSBW_LABELS.get(d.name, d.name)) for d in c.busbw_gbps)
    lines += _table("AllReduce busbw (Gb/s)", busbw, "no impact section in either report")
    lines += _table("tests", c.tests, "no test counts in either report")
    complete = " -> ".join("complete" if x else "incomplete" for x in c.complete)
    lines += _table(f"coverage ({complete})", c.coverage, "no coverage counts in either report")
    lines += [f"  not seen now: {escape(w)}" for w in c.not_seen_added]
    lines += [f"  seen again: {escape(w)}" for w in c.not_seen_cleared]
    return lines


def _table(title: str, deltas: tuple[Any, ...], empty: str) -> list[str]:
    from fabricdoc.model.text import escape

    if not deltas:
        return [f"{title}: {empty}"]
    width = max(24, len(title) + 1, *(len(d.name) + 3 for d in deltas))
    out = [f"{title:<{width}}{'old':>12}{'new':>12}{'delta':>12}"]
    out += [f"{'  ' + escape(d.name):<{width}}{_n(d.old):>12}{_n(d.new):>12}{_signed(d.delta):>12}" for d in deltas]
    return out
