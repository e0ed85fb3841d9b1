"""Counter sparklines come from the sweep history store when there is one."""

from __future__ import annotations

import dataclasses

from fabricdoc.tui.app import FabricdocApp
from fabricdoc.tui.screens import DetailScreen
from textual.widgets import Sparkline
from tui_helpers import screen_text, wait_for, wait_main

from fabricdoc.history import History
from fabricdoc.model import PortCounters


def _sweeps(report, path):
    """Four sweeps a minute apart; leaf01 port 5's SymbolErrorCounter climbs faster each time."""
    errors = [0, 6, 18, 48]
    with History(path) as store:
        for i, n in enumerate(errors):
            rep = dataclasses.replace(report, generated_at=f"2025-01-01T00:0{i}:00+00:00")
            ts = 1_735_689_600.0 + 60 * i
            counters = [PortCounters("leaf01", 5, ts, {"SymbolErrorCounter": n, "PortRcvErrors": 0}),
                        PortCounters("spine01", 1, ts, {"SymbolErrorCounter": 0, "PortRcvErrors": 0})]
            store.append(rep, counters)


async def test_link_detail_draws_the_counter_rates_of_past_sweeps(report, tmp_path):
    store = tmp_path / "history.sqlite"
    _sweeps(report, store)
    app = FabricdocApp(report, impact_factory=None, history_path=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_main(pilot)
        await pilot.press("2", "enter")  # F001: leaf01[5] -- spine01[1]
        await wait_for(pilot, lambda: isinstance(app.screen, DetailScreen), what="the link detail")
        sparks = list(app.screen.query(Sparkline))
        assert len(sparks) == 1  # the flat counters are left out
        assert list(sparks[0].data) == [0.1, 0.2, 0.5]
        assert "leaf01[5] symbol_errors (per second, 3 sweeps)" in screen_text(app)


async def test_a_missing_store_is_not_created(report, tmp_path):
    store = tmp_path / "none" / "history.sqlite"
    app = FabricdocApp(report, impact_factory=None, history_path=store)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_main(pilot)
        await pilot.press("2", "enter")
        await wait_for(pilot, lambda: "no history" in screen_text(app), what="no history")
    assert not store.parent.exists()
