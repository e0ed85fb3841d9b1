"""The fabricdoc Textual app: a Report (from a file, an object or a live sweep) on screen.

``FabricdocApp(report_path_or_report)`` loads the file in a worker (a large
report takes a moment to validate) and shows the main screen;
``FabricdocApp(sweep=fn)`` runs ``fn(progress)`` in a worker first, where
``progress(stage, done, total)`` is called by the sweep and ``fn`` returns the
Report. The app never calls probes itself.
"""

from __future__ import annotations

import functools
import gc
from collections.abc import Callable
from pathlib import Path
from typing import Any

from textual import work
from textual.app import App
from textual.binding import Binding

from fabricdoc.errors import FabricdocError
from fabricdoc.report.report import Report
from fabricdoc.report.ticket import WhatIf

from .index import ReportIndex
from .screens.impact import ImpactTab
from .screens.main import MainScreen, key_help
from .screens.modals import ExportScreen, HelpScreen
from .screens.sweep import LoadingScreen, SweepScreen
from .widgets.table import ReportTable

SweepFn = Callable[[Callable[[str, int, int], None]], Report]


def default_impact_factory(report: Report, path: str | Path | None = None, started: Any = None) -> Any:
    """The AllReduce impact model over the report's fabric, built and held in a child process
    (:mod:`fabricdoc.tui.impact_process`): building it takes seconds of the GIL on a large fabric.
    With ``path`` (the file the report came from) the child reads the file, not a copy from the app;
    ``started``: that child, started when the app began reading the file, now told which run it read."""
    if started is not None:
        started.expect(report.run_id)
        return started
    from .impact_process import ModelProcess

    return ModelProcess(report, path)


class FabricdocApp(App[int]):
    """Overview, findings, hosts, links, impact what-if, detail and sweep screens over one Report."""

    CSS_PATH = "fabricdoc.tcss"
    TITLE = "fabricdoc"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS = [
        Binding("q", "quit", "Quit"),
        Binding("question_mark", "help", "Help"),
        Binding("e", "export", "Export"),
    ]

    def __init__(
        self,
        report: Report | str | Path | None = None,
        sweep: SweepFn | None = None,
        *,
        export_path: str | Path | None = None,
        impact_factory: Callable[[Report], Any] | None = default_impact_factory,
        history_path: str | Path | None = None,
        default_history: bool = False,
    ) -> None:
        super().__init__()
        if report is None and sweep is None:
            raise FabricdocError("fabricdoc tui needs a report file or a sweep to run")
        self._source = report
        self.sweep = sweep
        self.report: Report | None = report if isinstance(report, Report) else None
        self.index: ReportIndex | None = None
        self.export_path = str(export_path) if export_path else None
        self.impact_factory = impact_factory
        self._history_path = Path(history_path) if history_path else None  # past sweeps, for sparklines
        self._default_history = default_history
        self.error: str | None = None  # why the app gave up (a report that would not load)
        self._early_model: Any = None  # the impact model's process, started with the file's load

    def on_mount(self) -> None:
        if self.sweep is not None:
            self.push_screen(SweepScreen(self.sweep))
        elif self.report is not None:
            self.show_report(self.report)
        else:
            self.push_screen(LoadingScreen(str(self._source)))
            if self.impact_factory is default_impact_factory:  # the model's process reads the file meanwhile
                from .impact_process import ModelProcess

                self._early_model = ModelProcess.from_file(Path(str(self._source)))
            self._load(Path(str(self._source)))

    def on_unmount(self) -> None:
        self._close_early_model()
        gc.unfreeze()  # what show_report froze may be collected again once the app is gone

    def _close_early_model(self) -> None:
        """End the early impact process no main screen took (the report would not load, or the app quit first)."""
        early, self._early_model = self._early_model, None
        if early is not None:
            early.close()

    @work(thread=True, exclusive=True, group="load")
    def _load(self, path: Path) -> None:
        try:
            report = Report.load(path)
        except FabricdocError as exc:
            self._close_early_model()  # before the error is out: whoever sees it sees the process ended too
            self.error = str(exc)
            self.call_from_thread(self.exit, None, 2)
            return
        index = ReportIndex(report)
        self.call_from_thread(self.show_report, report, index)

    def show_report(self, report: Report, index: ReportIndex | None = None) -> None:
        """Replace whatever is on screen (loading, sweep) with the report's main screen."""
        self.report = report
        self.index = index or ReportIndex(report)
        # The report and its index live as long as the screen: no collection pass walks their
        # millions of objects again (a pass over a 65,536-host report stalls a key press 0.4 s).
        gc.freeze()
        factory = self.impact_factory
        if factory is default_impact_factory and not isinstance(self._source, Report | None):
            path = Path(str(self._source))
            started, self._early_model = self._early_model, None
            factory = functools.partial(default_impact_factory, path=path, started=started)
        screen = MainScreen(self.index, factory)
        if len(self.screen_stack) > 1:
            self.switch_screen(screen)
        else:
            self.push_screen(screen)

    @property
    def history_path(self) -> Path | None:
        """The history store to draw sparklines from; the default one is looked up on first use
        (the history store pulls in pandas, too slow for start-up)."""
        if self._history_path is None and self._default_history:
            from fabricdoc.report.history import default_path

            self._history_path = default_path()
        return self._history_path

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen(key_help()))

    def action_export(self) -> None:
        if self.report is None:
            self.notify("nothing to export yet: the sweep is still running", severity="warning")
            return
        if isinstance(self.screen, ExportScreen):
            return
        ids, filter_text, what_if = self._on_screen()
        self.push_screen(ExportScreen(self.report, self.export_path or self._default_export(), ids, filter_text,
                                      what_if))

    def _on_screen(self) -> tuple[list[str], str, WhatIf | None]:
        """What the export keeps of the screen: the findings the filter shows (and the filter), the what-if."""
        main = next((s for s in self.screen_stack if isinstance(s, MainScreen)), None)
        if main is None:
            return [], "", None
        ids: list[str] = []
        filter_text = ""
        for table in main.query("#findings-table").results(ReportTable):
            if table.filter_text:
                filter_text = table.filter_text
                ids = list(table.shown.keys)
        what_if = next((tab.what_if() for tab in main.query(ImpactTab).results(ImpactTab)), None)
        return ids, filter_text, what_if

    def _default_export(self) -> str:
        assert self.report is not None
        stamp = self.report.generated_at.replace(":", "").replace("-", "")[:15]
        return str(Path.cwd() / f"fabricdoc-summary-{stamp}.md")
