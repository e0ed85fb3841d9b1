"""Runtime findings (a job's NCCL debug output and RAS report) in the TUI, like sweep findings."""

from __future__ import annotations

import json

from fabricdoc.tui.app import FabricdocApp
from fabricdoc.tui.widgets.table import ReportTable

from fabricdoc.cli.main import main
from tests.helpers.paths import DATA
from tests.helpers.tui import async_test, text_of, wait_main

SOCKETS = DATA / "nccl-debug" / "synthetic_demo_node0001_cable_from_snellius" / "job.log"


@async_test
async def test_a_jobs_cable_finding_shows_its_nccl_log_lines_and_a_ras_host_its_report_line(tmp_path, capsys):
    ras = tmp_path / "ras.txt"  # ncclras's DEAD section naming the address node0003 bootstrapped on (its Bootstrap line)
    ras.write_text("Errors\n======\n\nDEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
                   "  Process 1904981 on node 172.18.62.153 managing GPU 0\n\nWarnings\n========\n")
    path = tmp_path / "r.json"
    main(["analyze", "--fabric", "demo", "--nccl-debug", str(SOCKETS), "--nccl-ras", str(ras), "-o", str(path)])
    capsys.readouterr()
    findings = json.loads(path.read_text())["findings"]
    cable = next(f for f in findings if any(e["type"] == "nccl_log" and "connection failed" in e["reason"]
                                            for e in f["evidence"]))
    lost = next(f for f in findings if f["fault"] == "nccl_rank_lost")
    assert lost["name"] == "node0003"
    app = FabricdocApp(str(path), impact_factory=None)
    async with app.run_test(size=(160, 48)) as pilot:
        screen = await wait_main(pilot)
        await pilot.press("2")
        table = screen.query_one("#findings-table", ReportTable)
        assert {cable["id"], lost["id"]} <= {r.key for r in table.shown}
        evidence = screen.query_one("#evidence")
        while table.current_key != cable["id"]:
            await pilot.press("j")
        assert "connection failed" in text_of(evidence) and "job.log:" in text_of(evidence)
        while table.current_key != lost["id"]:
            await pilot.press("j")
        shown = text_of(evidence)
        assert "NCCL RAS: process (GPU 0, pid 1904981)" in shown and "considered dead" in shown
