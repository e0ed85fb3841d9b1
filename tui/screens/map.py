"""The map tab: the fabric as leaf x spine (and unit x rail) grids coloured by health,
zoomable from blocks of switches to one switch's ports, and a host pair's routed path on it."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import VerticalScroll
from textual.widget import Widget
from textual.worker import get_current_worker

from fabricdoc.model.text import escape

from ..fabric_map import (
    Hop,
    MapGrid,
    build_grids,
    compact_states,
    describe_block,
    legend,
    parse_end,
    route,
    route_text,
)
from ..formatting import safe
from ..widgets.fabric_map import FabricMap
from ..widgets.panel import Panel
from .detail import DetailScreen
from .modals import RouteScreen
from .tab import ReportTab, TabContext

MAP_ROWS_MAX = 1000
MODEL_WAIT_S = 900.0  # the longest a route waits for the impact model before routing here
ROUTE_SOURCE = "routed by fabricdoc's model of the fabric (up/down routing; the report carries no forwarding tables)"


class MapTab(ReportTab):
    TAB_ID = "map"
    TITLE = "Map"
    KEYS = (
        ("h j k l", "map: move between cells (arrows too)"),
        ("enter / bksp", "map: zoom in, or open a cable or switch / zoom out"),
        ("v", "map: next grid (leaf x spine, upper levels, unit x rail)"),
        ("o", "map: open the switch of the cursor's row (its ports)"),
        ("p / x", "map: route a host pair and mark its path / clear the path"),
        ("i", "map: the cursor's cable out of service in the what-if (again: back)"),
    )
    BINDINGS = [
        Binding("v", "next_grid", "Next grid"),
        Binding("o", "open_switch", "Open switch"),
        Binding("p", "route", "Route pair"),
        Binding("x", "clear_route", "Clear route"),
        Binding("i", "isolate", "Isolate in what-if"),
    ]

    def __init__(self, context: TabContext) -> None:
        super().__init__(context)
        self.grids: list[MapGrid] = []
        self.grid_at = 0
        self.ready = False
        self.hops: list[Hop] = []
        self.route_note: Text | None = None
        self._last_pair = ""

    def compose(self) -> ComposeResult:
        yield FabricMap(self.index, id="fabric-map")
        with VerticalScroll(id="map-info-box"):
            yield Panel("drawing the map…", id="map-info")

    def focus_target(self) -> Widget:
        return self.query_one("#fabric-map", FabricMap)

    def load(self) -> None:
        self._build()

    @work(thread=True, exclusive=True, group="map")
    def _build(self) -> None:
        worker = get_current_worker()
        grids = build_grids(self.index)  # off the event loop: ~1 s at 65,536 hosts
        if grids:
            compact_states(self.index, grids[0])  # the first grid's cells, as it is drawn first
        self.app.call_from_thread(self._built, grids)
        for grid in grids[1:]:  # the others while the first is looked at, so v shows them at once
            if worker.is_cancelled:
                return
            compact_states(self.index, grid)

    def _built(self, grids: list[MapGrid]) -> None:
        self.grids = grids
        self.ready = True
        if grids:
            self._show_grid(0)
        else:
            self.query_one("#map-info", Panel).update(Text("no switches to map in this report", style="yellow"))

    @property
    def fabric_map(self) -> FabricMap:
        return self.query_one("#fabric-map", FabricMap)

    @property
    def grid(self) -> MapGrid | None:
        return self.grids[self.grid_at] if self.grids else None

    def _show_grid(self, at: int) -> None:
        self.grid_at = at % len(self.grids)
        grid = self.grids[self.grid_at]
        names = " · ".join(f"▸{g.name}" if i == self.grid_at else g.name for i, g in enumerate(self.grids))
        fm = self.fabric_map
        fm.border_title = escape(f"map: {names}  (v: next)")
        fm.styles.max_height = min(len(grid.rows), MAP_ROWS_MAX) + 3  # a small grid leaves the room to the text
        fm.border_subtitle = f"{len(grid.rows):,} {grid.row_kind} x {len(grid.cols):,} {grid.col_kind}"
        fm.show_grid(grid)

    def action_next_grid(self) -> None:
        if self.grids:
            self._show_grid(self.grid_at + 1)

    @on(FabricMap.CursorMoved, "#fabric-map")
    def cursor_moved(self, event: FabricMap.CursorMoved) -> None:
        self._describe()

    def _describe(self) -> None:
        fm, grid = self.fabric_map, self.grid
        if grid is None or not fm.win.row_blocks:
            return
        text = describe_block(self.index, grid, fm.cursor_rows, fm.cursor_cols)
        zoom = f"  (zoomed in {len(fm.zoom) - 1}x: backspace zooms out)" if fm.zoomed else ""
        text.append(zoom, style="dim")
        text.append("\n")
        text.append(legend())
        if self.route_note is not None:
            text.append("\n\n")
            text.append(self.route_note)
        self.query_one("#map-info", Panel).update(text)

    # -- opening -----------------------------------------------------------------------
    @on(FabricMap.Opened, "#fabric-map")
    def open_cell(self, event: FabricMap.Opened) -> None:
        fm, grid = self.fabric_map, self.grid
        if grid is None:
            return
        r = fm.cursor_rows.start
        cols = fm.cursor_cols
        if cols is None:
            self.app.push_screen(DetailScreen(self.index, node=grid.rows[r]))
        elif grid.node_cells:
            nid = grid.cell_nodes.get((r, cols.start))
            if nid is not None:
                self.app.push_screen(DetailScreen(self.index, node=nid))
        else:
            lids = grid.cells.get((r, cols.start), [])
            if len(lids) == 1:
                self.app.push_screen(DetailScreen(self.index, link=lids[0]))
            elif lids:
                self.app.push_screen(DetailScreen(self.index, node=grid.rows[r]))

    def action_open_switch(self) -> None:
        fm, grid = self.fabric_map, self.grid
        if grid is None or not fm.win.row_blocks or len(fm.cursor_rows) != 1:
            self.notify("zoom in to one switch first (enter)", timeout=2)
            return
        r = fm.cursor_rows.start
        cols = fm.cursor_cols
        nid = grid.cell_nodes.get((r, cols.start)) if grid.node_cells and cols is not None else None
        if grid.node_cells and nid is None:
            self.notify("put the cursor on one switch", timeout=2)
            return
        self.app.push_screen(DetailScreen(self.index, node=nid or grid.rows[r]))

    def action_isolate(self) -> None:
        """The cable under the cursor out of service in the impact tab's what-if (or back in)."""
        fm, grid = self.fabric_map, self.grid
        cols = fm.cursor_cols
        lids = [] if grid is None or grid.node_cells or cols is None or len(fm.cursor_rows) != 1 or len(cols) != 1 \
            else grid.cells.get((fm.cursor_rows.start, cols.start), [])
        if len(lids) != 1:
            self.notify("put the cursor on one cable between two switches first", timeout=2)
            return
        out = self.screen.query_one("#impact-tab").toggle_link(lids[0])  # type: ignore[attr-defined]
        self.notify(escape(f"{self.index.link_name(lids[0])} {'out of service' if out else 'back in service'}"
                           " in the what-if (tab 5)"), markup=False, timeout=3)

    # -- routes ------------------------------------------------------------------------
    def action_route(self) -> None:
        self.app.push_screen(RouteScreen(self._last_pair), self._route_asked)

    def _route_asked(self, text: str | None) -> None:
        if not text or not text.strip():
            return
        self._last_pair = text.strip()
        parts = text.split()
        try:
            if len(parts) != 2:
                raise ValueError(f"give two hosts, got {len(parts)} word(s)")
            src, dst = parse_end(self.index, parts[0]), parse_end(self.index, parts[1])
        except ValueError as exc:
            self._set_route([], Text(f"route: {exc}", style="red"))
            return
        self._set_route([], Text(f"routing {parts[0]} → {parts[1]} …", style="dim"))
        self._route(src, dst)

    @work(thread=True, exclusive=True, group="route")
    def _route(self, src: tuple[str, int], dst: tuple[str, int]) -> None:
        worker = get_current_worker()
        try:
            fabric = self._route_fabric()
            if worker.is_cancelled:  # the app quit (or a newer route was asked) while it waited
                return
            hops = route(fabric, src, dst)
            note = route_text(self.index, src, dst, hops, ROUTE_SOURCE)
        except Exception as exc:  # a route the model cannot find is shown, not fatal
            hops, note = [], safe(f"route: {type(exc).__name__}: {exc}", "red")
        if not worker.is_cancelled:
            self.app.call_from_thread(self._set_route, hops, note)

    def _route_fabric(self) -> Any:
        """The fabric to route on: the impact model's (in its process, where routing is warm),
        else the report's, shared with the rest of the app (:meth:`ReportIndex.fabric`). While the
        model builds this waits for it (in a worker): routing a 65,536-host fabric here would hold
        the app's GIL for seconds."""
        impact = self.screen.query_one("#impact-tab")
        if self.context.impact_factory is not None and not impact.settled.is_set():  # type: ignore[attr-defined]
            self.app.call_from_thread(self._set_route, [], Text("routing waits for the impact model's fabric …",
                                                                 style="dim"))
            impact.settled.wait(MODEL_WAIT_S)  # type: ignore[attr-defined]
        model = getattr(impact, "model", None)
        if model is not None and hasattr(model, "route"):
            return _Routed(model)
        if model is not None and hasattr(model, "fabric"):
            return model.fabric
        return self.index.fabric()  # rebuilt once per report, shared with the other screens

    def _set_route(self, hops: list[Hop], note: Text | None) -> None:
        self.hops = hops
        self.route_note = note
        self.fabric_map.set_path(frozenset(h.link for h in hops))
        self._describe()

    def action_clear_route(self) -> None:
        self._set_route([], None)


class _Routed:
    """A fabric whose :meth:`path` is answered by the impact model's process (it holds the routing)."""

    def __init__(self, model: Any) -> None:
        self.model = model

    def path(self, src: Any, dst: Any) -> Any:
        return self.model.route(tuple(src), tuple(dst))
