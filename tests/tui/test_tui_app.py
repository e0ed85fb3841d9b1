"""Pilot tests of the fabricdoc TUI: every screen and every key, on a simulated sweep's report."""

from __future__ import annotations

import threading

import pytest
from fabricdoc.tui.app import FabricdocApp
from fabricdoc.tui.screens import DetailScreen, ExportScreen, HelpScreen, MainScreen, SweepScreen
from fabricdoc.tui.widgets import ReportTable
from textual.widgets import Sparkline, Tree
from tui_helpers import CLICK_LABEL, MARKUP_LABEL, screen_text, wait_for, wait_main

from fabricdoc.errors import FabricdocError
from fabricdoc.report import Report

SIZE = (160, 48)


def app_for(report, **kw) -> FabricdocApp:
    kw.setdefault("impact_factory", None)
    return FabricdocApp(report, **kw)


async def test_report_file_opens_on_the_overview_with_levels_hosts_and_counts(report_file):
    app = app_for(report_file)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        tree = app.screen.query_one("#fabric-tree", Tree)
        groups = [str(n.label) for n in tree.root.children]
        assert groups[0].startswith("spines  2 switches")
        assert groups[1].startswith("leaves  4 switches")
        assert groups[2].startswith("hosts  16  2 with findings")
        text = screen_text(app)
        assert "verdict  FAIL" in text
        assert "links with findings 4 of 24" in text
        assert "hosts to drain      1" in text
        # findings by kind: three link errors
        assert any(line.split()[:3] == ["link", "0", "3"] for line in text.splitlines() if "│ link" in line
                   for line in [line.strip("│ ")])


async def test_node_names_that_look_like_markup_are_shown_literally(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        text = screen_text(app)
        assert MARKUP_LABEL in text and CLICK_LABEL in text  # the tree's hosts with findings
        await pilot.press("2")
        text = screen_text(app)
        assert f"leaf02[2] -- {CLICK_LABEL}[1]" in text
        assert f"{MARKUP_LABEL} port 1" in text
        await pilot.press("3")
        await pilot.pause()
        assert MARKUP_LABEL in screen_text(app)
        # Opening the [@click=quit] host runs no action: the app is still there.
        await pilot.press("slash", *"click", "enter", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen), what="the host detail")
        assert CLICK_LABEL in screen_text(app)
        assert app.is_running
        # The counter named with markup in F005's evidence stays literal too.
        await pilot.press("escape", "2", *"jjjj")
        assert "[b]SymbolErrorCounter[/b]" in screen_text(app)


