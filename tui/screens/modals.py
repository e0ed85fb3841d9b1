"""Dialogs over any screen: the key help, and exporting a summary (or the report) to a file."""

from __future__ import annotations

from pathlib import Path

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from fabricdoc.errors import FabricdocError
from fabricdoc.model.text import escape
from fabricdoc.report.files import write_atomic
from fabricdoc.report.report import Report
from fabricdoc.report.ticket import WhatIf, ticket

from ..widgets.panel import Panel


class HelpScreen(ModalScreen[None]):
    """The keys (``text``, the app's own), on top of whatever screen asked for it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help-box"):  # scrolls on a terminal shorter than the help
            yield Panel(self.text, id="help-text")
            yield Label("escape to close", classes="dim")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class ExportScreen(ModalScreen[Path | None]):
    """Write a summary for a ticket (Markdown: the findings the filter shows, the what-if tried) or, to a
    ``.json`` path, the report itself; atomically, saying where it went."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, report: Report, default_path: str, ids: list[str] | None = None, filter_text: str = "",
                 what_if: WhatIf | None = None) -> None:
        super().__init__()
        self.report = report
        self.default_path = default_path
        self.ids = list(ids or [])
        self.filter_text = filter_text
        self.what_if = what_if

    def compose(self) -> ComposeResult:
        kept = [f"the {len(self.ids)} findings the filter shows" if self.filter_text else "every finding"]
        if self.what_if is not None:
            kept.append("the what-if you tried")
        with Vertical(id="export-box"):
            yield Label(escape(f"Export a summary for a ticket ({' and '.join(kept)}) to a .md or .txt file, "
                               "or the report itself to a .json file:"), markup=False)
            yield Input(self.default_path, id="export-path")
            yield Label("enter to save, escape to cancel", classes="dim")

    @on(Input.Submitted, "#export-path")
    def save(self, event: Input.Submitted) -> None:
        path = Path(event.value.strip() or self.default_path).expanduser()
        try:
            if path.suffix.lower() == ".json":
                self.report.save(path)
            else:
                fmt = "text" if path.suffix.lower() == ".txt" else "markdown"
                text = ticket(self.report, self.ids, fmt, self.filter_text, self.what_if)
                write_atomic(path, text)
        except FabricdocError as exc:  # the atomic writer names the file and the reason
            self.app.notify(escape(f"could not write: {exc}"), severity="error", markup=False)
            return
        except OSError as exc:
            self.app.notify(escape(f"could not write {path}: {exc.strerror or exc}"), severity="error", markup=False)
            return
        what = "report" if path.suffix.lower() == ".json" else "summary"
        self.app.notify(escape(f"{what} saved to {path}"), markup=False)
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)


class RouteScreen(ModalScreen[str | None]):
    """Ask for a host pair to route (``host[port] host[port]``); dismissed with the text or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, default: str = "") -> None:
        super().__init__()
        self.default = default

    def compose(self) -> ComposeResult:
        with Vertical(id="route-box"):
            yield Label("Route between two hosts (name or name[port], separated by a space):")
            yield Input(self.default, id="route-pair")
            yield Label("enter to route, escape to cancel", classes="dim")

    @on(Input.Submitted, "#route-pair")
    def submit(self, event: Input.Submitted) -> None:
        self.dismiss(event.value)

    def action_cancel(self) -> None:
        self.dismiss(None)
