"""Pilot tests of the map tab: every key, zoom, opening, routing a host pair, at 80x24 and 200x50."""

from __future__ import annotations

import re

import pytest
from fabricdoc.tui.app import FabricdocApp, default_impact_factory
from fabricdoc.tui.fabric_map import GLYPH_PATH, HOSTS_COLUMN, build_grids, switch_level
from fabricdoc.tui.index import ReportIndex
from fabricdoc.tui.screens.detail import DetailScreen
from fabricdoc.tui.screens.modals import RouteScreen
from fabricdoc.tui.widgets.fabric_map import FabricMap

from fabricdoc.fabric.generators import fat_tree_2, fat_tree_3
from fabricdoc.model.records import Node, Observations, PortRef
from fabricdoc.report.report import Report
from tests.helpers.tui import async_test, settle, shown, text_of, wait_main

SMALL, LARGE = (80, 24), (200, 50)


async def open_map(pilot):
    """The main screen, then the map tab with its grids drawn; returns (tab, map widget)."""
    screen = await wait_main(pilot)
    await pilot.press("6")
    tab = screen.tab("map")
    await settle(pilot, lambda: tab.ready, "the map")
    await pilot.pause()
    return tab, screen.query_one("#fabric-map", FabricMap)


def info(app) -> str:
    return text_of(app.screen.query_one("#map-info"))


@pytest.fixture(scope="module")
def tree_report() -> Report:
    """A 128-host three-level fat-tree: 32 edge switches do not fit 80x24 one per line."""
    return Report.build(fat_tree_3(8), [], Observations())


@pytest.mark.parametrize("size", [SMALL, LARGE])
@async_test
async def test_arrows_and_hjkl_move_the_cursor_and_the_text_follows(demo_report, size):
    app = FabricdocApp(demo_report, impact_factory=None)
    async with app.run_test(size=size) as pilot:
        tab, fm = await open_map(pilot)
        assert fm.has_focus and fm.win.unit  # the demo's 8 x 4 fits both sizes cell by cell
        assert fm.cursor == (0, 0) and "leaf01 × spine01" in info(app)
        await pilot.press("j", "j", "l")
        assert fm.cursor == (2, 1) and "leaf03 × spine02" in info(app) and "3868bb symbol_errors" in info(app)
        await pilot.press("down", "right", "up", "left", "k")
        assert fm.cursor == (1, 1)
        await pilot.press("h", "h")
        assert fm.cursor == (1, HOSTS_COLUMN) and "leaf02 × hosts" in info(app)
        await pilot.press("h", "k", "k")  # the edges hold
        assert fm.cursor == (0, HOSTS_COLUMN)
        assert "leaf01" in shown(app) and "8 leaf x 4 spine" in shown(app)


@async_test
async def test_enter_opens_the_cable_under_the_cursor_and_escape_comes_back(demo_report):
    app = FabricdocApp(demo_report, impact_factory=None)
    async with app.run_test(size=LARGE) as pilot:
        tab, fm = await open_map(pilot)
        await pilot.press(*"jjjjj", *"lll", "enter")  # leaf06 x spine04: the half-width link
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the link detail")
        assert app.screen.link == (("leaf06", 8), ("spine04", 6))
        assert "take the port out of service" in shown(app)  # the finding's action
        await pilot.press("escape")
        await settle(pilot, lambda: app.screen is tab.screen, "the map again")
        assert fm.cursor == (5, 3)
        await pilot.press("o")  # the row's switch, with its ports
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the switch detail")
        assert app.screen.node == "leaf06"
        await pilot.press("escape")
        await pilot.press("h", "h", "h", "h", "j", "enter")  # leaf07's host cables: the leaf with its ports
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the leaf detail")
        assert app.screen.node == "leaf07" and "ba2447" in shown(app)


@pytest.mark.parametrize("size", [SMALL, LARGE])
@async_test
async def test_a_grid_too_big_for_the_screen_is_drawn_in_blocks_that_zoom(tree_report, size):
    app = FabricdocApp(tree_report, impact_factory=None)
    async with app.run_test(size=size) as pilot:
        tab, fm = await open_map(pilot)
        grid = tab.grid
        assert grid.name == "edge x aggregation" and len(grid.rows) == 32
        if size == LARGE:
            assert fm.win.unit  # 32 x 32 fits 200x50
            return
        assert not fm.win.unit and len(fm.win.row_blocks) < 32
        first = fm.cursor_rows
        assert len(first) > 1 and "enter zooms in" in info(app)
        await pilot.press("enter")
        assert fm.zoomed and fm.zoom[-1][0] == first
        assert "zoomed in 1x" in info(app)
        while not fm.win.unit:
            await pilot.press("enter")
        assert len(fm.cursor_rows) == 1 and len(fm.cursor_cols) == 1
        await pilot.press("backspace")
        while fm.zoomed:
            await pilot.press("minus")
        assert fm.cursor_rows.start == 0 and not fm.win.unit
        await pilot.press("o")  # a block of switches is not one switch
        assert not isinstance(app.screen, DetailScreen)


