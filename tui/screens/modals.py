"""Dialogs over any screen: the key help, and exporting the report as JSON."""

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
from fabricdoc.report.report import Report

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
    """Ask where to write the report, write it atomically, say where it went."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, report: Report, default_path: str) -> None:
        super().__init__()
        self.report = report
        self.default_path = default_path

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Label("Export the report as JSON to:")
            yield Input(self.default_path, id="export-path")
            yield Label("enter to save, escape to cancel", classes="dim")

    @on(Input.Submitted, "#export-path")
    def save(self, event: Input.Submitted) -> None:
        path = Path(event.value.strip() or self.default_path).expanduser()
        try:
            self.report.save(path)
        except FabricdocError as exc:  # the atomic writer names the file and the reason
            self.app.notify(escape(f"could not write the report: {exc}"), severity="error", markup=False)
            return
        except OSError as exc:
            self.app.notify(escape(f"could not write {path}: {exc.strerror or exc}"), severity="error", markup=False)
            return
        self.app.notify(escape(f"report saved to {path}"), markup=False)
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
