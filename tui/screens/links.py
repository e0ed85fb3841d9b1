"""The links tab: every cable worst first, with its speed, state and findings."""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult

from ..index import key_to_link
from ..rows import LINK_COLUMNS, link_rows
from ..widgets.table import ReportTable
from .detail import DetailScreen
from .tab import ReportTab


class LinksTab(ReportTab):
    TAB_ID = "links"
    TITLE = "Links"

    def compose(self) -> ComposeResult:
        yield ReportTable(LINK_COLUMNS, id="links-table")

    def table(self) -> ReportTable:
        return self.query_one("#links-table", ReportTable)

    def load(self) -> None:
        table = self.table()
        table.sort_key = "health"
        table.set_rows(link_rows(self.index))

    @on(ReportTable.RowSelected, "#links-table")
    def open_link(self, event: ReportTable.RowSelected) -> None:
        key = event.table.current_key
        if key is not None:
            self.app.push_screen(DetailScreen(self.index, link=key_to_link(key)))
