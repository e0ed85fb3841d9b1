"""The hosts tab: every host worst first, with where it sits, its health and drain mark."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult

from ..rows import HOST_COLUMNS, host_rows
from ..widgets.table import ReportTable
from .detail import DetailScreen
from .tab import ReportTab


class HostsTab(ReportTab):
    TAB_ID = "hosts"
    TITLE = "Hosts"

    def compose(self) -> ComposeResult:
        yield ReportTable(HOST_COLUMNS, id="hosts-table")

    def table(self) -> ReportTable:
        return self.query_one("#hosts-table", ReportTable)

    def load(self) -> None:
        table = self.table()
        table.sort_key = "health"
        table.set_rows(host_rows(self.index))

    @on(ReportTable.RowSelected, "#hosts-table")
    def open_host(self, event: ReportTable.RowSelected) -> None:
        key = event.table.current_key
        if key is not None:
            self.app.push_screen(DetailScreen(self.index, node=key))
