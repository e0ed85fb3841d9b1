"""ReportTable: a filterable, sortable virtual table that draws only the rows on screen.

Rows are :class:`~fabricdoc.tui.rows.Rows`: keys up front, each
:class:`~fabricdoc.tui.rows.Row` (cells already :class:`~rich.text.Text`, built by
the view modules, so no cell is ever parsed as markup) made only when it is drawn.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from ..rows import Row, Rows


class ReportTable(ScrollView, can_focus=True):
    """A virtual table: a fixed header and rows drawn line by line, only those on screen.

    Filter and sort rearrange the keys and repaint; a row's cells are made and
    measured when it is first drawn (a column widens then if it must), so
    200,000 rows cost their keys, no widgets and no cells off screen. Keys: arrows, j/k, pgup/pgdn,
    home/end, g/G, enter (posts :class:`RowSelected`); a click highlights a
    row, a click on the highlighted row opens it, a click on the header sorts.
    """

    BINDINGS = [
        Binding("enter", "select_cursor", "Open"),
        Binding("down,j", "cursor_down", "Down", show=False),
        Binding("up,k", "cursor_up", "Up", show=False),
        Binding("pagedown", "page_down", "Page down", show=False),
        Binding("pageup", "page_up", "Page up", show=False),
        Binding("home,ctrl+home,g", "first", "Top", show=False),
        Binding("end,ctrl+end,G", "last", "Bottom", show=False),
    ]
    COMPONENT_CLASSES = {"reporttable--header", "reporttable--cursor", "reporttable--even"}
    DEFAULT_CSS = """
    ReportTable { background: $surface; padding: 0 1; }
    ReportTable > .reporttable--header { text-style: bold; color: $primary; background: $panel; }
    ReportTable > .reporttable--cursor { background: $block-cursor-blurred-background; }
    ReportTable:focus > .reporttable--cursor { background: $block-cursor-background; color: $block-cursor-foreground; text-style: bold; }
    ReportTable > .reporttable--even { background: $surface-lighten-1 20%; }
    """
    MAX_COLUMN = 60
    WIDTH_SAMPLE = 200  # rows measured when set, from the top of the first order shown

    cursor_row: reactive[int] = reactive(0, always_update=True)

    class RowHighlighted(Message):
        """The cursor moved to ``row`` (an index into the shown rows)."""

        def __init__(self, table: ReportTable, row: int) -> None:
            super().__init__()
            self.table, self.row = table, row

        @property
        def control(self) -> ReportTable:
            return self.table

    class RowSelected(RowHighlighted):
        """Enter (or a second click) on ``row``."""

    class HeaderSelected(Message):
        """A click on the header of ``column_index``."""

        def __init__(self, table: ReportTable, column_index: int) -> None:
            super().__init__()
            self.table, self.column_index = table, column_index

        @property
        def control(self) -> ReportTable:
            return self.table

    def __init__(self, columns: Sequence[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.columns = list(columns)
        self.widths = [len(c) for c in self.columns]
        self.all_rows: Rows = Rows.of([])
        self.shown: Rows = self.all_rows
        self.filter_text = ""
        self.sort_key: str | None = None
        self.sort_reverse = False

    # -- data ----------------------------------------------------------------------
    def set_rows(self, rows: Rows | Iterable[Row]) -> None:
        self.all_rows = rows if isinstance(rows, Rows) else Rows.of(rows)
        self.widths = [len(c) for c in self.columns]
        self.shown = self.all_rows.subset([])
        self._reload()
        for row in self.shown[: self.WIDTH_SAMPLE]:
            self._measure(row)

    def _measure(self, row: Row) -> bool:
        """Widen the columns to fit ``row``; True when one grew."""
        grew = False
        for i, cell in enumerate(row.cells):
            plain = cell.plain
            n = min(len(plain) if plain.isascii() else cell.cell_len, self.MAX_COLUMN)
            if n > self.widths[i]:
                self.widths[i] = n
                grew = True
        if grew:
            self.virtual_size = Size(sum(self.widths) + 2 * len(self.widths), len(self.shown) + 1)
        return grew

    def apply_filter(self, text: str) -> None:
        """Show only rows whose text contains every word of ``text`` (case-insensitive)."""
        text = text.strip().lower()
        if text == self.filter_text:
            return
        self.filter_text = text
        self._reload()

    def sort_rows(self, key: str, reverse: bool) -> None:
        self.sort_key, self.sort_reverse = key, reverse
        self._reload()

    @property
    def row_count(self) -> int:
        return len(self.shown)

    def get_row_at(self, index: int) -> list[Text]:
        return list(self.shown[index].cells)

    @property
    def current_key(self) -> str | None:
        if not 0 <= self.cursor_row < len(self.shown):
            return None
        return self.shown.keys[self.cursor_row]

    def set_cell_text(self, key: str, column: int, value: Text) -> None:
        """Replace one cell (the drain mark in the what-if) without reloading."""
        row = self.all_rows.row(key)
        cells = list(row.cells)
        cells[column] = value
        row.cells = tuple(cells)
        self.refresh()

    def _reload(self) -> None:
        rows = self.all_rows
        words = self.filter_text.split()
        keys = [k for k in rows.keys if all(w in rows.search(k) for w in words)] if words else list(rows.keys)
        if self.sort_key is not None:
            sort_key = self.sort_key
            keys.sort(key=lambda k: rows.sort_value(k, sort_key), reverse=self.sort_reverse)
        keep = self.current_key
        self.shown = rows.subset(keys)
        width = sum(self.widths) + 2 * len(self.widths)
        self.virtual_size = Size(width, len(keys) + 1)
        index = next((i for i, k in enumerate(keys) if k == keep), 0) if keep is not None else 0
        self.cursor_row = min(index, max(0, len(keys) - 1))
        self.refresh()

    # -- cursor ----------------------------------------------------------------------
    def move_cursor(self, row: int, animate: bool = False) -> None:
        self.cursor_row = max(0, min(row, len(self.shown) - 1))

    def watch_cursor_row(self, old: int, new: int) -> None:
        page = max(1, self.size.height - 1)
        if new < self.scroll_y:
            self.scroll_to(y=new, animate=False, immediate=True)
        elif new >= self.scroll_y + page:
            self.scroll_to(y=new - page + 1, animate=False, immediate=True)
        self.refresh()
        if self.shown:
            self.post_message(self.RowHighlighted(self, new))

    def _page(self) -> int:
        return max(1, self.size.height - 2)

    def action_cursor_down(self) -> None:
        self.move_cursor(self.cursor_row + 1)

    def action_cursor_up(self) -> None:
        self.move_cursor(self.cursor_row - 1)

    def action_page_down(self) -> None:
        self.move_cursor(self.cursor_row + self._page())

    def action_page_up(self) -> None:
        self.move_cursor(self.cursor_row - self._page())

    def action_first(self) -> None:
        self.move_cursor(0)

    def action_last(self) -> None:
        self.move_cursor(len(self.shown) - 1)

    def action_select_cursor(self) -> None:
        if self.shown:
            self.post_message(self.RowSelected(self, self.cursor_row))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None:  # the border or a scrollbar
            return
        if offset.y == 0:
            x = offset.x + int(self.scroll_x)
            for i, w in enumerate(self.widths):
                if x < w + 2:
                    self.post_message(self.HeaderSelected(self, i))
                    return
                x -= w + 2
            return
        row = int(self.scroll_y) + offset.y - 1
        if 0 <= row < len(self.shown):
            if row == self.cursor_row:
                self.action_select_cursor()
            else:
                self.move_cursor(row)

    # -- drawing ---------------------------------------------------------------------
    def _line(self, cells: Sequence[Text], style: Style) -> Strip:
        segments: list[Segment] = []
        for cell, width in zip(cells, self.widths, strict=False):
            text = cell if cell.cell_len <= width else cell[: max(0, width - 1)] + Text("…")
            for seg in text.render(self.app.console):
                if seg.text != "\n":
                    segments.append(Segment(seg.text, style + seg.style if seg.style else style))
            segments.append(Segment(" " * (width - min(width, text.cell_len) + 2), style))
        return Strip(segments)

    def render_line(self, y: int) -> Strip:
        width = self.size.width
        scroll_x = int(self.scroll_x)
        if y == 0:
            style = self.get_component_rich_style("reporttable--header")
            strip = self._line([Text(c) for c in self.columns], style)
        else:
            row = int(self.scroll_y) + y - 1
            base = self.rich_style
            if not 0 <= row < len(self.shown):
                return Strip.blank(width, base)
            if row == self.cursor_row:
                style = base + self.get_component_rich_style("reporttable--cursor")
            elif row % 2:
                style = base + self.get_component_rich_style("reporttable--even")
            else:
                style = base
            shown = self.shown[row]
            if self._measure(shown):
                self.refresh()
            strip = self._line(shown.cells, style)
        return strip.crop_extend(scroll_x, scroll_x + width, style)
