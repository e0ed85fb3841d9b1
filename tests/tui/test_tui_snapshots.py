"""SVG snapshots of the main screens over a fixed report (fixed generated_at, no clock shown).

Update after a deliberate change with ``pytest tests/tui/test_tui_snapshots.py --snapshot-update``
and look at the SVGs before committing them.
"""

from __future__ import annotations

from fabricdoc.tui.app import FabricdocApp
from fabricdoc.tui.screens import DetailScreen
from tui_helpers import screen_text, wait_for, wait_main

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
    from fabricdoc.tui.app import default_impact_factory

    async def ready(pilot):
        await wait_main(pilot)
        await pilot.press("5")
        await wait_for(pilot, lambda: "168.0 Gb/s" in screen_text(pilot.app), what="the prediction")
        await pilot.press("j", "d")
        await wait_for(pilot, lambda: "predicted ring busbw  400.0" in screen_text(pilot.app), what="the new prediction")

    assert snap_compare(_app(report, impact_factory=default_impact_factory), terminal_size=SIZE, run_before=ready)


def test_host_detail_with_sparklines(snap_compare, report):
    async def ready(pilot):
        await wait_main(pilot)
        await pilot.press("3", "j", "enter")  # hosts sorted worst first: [red]x[/red] is second
        await wait_for(pilot, lambda: isinstance(pilot.app.screen, DetailScreen), what="the detail")

    assert snap_compare(_app(report), terminal_size=SIZE, run_before=ready)


def test_help(snap_compare, report):
    async def ready(pilot):
        await wait_main(pilot)
        await pilot.press("question_mark")

    assert snap_compare(_app(report), terminal_size=SIZE, run_before=ready)
