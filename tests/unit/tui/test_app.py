"""Pilot tests of the fabricdoc TUI: every screen and every key, on the fixed report."""

from __future__ import annotations

import threading

import pytest
from fabricdoc.tui.app import FabricdocApp
from fabricdoc.tui.formatting import fmt_gbps
from fabricdoc.tui.screens.detail import DetailScreen
from fabricdoc.tui.screens.findings import FindingsTab
from fabricdoc.tui.screens.impact import ImpactTab
from fabricdoc.tui.screens.main import TABS, MainScreen
from fabricdoc.tui.screens.modals import ExportScreen, HelpScreen
from fabricdoc.tui.screens.sweep import SweepScreen
from fabricdoc.tui.series import BANDWIDTH_SERIES
from fabricdoc.tui.widgets.table import ReportTable
from textual.widgets import Sparkline, Tree

from fabricdoc.errors import FabricdocError
from fabricdoc.fabric.generators import fat_tree_3
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.model.records import Observations
from fabricdoc.report.report import Report
from tests.helpers.tui import (
    CLICK_LABEL,
    ESCAPE_SHOWN,
    MARKUP_LABEL,
    async_test,
    finding_id,
    settle,
    shown,
    text_of,
    wait_main,
)

SIZE = (160, 48)


def app_for(report, **kw) -> FabricdocApp:
    kw.setdefault("impact_factory", None)
    return FabricdocApp(report, **kw)


def footer_keys(app) -> set[str]:
    """The descriptions of the keys the footer offers now."""
    return {b.binding.description for b in app.screen.active_bindings.values() if b.binding.show}


@async_test
async def test_report_file_opens_on_the_overview_with_levels_hosts_and_counts(report_path):
    app = app_for(report_path)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        assert screen.active_tab == "overview"
        tree = screen.query_one("#fabric-tree", Tree)
        assert tree.has_focus
        groups = [n.label.plain for n in tree.root.children]
        assert groups[0].startswith("spines  2 switches")
        assert groups[1].startswith("leaves  4 switches")
        assert groups[2].startswith("hosts  16  2 with findings")
        assert {n.data[1] for n in tree.root.children[2].children} == {"node0003", "node0006"}
        summary = text_of(screen.query_one("#overview-summary"))
        assert "verdict FAIL" in summary and "hosts to drain 1" in summary


