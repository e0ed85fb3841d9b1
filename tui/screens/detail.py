"""DetailScreen: one link, switch or host with its ports, its findings with evidence, and its history."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Header, Label

from fabricdoc.model.findings import Finding

from ..detail_view import detail_title, link_summary, node_summary
from ..evidence_view import findings_text
from ..formatting import safe
from ..index import LinkId, ReportIndex, key_to_link
from ..rows import PORT_COLUMNS, port_rows
from ..series import history_series, store_series
from ..widgets.history import HistoryView
from ..widgets.panel import Panel
from ..widgets.table import ReportTable


class DetailScreen(Screen[None]):
    """One component: give exactly one of ``node`` (an id), ``link`` or ``finding``."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, index: ReportIndex, node: str | None = None, link: LinkId | None = None,
                 finding: Finding | None = None) -> None:
        super().__init__()
        self.index = index
        self.node = node
        self.link = link
        self.finding = finding
        # Titles are set before the Header mounts: a change while it mounts races its query.
        self.title = detail_title(index, node, link, finding)

    @property
    def has_ports(self) -> bool:
        return self.node is not None and self.node in self.index.nodes

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with VerticalScroll(id="detail"):
            yield Panel(self._summary(), id="detail-summary")
            if self.has_ports:
                yield Label("Ports", classes="section")
                yield ReportTable(PORT_COLUMNS, id="detail-ports")
            fs = self.findings()
            yield Label(f"Findings ({len(fs)})", classes="section")
            yield Panel(findings_text(self.index, fs), id="detail-findings")
            yield Label("History (counter rates across sweeps, bandwidth tests by round)", classes="section")
            yield HistoryView(self._history(), id="detail-history")
        yield Footer()

    def on_mount(self) -> None:
        if self.has_ports:
            table = self.query_one("#detail-ports", ReportTable)
            table.set_rows(port_rows(self.index, self.node))  # type: ignore[arg-type]
            table.focus()

    @on(ReportTable.RowSelected, "#detail-ports")
    def open_port(self, event: ReportTable.RowSelected) -> None:
        key = event.table.current_key
        if key is not None:
            self.app.push_screen(DetailScreen(self.index, link=key_to_link(key)))

    def findings(self) -> list[Finding]:
        """The findings on this component (for a host: its own and its cables')."""
        if self.link is not None:
            return list(self.index.link_findings.get(self.link, []))
        if self.node is not None:
            return self.index.findings_of_node(self.node)
        return [self.finding] if self.finding else []

    def _summary(self):
        if self.link is not None:
            return link_summary(self.index, self.link)
        if self.node is not None:
            return node_summary(self.index, self.node)
        return safe(self.finding.name if self.finding else "", "bold")

    def _history(self) -> dict[str, list[float]]:
        """Counter rates from the history store (past sweeps), then this report's bandwidth tests by round."""
        store = getattr(self.app, "history_path", None)
        ends: list[tuple[str, int | None]] = []
        if self.node is not None:
            ends = [(self.node, None)]
        elif self.link is not None:
            ends = list(self.link)
        out: dict[str, list[float]] = {}
        for nid, port in ends:
            series, note = store_series(store, self.index, nid, port)
            out.update(series)
            if note:
                self.notify(note, severity="warning", markup=False)
            out.update(history_series(self.index, nid, port))
        return out
