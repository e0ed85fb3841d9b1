"""MainScreen: the report as tabs (:data:`TABS`), with one filter box for the shown tab's table.

To add a tab, write a :class:`~fabricdoc.tui.screens.tab.ReportTab` subclass in
a module here and list it in :data:`TABS`: its number key, its footer keys and
its lines in the help come with it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, Input, TabbedContent, TabPane

from fabricdoc.model.text import escape
from fabricdoc.report.report import Report

from ..index import ReportIndex
from ..widgets.table import ReportTable
from .findings import FindingsTab
from .hosts import HostsTab
from .impact import ImpactTab
from .links import LinksTab
from .map import MapTab
from .overview import OverviewTab
from .tab import ReportTab, TabContext

TABS: tuple[type[ReportTab], ...] = (OverviewTab, FindingsTab, HostsTab, LinksTab, ImpactTab, MapTab)
PRELOADED = (FindingsTab.TAB_ID,)  # filled at start: small, and the first place people look
FILTER_FALLBACK = HostsTab.TAB_ID  # "/" on a tab without a table filters this one
FILTER_DELAY_S = 0.12  # typing faster than this filters once


def key_help() -> str:
    """The help screen's text: the app's keys, every tab's own keys, the mouse."""
    lines = [
        (f"1-{len(TABS)}", " · ".join(t.TITLE.lower() for t in TABS)),
        ("tab", "move focus (tab bar, table, filter)"),
        ("j / k, ↑ ↓", "move in a table or the tree; pgup/pgdn, g/G top/bottom"),
        ("enter", "open the selected finding, host, link or switch"),
        ("escape", "back / close the filter"),
        ("/", "filter the table (every word must match); escape clears"),
        *(line for t in TABS for line in t.KEYS),
        ("e", "export a summary for a ticket (what the filter shows, the what-if) as .md/.txt, or the report as .json"),
        ("?", "this help"),
        ("q", "quit"),
    ]
    body = "\n".join(f"  {keys:<12} {what}" for keys, what in lines)
    columns = "\n".join(f"  {name:<12} {what}" for name, what in (
        ("conf", "how sure the finding is, 0-1 (equally likely alternatives split it)"),
        ("component", "the part named: a cable's two ends, a switch, a NIC or a host"),
        ("id", "the finding's one name (six hex digits of its key's hash): the same in every sweep, in drain reasons and metrics"),
        ("evidence", "how many pieces of evidence the finding carries (open it to read them)"),
        ("speed", "lanes x Gb/s per lane as trained (and what both ends support when lower)"),
        ("busbw", "AllReduce bus bandwidth in Gb/s, as nccl-tests reports it"),
    ))
    return (
        "fabricdoc tui — keys\n\n" + body + "\n\ncolumns\n" + columns + "\n\n"
        "The mouse works: click tabs, tree nodes, column headers (findings: sort)\n"
        "and rows (a second click on the highlighted row opens it); the wheel scrolls.\n"
    )


class MainScreen(Screen[None]):
    """The report: one tab per entry of :data:`TABS`."""

    BINDINGS = [
        *(Binding(str(n), f"tab('{t.TAB_ID}')", t.TITLE) for n, t in enumerate(TABS, 1)),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
    ]

    def __init__(self, index: ReportIndex, impact_factory: Callable[[Report], Any] | None) -> None:
        super().__init__()
        self.index = index
        self.context = TabContext(index, impact_factory)
        rep = index.report
        self.title = f"fabricdoc — {escape(rep.fabric.get('name', ''))}"
        self.sub_title = f"{rep.verdict.upper()} · {len(rep.findings)} findings · {rep.generated_at}"
        self._filter_timer: Timer | None = None

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with TabbedContent(initial=TABS[0].TAB_ID, id="tabs"):
            for n, tab in enumerate(TABS, 1):
                with TabPane(f"{n} {tab.TITLE}", id=tab.TAB_ID):
                    yield tab(self.context)
        yield Input(placeholder="filter: words to match, enter to keep, escape to clear", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        for tab_id in PRELOADED:
            self.tab(tab_id).shown()
        self._show(self.active_tab)
        self.call_after_refresh(self.query_one(ImpactTab).start_model)  # once the screen is drawn

    # -- tabs ------------------------------------------------------------------------
    @property
    def active_tab(self) -> str:
        return self.query_one("#tabs", TabbedContent).active

    def tab(self, tab_id: str) -> ReportTab:
        return self.query_one(f"#{tab_id}-tab", ReportTab)

    def active_table(self) -> ReportTable | None:
        return self.tab(self.active_tab).table()

    def action_tab(self, tab_id: str) -> None:
        self.query_one("#tabs", TabbedContent).active = tab_id

    @on(TabbedContent.TabActivated, "#tabs")
    def tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._show(event.pane.id or "")

    def _show(self, tab_id: str) -> None:
        tab = self.tab(tab_id)
        tab.shown()
        self.refresh_bindings()
        target = tab.focus_target()
        if target is not None and not self.query_one("#filter", Input).has_focus:
            target.focus()

    # -- filter ----------------------------------------------------------------------
    def action_filter(self) -> None:
        if self.active_table() is None:
            self.action_tab(FILTER_FALLBACK)
            self.tab(FILTER_FALLBACK).shown()
        box = self.query_one("#filter", Input)
        table = self.active_table()
        box.value = table.filter_text if table else ""
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(FILTER_DELAY_S, self._apply_filter)

    def _apply_filter(self) -> None:
        table = self.active_table()
        if table is not None:
            table.apply_filter(self.query_one("#filter", Input).value)
            table.border_subtitle = f"{len(table.shown):,} of {len(table.all_rows):,}" if table.filter_text else ""

    @on(Input.Submitted, "#filter")
    def filter_done(self, event: Input.Submitted) -> None:
        self._apply_filter()
        box = self.query_one("#filter", Input)
        if not box.value.strip():
            box.display = False
        table = self.active_table()
        if table is not None:
            table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if not box.display:
            return
        box.value = ""
        box.display = False
        table = self.active_table()
        if table is not None:
            table.apply_filter("")
            table.border_subtitle = ""
            table.focus()
