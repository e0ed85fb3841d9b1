"""The fabric map, without Textual: switch-level grids (leaf x spine, rail x unit) and host-pair routes.

A :class:`MapGrid` is one picture of the fabric: rows are the switches of one
level, columns those of the level above (or units x rails for a rail-optimized
fabric), and each cell holds the cables between its row and its column, with
their worst health and lowest trained capacity. A grid too big for the screen
is drawn in blocks (:func:`window`): each shown cell merges a range of rows and
columns, and zooming into a block shows it in full. Everything here is plain
data built from a :class:`~fabricdoc.tui.index.ReportIndex`, so it is tested
without a terminal.
"""

from __future__ import annotations

import functools
import math
import re
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from rich.text import Text

from fabricdoc.model.severity import Severity, worst

from .formatting import SEV_STYLE, fmt_gbps, port_name, safe, sev_text
from .index import LinkId, ReportIndex, switch_level

HOSTS_COLUMN = -1  # the column of a leaf row's host cables
GLYPH_NONE = "·"
GLYPH_FULL = "■"
GLYPH_REDUCED = "▄"  # trained below what both ends support (half width, lower lane rate)
GLYPH_DOWN = "✖"
GLYPH_PATH = "◆"
BUSY, SATURATED = 0.5, 0.9  # a healthy cable's load (share of its trained rate) that colours its cell


def natural_key(text: str) -> tuple[Any, ...]:
    """``leaf2`` before ``leaf10``: digits compared as numbers."""
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", text))


@dataclass(frozen=True)
class CellState:
    """What one cell (or a block of cells) holds: cables, the worst health, the lowest capacity."""

    links: int = 0
    bad: int = 0
    down: int = 0
    health: Severity | None = None
    capacity: float | None = None  # trained Gb/s over what both ends support, the lowest cable's
    load: float | None = None  # the busiest cable's load during the sweep (0..1); None: no counter told it

    def merge(self, other: CellState) -> CellState:
        caps = [c for c in (self.capacity, other.capacity) if c is not None]
        loads = [x for x in (self.load, other.load) if x is not None]
        return CellState(self.links + other.links, self.bad + other.bad, self.down + other.down,
                         worst([s for s in (self.health, other.health) if s is not None]),
                         min(caps) if caps else None, max(loads) if loads else None)


EMPTY = CellState()


def link_state(index: ReportIndex, lids: Iterable[LinkId]) -> CellState:
    """The state of some cables: how many, how many with findings or down, worst health, lowest capacity."""
    out = EMPTY
    for lid in lids:
        lk = index.links.get(lid)
        if lk is None:
            continue
        health = index.link_health(lid)
        nominal = (lk.get("max_lanes") or lk["lanes"]) * (lk.get("max_lane_gbps") or lk["lane_gbps"])
        cap = (lk["lanes"] * lk["lane_gbps"] / nominal) if nominal else None
        out = out.merge(CellState(1, int(health is not None), int(lk.get("state") == "down"), health, cap,
                                  lk.get("load")))
    return out


