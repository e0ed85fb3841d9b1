"""Pieces several commands share: the progress bar, report output, and the name map from flags."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from fabricdoc.model.verdict import EXIT_CANNOT_RUN, Verdict


@contextmanager
def progress_bar(enabled: bool = True) -> Iterator[Any]:
    """A rich progress bar on stderr; yields a ``progress(stage, done, total)`` callback."""
    if not enabled:
        yield lambda stage, done, total: None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description:<10}", markup=False), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
        console=console, transient=True,
    )
    tasks: dict[str, Any] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=max(total, 1))
        bar.update(tasks[stage], completed=done, total=max(total, 1))

    with bar:
        yield update


def stdout_console() -> Any:
    """A rich console on stdout whose closed pipe is a :class:`BrokenPipeError` (main's one line, exit 2),
    not rich's own ``SystemExit(1)``, the faults-found code."""
    from rich.console import Console

    class _PipeConsole(Console):
        def on_broken_pipe(self) -> None:
            self.quiet = True
            raise BrokenPipeError("stdout closed")

    return _PipeConsole()


def emit_report(report: Any, args: argparse.Namespace) -> int:
    """Write ``-o``, print the JSON or the text summary, and return the verdict's exit code.

    The file comes first (a closed pipe on stdout must not lose it); a report that
    cannot be written (full disk) is still printed, then the error raised. Errors after
    the findings (a history store that failed) are one line each on stderr and exit 2,
    the report kept.
    """
    from fabricdoc.errors import FabricdocError
    from fabricdoc.model.text import escape
    from fabricdoc.report.render import summary_text

    output = getattr(args, "output", None)
    failed: FabricdocError | None = None
    if output:
        try:
            report.save(output)
        except FabricdocError as exc:
            failed = exc
    if getattr(args, "json", False):
        sys.stdout.write(report.to_json() + "\n")
    elif getattr(args, "quiet", False):
        print(summary_text(report).splitlines()[0])  # the verdict line; the exit code says the rest
    else:
        print(summary_text(report))
        if output and failed is None:
            print(f"report written to {escape(output)}")
    sys.stdout.flush()
    if failed is not None:
        raise failed
    for error in report.errors:
        print(f"fabricdoc {args.command}: error: {escape(error)}", file=sys.stderr)
    if report.errors:
        return EXIT_CANNOT_RUN
    return verdict_exit(report, args.command)


def verdict_exit(report: Any, command: str) -> int:
    """The report's verdict as the exit code (0 pass, 1 faults, 2 incomplete with one stderr line why)."""
    from fabricdoc.model.text import escape

    verdict = Verdict.parse(report.verdict)
    if verdict is Verdict.INCOMPLETE:
        print(f"fabricdoc {command}: incomplete: {escape(_not_seen_line(report.coverage))}", file=sys.stderr)
    return verdict.exit_code


def why_exit_2(command: str, refused: int, failed: int) -> int:
    """Say in one stderr line why a command that acts on nodes exits 2; returns 2."""
    parts = [f"{refused} refused (not ours to change, or not allowed)"] if refused else []
    parts += [f"{failed} failed"] if failed else []
    print(f"fabricdoc {command}: not everything was done: {', '.join(parts)} (listed above)", file=sys.stderr)
    return EXIT_CANNOT_RUN


def _not_seen_line(coverage: dict[str, Any]) -> str:
    """What a report could not see, in one line: the first thing and how many more."""
    items = coverage.get("not_seen") or []
    count = int(coverage.get("not_seen_count") or len(items))
    if not items:
        return "something planned was not seen (see the report's coverage)"
    first = f"{items[0].get('what', '')}: {items[0].get('why', '')}"
    return first + (f" (and {count - 1} more not seen; see the report's coverage)" if count > 1 else "")


def name_map(args: argparse.Namespace) -> Any:
    """The fabric -> scheduler name map from ``--map`` and ``--host-rule``."""
    from fabricdoc.scheduler.names import HostRule, NameMap, load_name_map

    base = load_name_map(args.map) if args.map else NameMap()
    return base.with_rules(HostRule.of(rx, rep) for rx, rep in args.host_rule)
