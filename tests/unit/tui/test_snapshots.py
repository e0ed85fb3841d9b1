"""SVG snapshots of the main screens over the fixed report (fixed generated_at, no clock shown).

Update after a deliberate change with
``pytest tests/unit/tui/test_snapshots.py --snapshot-update`` and look at the SVGs before committing them.
"""

from __future__ import annotations

from fabricdoc.tui.app import FabricdocApp, default_impact_factory
from fabricdoc.tui.screens.detail import DetailScreen

from tests.helpers.tui import MARKUP_LABEL, settle, text_of, wait_main

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
