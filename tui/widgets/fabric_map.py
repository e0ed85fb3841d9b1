"""FabricMap: one grid of the fabric map drawn as coloured cells, with a cursor and zoom.

The data (grids, block states, glyphs) comes from :mod:`fabricdoc.tui.fabric_map`;
this widget only fits a window of it to its size, draws it and moves a cursor.
A grid bigger than the widget is drawn in blocks; ``enter`` on a block zooms
into it (the block's rows and columns fill the widget), ``backspace`` zooms out.
"""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.message import Message
from textual.widget import Widget

from ..fabric_map import (
    EMPTY,
    HOSTS_COLUMN,
    LinkId,
    MapGrid,
    Window,
    glyph,
    span_label,
    window,
    window_states,
)
from ..formatting import safe
from ..index import ReportIndex

CELL_W = 3  # a glyph and two spaces: room for a two-digit column number above it
LABEL_MAX = 24


class FabricMap(Widget, can_focus=True):
    """A grid of the map with a cursor; posts :class:`CursorMoved` and :class:`Opened`."""

    BINDINGS = [
        Binding("up,k", "move(-1, 0)", "Up", show=False),
        Binding("down,j", "move(1, 0)", "Down", show=False),
        Binding("left,h", "move(0, -1)", "Left", show=False),
        Binding("right,l", "move(0, 1)", "Right", show=False),
        Binding("enter", "zoom_in", "Zoom in / open"),
        Binding("backspace,minus", "zoom_out", "Zoom out"),
    ]

    class CursorMoved(Message):
        """The cursor is on another block (or the view changed)."""

        def __init__(self, fabric_map: FabricMap) -> None:
            super().__init__()
            self.fabric_map = fabric_map

        @property
        def control(self) -> FabricMap:
            return self.fabric_map

    class Opened(CursorMoved):
        """``enter`` on a single cell: open what it is (``rows``, ``cols``: the cell)."""

    def __init__(self, index: ReportIndex, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.index = index
        self.grid: MapGrid | None = None
        self.zoom: list[tuple[range, range]] = []  # the zoomed-to spans, outermost first
        self.win = Window((), ())
        self.states: dict[tuple[int, int], Any] = {}
        self.cursor = (0, 0)
        self.path_cells: set[tuple[int, int]] = set()  # grid cells (row, col) a routed path crosses

    # -- data ----------------------------------------------------------------------
    def show_grid(self, grid: MapGrid) -> None:
        self.grid = grid
        self.zoom = [(range(len(grid.rows)), range(len(grid.cols)))]
        self.cursor = (0, 0)
        self.set_path(self._path_links)

    _path_links: frozenset[LinkId] = frozenset()

    def set_path(self, links: frozenset[LinkId]) -> None:
        """Mark the cells a routed path crosses (``links``: its cables)."""
        self._path_links = links
        cells: set[tuple[int, int]] = set()
        if self.grid is not None and links:
            for key, lids in self.grid.cells.items():
                if not links.isdisjoint(lids):
                    cells.add(key)
            for r, lids in self.grid.host_links.items():
                if not links.isdisjoint(lids):
                    cells.add((r, HOSTS_COLUMN))
        self.path_cells = cells
        self._fit()

    @property
    def max_rows(self) -> int:
        return max(1, self.size.height - 1)  # a line for the column numbers

    @property
    def max_cols(self) -> int:
        hosts = CELL_W + 1 if self.grid is not None and self.grid.has_hosts else 0
        return max(1, (self.size.width - self._label_width() - hosts - 2) // CELL_W)

    def _label_width(self) -> int:
        if self.grid is None:
            return 0
        rows = self.zoom[-1][0]
        longest = max((len(x) for x in self.grid.row_labels[rows.start:rows.stop]), default=0)
        return min(LABEL_MAX, (2 * longest + 1) if len(rows) > self.max_rows else longest)

    def _fit(self) -> None:
        """Cut the zoomed-to spans into blocks that fit the widget now, and keep the cursor inside."""
        if self.grid is None or not self.size.width:
            self.refresh()
            return
        rows, cols = self.zoom[-1]
        self.win = window(rows, cols, self.max_rows, self.max_cols)
        self.states = window_states(self.index, self.grid, self.win)
        r, c = self.cursor
        low = HOSTS_COLUMN if self.grid.has_hosts else 0
        self.cursor = (min(max(0, r), len(self.win.row_blocks) - 1), min(max(low, c), len(self.win.col_blocks) - 1))
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def on_resize(self, event: events.Resize) -> None:
        self._fit()

    # -- where the cursor is -----------------------------------------------------------
    @property
    def cursor_rows(self) -> range:
        return self.win.row_blocks[self.cursor[0]] if self.win.row_blocks else range(0)

    @property
    def cursor_cols(self) -> range | None:
        """The cursor's column block; None on the host column."""
        c = self.cursor[1]
        if c == HOSTS_COLUMN or not self.win.col_blocks:
            return None
        return self.win.col_blocks[c]

    @property
    def zoomed(self) -> bool:
        return len(self.zoom) > 1

    # -- keys --------------------------------------------------------------------------
    def action_move(self, dr: int, dc: int) -> None:
        if self.grid is None or not self.win.row_blocks:
            return
        r, c = self.cursor
        low = HOSTS_COLUMN if self.grid.has_hosts else 0
        self.cursor = (max(0, min(r + dr, len(self.win.row_blocks) - 1)),
                       max(low, min(c + dc, len(self.win.col_blocks) - 1)))
        self.refresh()
        self.post_message(self.CursorMoved(self))

    def action_zoom_in(self) -> None:
        rows, cols = self.cursor_rows, self.cursor_cols
        if self.grid is None or not rows:
            return
        if len(rows) == 1 and (cols is None or len(cols) == 1):
            self.post_message(self.Opened(self))
            return
        self.zoom.append((rows, cols if cols is not None else self.zoom[-1][1]))
        self.cursor = (0, self.cursor[1] if cols is None else 0)
        self._fit()

    def action_zoom_out(self) -> None:
        if len(self.zoom) > 1:
            rows, cols = self.zoom.pop()
            self._fit()
            # Put the cursor back on the block we came out of.
            r = next((i for i, b in enumerate(self.win.row_blocks) if rows.start in b), 0)
            c = next((i for i, b in enumerate(self.win.col_blocks) if cols.start in b), 0)
            self.cursor = (r, c if self.cursor[1] != HOSTS_COLUMN else HOSTS_COLUMN)
            self.refresh()
            self.post_message(self.CursorMoved(self))

    def on_click(self, event: events.Click) -> None:
        offset = event.get_content_offset(self)
        if offset is None or self.grid is None:
            return
        r = offset.y - 1
        x = offset.x - self._label_width() - 1
        hosts = CELL_W + 1 if self.grid.has_hosts else 0
        if not 0 <= r < len(self.win.row_blocks) or x < 0:
            return
        c = HOSTS_COLUMN if x < hosts else (x - hosts) // CELL_W
        if c != HOSTS_COLUMN and c >= len(self.win.col_blocks):
            return
        if (r, c) == self.cursor:
            self.action_zoom_in()
        else:
            self.cursor = (r, c)
            self.refresh()
            self.post_message(self.CursorMoved(self))

    # -- drawing -------------------------------------------------------------------------
    def _on_path(self, rows: range, cols: range | None) -> bool:
        if not self.path_cells:
            return False
        if cols is None:
            return any((r, HOSTS_COLUMN) in self.path_cells for r in rows)
        return any(r in rows and c in cols for r, c in self.path_cells)

    def render(self) -> Text:
        grid = self.grid
        if grid is None:
            return Text("no switches to map", style="dim")
        lw = self._label_width()
        out = Text(no_wrap=True, end="")
        head = " " * (lw + 1)
        if grid.has_hosts:
            head += "hst "
        head += "".join(f"{i + 1:>2} "[-CELL_W:] for i in range(len(self.win.col_blocks)))
        out.append(head.rstrip() + "\n", style="dim")
        for i, rb in enumerate(self.win.row_blocks):
            label = span_label(grid.row_labels, rb)
            if len(label) > lw:
                label = label[: max(0, lw - 1)] + "…"
            out.append(safe(f"{label:>{lw}} ", "bold" if i == self.cursor[0] else ""))
            if grid.has_hosts:
                out.append(self._cell(i, HOSTS_COLUMN, rb, None))
                out.append("│", style="dim")
            for j, cb in enumerate(self.win.col_blocks):
                out.append(self._cell(i, j, rb, cb))
            out.append("\n")
        return out

    def _cell(self, i: int, j: int, rows: range, cols: range | None) -> Text:
        state = self.states.get((i, j), EMPTY)
        g = glyph(state, self._on_path(rows, cols))
        text = Text(" ", end="")
        text.append(g)
        text.append(" ")
        if (i, j) == self.cursor:
            text.stylize("reverse" if self.has_focus else "underline")
        return text
