"""Pieces several commands share: progress display, job-host files, report output."""

from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path

from fabricdoc.errors import ConfigError


@contextmanager
def progress_bar(enabled: bool = True):
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
    tasks: dict[str, int] = {}

    def update(stage: str, done: int, total: int) -> None:
        if stage not in tasks:
            tasks[stage] = bar.add_task(stage, total=max(total, 1))
        bar.update(tasks[stage], completed=done, total=max(total, 1))

    with bar:
        yield update


def read_host_list(path: str) -> list[str]:
    """One host per line (blank lines and ``#`` comments ignored)."""
    try:
        text = Path(path).read_text()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read host list: {exc.strerror}") from None
    hosts = [ln.split("#", 1)[0].strip() for ln in text.splitlines()]
    hosts = [h for h in hosts if h]
    if not hosts:
        raise ConfigError(f"{path}: host list is empty")
    return hosts


def emit_report(report, args) -> int:
    """Write ``-o``, print JSON or the text summary, and return the verdict's exit code."""
    from fabricdoc.render import summary_text

    if getattr(args, "output", None):
        report.save(args.output)
    if getattr(args, "json", False):
        sys.stdout.write(report.to_json() + "\n")
    else:
        print(summary_text(report))
        if getattr(args, "output", None):
            print(f"report written to {args.output}")
    return 0 if report.verdict == "pass" else 1