@dataclass
class MapGrid:
    """One grid of the map: ``rows`` x ``cols`` node ids, the cables of each cell, and per row its host cables."""

    name: str
    row_kind: str
    col_kind: str
    rows: list[str]
    cols: list[str]
    row_labels: list[str]
    col_labels: list[str]
    node_cells: bool = False  # a cell is one switch (rail x unit), not the cables between two
    cell_nodes: dict[tuple[int, int], str] = field(default_factory=dict)
    fill: Callable[[MapGrid], None] | None = field(default=None, repr=False, compare=False)
    """Puts the cables in :attr:`cells` and :attr:`host_links` on their first use (a grid not
    shown yet costs nothing); None once they are there."""
    _cells: dict[tuple[int, int], list[LinkId]] = field(default_factory=dict, repr=False)
    _host_links: dict[int, list[LinkId]] = field(default_factory=dict, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    _compact: dict[tuple[int, int], tuple[int, int, int, int, float]] | None = field(default=None, repr=False)

    def _filled(self) -> None:
        if self.fill is not None:
            with self._lock:  # the map's worker and the event loop may both ask
                if self.fill is not None:
                    self.fill(self)
                    self.fill = None

    @property
    def cells(self) -> dict[tuple[int, int], list[LinkId]]:
        """The cables of each cell ``(row, col)`` (a switch's for a rail x unit grid)."""
        self._filled()
        return self._cells

    @property
    def host_links(self) -> dict[int, list[LinkId]]:
        """Each row's host cables."""
        self._filled()
        return self._host_links

    @property
    def has_hosts(self) -> bool:
        return bool(self.host_links)

    def block_state(self, index: ReportIndex, rows: range, cols: range | None) -> CellState:
        """The merged state of a block (``cols=None``: the host column of those rows)."""
        states = window_states(index, self, Window((rows,), (cols if cols is not None else range(0, 1),)))
        return states.get((0, HOSTS_COLUMN if cols is None else 0), EMPTY)


LEVEL_WORDS = {2: {2: "spine", 1: "leaf"}, 3: {3: "core", 2: "aggregation", 1: "edge"}}


def build_grids(index: ReportIndex) -> list[MapGrid]:
    """The map's grids: every pair of adjacent switch levels (lower x upper), then rail x unit
    when the leaves carry ``unit`` and ``rail`` (a rail-optimized fabric)."""
    level = switch_level(index)
    top = max(level.values(), default=0)
    words = LEVEL_WORDS.get(top, {})
    by_level: dict[int, list[str]] = defaultdict(list)
    for nid, lv in level.items():
        by_level[lv].append(nid)
    for ids in by_level.values():
        ids.sort(key=lambda n: natural_key(index.label(n)))
    grids = []
    for lower in sorted(by_level)[:-1] if len(by_level) > 1 else []:
        upper = lower + 1
        if upper not in by_level:
            continue
        rows, cols = by_level[lower], by_level[upper]
        grids.append(MapGrid(
            name=f"{words.get(lower, f'level {lower}')} x {words.get(upper, f'level {upper}')}",
            row_kind=words.get(lower, f"level {lower}"), col_kind=words.get(upper, f"level {upper}"),
            rows=rows, cols=cols, row_labels=[index.label(n) for n in rows], col_labels=[index.label(n) for n in cols],
            fill=functools.partial(_cable_cells, index, lower == 1),
        ))
    rails = rail_grid(index, by_level.get(1, []))
    if rails is not None:
        grids.append(rails)
    return grids


def _cable_cells(index: ReportIndex, with_hosts: bool, grid: MapGrid) -> None:
    """A level grid's cells: each row switch's cables to the column switches, in port order
    (and, for leaves, to their hosts)."""
    row_at = {nid: i for i, nid in enumerate(grid.rows)}
    col_at = {nid: i for i, nid in enumerate(grid.cols)}
    cells, host_links = grid._cells, grid._host_links
    for nid in grid.rows:
        r = row_at[nid]
        for lid, _mine, (peer, _) in index.ports_of(nid):
            c = col_at.get(peer)
            if c is not None:
                cells.setdefault((r, c), []).append(lid)
            elif with_hosts and index.nodes.get(peer, {}).get("kind") == "host":
                host_links.setdefault(r, []).append(lid)


def rail_grid(index: ReportIndex, leaves: Sequence[str]) -> MapGrid | None:
    """Units x rails of a rail-optimized fabric: each cell one leaf, with all of its cables."""
    place: dict[tuple[Any, Any], str] = {}
    for nid in leaves:
        attrs = index.nodes[nid].get("attrs", {})
        if "unit" not in attrs or "rail" not in attrs:
            return None
        place[(attrs["unit"], attrs["rail"])] = nid
    if not place:
        return None
    units = sorted({u for u, _ in place}, key=lambda v: natural_key(str(v)))
    rails = sorted({r for _, r in place}, key=lambda v: natural_key(str(v)))

    def name(kind: str, v: Any) -> str:
        return f"{kind}{v + 1}" if isinstance(v, int) else f"{kind}{v}"

    grid = MapGrid(name="unit x rail", row_kind="unit", col_kind="rail", rows=[name("su", u) for u in units],
                   cols=[name("r", r) for r in rails], row_labels=[name("su", u) for u in units],
                   col_labels=[name("r", r) for r in rails], node_cells=True)
    for (u, r), nid in place.items():
        key = (units.index(u), rails.index(r))
        grid.cells[key] = [lid for lid, _, _ in index.ports_of(nid)]
        grid.cell_nodes[key] = nid
    return grid


# -- the shown window ----------------------------------------------------------------

@dataclass(frozen=True)
class Window:
    """What is on screen of a grid: the zoomed-to ranges cut into at most ``rows x cols`` blocks."""

    row_blocks: tuple[range, ...]
    col_blocks: tuple[range, ...]

    @property
    def unit(self) -> bool:
        """Every block is one row and one column: cells are single cables (or switches)."""
        return all(len(b) == 1 for b in self.row_blocks) and all(len(b) == 1 for b in self.col_blocks)


def blocks(span: range, most: int) -> tuple[range, ...]:
    """``span`` cut into at most ``most`` contiguous ranges of equal size (the last may be shorter)."""
    size = max(1, math.ceil(len(span) / max(1, most)))
    return tuple(range(i, min(i + size, span.stop)) for i in range(span.start, span.stop, size))


def window(rows: range, cols: range, max_rows: int, max_cols: int) -> Window:
    return Window(blocks(rows, max_rows), blocks(cols, max_cols))


_BY_RANK = {s.rank: s for s in Severity}


def compact_states(index: ReportIndex, grid: MapGrid) -> dict[tuple[int, int], tuple[int, int, int, int, float, float]]:
    """Each cell as ``(cables, with findings, down, worst severity rank or -1, lowest capacity, highest load
    or -1)``,
    ``(row, HOSTS_COLUMN)`` for a row's host cables; made once per grid in one pass (65,536 cables)."""
    cached = grid._compact
    if cached is not None:
        return cached
    bad = {lid: sev.rank for lid, sev in index.unhealthy_links().items()}
    links = index.links

    def one(lids: list[LinkId]) -> tuple[int, int, int, int, float, float]:
        n_bad = down = 0
        rank = -1
        cap = 2.0
        load = -1.0
        for lid in lids:
            lk = links[lid]
            r = bad.get(lid, -1)
            if r >= 0:
                n_bad += 1
                rank = max(rank, r)
            if lk.get("state") == "down":
                down += 1
            nominal = (lk.get("max_lanes") or lk["lanes"]) * (lk.get("max_lane_gbps") or lk["lane_gbps"])
            if nominal:
                cap = min(cap, lk["lanes"] * lk["lane_gbps"] / nominal)
            used = lk.get("load")
            if used is not None and used > load:
                load = used
        return (len(lids), n_bad, down, rank, cap, load)

    out = {key: one(lids) for key, lids in grid.cells.items()}
    out.update(((r, HOSTS_COLUMN), one(lids)) for r, lids in grid.host_links.items())
    grid._compact = out
    return out


def window_states(index: ReportIndex, grid: MapGrid, win: Window) -> dict[tuple[int, int], CellState]:
    """Every shown block's merged state, ``(block row, block column)`` -> state; column
    ``HOSTS_COLUMN`` holds each block row's host cables. One pass over the grid's cells."""
    if not win.row_blocks or not win.col_blocks:
        return {}
    r0, rsize, rstop = win.row_blocks[0].start, len(win.row_blocks[0]), win.row_blocks[-1].stop
    c0, csize, cstop = win.col_blocks[0].start, len(win.col_blocks[0]), win.col_blocks[-1].stop
    acc: dict[tuple[int, int], list[Any]] = {}
    for (r, c), (n, n_bad, down, rank, cap, load) in compact_states(index, grid).items():
        if not r0 <= r < rstop:
            continue
        if c == HOSTS_COLUMN:
            key = ((r - r0) // rsize, HOSTS_COLUMN)
        elif c0 <= c < cstop:
            key = ((r - r0) // rsize, (c - c0) // csize)
        else:
            continue
        a = acc.get(key)
        if a is None:
            acc[key] = [n, n_bad, down, rank, cap, load]
        else:
            a[0] += n
            a[1] += n_bad
            a[2] += down
            if rank > a[3]:
                a[3] = rank
            if cap < a[4]:
                a[4] = cap
            if load > a[5]:
                a[5] = load
    return {key: CellState(n, n_bad, down, _BY_RANK.get(rank), None if cap > 1.5 else cap, None if load < 0 else load)
            for key, (n, n_bad, down, rank, cap, load) in acc.items()}


def span_label(labels: Sequence[str], span: range) -> str:
    """A row or column block's name: its one member, else ``first…last``."""
    if len(span) == 1:
        return labels[span.start]
    return f"{labels[span.start]}…{labels[span.stop - 1]}"


def load_style(load: float | None) -> str:
    """A healthy cell's colour by its busiest cable's load: green, cyan from BUSY, magenta from SATURATED."""
    if load is not None and load >= SATURATED:
        return "bold magenta"
    if load is not None and load >= BUSY:
        return "cyan"
    return "green"


def glyph(state: CellState, on_path: bool = False) -> Text:
    """One cell as a coloured glyph: ■ by health (a healthy one by load), ▄ trained below capacity, ✖ down, · no cable."""
    if not state.links:
        return Text(GLYPH_NONE, style="dim", end="")
    style = SEV_STYLE[str(state.health)] if state.health is not None else load_style(state.load)
    if on_path:
        return Text(GLYPH_PATH, style=f"{style} bold", end="")
    if state.down:
        return Text(GLYPH_DOWN, style=SEV_STYLE["error"], end="")
    if state.capacity is not None and state.capacity < 0.999:
        return Text(GLYPH_REDUCED, style=style, end="")
    return Text(GLYPH_FULL, style=style, end="")


LEGEND = (("■", "green", "ok"), ("■", "cyan", "busy"), ("■", "bold magenta", "saturated"),
          ("■", "yellow", "warning"), ("■", "bold red", "error"),
          ("■", "bold white on red", "critical"), ("▄", "", "below capacity"), ("✖", "bold red", "down"),
          ("◆", "bold", "path"), ("·", "dim", "no cable"))


def legend() -> Text:
    out = Text(end="")
    for i, (g, style, what) in enumerate(LEGEND):
        out.append("  " if i else "")
        out.append(g, style=style)
        out.append(f" {what}", style="dim")
    return out


def describe_block(index: ReportIndex, grid: MapGrid, rows: range, cols: range | None) -> Text:
    """What the cursor is on: a block's totals, or one cell's cables with their speed and findings."""
    state = grid.block_state(index, rows, cols)
    out = Text(end="")
    where = span_label(grid.row_labels, rows)
    out.append(safe(where, "bold"))
    out.append("  ×  ")
    out.append("hosts" if cols is None else safe(span_label(grid.col_labels, cols), "bold"))
    out.append(f"\n{state.links:,} cable{'s' if state.links != 1 else ''}, {state.bad:,} with findings, "
               f"{state.down:,} down  worst ")
    out.append(sev_text(state.health))
    if state.capacity is not None and state.capacity < 0.999:
        out.append(f"  lowest capacity {state.capacity:.0%}", style="yellow")
    if state.load is not None:
        out.append(f"  busiest {state.load:.0%} loaded", style=load_style(state.load))
    single = len(rows) == 1 and (cols is None or len(cols) == 1)
    if not single:
        out.append("\nenter zooms in", style="dim")
        return out
    r = rows.start
    lids = grid.host_links.get(r, []) if cols is None else grid.cells.get((r, cols.start), [])
    shown = [lid for lid in lids if index.link_health(lid) is not None] if cols is None else lids
    for lid in shown[:8]:
        out.append("\n")
        out.append(cable_line(index, lid))
    if len(shown) > 8:
        out.append(f"\n… {len(shown) - 8} more", style="dim")
    switch = grid.cell_nodes.get((r, cols.start)) if cols is not None and grid.node_cells else None
    switch = switch or (None if grid.node_cells else grid.rows[r])
    if switch is not None:
        out.append("\n")
        out.append(port_strip(index, switch))
    return out


def cable_line(index: ReportIndex, lid: LinkId) -> Text:
    """One cable: its ends, trained speed, state and findings."""
    lk = index.links[lid]
    health = index.link_health(lid)
    out = Text(end="")
    out.append(glyph(link_state(index, [lid])))
    out.append(" ")
    out.append(safe(index.link_name(lid)))
    out.append(f"  {index.speed(lk)} = {fmt_gbps(lk['lanes'] * lk['lane_gbps'])}  ")
    out.append(safe(lk.get("state", "up"), "red" if lk.get("state") == "down" else ""))
    out.append("  ")
    out.append(sev_text(health))
    fs = index.link_findings.get(lid, [])
    if fs:
        out.append(safe("  " + ", ".join(f.label for f in fs), "bold"))
    return out


def port_strip(index: ReportIndex, nid: str) -> Text:
    """A switch zoomed to its ports: each cabled port's number as a glyph coloured by its cable."""
    out = Text(end="")
    out.append(safe(index.label(nid), "bold"))
    out.append(" ports ")
    for lid, (_, port), _other in index.ports_of(nid):
        out.append(f"{port}")
        out.append(glyph(link_state(index, [lid])))
        out.append(" ")
    return out


# -- a host pair's route -------------------------------------------------------------

@dataclass(frozen=True)
class Hop:
    """One cable of a routed path, in order from the source."""

    link: LinkId
    src: tuple[str, int]  # the end the traffic leaves by
    dst: tuple[str, int]


def parse_end(index: ReportIndex, text: str) -> tuple[str, int]:
    """``host`` or ``host[port]`` (a label, host name or id) as a node id and port; ValueError names what is wrong."""
    m = re.fullmatch(r"\s*(.+?)(?:\[(\d+)\])?\s*", text)
    if not m:
        raise ValueError(f"not a host: {text!r}")
    name, port = m.group(1), int(m.group(2) or 1)
    nid = index.resolve(name)
    if nid not in index.nodes or index.nodes[nid]["kind"] != "host":
        raise ValueError(f"no host {name!r} in this report")
    if not any(mine[1] == port for _, mine, _ in index.ports_of(nid)):
        raise ValueError(f"host {name!r} has no cabled port {port}")
    return nid, port


def route(fabric: Any, src: tuple[str, int], dst: tuple[str, int]) -> list[Hop]:
    """The cables from host port ``src`` to ``dst`` as :meth:`Fabric.path` routes them, each with its direction."""
    from fabricdoc.model.records import PortRef

    keys = fabric.path(PortRef(*src), PortRef(*dst))
    out = []
    node = src[0]
    for (an, ap), (bn, bp) in keys:
        a, b = (str(an), int(ap)), (str(bn), int(bp))
        here, far = (a, b) if a[0] == node else (b, a)
        out.append(Hop((a, b), here, far))
        node = far[0]
    return out


def route_text(index: ReportIndex, src: tuple[str, int], dst: tuple[str, int], hops: Sequence[Hop],
               source: str) -> Text:
    """A routed path hop by hop with each cable's state, and where the route came from."""
    out = Text(end="")
    out.append("route ", style="bold")
    out.append(safe(f"{port_name(index.label(src[0]), src[1])} → {port_name(index.label(dst[0]), dst[1])}", "bold"))
    out.append(f"  {len(hops)} hops  ")
    out.append(safe(source, "dim"))
    for i, h in enumerate(hops, 1):
        out.append(f"\n{i:>2} ")
        lk = index.links[h.link]
        out.append(glyph(link_state(index, [h.link])))
        out.append(" ")
        out.append(safe(f"{port_name(index.label(h.src[0]), h.src[1])} → {port_name(index.label(h.dst[0]), h.dst[1])}"))
        out.append(f"  {index.speed(lk)}  ")
        out.append(sev_text(index.link_health(h.link)))
        fs = index.link_findings.get(h.link, [])
        if fs:
            out.append(safe("  " + ", ".join(f.label for f in fs), "bold"))
    bad = [h for h in hops if index.link_health(h.link) is not None]
    out.append("\n")
    out.append(f"{len(bad)} of {len(hops)} hops with findings" if bad else "every hop healthy",
               style="red" if bad else "green")
    return out
