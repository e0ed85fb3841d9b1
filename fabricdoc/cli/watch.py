"""``fabricdoc watch``: sweep every --every seconds into the history store and the report file that
``fabricdoc exporter`` serves, one line per sweep saying what changed."""

from __future__ import annotations

import argparse
import math
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from fabricdoc.cli import args as a
from fabricdoc.cli.sweep import FABRIC_HELP, add_sweep_options
from fabricdoc.model.verdict import EXIT_CANNOT_RUN, EXIT_INTERRUPTED

HELP = "sweep every --every seconds into the history store and the report file the exporter serves"
SHOWN_IDS = 5  # findings named per change in a sweep's line; the rest are counted

WATCH_EXIT_CODES = """exit codes:
  0  after --count N sweeps: the last sweep passed
  1  after --count N sweeps: the last sweep found faults
  2  the options are refused, or the last sweep could not run or could not see all it planned:
     one line on stderr says why (a failing sweep never stops the watch; -o keeps the last good report)
  130  stopped by Ctrl-C or SIGTERM: -o keeps the last finished report
"""


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser(
        "watch",
        help=HELP,
        description="Run the sweep `fabricdoc sweep` runs every --every seconds: each sweep is appended to "
        "--history, its report replaces -o atomically (the file `fabricdoc exporter` serves), and one line "
        "says its verdict and which finding ids are new or cleared since the sweep before.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=FABRIC_HELP + "\n\n" + WATCH_EXIT_CODES + "\n" + a.FINDING_IDS,
    )
    add_sweep_options(p)
    p.add_argument("--every", type=float, default=300.0, metavar="SECONDS",
                   help="seconds from the start of one sweep to the start of the next (default 300; more than "
                   "0); a sweep that takes longer is followed at once")
    p.add_argument("--count", type=int, default=None, metavar="N", help="stop after N sweeps (default: never)")
    a.add_history(p)
    a.add_drain_policy(p)
    a.add_output(p)
    a.add_no_topology(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from fabricdoc.cli.sweep import config_from_args
    from fabricdoc.sweep import run_sweep

    _check(args)
    cfg = config_from_args(args)
    return watch(lambda: run_sweep(cfg), args.output, args.every, args.count)


def _check(args: argparse.Namespace) -> None:
    """Refuse, in one line, options that could never make a watch."""
    from fabricdoc.errors import ConfigError

    if not (math.isfinite(args.every) and args.every > 0):
        raise ConfigError(f"--every {args.every:g}: the seconds between sweeps must be more than 0")
    if args.count is not None and args.count < 1:
        raise ConfigError(f"--count {args.count}: the number of sweeps must be 1 or more")
    if not args.output:
        raise ConfigError("-o FILE is required: the file each sweep's report replaces (what the exporter serves)")


@dataclass
class _Last:
    """What the watch remembers between sweeps."""

    report: Any = None  # the last finished sweep's report
    written: int | None = None  # the sweep whose report -o holds
    error: str | None = None  # the previous sweep's error, to say when it repeats
    repeats: int = 0
    done: int = 0  # sweeps that ended (with a report or an error)
    code: int = 2  # the exit code of the last sweep that ended
    running: bool = False  # a sweep is in progress (an interrupt now loses only that sweep)


def watch(sweep: Callable[[], Any], output: str, every: float, count: int | None,
          wait: Callable[[float], object] | None = None) -> int:
    """Run ``sweep`` every ``every`` seconds (``count`` times, or until interrupted); the exit code of the
    last sweep, or 130 when Ctrl-C or SIGTERM stopped it. ``wait`` blocks for the given seconds."""
    wait = wait or threading.Event().wait  # interruptible, unlike a busy loop
    last = _Last()
    started: float | None = None
    try:
        while count is None or last.done < count:
            if started is not None:
                wait(max(0.0, started + every - time.monotonic()))
            started = time.monotonic()
            last.running = True
            last.code = _one(sweep, output, last)
            last.running, last.done = False, last.done + 1
    except KeyboardInterrupt:
        return _stopped(output, last)
    return last.code


def _one(sweep: Callable[[], Any], output: str, last: _Last) -> int:
    """One sweep: its line, its report written to ``output``; a FabricdocError is one stderr line."""
    from fabricdoc.cli.common import verdict_exit
    from fabricdoc.errors import FabricdocError
    from fabricdoc.model.text import escape, plural
    from fabricdoc.model.times import now_iso

    n = last.done + 1
    at = now_iso()
    try:
        report = sweep()
    except FabricdocError as exc:
        message = str(exc)
        last.repeats = last.repeats + 1 if message == last.error else 1
        last.error = message
        again = f" (the same error {last.repeats} sweeps in a row)" if last.repeats > 1 else ""
        print(f"fabricdoc watch: {at} sweep {n}: error: {escape(message)}{again}; {_kept(output, last)}",
              file=sys.stderr, flush=True)
        return EXIT_CANNOT_RUN
    last.error, last.repeats = None, 0
    print(f"{at} sweep {n}: {report.verdict.upper()}, {plural(len(report.findings), 'finding')}; "
          f"{_changes(last.report, report)}", flush=True)
    last.report = report
    code = 0
    try:
        report.save(output)
        last.written = n
    except FabricdocError as exc:
        print(f"fabricdoc watch: sweep {n}: error: {escape(str(exc))}; {_kept(output, last)}", file=sys.stderr,
              flush=True)
        code = 2
    for error in report.errors:  # a history store that could not be written: the report is still good
        print(f"fabricdoc watch: sweep {n}: error: {escape(error)}", file=sys.stderr, flush=True)
        code = 2
    return code or verdict_exit(report, "watch")


def _changes(before: Any, now: Any) -> str:
    """New and cleared finding ids since the sweep before (as ``fabricdoc compare`` matches them)."""
    from fabricdoc.report.compare import compare_reports

    if before is None:
        return "first sweep" + (f": {_ids(now.findings)}" if now.findings else "")
    c = compare_reports(before, now)
    parts = [f"{what} {_ids(found)}" for what, found in (("new", c.new_findings), ("cleared", c.cleared)) if found]
    return "; ".join(parts) or "no change"


def _ids(findings: Sequence[Any]) -> str:
    from fabricdoc.model.text import escape

    shown = ", ".join(escape(f.label) for f in findings[:SHOWN_IDS])
    more = len(findings) - SHOWN_IDS
    return shown + (f" and {more} more" if more > 0 else "")


def _kept(output: str, last: _Last) -> str:
    from fabricdoc.model.text import escape

    if last.written is None:
        return f"nothing written to {escape(output)} yet"
    return f"{escape(output)} keeps sweep {last.written}'s report"


def _stopped(output: str, last: _Last) -> int:
    """Ctrl-C or SIGTERM: end any test still running, say so in one line, keep the last finished report."""
    from fabricdoc.model.text import plural
    from fabricdoc.sources.processes import stop_all

    stop_all()
    during = f" (sweep {last.done + 1}, in progress, not written)" if last.running else ""
    print(f"fabricdoc watch: stopped after {plural(last.done, 'sweep')}{during}; {_kept(output, last)}",
          file=sys.stderr, flush=True)
    return EXIT_INTERRUPTED
