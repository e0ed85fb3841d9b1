"""Counter sparklines come from the sweep history store, through real History.append."""

from __future__ import annotations

import pytest
from fabricdoc.tui.app import FabricdocApp
from fabricdoc.tui.screens.detail import DetailScreen
from fabricdoc.tui.widgets.history import HistoryView
from textual.widgets import Sparkline

from tests.helpers.tui import async_test, finding_id, settle, shown, wait_main, write_history

SIZE = (160, 48)
START = 1_735_689_600.0  # 2025-01-01T00:00:00Z


@async_test
async def test_link_detail_draws_the_counter_rates_of_past_sweeps(report, tmp_path):
    store = tmp_path / "history.sqlite"
    write_history(report, store, [0, 6, 18, 48], start=START)  # leaf01[5]'s SymbolErrorCounter climbs faster each minute
    app = FabricdocApp(report, impact_factory=None, history_path=store)
    async with app.run_test(size=SIZE) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("2", "j")
        assert screen.query_one("#findings-table").current_key == finding_id(report, "symbol_errors")
        await pilot.press("enter")  # leaf01[5] -- spine01[1]
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the link detail")
        series = app.screen.query_one("#detail-history", HistoryView).series
        assert [list(s.data) for s in app.screen.query(Sparkline)] == list(series.values())
        errors = series["leaf01[5] symbol_errors (per second, 3 intervals)"]
        assert errors == [0.1, 0.2, 0.5]
        assert errors.times == (START + 60, START + 120, START + 180)  # when each interval ended
        # Both ends move data, drawn as a bandwidth; no error counter that stayed flat is drawn.
        assert series["spine01[1] xmit_bytes as Gb/s (3 intervals)"] == pytest.approx([4000 * 8 / 1e9] * 3)
        assert not any("spine01[1] symbol_errors" in name or "rcv_errors" in name for name in series)
        text = shown(app)
        assert "leaf01[5] symbol_errors (per second, 3 intervals)" in text
        assert "2025-01-01 00:01:00.000Z → 00:03:00.000Z" in text  # the real times of the sweeps


@async_test
async def test_a_missing_store_is_not_created(report, tmp_path):
    store = tmp_path / "none" / "history.sqlite"
    app = FabricdocApp(report, impact_factory=None, history_path=store)
    async with app.run_test(size=SIZE) as pilot:
        await wait_main(pilot)
        await pilot.press("2", "enter")
        await settle(pilot, lambda: isinstance(app.screen, DetailScreen), "the detail")
        assert "no history" in shown(app)
    assert not store.parent.exists()