async def test_j_k_and_arrows_move_the_findings_cursor_and_the_evidence_follows(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("2")
        table = app.screen.query_one("#findings-table", ReportTable)
        assert table.has_focus and table.current_key == "F001"
        assert "symbol_errors  Δ 10" in screen_text(app)
        await pilot.press("j", "j")
        assert table.current_key == "F003"
        text = screen_text(app)
        assert "flaps=3" in text and "first 2025-10-09" in text  # flap times
        assert "ratio 0.70" in text  # slow pairs
        await pilot.press("k")
        assert table.current_key == "F002"
        await pilot.press("down", "down")
        assert table.current_key == "F004"
        await pilot.press("up")
        assert table.current_key == "F003"


async def test_s_and_c_sort_findings_by_severity_and_confidence(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("2", "c")
        table = app.screen.query_one("#findings-table", ReportTable)
        confs = [r.sort["confidence"][0] for r in table.shown]
        assert confs == sorted(confs, reverse=True)
        await pilot.press("c")
        confs = [r.sort["confidence"][0] for r in table.shown]
        assert confs == sorted(confs)
        await pilot.press("s")
        sevs = [r.sort["severity"][0] for r in table.shown]
        assert sevs == sorted(sevs, reverse=True) and sevs[-1] == 1
        assert table.get_row_at(0)[0].plain == "error"


async def test_enter_on_a_link_finding_opens_the_link_detail_and_escape_goes_back(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("2", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen), what="the detail screen")
        text = screen_text(app)
        assert "link  leaf01[5] — spine01[1]" in text
        assert "speed 4x100 = 400.0 Gb/s" in text
        assert "symbol_errors  Δ 10  (1/s)" in text
        assert "no history" in text  # a switch-switch link: the report has no series for it
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_host_detail_lists_ports_and_draws_history_as_sparklines(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("3", "slash", *MARKUP_LABEL, "enter")
        table = app.screen.query_one("#hosts-table", ReportTable)
        await wait_for(pilot, lambda: len(table.shown) == 1, what="the filter")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen), what="the host detail")
        sparks = app.screen.query(Sparkline)
        assert len(sparks) == 2  # the evidence's counter history and the per-round bandwidth
        assert list(sparks[0].data) == [0.0, 1.0, 1.0, 2.0, 3.0]
        text = screen_text(app)
        assert "bandwidth tests (Gb/s, by round)" in text
        ports = app.screen.query_one("#detail-ports", ReportTable)
        assert ports.row_count == 1 and ports.get_row_at(0)[1].plain == "leaf01[3]"
        # enter on a port opens that link
        await pilot.press("enter")
        await wait_for(pilot, lambda: "link  leaf01[3]" in screen_text(app), what="the port's link")


async def test_slash_filters_the_hosts_table_and_escape_clears_it(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("slash")  # on the overview: jumps to hosts
        assert screen.active_tab == "hosts"
        table = screen.query_one("#hosts-table", ReportTable)
        await pilot.press(*"leaf04")
        await wait_for(pilot, lambda: len(table.shown) == 4, what="the filter")
        assert {r.key for r in table.shown} == {"node0013", "node0014", "node0015", "node0016"}
        await pilot.press("enter")
        assert table.has_focus and len(table.shown) == 4
        await pilot.press("slash", "escape")
        await wait_for(pilot, lambda: len(table.shown) == 16, what="the cleared filter")
        assert table.row_count == 16


async def test_links_tab_lists_every_cable_worst_first(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("4")
        table = screen.query_one("#links-table", ReportTable)
        assert table.row_count == 24
        assert [c.plain for c in table.get_row_at(0)][4] == "error"
        assert table.get_row_at(23)[4].plain == "ok"
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen), what="the link detail")


async def test_tree_enter_opens_a_switch_and_space_expands_its_ports(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        tree = screen.query_one("#fabric-tree", Tree)
        await pilot.press("j", "j")  # root -> spines group -> spine01
        assert tree.cursor_node.data == ("node", "spine01")
        await pilot.press("space")
        await wait_for(pilot, lambda: len(tree.cursor_node.children) == 4, what="spine01's ports")
        assert str(tree.cursor_node.children[0].label).startswith("✖ p1 → leaf01[5]")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen), what="the switch detail")
        assert "switch  spine01" in screen_text(app)
        await pilot.press("escape", "j", "enter")  # a port in the tree opens its link
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen), what="the link detail")
        assert "link  leaf01[5] — spine01[1]" in screen_text(app)


async def test_impact_without_a_model_says_not_available(report, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "fabricdoc.impact", None)  # as before impact.py exists
    app = FabricdocApp(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("5")
        await wait_for(pilot, lambda: screen.model_error == "impact model not available", what="the model load")
        await pilot.press("d")
        assert "impact model not available" in screen_text(app)
        assert screen.query_one("#whatif-table", ReportTable).get_row_at(0)[0].plain == "[ ]"


async def test_d_toggles_drain_in_the_what_if_and_the_prediction_follows(report):
    app = FabricdocApp(report)  # the real fabricdoc.impact model
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("5")
        await wait_for(pilot, lambda: "predicted ring busbw" in screen_text(app), what="the first prediction")
        text = screen_text(app)
        # nominal / now / after the report's drain (the cut-off [@click=quit] host)
        assert "nominal" in text and "200.0 Gb/s" in text
        assert "what-if: drain 1 host" in text and "predicted ring busbw  168.0 Gb/s" in text
        assert "hosts kept            15 of 16" in text
        table = screen.query_one("#whatif-table", ReportTable)
        await pilot.press("j", "d")  # also drain the host with the slow NIC
        await wait_for(pilot, lambda: "predicted ring busbw  400.0 Gb/s" in screen_text(app), what="the new prediction")
        assert table.get_row_at(1)[0].plain == "[x] drain"
        assert {screen.index.host_name[h] for h in screen.what_if_drain} == {CLICK_LABEL, MARKUP_LABEL}
        await pilot.press("d")
        await wait_for(pilot, lambda: "predicted ring busbw  168.0 Gb/s" in screen_text(app), what="the undrain")
        await pilot.press("k", "d")  # keep the cut-off host: the ring cannot run
        await wait_for(pilot, lambda: "predicted ring busbw  0.0 Gb/s" in screen_text(app), what="no drain")
        await pilot.press("r")
        await wait_for(pilot, lambda: "predicted ring busbw  168.0 Gb/s" in screen_text(app), what="the reset")


async def test_a_failing_impact_model_is_shown_not_fatal(report):
    def factory(rep):
        raise ValueError("no routes")

    app = FabricdocApp(report, impact_factory=factory)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("5")
        await wait_for(pilot, lambda: "impact model not available: ValueError: no routes" in screen_text(app), what="the error")
        await pilot.press("d")
        assert app.is_running and screen.model is None


async def test_e_exports_a_report_that_loads_back(report, tmp_path):
    out = tmp_path / "exported.json"
    app = app_for(report, export_path=out)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen), what="the export dialog")
        await pilot.press("enter")
        await wait_for(pilot, lambda: isinstance(app.screen, MainScreen), what="the dialog to close")
    back = Report.load(out)
    assert back.to_dict() == report.to_dict()


