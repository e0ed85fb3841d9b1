"""The impact tab: the report's AllReduce busbw figures and a what-if where ``d`` drains hosts.

The impact model (``TabContext.impact_factory``, normally
:class:`fabricdoc.impact.busbw.ImpactModel`) is built once, in a worker the
main screen starts as soon as it is up (:meth:`ImpactTab.start_model`), so on
a large fabric it is ready by the time anyone asks a what-if; the other tabs
stay usable meanwhile (they make only the rows they draw). Each what-if runs
in a worker too; a newer key press cancels the older one.
"""

from __future__ import annotations

import threading
import time
from typing import Any

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.worker import get_current_worker

from fabricdoc.report.ticket import WhatIf

from ..formatting import safe
from ..impact_view import impact_text, whatif_head, whatif_text
from ..index import LinkId
from ..rows import WHATIF_COLUMNS, drain_mark, whatif_rows
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
        ("i", "impact: the links with findings out of service in the what-if (again: back)"),
        ("r", "impact: reset the what-if to the report's drain list"),
    )
    BINDINGS = [
        Binding("d", "toggle_drain", "Toggle drain"),
        Binding("i", "toggle_isolate", "Isolate faulty links"),
        Binding("r", "reset_drain", "Reset what-if"),
    ]

    def __init__(self, context: TabContext) -> None:
        super().__init__(context)
        self.model: Any = None
        self.live: dict[str, float] | None = None  # nominal / now / after_drain from the model
        self.model_error: str | None = LOADING
        self.drained: set[str] = self.index.drained_hosts()
        self.isolated: set[LinkId] = set()  # cables out of service in the what-if
        self.last_result: dict[str, Any] | None = None
        self._model_started = False
        self._building: Any = None  # the factory's model while it builds
        self.settled = threading.Event()  # set once the model is ready or known unavailable
        self.settled_at: float | None = None  # time.perf_counter() then: what the benchmark reports

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
        worker = get_current_worker()
        try:
            model = factory(self.index.report) if factory is not None else None
            self._building = model  # closed by on_unmount even before it answers
            if model is None:
                error = UNAVAILABLE
            else:
                drain = sorted(self.index.drain_reason)
                live = {"nominal": model.busbw(None, "ring", "nominal"), "now": model.busbw(None, "ring", "now"),
                        "after_drain": model.what_if(drain)["busbw_gbps"]}
        except Exception as exc:  # a broken model must not take the TUI down
            model, error = None, f"{UNAVAILABLE}: {type(exc).__name__}: {exc}"
        if not worker.is_cancelled:  # the app may have quit while the model was building
            self.app.call_from_thread(self._model_ready, model, live, error)

    def _model_ready(self, model: Any, live: dict[str, float] | None, error: str | None) -> None:
        self.model, self.live, self.model_error = model, live, error
        self.settled_at = time.perf_counter()
        self.settled.set()
        self.query_one("#impact-summary", Panel).update(impact_text(self.index.report, live))
        if self.loaded:
            self._recompute()

    def on_unmount(self) -> None:
        # A model in a process of its own ends with the app, built or still building.
        close = getattr(self.model if self.model is not None else self._building, "close", None)
        if close is not None:
            close()
        self.settled.set()  # nothing waits for a model that will never come

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

    def action_toggle_isolate(self) -> None:
        """Take every cable a finding names out of service in the what-if, or put them back."""
        faulty = set(self.index.unhealthy_links())
        self.isolated = set() if self.isolated else faulty
        if not faulty:
            self.notify("no link has a finding", timeout=2)
        self._recompute()

    def toggle_link(self, lid: LinkId) -> bool:
        """Put one cable out of service in the what-if, or back; True when it is out now."""
        self.isolated.symmetric_difference_update({lid})
        self._recompute()
        return lid in self.isolated

    def action_reset_drain(self) -> None:
        self.drained = self.index.drained_hosts()
        self.isolated = set()
        self._fill_table()
        self._recompute()

    def _recompute(self) -> None:
        if self.model is None:
            head = whatif_head(len(self.drained), len(self.isolated))
            head.append(safe(self.model_error or UNAVAILABLE, "yellow"))
            self.query_one("#whatif-result", Panel).update(head)
            return
        links = [[list(a), list(b)] for a, b in sorted(self.isolated)]
        self._what_if(sorted(self.index.host_name[h] for h in self.drained), links)

    @work(thread=True, exclusive=True, group="what-if")
    def _what_if(self, hosts: list[str], links: list[list[list[Any]]]) -> None:
        worker = get_current_worker()
        try:
            # Isolation is asked for only when there is some: a model without it still answers drains.
            result = self.model.what_if(hosts, ("ring",), links) if links else self.model.what_if(hosts)
        except Exception as exc:  # the model is another layer: show its failure, keep running
            result = {"error": f"{type(exc).__name__}: {exc}"}
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_what_if, len(hosts), result, len(links))

    def _show_what_if(self, drained: int, result: dict[str, Any], isolated: int = 0) -> None:
        self.last_result = result  # what the export writes beside the drains and cables it was asked for
        self.query_one("#whatif-result", Panel).update(whatif_text(self.index, drained, result, self.live, isolated))

    def what_if(self) -> WhatIf | None:
        """The what-if on screen (hosts drained, cables out of service, its figures), when it differs from
        the report's own drain list; None otherwise (nothing tried)."""
        if self.drained == self.index.drained_hosts() and not self.isolated:
            return None
        hosts = tuple(sorted(self.index.host_name[h] for h in self.drained))
        links = tuple([list(a), list(b)] for a, b in sorted(self.isolated))
        return WhatIf(hosts, links, dict(self.last_result or {}))

