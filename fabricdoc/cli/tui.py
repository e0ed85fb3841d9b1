"""`fabricdoc tui`: the interactive terminal view of a report, or of a live sweep.

Textual is imported only inside :func:`run`, so the CLI and the core stay
headless (importing fabricdoc never loads textual).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from fabricdoc.cli import args as a
from fabricdoc.errors import FabricdocError

DESCRIPTION = """\
Open a fabricdoc report in an interactive terminal UI: the fabric as a tree and as a
map (leaf x spine, unit x rail) coloured by health, the findings with their evidence
and what to do about each, every host and link, a host pair's routed path, and the
AllReduce impact with a what-if where you toggle hosts to drain and links to isolate.

  fabricdoc tui report.json
  fabricdoc tui --history h.sqlite report.json      # with counter sparklines from the history
  fabricdoc tui --sweep --fabric demo -o report.json

With --sweep every argument after it goes to `fabricdoc sweep` (see its --help)
and the TUI shows the sweep's progress, then its report.
"""

KEYS = """\
keys: 1-6 tabs · j/k or arrows move · enter opens · / filters · s/c sort findings ·
d toggles drain, i isolates the links with findings in the what-if · map: enter zooms,
backspace zooms out, v next grid, p routes a host pair · e exports · ? help · q quits

exit codes:
  0  the report was viewed (or the sweep ran and was viewed)
  2  the report could not be read, or the sweep could not start: one line on stderr says why
"""


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser(
        "tui",
        help="interactive terminal view of a report or a live sweep",
        description=DESCRIPTION,
        epilog=KEYS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    a.add_report(p, required=False)
    p.add_argument("--export", metavar="FILE",
                   help="where the export key (e) writes the report; default fabricdoc-report-<time>.json here")
    a.add_history(p)
    p.add_argument(
        "--sweep",
        nargs=argparse.REMAINDER,
        metavar="SWEEP-ARGS",
        help="run `fabricdoc sweep SWEEP-ARGS` live and show its progress, then its report "
        "(must come last: everything after it is the sweep's)",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    args.report = a.report_path(args)
    if args.sweep is None and not args.report:
        raise FabricdocError("give a report file, or --sweep followed by the sweep's arguments")
    if args.sweep is not None and args.report:
        raise FabricdocError("give either a report file or --sweep, not both")
    if args.report and not Path(args.report).is_file():
        raise FabricdocError(f"{args.report}: no such report file")
    sweep, output = _sweep_fn(args.sweep) if args.sweep is not None else (None, None)

    from fabricdoc.tui.app import FabricdocApp

    app = FabricdocApp(args.report, sweep=sweep, export_path=args.export or output, history_path=args.history,
                       default_history=args.history is None)
    app.run()
    if app.error:
        raise FabricdocError(app.error)
    return int(app.return_code or 0)


def _sweep_fn(sweep_argv: list[str]):
    """Parse the sweep's own arguments with its own parser; return ``(fn(progress) -> Report, output)``.

    The report is written to the sweep's ``-o`` (atomically) as soon as it exists,
    so quitting the TUI afterwards loses nothing.
    """
    from fabricdoc.cli import sweep as sweep_command
    from fabricdoc.sweep import run_sweep

    parser = argparse.ArgumentParser(prog="fabricdoc tui --sweep")
    sweep_command.register(parser.add_subparsers(dest="command"))
    try:
        sweep_args = parser.parse_args(["sweep", *sweep_argv])
    except SystemExit as exc:  # argparse already printed the usage line
        raise FabricdocError(f"bad sweep arguments: {' '.join(sweep_argv) or '(none)'}") from exc
    cfg = sweep_command.config_from_args(sweep_args)
    output = getattr(sweep_args, "output", None)

    def sweep(progress):
        report = run_sweep(cfg, progress)
        if output:
            report.save(output)
        return report

    return sweep, output
