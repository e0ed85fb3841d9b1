"""Screens before a report is on screen: loading a report file, and running a live sweep."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Header, Label, ProgressBar, RichLog
from textual.worker import get_current_worker

from fabricdoc.errors import FabricdocError
from fabricdoc.model.text import escape
from fabricdoc.report.report import Report

from ..formatting import safe


class LoadingScreen(Screen[None]):
    """Shown while a report file is read and validated in a worker."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def compose(self) -> ComposeResult:
        # No Header: a report that loads before the Header's first title update would be
        # switched away under it, and Textual's update then finds no title widget.
        yield Label(safe(f"loading {self.what} …"), id="loading")
        yield Footer()


class SweepCancelled(FabricdocError):
    """Raised inside the sweep's progress callback when the user quits mid-sweep."""


class SweepScreen(Screen[None]):
    """A live sweep: stage, a progress bar and a log, then the report's screens."""

    BINDINGS = [Binding("q", "app.quit", "Quit (stops the sweep)")]

    def __init__(self, sweep: Callable[[Callable[[str, int, int], None]], Report]) -> None:
        super().__init__()
        self.title = "fabricdoc — sweep"
        self.sweep = sweep
        self.stage = ""

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="sweep"):
            yield Label("starting the sweep …", id="sweep-stage")
            yield ProgressBar(total=None, show_eta=False, id="sweep-progress")
            yield RichLog(id="sweep-log", markup=False, highlight=False, wrap=True)
        yield Footer()

    def on_mount(self) -> None:
        self.run_sweep()

    @work(thread=True, exclusive=True, group="sweep")
    def run_sweep(self) -> None:
        worker = get_current_worker()

        def progress(stage: str, done: int, total: int) -> None:
            if worker.is_cancelled:
                raise SweepCancelled("sweep stopped from the TUI")
            self.app.call_from_thread(self._progress, str(stage), int(done), int(total))

        try:
            report = self.sweep(progress)
        except SweepCancelled:
            return
        except FabricdocError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        except Exception as exc:  # a bug in the sweep: show it, keep the TUI usable
            self.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._done, report)

    def _progress(self, stage: str, done: int, total: int) -> None:
        bar = self.query_one("#sweep-progress", ProgressBar)
        if stage != self.stage:
            if self.stage:
                self.query_one("#sweep-log", RichLog).write(safe(f"✓ {self.stage}", "green"))
            self.stage = stage
        bar.update(total=total or None, progress=done)
        self.query_one("#sweep-stage", Label).update(safe(f"{stage}: {done:,} of {total:,}" if total else stage))

    def _failed(self, message: str) -> None:
        self.app.error = f"sweep failed: {message}"  # type: ignore[attr-defined]  # quitting now exits 2
        self.query_one("#sweep-stage", Label).update(Text("sweep failed", style="bold red"))
        self.query_one("#sweep-log", RichLog).write(Text(escape(message), style="red"))  # wraps, unlike a cell
        self.app.notify(escape(message), title="sweep failed", severity="error", markup=False, timeout=10)

    def _done(self, report: Report) -> None:
        if self.stage:
            self.query_one("#sweep-log", RichLog).write(safe(f"✓ {self.stage}", "green"))
        self.app.show_report(report)  # type: ignore[attr-defined]
