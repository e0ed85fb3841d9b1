"""The fabric map's data, without a terminal: grids, blocks, glyphs, a host pair's route."""

from __future__ import annotations

import copy

import pytest
from fabricdoc.tui.fabric_map import (
    GLYPH_DOWN,
    GLYPH_FULL,
    GLYPH_NONE,
    GLYPH_PATH,
    GLYPH_REDUCED,
    HOSTS_COLUMN,
    Window,
    build_grids,
    describe_block,
    glyph,
    parse_end,
    route,
    route_text,
    switch_level,
    window,
    window_states,
)
from fabricdoc.tui.index import ReportIndex

from fabricdoc.fabric.generators import fat_tree_3, rail_optimized
from fabricdoc.model.evidence import StateEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import Observations, PortRef
from fabricdoc.model.severity import Severity
from fabricdoc.report.report import Report
from tests.helpers.tui import words


def _full(grid) -> Window:
    return window(range(len(grid.rows)), range(len(grid.cols)), len(grid.rows), len(grid.cols))


def _bad_cells(index, grid) -> dict[tuple[str, str], tuple[str, float | None]]:
    """Every cell with a finding: (row label, column label or 'hosts') -> (worst severity, capacity)."""
    out = {}
    for (r, c), state in window_states(index, grid, _full(grid)).items():
        if state.health is not None:
            col = "hosts" if c == HOSTS_COLUMN else grid.col_labels[c]
            out[(grid.row_labels[r], col)] = (str(state.health), state.capacity)
    return out


def test_the_demo_map_shows_its_four_faults_where_they_are(demo_report):
    index = ReportIndex(demo_report)
    grids = build_grids(index)
    assert [g.name for g in grids] == ["leaf x spine"]
    grid = grids[0]
    assert (len(grid.rows), len(grid.cols)) == (8, 4)
    assert _bad_cells(index, grid) == {
        ("leaf06", "spine04"): ("error", 0.5),  # trained 2X of 4X
        ("leaf02", "spine01"): ("error", 1.0),  # slow: full width, tests say otherwise
        ("leaf03", "spine02"): ("error", 1.0),  # symbol errors
        ("leaf07", "hosts"): ("error", 1.0),  # node0027's flapping cable
    }
    states = window_states(index, grid, _full(grid))
    assert glyph(states[(5, 3)]).plain == GLYPH_REDUCED and "red" in str(glyph(states[(5, 3)]).style)
    assert glyph(states[(0, 0)]).plain == GLYPH_FULL and str(glyph(states[(0, 0)]).style) == "green"


def test_a_cell_describes_its_cable_and_its_switchs_ports(demo_report):
    index = ReportIndex(demo_report)
    grid = build_grids(index)[0]
    text = words(describe_block(index, grid, range(2, 3), range(1, 2)).plain)
    assert "leaf03 × spine02" in text
    assert "leaf03[6] — spine02[3] 4x100 Gb/s = 400.0 Gb/s up error 3868bb symbol_errors" in text
    assert "leaf03 ports 1■ 2■ 3■ 4■ 5■ 6■ 7■ 8■" in text
    hosts = words(describe_block(index, grid, range(6, 7), None).plain)
    assert "leaf07 × hosts" in hosts and "4 cables, 1 with findings" in hosts
    assert "leaf07[3] — node0027[1]" in hosts and "ba2447 flapping" in hosts
    block = words(describe_block(index, grid, range(0, 4), range(0, 4)).plain)
    assert "16 cables, 2 with findings, 0 down worst error" in block and "enter zooms in" in block


def test_blocks_merge_cells_and_keep_every_cable_and_the_worst_health():
    fabric = fat_tree_3(8)  # 32 edge, 32 aggregation, 16 core switches
    lk = next(lk for lk in fabric.links.values()
              if {fabric.nodes[lk.key.a.node].attrs.get("level"), fabric.nodes[lk.key.b.node].attrs.get("level")} == {2, 3})
    lk.state = "down"
    a, b = lk.key.a, lk.key.b
    f = Finding("F001", "link", f"{a} -- {b}", "down", "error", 0.99,
                [StateEvidence(node=a.node, port=a.port, state="Down", source="iblinkinfo")],
                [(fabric.label(a.node), a.port), (fabric.label(b.node), b.port)], [a.node, b.node])
    index = ReportIndex(Report.build(fabric, [f], Observations()))
    grids = build_grids(index)
    assert [g.name for g in grids] == ["edge x aggregation", "aggregation x core"]
    upper = grids[1]
    win = window(range(len(upper.rows)), range(len(upper.cols)), 5, 3)
    assert len(win.row_blocks) <= 5 and len(win.col_blocks) <= 3 and not win.unit
    states = window_states(index, upper, win)
    assert sum(s.links for s in states.values()) == sum(len(v) for v in upper.cells.values()) == 128
    bad = [key for key, s in states.items() if s.health is not None]
    assert len(bad) == 1 and states[bad[0]].down == 1 and glyph(states[bad[0]]).plain == GLYPH_DOWN
    assert glyph(states.get((0, 99), type(states[bad[0]])())).plain == GLYPH_NONE
    # The edge grid has a host column: every host cable, once.
    edge = grids[0]
    assert sum(len(v) for v in edge.host_links.values()) == 128