@async_test
async def test_v_cycles_the_grids(tree_report):
    app = FabricdocApp(tree_report, impact_factory=None)
    async with app.run_test(size=LARGE) as pilot:
        tab, fm = await open_map(pilot)
        assert [g.name for g in tab.grids] == ["edge x aggregation", "aggregation x core"]
        await pilot.press("v")
        assert tab.grid.name == "aggregation x core" and fm.grid is tab.grid
        assert "▸aggregation x core" in str(fm.border_title)
        await pilot.press("v")
        assert tab.grid.name == "edge x aggregation"


@pytest.mark.parametrize("factory", [None, default_impact_factory], ids=["report-fabric", "impact-process"])
@async_test
async def test_p_routes_a_host_pair_marks_its_path_and_x_clears_it(demo_report, factory):
    app = FabricdocApp(demo_report, impact_factory=factory)
    async with app.run_test(size=LARGE) as pilot:
        tab, fm = await open_map(pilot)
        if factory is not None:
            impact = app.screen.tab("impact")
            await settle(pilot, lambda: impact.model_state == "ready", "the impact model", 60)
        await pilot.press("p")
        await settle(pilot, lambda: isinstance(app.screen, RouteScreen), "the route dialog")
        await pilot.press(*"node0001 node0027", "enter")
        await settle(pilot, lambda: bool(tab.hops), "the route")
        assert [h.dst[0] for h in tab.hops][-1] == "node0027"
        assert "1 of 4 hops with findings" in info(app) and "leaf07[3] → node0027[1]" in info(app)
        assert fm.path_cells and (6, HOSTS_COLUMN) in fm.path_cells and (0, HOSTS_COLUMN) in fm.path_cells
        assert fm.render().plain.count(GLYPH_PATH) == 4  # two host cells, the leaf01 and leaf07 uplinks
        await pilot.press("x")
        assert not fm.path_cells and GLYPH_PATH not in fm.render().plain and "hops with findings" not in info(app)


@async_test
async def test_a_pair_that_cannot_be_routed_says_why(demo_report):
    app = FabricdocApp(demo_report, impact_factory=None)
    async with app.run_test(size=SMALL) as pilot:
        tab, fm = await open_map(pilot)
        await pilot.press("p", *"node0001 nosuch", "enter")
        await settle(pilot, lambda: "no host 'nosuch'" in info(app), "the error")
        assert not tab.hops and app.is_running
        await pilot.press("p", "escape")  # the dialog cancels
        await settle(pilot, lambda: not isinstance(app.screen, RouteScreen), "the dialog gone")


@async_test
async def test_a_click_moves_the_cursor_and_a_second_click_opens(demo_report):
    app = FabricdocApp(demo_report, impact_factory=None)
    async with app.run_test(size=LARGE) as pilot:
        tab, fm = await open_map(pilot)
        header = fm.render().plain.splitlines()[0]
        x = re.search(r"\b2\b", header).start()  # the second column's glyph sits under its number
        await pilot.click(FabricMap, offset=(x + 1, 1 + 1 + 2))  # border and padding, header, third row
        assert fm.cursor == (2, 1)
        await pilot.click(FabricMap, offset=(x + 1, 1 + 1 + 2))
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the link detail")
        assert app.screen.link == (("leaf03", 6), ("spine02", 3))


