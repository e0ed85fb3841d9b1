"""Widgets of the fabricdoc TUI: a filterable virtual table, evidence and history views.

Every string that came from the fabric (node descriptions, host names, finding
names) is wrapped in :class:`rich.text.Text` before it reaches a widget, so it
is shown as typed and never parsed as markup: DataTable cells and Tree labels
parse plain ``str`` as markup.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from rich.segment import Segment
from rich.style import Style
from rich.text import Text
from textual import events
from textual.binding import Binding
from textual.containers import Vertical
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from textual.widgets import Label, Sparkline, Static

SEV_RANK = {"info": 0, "warning": 1, "error": 2, "critical": 3}
SEV_STYLE = {"critical": "bold white on red", "error": "bold red", "warning": "yellow", "info": "cyan", "ok": "green"}
HEALTH_GLYPH = {"critical": "✖", "error": "✖", "warning": "▲", "info": "●", "ok": "●"}


def safe(value: object, style: str = "") -> Text:
    """Untrusted text as a Text: shown literally, never parsed as markup."""
    return Text("" if value is None else str(value), style=style, no_wrap=True, end="")


def sev_text(severity: str | None) -> Text:
    """A severity (or ``ok``) as a coloured label."""
    sev = severity or "ok"
    return Text(sev, style=SEV_STYLE.get(sev, ""), end="")


def fmt_gbps(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} Gb/s"


def fmt_time(ts: float | None) -> str:
    """Epoch seconds as a UTC time of day with milliseconds (flap times are close together)."""
    if ts is None:
        return "—"
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ts)


def fmt_num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.6g}"
    return str(value)


@dataclass
class Row:
    """One table row: a stable key, its cells, the lower-case text the filter matches, sort keys."""

    key: str
    cells: tuple[Text, ...]
    search: str
    sort: dict[str, Any]


class ReportTable(ScrollView, can_focus=True):
    """A virtual table: a fixed header and rows drawn line by line, only those on screen.

    Rows live in plain lists (:class:`Row`); filter and sort rearrange the list
    and repaint, so 25,000 rows cost no widgets and no per-cell measuring
    beyond one ``cell_len`` when they are set. Keys: arrows, j/k, pgup/pgdn,
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
        self.all_rows: list[Row] = []
        self.shown: list[Row] = []
        self.filter_text = ""
        self.sort_key: str | None = None
        self.sort_reverse = False

    # -- data ----------------------------------------------------------------------
    def set_rows(self, rows: Iterable[Row]) -> None:
        self.all_rows = list(rows)
        widths = [len(c) for c in self.columns]
        for r in self.all_rows:
            for i, cell in enumerate(r.cells):
                plain = cell.plain
                n = len(plain) if plain.isascii() else cell.cell_len
                if n > widths[i]:
                    widths[i] = n
        self.widths = [min(w, self.MAX_COLUMN) for w in widths]
        self._reload()

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
        if not self.shown or not 0 <= self.cursor_row < len(self.shown):
            return None
        return self.shown[self.cursor_row].key

    def set_cell_text(self, key: str, column: int, value: Text) -> None:
        """Replace one cell (the drain mark in the what-if) without reloading."""
        for r in self.all_rows:
            if r.key == key:
                cells = list(r.cells)
                cells[column] = value
                r.cells = tuple(cells)
        self.refresh()

    def _reload(self) -> None:
        words = self.filter_text.split()
        rows = [r for r in self.all_rows if all(w in r.search for w in words)] if words else list(self.all_rows)
        if self.sort_key is not None:
            rows.sort(key=lambda r: r.sort.get(self.sort_key, 0), reverse=self.sort_reverse)
        keep = self.current_key
        self.shown = rows
        width = sum(self.widths) + 2 * len(self.widths)
        self.virtual_size = Size(width, len(rows) + 1)
        index = next((i for i, r in enumerate(rows) if r.key == keep), 0) if keep is not None else 0
        self.cursor_row = min(index, max(0, len(rows) - 1))
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
            strip = self._line(self.shown[row].cells, style)
        return strip.crop_extend(scroll_x, scroll_x + width, style)


