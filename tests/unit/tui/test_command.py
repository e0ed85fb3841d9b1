"""`fabricdoc tui`: a report file, or `--sweep ...` handed to the sweep's own parser and shown live."""

from __future__ import annotations

import subprocess
import sys

from fabricdoc.tui.app import FabricdocApp

from fabricdoc.cli.main import main
from fabricdoc.report.report import Report
from tests.helpers.tui import async_test, wait_main


def test_sweep_arguments_are_parsed_by_the_sweep_parser_and_the_report_is_written(tmp_path, sweep_handed_to_the_app):
    out = tmp_path / "live.json"
    sweep, output = sweep_handed_to_the_app(["--fabric", "demo", "--seed", "3", "-o", str(out)])
    assert output == str(out)
    stages = []
    report = sweep(lambda stage, done, total: stages.append((stage, done, total)))
    assert isinstance(report, Report) and report.fabric["name"] == "demo"
    assert Report.load(out).to_dict() == report.to_dict()
    assert {s for s, _, _ in stages} >= {"bandwidth", "impact"}


def test_bad_sweep_arguments_are_one_error_and_exit_2(capsys):
    assert main(["tui", "--sweep", "--no-such-flag"]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == "fabricdoc tui: error: bad sweep arguments: --no-such-flag"


@async_test
async def test_the_demo_sweep_runs_live_in_the_app(tmp_path, sweep_handed_to_the_app):
    sweep, _ = sweep_handed_to_the_app(["--fabric", "demo", "-o", str(tmp_path / "r.json")])
    app = FabricdocApp(None, sweep=sweep, impact_factory=None)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_main(pilot)
        assert screen.index.report is app.report
        await pilot.press("2")
        table = screen.query_one("#findings-table")
        assert [r.key for r in table.shown] == [f.id for f in app.report.findings]


def test_tui_command_with_a_missing_report_is_one_line_and_exit_2(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "fabricdoc", "tui", str(tmp_path / "nope.json")],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [f"fabricdoc tui: error: {tmp_path / 'nope.json'}: no such report file"]
