"""`fabricdoc tui --sweep ...` hands the sweep's own arguments to fabricdoc.sweep and shows its report."""

from __future__ import annotations

import pytest
from fabricdoc.tui.app import FabricdocApp
from tui_helpers import screen_text, wait_main

from fabricdoc.commands.tui import _sweep_fn
from fabricdoc.errors import FabricdocError
from fabricdoc.report import Report


def test_sweep_arguments_are_parsed_by_the_sweep_parser_and_the_report_is_written(tmp_path):
    out = tmp_path / "live.json"
    sweep, output = _sweep_fn(["--fabric", "demo", "--seed", "3", "-o", str(out)])
    assert output == str(out)
    stages = []
    report = sweep(lambda stage, done, total: stages.append((stage, done, total)))
    assert isinstance(report, Report) and report.fabric["name"] == "demo"
    assert Report.load(out).to_dict() == report.to_dict()
    assert {s for s, _, _ in stages} >= {"bandwidth", "impact"}


def test_bad_sweep_arguments_are_one_error():
    with pytest.raises(FabricdocError, match="bad sweep arguments: --no-such-flag"):
        _sweep_fn(["--no-such-flag"])


async def test_the_demo_sweep_runs_live_in_the_app(tmp_path):
    sweep, _ = _sweep_fn(["--fabric", "demo", "-o", str(tmp_path / "r.json")])
    app = FabricdocApp(None, sweep=sweep, impact_factory=None)
    async with app.run_test(size=(160, 48)) as pilot:
        await wait_main(pilot)
        assert f"verdict  {app.report.verdict.upper()}" in screen_text(app)
        await pilot.press("2")
        assert all(f.id in screen_text(app) for f in app.report.findings[:3])