def test_levels_come_from_the_cabling_when_the_report_has_none(demo_report):
    index = ReportIndex(demo_report)
    stripped = copy.deepcopy(demo_report)
    for n in stripped.topology["nodes"]:
        n["attrs"].pop("level", None)
    assert switch_level(ReportIndex(stripped)) == switch_level(index)
    assert {switch_level(index)[s] for s in ("leaf01", "spine04")} == {1, 2}


def test_a_rail_optimized_fabric_gets_a_unit_by_rail_grid():
    fabric = rail_optimized(units=2, hosts_per_unit=4, rails=4, spines=2)
    leaf = "leaf-su02-r3"
    lk = fabric.link_at(PortRef(leaf, 1))
    host = lk.key.other(PortRef(leaf, 1))
    f = Finding("F001", "link", f"{leaf}[1] -- {host}", "symbol_errors", "warning", 0.9, [],
                [(leaf, 1), (fabric.label(host.node), host.port)], [leaf, host.node])
    index = ReportIndex(Report.build(fabric, [f], Observations()))
    grids = build_grids(index)
    assert [g.name for g in grids] == ["leaf x spine", "unit x rail"]
    rails = grids[1]
    assert rails.row_labels == ["su1", "su2"] and rails.col_labels == ["r1", "r2", "r3", "r4"]
    states = window_states(index, rails, _full(rails))
    assert {k for k, s in states.items() if s.health is not None} == {(1, 2)}
    assert states[(1, 2)].health == Severity.WARNING and rails.cell_nodes[(1, 2)] == leaf
    assert states[(1, 2)].links == 4 + 4  # its four host cables and as many uplinks (non-blocking)


def test_a_host_pairs_route_goes_hop_by_hop_and_shows_each_hops_state(demo_report):
    index = ReportIndex(demo_report)
    src, dst = parse_end(index, "node0001"), parse_end(index, "node0027[1]")
    hops = route(demo_report.fabric_model(), src, dst)
    assert hops[0].src == ("node0001", 1) and hops[-1].dst == ("node0027", 1)
    assert all(a.dst[0] == b.src[0] for a, b in zip(hops, hops[1:], strict=False))  # each hop leaves where the last arrived
    assert [index.label(h.dst[0])[:4] for h in hops] == ["leaf", "spin", "leaf", "node"]
    text = words(route_text(index, src, dst, hops, "test").plain)
    assert "route node0001[1] → node0027[1] 4 hops" in text
    assert "leaf07[3] → node0027[1] 4x100 Gb/s error ba2447 flapping" in text
    assert "1 of 4 hops with findings" in text
    assert glyph(window_states(index, build_grids(index)[0], _full(build_grids(index)[0]))[(0, 0)], True).plain == GLYPH_PATH


@pytest.mark.parametrize(("text", "why"), [
    ("nosuchhost", "no host 'nosuchhost' in this report"),
    ("node0001[2]", "host 'node0001' has no cabled port 2"),
    ("leaf01", "no host 'leaf01' in this report"),
])
def test_a_host_that_cannot_be_routed_is_named(demo_report, text, why):
    with pytest.raises(ValueError, match=why.replace("[", r"\[")):
        parse_end(ReportIndex(demo_report), text)


def test_a_healthy_cell_is_coloured_by_its_busiest_cables_load_counted_from_the_sweeps_counters():
    from fabricdoc.tui.fabric_map import BUSY, SATURATED, load_style

    from fabricdoc.fabric.generators import fat_tree_2
    from fabricdoc.model.records import PortCounters

    fabric = fat_tree_2(2, 2, 2, lanes=4, lane_gbps=100.0)  # 400 Gb/s cables
    busy = next(lk.key for lk in fabric.links.values() if {lk.key.a.node, lk.key.b.node} == {"leaf01", "spine01"})
    end = busy.a if busy.a.node == "leaf01" else busy.b
    # PortXmitData counts 4-byte words: 380 Gb/s for 10 s at leaf01's uplink, nothing elsewhere.
    words_sent = int(380e9 * 10 / 8 / 4)
    before = [PortCounters(e.node, e.port, 0.0, {"PortXmitData": 0}) for k in fabric.links for e in (k.a, k.b)]
    after = [PortCounters(c.node, c.port, 10.0, {"PortXmitData": words_sent if (c.node, c.port) == tuple(end) else 0})
             for c in before]
    report = Report.build(fabric, [], Observations(before=before, after=after, interval_s=10.0))
    loads = {tuple(map(tuple, (lk["a"], lk["b"]))): lk.get("load") for lk in report.topology["links"]}
    assert loads[(tuple(busy.a), tuple(busy.b))] == 0.95 and sorted(set(loads.values())) == [0.0, 0.95]
    index = ReportIndex(Report.from_dict(report.to_dict()))
    grid = build_grids(index)[0]
    states = window_states(index, grid, _full(grid))
    hot = states[(grid.rows.index("leaf01"), grid.cols.index("spine01"))]
    assert hot.load == 0.95 and hot.health is None and glyph(hot).style == load_style(0.95) == "bold magenta"
    idle = states[(grid.rows.index("leaf02"), grid.cols.index("spine02"))]
    assert idle.load == 0.0 and glyph(idle).style == "green" and load_style(BUSY) == "cyan" and SATURATED > BUSY
    assert "busiest 95% loaded" in describe_block(index, grid, range(grid.rows.index("leaf01"), grid.rows.index("leaf01") + 1),
                                                  range(grid.cols.index("spine01"), grid.cols.index("spine01") + 1)).plain
