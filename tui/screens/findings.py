"""The findings tab: every finding worst first, the highlighted one's evidence below."""

from __future__ import annotations

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll

from ..evidence_view import finding_text
from ..rows import FINDING_COLUMNS, FINDING_SORTS, finding_rows
from ..widgets.panel import Panel
from ..widgets.table import ReportTable
from .detail import DetailScreen
from .tab import ReportTab


class FindingsTab(ReportTab):
    TAB_ID = "findings"
    TITLE = "Findings"
    KEYS = (("s / c", "findings: sort by severity / confidence (again: reverse)"),)
    BINDINGS = [
        Binding("s", "sort('severity')", "Sort severity"),
        Binding("c", "sort('confidence')", "Sort confidence"),
    ]

    def compose(self) -> ComposeResult:
        yield ReportTable(FINDING_COLUMNS, id="findings-table")
        yield VerticalScroll(Panel("", id="evidence"), id="evidence-box")

    def table(self) -> ReportTable:
        return self.query_one("#findings-table", ReportTable)

    def load(self) -> None:
        table = self.table()
        table.set_rows(finding_rows(self.index))
        self._show_evidence(table.current_key)

    @on(ReportTable.RowHighlighted, "#findings-table")
    def finding_highlighted(self, event: ReportTable.RowHighlighted) -> None:
        self._show_evidence(event.table.current_key)

    def _show_evidence(self, fid: str | None) -> None:
        panel = self.query_one("#evidence", Panel)
        f = self.index.findings.get(fid or "")
        if f is None:
            panel.update(Text("no findings: the fabric looks healthy" if not self.index.findings else "", style="green"))
        else:
            panel.update(finding_text(self.index, f))

    @on(ReportTable.RowSelected, "#findings-table")
    def open_finding(self, event: ReportTable.RowSelected) -> None:
        """Enter opens the finding's cable, else its first node, else the finding alone."""
        ix = self.index
        f = ix.findings.get(event.table.current_key or "")
        if f is None:
            return
        lid = ix.finding_link(f)
        node = next((n for n in map(ix.resolve, f.node_ids) if n in ix.nodes), None)
        if lid is not None:
            self.app.push_screen(DetailScreen(ix, link=lid))
        elif node is not None:
            self.app.push_screen(DetailScreen(ix, node=node))
        else:
            self.app.push_screen(DetailScreen(ix, finding=f))

    def action_sort(self, key: str) -> None:
        table = self.table()
        reverse = not table.sort_reverse if table.sort_key == key else True
        table.sort_rows(key, reverse)
        self.notify(f"findings sorted by {key}, {'highest' if reverse else 'lowest'} first", timeout=2)

    @on(ReportTable.HeaderSelected, "#findings-table")
    def header_sort(self, event: ReportTable.HeaderSelected) -> None:
        key = FINDING_SORTS[event.column_index]
        table = self.table()
        table.sort_rows(key, not table.sort_reverse if table.sort_key == key else key in ("severity", "confidence", "action"))
