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

from rich.text import Text
from textual.binding import Binding
from textual.containers import Vertical
from textual.widgets import DataTable, Label, Sparkline, Static

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


class ReportTable(DataTable):
    """A row-cursor DataTable over a list of :class:`Row`, with filter and sort.

    DataTable renders only the visible lines; rows are (re)loaded in one
    ``add_rows`` call, never one widget per row.
    """

    BINDINGS = [
        Binding("enter", "select_cursor", "Open"),
        Binding("j", "cursor_down", "Down", show=False),
        Binding("k", "cursor_up", "Up", show=False),
        Binding("g", "scroll_top", "Top", show=False),
        Binding("G", "scroll_bottom", "Bottom", show=False),
    ]

    def __init__(self, columns: Sequence[str], **kwargs: Any) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self._columns = list(columns)
        self.all_rows: list[Row] = []
        self.shown: list[Row] = []
        self.filter_text = ""
        self.sort_key: str | None = None
        self.sort_reverse = False

    def on_mount(self) -> None:
        self.add_columns(*self._columns)

    def set_rows(self, rows: Iterable[Row]) -> None:
        self.all_rows = list(rows)
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
    def current_key(self) -> str | None:
        if not self.shown or self.cursor_row < 0 or self.cursor_row >= len(self.shown):
            return None
        return self.shown[self.cursor_row].key

    def _reload(self) -> None:
        words = self.filter_text.split()
        rows = [r for r in self.all_rows if all(w in r.search for w in words)] if words else list(self.all_rows)
        if self.sort_key is not None:
            rows.sort(key=lambda r: r.sort.get(self.sort_key, 0), reverse=self.sort_reverse)
        keep = self.current_key
        self.shown = rows
        self.clear()
        self.add_rows([r.cells for r in rows])
        if keep is not None:
            for i, r in enumerate(rows):
                if r.key == keep:
                    self.move_cursor(row=i, animate=False)
                    break

    def set_cell_text(self, key: str, column: int, value: Text) -> None:
        """Replace one visible cell (the drain mark in the what-if) without reloading."""
        for i, r in enumerate(self.shown):
            if r.key == key:
                cells = list(r.cells)
                cells[column] = value
                r.cells = tuple(cells)
                self.update_cell_at((i, column), value)
                return


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
            yield Label(safe(f"{name}  ({len(values)} samples, last {last}, max {fmt_num(max(values))})"))
            yield Sparkline(values, summary_function=max, classes="history")


class Panel(Static):
    """A bordered block of text that never parses markup."""

    def __init__(self, content: Text | str = "", **kwargs: Any) -> None:
        super().__init__(content, markup=False, **kwargs)