async def test_export_to_an_unwritable_place_says_so_and_stays_open(report, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    app = app_for(report, export_path=blocker / "x.json")
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("e")
        await wait_for(pilot, lambda: isinstance(app.screen, ExportScreen), what="the export dialog")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_question_mark_shows_help_and_escape_closes_it(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        assert "d            impact: toggle drain" in screen_text(app)
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


async def test_q_quits(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("q")
        await wait_for(pilot, lambda: not app.is_running, what="the app to exit")
    assert app.return_code == 0


async def test_footer_shows_the_keys_of_the_tab(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        footer = screen_text(app).splitlines()[-1]
        assert all(k in footer for k in ("Filter", "Quit", "Help", "Export"))
        assert "Toggle drain" not in footer
        await pilot.press("5")
        await pilot.pause()
        assert "Toggle drain" in screen_text(app).splitlines()[-1]


async def test_mouse_click_on_a_tab_and_a_row(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.click("#--content-tab-findings")
        await wait_for(pilot, lambda: screen.active_tab == "findings", what="the click on the tab")
        table = screen.query_one("#findings-table", ReportTable)
        await pilot.click(table, offset=(10, 4))  # border, header, F001, F002, F003
        assert table.current_key == "F003"


async def test_sweep_screen_shows_live_progress_then_the_report(report):
    gate = threading.Event()

    def sweep(progress):
        progress("discover", 1, 1)
        progress("bandwidth", 3, 12)
        gate.wait(10)
        progress("bandwidth", 12, 12)
        return report

    app = app_for(None, sweep=sweep)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: isinstance(app.screen, SweepScreen), what="the sweep screen")
        await wait_for(pilot, lambda: "bandwidth: 3 of 12" in screen_text(app), what="progress")
        text = screen_text(app)
        assert "✓ discover" in text and "25%" in text
        await pilot.press("e")  # nothing to export yet: says so, does not crash
        gate.set()
        await wait_main(pilot)
        assert app.report is report


async def test_a_failed_sweep_is_shown_and_the_app_stays_up(report):
    def sweep(progress):
        progress("discover", 0, 1)
        raise FabricdocError("ibnetdiscover: timed out after 30 s")

    app = app_for(None, sweep=sweep)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: "timed out after 30 s" in screen_text(app), what="the error")
        assert isinstance(app.screen, SweepScreen) and "sweep failed" in screen_text(app)


async def test_a_report_that_does_not_load_exits_with_its_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "fabricdoc.report/v1"')
    app = app_for(bad)
    async with app.run_test(size=SIZE) as pilot:
        await wait_for(pilot, lambda: not app.is_running, what="the app to give up")
    assert app.return_code == 2 and "not valid JSON" in app.error


def test_the_app_needs_a_report_or_a_sweep():
    with pytest.raises(FabricdocError):
        FabricdocApp(None)