@async_test
async def test_node_names_that_look_like_markup_or_escapes_are_shown_literally(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        assert MARKUP_LABEL in shown(app) and CLICK_LABEL in shown(app)  # the tree's hosts with findings
        await pilot.press("2")
        text = shown(app)
        assert f"leaf02[2] -- {CLICK_LABEL}[1]" in text and f"{MARKUP_LABEL} port 1" in text
        await pilot.press("3")
        await pilot.pause()
        assert ESCAPE_SHOWN in shown(app)  # the terminal escape is shown, not obeyed
        # Opening the [@click=quit] host runs no action: the app is still there.
        await pilot.press("slash", *"click", "enter", "enter")
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the host detail")
        assert app.screen.node == "node0006" and CLICK_LABEL in shown(app)
        assert app.is_running


@async_test
async def test_j_k_and_arrows_move_the_findings_cursor_and_the_evidence_follows(report):
    app = app_for(report)
    down, lossy, flapping = (finding_id(report, f) for f in ("down", "symbol_errors", "flapping"))
    gpu, nic = finding_id(report, "gpu_error"), finding_id(report, "degraded_bandwidth")
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("2")
        table = screen.query_one("#findings-table", ReportTable)
        evidence = screen.query_one("#evidence")
        assert table.has_focus and table.current_key == down
        assert text_of(evidence).startswith(down) and "Down/Polling" in text_of(evidence)
        await pilot.press("j", "j")
        assert table.current_key == flapping
        assert text_of(evidence).startswith(flapping)
        assert "3 link-down events" in text_of(evidence) and "2/4 tests through it slow" in text_of(evidence)
        await pilot.press("k")
        assert table.current_key == lossy and "SymbolErrorCounter +10" in text_of(evidence)
        await pilot.press("down", "down")
        assert table.current_key == gpu and "xid 79" in text_of(evidence)
        await pilot.press("down")
        assert table.current_key == nic


@async_test
async def test_s_and_c_sort_findings_by_severity_and_confidence(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("2", "c")
        table = screen.query_one("#findings-table", ReportTable)
        confidences = [screen.index.findings[r.key].confidence for r in table.shown]
        assert confidences == sorted(confidences, reverse=True)
        await pilot.press("c")
        confidences = [screen.index.findings[r.key].confidence for r in table.shown]
        assert confidences == sorted(confidences)
        await pilot.press("s")
        severities = [screen.index.findings[r.key].severity.rank for r in table.shown]
        assert severities == sorted(severities, reverse=True)
        assert screen.index.findings[table.current_key or ""].severity == "error"


@async_test
async def test_enter_on_a_link_finding_opens_the_link_detail_and_escape_goes_back(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("2", "j", "enter")  # the lossy uplink
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the detail screen")
        detail = app.screen
        assert detail.link == (("leaf01", 5), ("spine01", 1))
        assert [f.id for f in detail.findings()] == [finding_id(report, "symbol_errors")]
        assert "speed 4x100 Gb/s = 400.0 Gb/s" in text_of(detail.query_one("#detail-summary"))
        assert "no history" in shown(app)  # no history store, and a switch-switch link runs no tests
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_enter_on_a_gpu_finding_opens_its_host(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("2", "j", "j", "j")
        assert app.screen.query_one("#findings-table", ReportTable).current_key == finding_id(report, "gpu_error")
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the host detail")
        assert app.screen.node == "node0003"


@async_test
async def test_host_detail_lists_ports_and_draws_its_tests_by_round(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("3", "slash", *MARKUP_LABEL, "enter")
        table = screen.query_one("#hosts-table", ReportTable)
        await settle(pilot, lambda: [r.key for r in table.shown] == ["node0003"], "the filter")
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the host detail")
        detail = app.screen
        assert {f.id for f in detail.findings()} == {finding_id(report, "gpu_error"), finding_id(report, "degraded_bandwidth")}
        sparks = list(detail.query(Sparkline))
        assert len(sparks) == 1 and list(sparks[0].data) == [276.0, 275.2, 277.7]
        assert BANDWIDTH_SERIES in shown(app)
        ports = detail.query_one("#detail-ports", ReportTable)
        assert ports.row_count == 1 and ports.get_row_at(0)[1].plain == "leaf01[3]"
        await pilot.press("enter")  # a port opens its link
        await settle(pilot, lambda: app.screen is not detail and isinstance(app.screen, DetailScreen), "the port's link")
        assert app.screen.link == (("leaf01", 3), ("node0003", 1))


@async_test
async def test_slash_filters_the_hosts_table_and_escape_clears_it(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("slash")  # on the overview: jumps to hosts
        assert screen.active_tab == "hosts"
        table = screen.query_one("#hosts-table", ReportTable)
        await pilot.press(*"leaf04")
        await settle(pilot, lambda: len(table.shown) == 4, "the filter")
        assert {r.key for r in table.shown} == {"node0013", "node0014", "node0015", "node0016"}
        await pilot.press("enter")
        assert table.has_focus and len(table.shown) == 4
        await pilot.press("slash", "escape")
        await settle(pilot, lambda: len(table.shown) == 16, "the cleared filter")


@async_test
async def test_links_tab_lists_every_cable_worst_first(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("4")
        table = screen.query_one("#links-table", ReportTable)
        assert table.row_count == 24
        assert table.get_row_at(0)[4].plain == "error" and table.get_row_at(23)[4].plain == "ok"
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the link detail")
        assert app.screen.link is not None and app.screen.findings()


@async_test
async def test_tree_enter_opens_a_switch_and_space_expands_its_ports(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        tree = screen.query_one("#fabric-tree", Tree)
        await pilot.press("j", "j")  # root -> spines group -> spine01
        assert tree.cursor_node.data == ("node", "spine01")
        await pilot.press("space")
        await settle(pilot, lambda: len(tree.cursor_node.children) == 4, "spine01's ports")
        first = tree.cursor_node.children[0]
        assert first.data == ("link", (("leaf01", 5), ("spine01", 1))) and "p1 → leaf01[5]" in first.label.plain
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the switch detail")
        assert app.screen.node == "spine01"
        await pilot.press("escape", "j", "enter")  # a port in the tree opens its link
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the link detail")
        assert app.screen.link == (("leaf01", 5), ("spine01", 1))


@async_test
async def test_a_level_too_big_to_open_at_start_lists_its_switches_when_opened():
    big = Report.build(fat_tree_3(12), [], Observations())  # 72 aggregation and 72 edge switches
    app = app_for(big)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        tree = screen.query_one("#fabric-tree", Tree)
        core, aggregation, *_ = tree.root.children
        assert str(core.label).startswith("core  36 switches") and core.is_expanded and len(core.children) == 36
        assert str(aggregation.label).startswith("aggregation  72 switches") and not aggregation.is_expanded
        aggregation.expand()
        await settle(pilot, lambda: len(aggregation.children) == 72, "the aggregation switches")
        assert {n.data[1] for n in aggregation.children} == {
            nid for nid, n in screen.index.nodes.items() if n["attrs"].get("level") == 2}
        aggregation.collapse()
        aggregation.expand()  # listed once
        await pilot.pause()
        assert len(aggregation.children) == 72


@async_test
async def test_impact_without_a_model_says_not_available(report):
    app = app_for(report, impact_factory=lambda rep: None)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("5")
        tab = screen.tab("impact")
        await settle(pilot, lambda: tab.model_state == "unavailable", "the model load")
        await pilot.press("d")
        assert "impact model not available" in text_of(tab.query_one("#whatif-result"))
        assert screen.query_one("#whatif-table", ReportTable).get_row_at(0)[0].plain == "[ ]"
        assert tab.drained == set()


@async_test
async def test_d_toggles_drain_in_the_what_if_and_the_prediction_follows(report):
    model = ImpactModel(report.fabric_model(), report.findings)

    def predicted(*hosts: str) -> str:
        return f"predicted ring busbw {fmt_gbps(model.what_if(hosts)['busbw_gbps'])}"

    app = FabricdocApp(report)  # the real impact model
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("5")
        tab: ImpactTab = screen.tab("impact")  # type: ignore[assignment]
        result = tab.query_one("#whatif-result")
        await settle(pilot, lambda: "predicted ring busbw" in text_of(result), "the first prediction")
        # The report's drain list: the cut-off [@click=quit] host.
        assert predicted(CLICK_LABEL) in text_of(result) and "what-if: drain 1 host" in text_of(result)
        assert "hosts kept 15 of 16" in text_of(result)
        table = tab.query_one("#whatif-table", ReportTable)
        await pilot.press("j")
        assert table.current_key == "node0003"  # the worst host after the drained one
        await pilot.press("d")  # also drain it
        await settle(pilot, lambda: predicted(CLICK_LABEL, MARKUP_LABEL) in text_of(result), "the new prediction")
        assert table.get_row_at(1)[0].plain == "[x] drain" and tab.drained == {"node0006", "node0003"}
        await pilot.press("d")
        await settle(pilot, lambda: "drain 1 host " in text_of(result), "the undrain")
        assert predicted(CLICK_LABEL) in text_of(result)
        await pilot.press("k", "d")  # keep the cut-off host too: the ring cannot run
        await settle(pilot, lambda: predicted() in text_of(result), "no drain")
        assert model.what_if([])["busbw_gbps"] == 0.0
        await pilot.press("r")
        await settle(pilot, lambda: predicted(CLICK_LABEL) in text_of(result), "the reset")
        assert tab.drained == {"node0006"}


@async_test
async def test_a_failing_impact_model_is_shown_not_fatal(report):
    def factory(rep):
        raise ValueError("no routes")

    app = FabricdocApp(report, impact_factory=factory)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("5")
        result = screen.query_one("#whatif-result")
        await settle(pilot, lambda: "impact model not available: ValueError: no routes" in text_of(result), "the error")
        await pilot.press("d")
        assert app.is_running and screen.tab("impact").model is None


@async_test
async def test_e_exports_a_report_that_loads_back(report, tmp_path):
    out = tmp_path / "exported.json"
    app = app_for(report, export_path=out)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("e")
        await settle(pilot, lambda: isinstance(app.screen, ExportScreen), "the export dialog")
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog to close")
    assert Report.load(out).to_dict() == report.to_dict()


@async_test
async def test_e_exports_a_ticket_summary_with_the_filter_and_the_what_if_on_screen(report, tmp_path):
    from fabricdoc.report.ticket import _md

    out = tmp_path / "ticket.md"
    app = FabricdocApp(report, export_path=out)  # the real impact model
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("2", "slash", *"gpu", "enter")
        table = screen.query_one("#findings-table", ReportTable)
        await settle(pilot, lambda: len(table.shown) == 1, "the filter")
        (gpu,) = [f for f in report.findings if f.kind == "gpu"]
        await pilot.press("5")
        tab: ImpactTab = screen.tab("impact")  # type: ignore[assignment]
        result = tab.query_one("#whatif-result")
        await settle(pilot, lambda: "predicted ring busbw" in text_of(result), "the first prediction")
        await pilot.press("j", "d")  # drain one more host than the report does
        await settle(pilot, lambda: "what-if: drain 2 hosts" in text_of(result) and tab.last_result is not None
                     and tab.last_result.get("hosts") == 14, "the new prediction")
        await pilot.press("e")
        await settle(pilot, lambda: isinstance(app.screen, ExportScreen), "the export dialog")
        await pilot.press("enter")
        await settle(pilot, lambda: isinstance(app.screen, MainScreen), "the dialog to close")
    text = out.read_text()
    assert f"### {gpu.id} " in text and all(f"### {f.id} " not in text for f in report.findings if f is not gpu)
    assert "findings shown: 1 of" in text and "filtered by gpu" in text
    what_if = text.split("## What-if tried", 1)[1].split("##", 1)[0]
    assert _md(MARKUP_LABEL) in what_if and _md(CLICK_LABEL) in what_if and "14 hosts" in what_if
    assert "\x1b" not in text and "\u202e" not in text  # a hostile label's controls only as codes


@async_test
async def test_export_to_an_unwritable_place_says_so_and_stays_open(report, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    app = app_for(report, export_path=blocker / "x.json")
    said: list[str] = []
    app.notify = lambda message, **kw: said.append(message)  # type: ignore[method-assign]
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("e")
        await settle(pilot, lambda: isinstance(app.screen, ExportScreen), "the export dialog")
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ExportScreen)
        assert [m for m in said if m.startswith("could not write") and str(blocker / "x.json") in m]
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_question_mark_shows_help_with_every_tabs_keys(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("question_mark")
        assert isinstance(app.screen, HelpScreen)
        text = text_of(app.screen.query_one("#help-text"))
        assert f"1-{len(TABS)} overview · findings · hosts · links · impact" in text
        for tab in TABS:
            for keys, what in tab.KEYS:
                assert f"{keys} {what}" in text
        await pilot.press("escape")
        assert isinstance(app.screen, MainScreen)


@async_test
async def test_q_quits(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("q")
        await settle(pilot, lambda: not app.is_running, "the app to exit")
    assert app.return_code == 0


@async_test
async def test_footer_offers_a_tabs_keys_only_on_that_tab(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        keys = footer_keys(app)
        assert {"Filter", "Quit", "Help", "Export"} <= keys
        assert not keys & {"Toggle drain", "Sort severity"}
        await pilot.press("5")
        await pilot.pause()
        assert "Toggle drain" in footer_keys(app) and "Sort severity" not in footer_keys(app)
        await pilot.press("2")
        await pilot.pause()
        assert "Sort severity" in footer_keys(app) and "Toggle drain" not in footer_keys(app)
        await pilot.press("d")  # not the impact tab: nothing changes
        assert app.screen.tab("impact").drained == {"node0006"}


@async_test
async def test_mouse_click_on_a_tab_and_a_row(report):
    app = app_for(report)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.click("#--content-tab-findings")
        table = screen.query_one("#findings-table", ReportTable)
        # The tab shown and its table laid out and focused: a click before that lands elsewhere.
        await settle(pilot, lambda: screen.active_tab == "findings" and table.has_focus and table.size.height > 4,
                     "the click on the tab")
        await pilot.pause()
        await pilot.click(table, offset=(10, 4))  # border, header, first, second, third row
        assert table.current_key == table.shown[2].key
        assert isinstance(screen.tab("findings"), FindingsTab)


@async_test
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
        await settle(pilot, lambda: isinstance(app.screen, SweepScreen), "the sweep screen")
        await settle(pilot, lambda: "bandwidth: 3 of 12" in shown(app), "progress")
        assert "✓ discover" in shown(app) and "25%" in shown(app)
        await pilot.press("e")  # nothing to export yet: says so, does not crash
        gate.set()
        await wait_main(pilot)
        assert app.report is report


@async_test
async def test_a_failed_sweep_is_shown_and_the_app_stays_up(report):
    def sweep(progress):
        progress("discover", 0, 1)
        raise FabricdocError("ibnetdiscover: timed out after 30 s")

    app = app_for(None, sweep=sweep)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: "timed out after 30 s" in shown(app), "the error")
        assert isinstance(app.screen, SweepScreen) and "sweep failed" in shown(app)
        assert app.error == "sweep failed: ibnetdiscover: timed out after 30 s"


@async_test
async def test_a_report_that_does_not_load_exits_with_its_error(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "fabricdoc.report/v1"')
    app = app_for(bad)
    async with app.run_test(size=SIZE) as pilot:
        await settle(pilot, lambda: not app.is_running, "the app to give up")
    assert app.return_code == 2 and "not valid JSON" in app.error


def test_the_app_needs_a_report_or_a_sweep():
    with pytest.raises(FabricdocError):
        FabricdocApp(None)
