"""SVG snapshots of the main screens over the fixed report (fixed generated_at, no clock shown).

Update after a deliberate change with
``pytest tests/unit/tui/test_snapshots.py --snapshot-update`` and look at the SVGs before committing them.
"""

from __future__ import annotations

from fabricdoc.tui.app import FabricdocApp, default_impact_factory
from fabricdoc.tui.screens.detail import DetailScreen

from tests.helpers.tui import GENERATED_AT, MARKUP_LABEL, settle, text_of, wait_main, write_history

SIZE = (140, 40)


def _app(report, **kw):
    kw.setdefault("impact_factory", None)
    return FabricdocApp(report, **kw)


def test_overview(snap_compare, report):
    async def ready(pilot):
        await wait_main(pilot)

    assert snap_compare(_app(report), terminal_size=SIZE, run_before=ready)


def test_findings_with_evidence_of_the_flapping_link(snap_compare, report):
    async def ready(pilot):
        await wait_main(pilot)
        await pilot.press("2", "j", "j")

    assert snap_compare(_app(report), terminal_size=SIZE, run_before=ready)


def test_impact_what_if_with_one_more_host_drained(snap_compare, report):
    async def ready(pilot):
        screen = await wait_main(pilot)
        await pilot.press("5")
        tab = screen.tab("impact")
        result = screen.query_one("#whatif-result")
        await settle(pilot, lambda: tab.model_state == "ready" and "predicted" in text_of(result), "the prediction")
        await pilot.press("j", "d")
        await settle(pilot, lambda: "drain 2 hosts" in text_of(result) and "predicted" in text_of(result),
                     "the new prediction")

    assert snap_compare(_app(report, impact_factory=default_impact_factory), terminal_size=SIZE, run_before=ready)


def test_host_detail_with_sparklines(snap_compare, report):
    async def ready(pilot):
        await wait_main(pilot)
        await pilot.press("3", "slash", *MARKUP_LABEL, "enter", "enter")  # the host with a slow NIC and a GPU fault
        await settle(pilot, lambda: isinstance(pilot.app.screen, DetailScreen), "the detail")

    assert snap_compare(_app(report), terminal_size=SIZE, run_before=ready)


def test_help(snap_compare, report):
    async def ready(pilot):
        await wait_main(pilot)
        await pilot.press("question_mark")

    assert snap_compare(_app(report), terminal_size=SIZE, run_before=ready)


# -- the map, actions and time series, at the smallest and a large terminal ----------

SMALL, LARGE = (80, 24), (200, 50)


async def _map(pilot):
    screen = await wait_main(pilot)
    await pilot.press("6")
    tab = screen.tab("map")
    await settle(pilot, lambda: tab.ready, "the map")
    await pilot.pause()
    return tab


def test_demo_map_with_its_four_faults_80x24(snap_compare, demo_report):
    async def ready(pilot):
        await _map(pilot)
        await pilot.press("j", "j", "l")  # leaf03 x spine02: the symbol errors

    assert snap_compare(_app(demo_report), terminal_size=SMALL, run_before=ready)


def test_demo_map_with_a_routed_pair_200x50(snap_compare, demo_report):
    async def ready(pilot):
        tab = await _map(pilot)
        await pilot.press("p", *"node0001 node0027", "enter")
        await settle(pilot, lambda: bool(tab.hops), "the route")

    assert snap_compare(_app(demo_report), terminal_size=LARGE, run_before=ready)


def test_fat_tree_map_in_blocks_80x24(snap_compare):
    from fabricdoc.fabric.generators import fat_tree_3
    from fabricdoc.model.records import Observations
    from fabricdoc.report.report import Report

    report = Report.build(fat_tree_3(8), [], Observations())
    report.generated_at = GENERATED_AT

    async def ready(pilot):
        await _map(pilot)
        await pilot.press("j", "l", "enter")  # the second pod's edges by the agg switches around the pod boundary

    assert snap_compare(_app(report), terminal_size=SMALL, run_before=ready)


def test_demo_findings_with_actions_200x50(snap_compare, demo_report):
    async def ready(pilot):
        await wait_main(pilot)
        await pilot.press("2", "j", "j")  # the symbol errors (the flapping cable's evidence carries clock times)

    assert snap_compare(_app(demo_report), terminal_size=LARGE, run_before=ready)


def test_demo_findings_with_actions_80x24(snap_compare, demo_report):
    async def ready(pilot):
        await wait_main(pilot)
        await pilot.press("2")

    assert snap_compare(_app(demo_report), terminal_size=SMALL, run_before=ready)


def test_link_history_time_series_200x50(snap_compare, report, tmp_path):
    store = tmp_path / "history.sqlite"
    write_history(report, store, [0, 6, 18, 48, 50, 120])

    async def ready(pilot):
        await wait_main(pilot)
        await pilot.press("2", "j", "enter")  # leaf01[5] -- spine01[1]
        await settle(pilot, lambda: isinstance(pilot.app.screen, DetailScreen), "the detail")

    assert snap_compare(_app(report, history_path=store), terminal_size=LARGE, run_before=ready)


def test_demo_impact_with_the_recommended_remedy_and_alternatives_200x50(snap_compare, demo_report):
    async def ready(pilot):
        screen = await wait_main(pilot)
        await pilot.press("5")
        await settle(pilot, lambda: "recommended remedy" in text_of(screen.query_one("#impact-summary")), "the figures")

    assert snap_compare(_app(demo_report), terminal_size=LARGE, run_before=ready)
