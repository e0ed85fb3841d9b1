"""The impact tab: the report's AllReduce busbw figures and a what-if where ``d`` drains hosts.

The impact model (``TabContext.impact_factory``, normally
:class:`fabricdoc.impact.busbw.ImpactModel`) is built once, in a worker the
main screen starts as soon as it is up (:meth:`ImpactTab.start_model`), so on
a large fabric it is ready by the time anyone asks a what-if; the other tabs
stay usable meanwhile (they make only the rows they draw). Each what-if runs
in a worker too; a newer key press cancels the older one.
"""

from __future__ import annotations

from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.worker import get_current_worker

from ..view import (
    WHATIF_COLUMNS,
    drain_mark,
    impact_text,
    safe,
    whatif_head,
    whatif_rows,
    whatif_text,
)
from ..widgets.panel import Panel
from ..widgets.table import ReportTable
from .tab import ReportTab, TabContext

LOADING = "loading the impact model…"
UNAVAILABLE = "impact model not available"


class ImpactTab(ReportTab):
    TAB_ID = "impact"
    TITLE = "Impact"
    KEYS = (
        ("d", "impact: toggle drain of the selected host in the what-if"),
        ("r", "impact: reset the what-if to the report's drain list"),
    )
    BINDINGS = [
        Binding("d", "toggle_drain", "Toggle drain"),
        Binding("r", "reset_drain", "Reset what-if"),
    ]

    def __init__(self, context: TabContext) -> None:
        super().__init__(context)
        self.model: Any = None
        self.live: dict[str, float] | None = None  # nominal / now / after_drain from the model
        self.model_error: str | None = LOADING
        self.drained: set[str] = self.index.drained_hosts()
        self._model_started = False

    @property
    def model_state(self) -> str:
        """``loading`` until the model is built, then ``ready`` or ``unavailable``."""
        if self.model is not None:
            return "ready"
        return "loading" if self.model_error == LOADING else "unavailable"

    def compose(self) -> ComposeResult:
        yield Panel(impact_text(self.index.report, None), id="impact-summary")
        yield Panel("", id="whatif-result")
        yield ReportTable(WHATIF_COLUMNS, id="whatif-table")

    def table(self) -> ReportTable:
        return self.query_one("#whatif-table", ReportTable)

    def load(self) -> None:
        self._fill_table()
        self._recompute()
        self.start_model()

    def start_model(self) -> None:
        """Build the model in the background, once (the main screen calls this when it is up)."""
        if not self._model_started:
            self._model_started = True
            self._load_model()

    @work(thread=True, exclusive=True, group="impact-model")
    def _load_model(self) -> None:
        model, live, error = None, None, None
        factory = self.context.impact_factory
        try:
            model = factory(self.index.report) if factory is not None else None
            if model is None:
                error = UNAVAILABLE
            else:
                drain = sorted(self.index.drain_reason)
                live = {"nominal": model.busbw(None, "ring", "nominal"), "now": model.busbw(None, "ring", "now"),
                        "after_drain": model.what_if(drain)["busbw_gbps"]}
        except Exception as exc:  # a broken model must not take the TUI down
            model, error = None, f"{UNAVAILABLE}: {type(exc).__name__}: {exc}"
        self.app.call_from_thread(self._model_ready, model, live, error)

    def _model_ready(self, model: Any, live: dict[str, float] | None, error: str | None) -> None:
        self.model, self.live, self.model_error = model, live, error
        self.query_one("#impact-summary", Panel).update(impact_text(self.index.report, live))
        if self.loaded:
            self._recompute()

    def on_unmount(self) -> None:
        close = getattr(self.model, "close", None)  # a model in a process of its own ends with the app
        if close is not None:
            close()

    def _fill_table(self) -> None:
        table = self.table()
        table.sort_key = "health"
        table.set_rows(whatif_rows(self.index, self.drained))

    def action_toggle_drain(self) -> None:
        table = self.table()
        nid = table.current_key
        if nid is None:
            return
        self.drained.symmetric_difference_update({nid})
        table.set_cell_text(nid, 0, drain_mark(nid in self.drained))
        self._recompute()

    def action_reset_drain(self) -> None:
        self.drained = self.index.drained_hosts()
        self._fill_table()
        self._recompute()

    def _recompute(self) -> None:
        if self.model is None:
            head = whatif_head(len(self.drained))
            head.append(safe(self.model_error or UNAVAILABLE, "yellow"))
            self.query_one("#whatif-result", Panel).update(head)
            return
        self._what_if(sorted(self.index.host_name[h] for h in self.drained))

    @work(thread=True, exclusive=True, group="what-if")
    def _what_if(self, hosts: list[str]) -> None:
        worker = get_current_worker()
        try:
            result = self.model.what_if(hosts)
        except Exception as exc:  # the model is another layer: show its failure, keep running
            result = {"error": f"{type(exc).__name__}: {exc}"}
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_what_if, len(hosts), result)

    def _show_what_if(self, drained: int, result: dict[str, Any]) -> None:
        self.query_one("#whatif-result", Panel).update(whatif_text(self.index, drained, result, self.live))