@async_test
async def test_i_takes_links_out_of_service_in_the_what_if_from_the_impact_tab_and_the_map(demo_report):
    from fabricdoc.tui.formatting import fmt_gbps

    from fabricdoc.impact.busbw import ImpactModel

    model = ImpactModel(demo_report.fabric_model(), demo_report.findings)
    faulty = [[["leaf02", 5], ["spine01", 2]], [["leaf03", 6], ["spine02", 3]], [["leaf06", 8], ["spine04", 6]],
              [["leaf07", 3], ["node0027", 1]]]

    def predicted(links) -> str:
        return f"predicted ring busbw {fmt_gbps(model.what_if(['node0027'], ('ring',), links)['busbw_gbps'])}"

    app = FabricdocApp(demo_report, impact_factory=lambda r: ImpactModel(r.fabric_model(), r.findings))
    async with app.run_test(size=LARGE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("5")
        impact = screen.tab("impact")
        result = impact.query_one("#whatif-result")
        await settle(pilot, lambda: "predicted ring busbw" in text_of(result), "the first prediction")
        await pilot.press("i")
        await settle(pilot, lambda: "take 4 links out of service" in text_of(result), "the isolation")
        assert predicted(faulty) in text_of(result) and "out of service leaf03[6] — spine02[3]" in text_of(result)
        assert predicted(faulty) != predicted([])  # routing around three spine links changes the ring
        tab, fm = await open_map(pilot)
        await pilot.press("j", "j", "l", "i")  # leaf03 x spine02 back in service
        await settle(pilot, lambda: "take 3 links out of service" in text_of(result), "one link back")
        assert predicted([faulty[0], *faulty[2:]]) in text_of(result)
        await pilot.press("h", "h", "i")  # the host column is not one cable
        assert len(impact.isolated) == 3
        await pilot.press("5", "r")
        await settle(pilot, lambda: "out of service" not in text_of(result) and "predicted" in text_of(result), "reset")


@async_test
async def test_a_route_asked_while_the_impact_model_builds_waits_for_its_fabric(demo_report):
    import threading

    from fabricdoc.impact.busbw import ImpactModel

    built = threading.Event()

    class StillBuilding:
        """The impact model, answering only once the test lets it finish building."""

        def __init__(self, report) -> None:
            self.inner = ImpactModel(report.fabric_model(), report.findings)
            self.fabric = self.inner.fabric

        def busbw(self, *args):
            assert built.wait(30), "the test never let the model finish"
            return self.inner.busbw(*args)

        def what_if(self, *args):
            return self.inner.what_if(*args)

    app = FabricdocApp(demo_report, impact_factory=StillBuilding)
    async with app.run_test(size=LARGE) as pilot:
        tab, fm = await open_map(pilot)
        impact = app.screen.tab("impact")
        await pilot.press("p", *"node0001 node0027", "enter")
        await settle(pilot, lambda: "routing waits for the impact model's fabric" in info(app), "the wait")
        assert impact.model_state == "loading" and not tab.hops
        built.set()
        await settle(pilot, lambda: bool(tab.hops), "the route")
        assert impact.model_state == "ready" and "1 of 4 hops with findings" in info(app)


def unlevelled_report() -> Report:
    """A 2 x 2 leaf/spine whose switches carry no ``level`` (as discovered fabrics come), with two
    switches cabled only to each other: no host reaches them."""
    fabric = fat_tree_2(2, 2, 2)
    for sw in fabric.switches():
        sw.attrs.pop("level", None)
    for name in ("island1", "island2"):
        fabric.add_node(Node(name, "switch", name, 4))
    fabric.add_link(PortRef("island1", 1), PortRef("island2", 1))
    return Report.build(fabric, [], Observations())


def test_the_overview_and_the_map_put_every_switch_at_the_level_the_fabric_model_gives_it():
    report = unlevelled_report()
    index = ReportIndex(report)
    levels = report.fabric_model().levels()
    assert switch_level(index) == {nid: levels[nid] for nid in index.switches}
    in_tree = {name: set(ids) for name, _top, ids in index.switch_levels()}
    (grid,) = build_grids(index)  # leaf x spine: rows level 1, columns level 2
    assert in_tree == {"leaves": set(grid.rows), "spines": set(grid.cols)}
    assert in_tree["leaves"] == {"leaf01", "leaf02", "island1", "island2"} and levels["island1"] == 1
    assert in_tree["spines"] == {"spine01", "spine02"}


@async_test
async def test_without_level_attributes_levels_come_from_the_cabling_and_only_routes_rebuild_the_fabric_once(monkeypatch):
    report = unlevelled_report()
    built = []
    rebuild = Report.fabric_model

    def counted(self):
        built.append(self)
        return rebuild(self)

    monkeypatch.setattr(Report, "fabric_model", counted)
    app = FabricdocApp(report, impact_factory=None)
    async with app.run_test(size=LARGE) as pilot:
        screen = await wait_main(pilot)
        tree = screen.query_one("#fabric-tree")
        await settle(pilot, lambda: str(tree.root.children[0].label).startswith("spines"), "the switch levels")
        groups = [str(n.label) for n in tree.root.children]
        assert [g.split("  ")[:2] for g in groups] == [["spines", "2 switches"], ["leaves", "4 switches"],
                                                       ["hosts", "4"]]
        tab, fm = await open_map(pilot)
        assert set(tab.grid.rows) == {"leaf01", "leaf02", "island1", "island2"}
        assert built == []  # the tree's and the map's levels walked the report's cabling, no Fabric rebuilt
        await pilot.press("p", *"node0001 node0003", "enter")
        await settle(pilot, lambda: bool(tab.hops), "the route")
        assert [h.dst[0] for h in tab.hops] == ["leaf01", tab.hops[1].dst[0], "leaf02", "node0003"]
    assert len(built) == 1