def evidence_text(evidence: Iterable[Any]) -> Text:
    """The evidence behind a finding as lines of text: counters with rates, slow pairs, flap times."""
    out = Text(end="")
    items = list(evidence)
    if not items:
        out.append("no evidence recorded\n", style="dim")
    for ev in items:
        d = dict(ev.detail)
        kind = ev.type
        out.append(f"{kind:<9}", style="bold")
        if kind == "counter":
            out.append(safe(f"{d.pop('node', '?')}[{d.pop('port', '?')}] "))
            out.append(safe(d.pop("counter", "?"), "bold"))
            out.append(f"  Δ {fmt_num(d.pop('delta', None))}")
            rate = d.pop("per_second", None)
            if rate is not None:
                out.append(f"  ({fmt_num(rate)}/s)", style="magenta")
            interval = d.pop("interval_s", None)
            if interval is not None:
                out.append(f"  over {fmt_num(interval)} s", style="dim")
            raw = d.pop("raw", None)
            if raw:
                out.append(safe(f"  raw: {', '.join(map(str, raw))}", "dim"))
            if d.pop("at_least", False):
                out.append("  (at least: the counter saturated)", style="yellow")
            if d.pop("reset", False):
                out.append("  (counter was reset)", style="yellow")
        elif kind == "event":
            for name in ("first", "last"):
                if name in d:
                    out.append(f" {name} {fmt_time(d.pop(name))}")
            for name in ("times", "timestamps"):
                for ts in d.pop(name, None) or []:
                    out.append(f"\n          flap at {fmt_time(ts)}")
        elif kind == "pairs":
            pairs = d.pop("slow_pairs", None) or []
            wrong = d.pop("pairs", None) or []
            out.append(safe(_kv(d)))
            for p in pairs:
                out.append("\n          ")
                out.append(safe(f"{_port(p.get('src'))} → {_port(p.get('dst'))}"))
                out.append(f"  {p.get('status', '')}  {fmt_gbps(p.get('busbw_gbps'))}"
                           f" of {fmt_gbps(p.get('expected_gbps'))}")
                if p.get("ratio") is not None:
                    out.append(f"  ratio {p['ratio']:.2f}", style="red" if p["ratio"] < 0.8 else "yellow")
            for w in wrong:
                out.append("\n          ")
                out.append(safe(" ↔ ".join(map(str, w[:2])) + (f"  wrong={w[2]}" if len(w) > 2 else "")))
            d = {}
        if d:
            out.append(" ")
            out.append(safe(_kv(d)))
        out.append("\n")
    return out


def _port(p: Any) -> str:
    if isinstance(p, list | tuple) and len(p) == 2:
        return f"{p[0]}[{p[1]}]"
    return str(p)


def _kv(d: dict[str, Any]) -> str:
    return "  ".join(f"{k}={fmt_num(v)}" for k, v in d.items() if v is not None)


class HistoryView(Vertical):
    """Counter history as one sparkline per series, or a plain "no history" line."""

    def __init__(self, series: dict[str, list[float]], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.series = series

    def compose(self):
        if not self.series:
            yield Label("no history", classes="dim")
            return
        for name, values in self.series.items():
            last = fmt_num(values[-1]) if values else "—"
            yield Label(safe(f"{name}  ({len(values)} samples: min {fmt_num(min(values))}, "
                             f"max {fmt_num(max(values))}, last {last})"))
            yield Sparkline(values, summary_function=max, classes="history")


class Panel(Static):
    """A bordered block of text that never parses markup."""

    def __init__(self, content: Text | str = "", **kwargs: Any) -> None:
        super().__init__(_trim(content), markup=False, **kwargs)

    def update(self, content: Any = "", *, layout: bool = True) -> None:
        super().update(_trim(content), layout=layout)


def _trim(content: Any) -> Any:
    """Drop the trailing newline a block of lines ends with (it would show as a blank row)."""
    if isinstance(content, Text):
        content = content.copy()
        content.rstrip()
    elif isinstance(content, str):
        content = content.rstrip()
    return content
