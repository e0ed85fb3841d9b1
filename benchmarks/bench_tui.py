"""How fast the TUI opens and scrolls an 8,192-host fat-tree report (fat_tree_3(32)).

Prints: report load (JSON parse + schema validation), time until the main
screen is up, time to fill the hosts / links tables the first time they are
shown, per-page scroll time through them, a filter, and the what-if per key
press with the real impact model. Headless (App.run_test), so the figures are
the app's own work, not a terminal's.

    python benchmarks/bench_tui.py [--k 32] [--pages 40]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from fabricdoc.generators import fat_tree_3
from fabricdoc.model import Evidence, Finding, Observations
from fabricdoc.report import Report
from fabricdoc.schema import validate_report


def build_report(k: int) -> Report:
    """The fabric with a few dozen link findings and a drained host or two."""
    fabric = fat_tree_3(k)
    findings = []
    links = list(fabric.links.values())
    for i, lk in enumerate(links[:: max(1, len(links) // 40)][:40]):
        a, b = lk.key.a, lk.key.b
        fault, sev = ("down", "error") if i % 10 == 0 else ("symbol_errors", "warning")
        findings.append(Finding(
            f"F{i + 1:03d}", "link", f"{fabric.label(a.node)}[{a.port}] -- {fabric.label(b.node)}[{b.port}]", fault, sev, 0.9,
            [Evidence("counter", {"node": fabric.label(a.node), "port": a.port, "counter": "symbol_errors",
                                  "delta": 57, "per_second": 5.7})],
            [(fabric.label(a.node), a.port), (fabric.label(b.node), b.port)], [a.node, b.node]))
    return Report.build(fabric, findings, Observations())


def timed(label: str, seconds: float, extra: str = "") -> None:
    print(f"{label:<44} {seconds * 1000:9.1f} ms {extra}")


async def run_app(path: Path, pages: int, with_model: bool) -> None:
    from fabricdoc.tui.app import FabricdocApp, default_impact_factory
    from fabricdoc.tui.screens import MainScreen
    from fabricdoc.tui.widgets import ReportTable

    app = FabricdocApp(path, impact_factory=default_impact_factory if with_model else None)
    t0 = time.perf_counter()
    async with app.run_test(size=(160, 48)) as pilot:
        while not isinstance(app.screen, MainScreen):
            await pilot.pause(0.01)
        await pilot.pause()
        timed("open: start -> main screen up (incl. load)", time.perf_counter() - t0)
        screen = app.screen
        for tab, key in (("hosts", "3"), ("links", "4")):
            t = time.perf_counter()
            await pilot.press(key)
            await pilot.pause()
            table = screen.query_one(f"#{tab}-table", ReportTable)
            timed(f"{tab}: first show ({table.row_count:,} rows)", time.perf_counter() - t)
            t = time.perf_counter()
            for _ in range(pages):
                await pilot.press("pagedown")
            await pilot.pause()
            per = (time.perf_counter() - t) / pages
            timed(f"{tab}: scroll, per page", per, f"(cursor at row {table.cursor_row:,})")
            t = time.perf_counter()
            await pilot.press("ctrl+end")
            await pilot.pause()
            timed(f"{tab}: jump to the last row", time.perf_counter() - t, f"(row {table.cursor_row:,})")
        await pilot.press("3")
        table = screen.query_one("#hosts-table", ReportTable)
        t = time.perf_counter()
        await pilot.press("slash", *"p07", "enter")
        while table.filter_text != "p07":
            await pilot.pause(0.01)
        timed("hosts: filter 'p07'", time.perf_counter() - t, f"({len(table.shown):,} rows)")
        if with_model:
            t = time.perf_counter()
            while screen.model is None and screen.model_error is not None and "loading" in screen.model_error:
                await pilot.pause(0.05)
            timed("impact model ready (after the main screen)", time.perf_counter() - t, screen.model_error or "")
            await pilot.press("5")
            await pilot.pause()
            for _ in range(3):
                before = screen.query_one("#whatif-result").render()
                t = time.perf_counter()
                await pilot.press("j", "d")
                while screen.query_one("#whatif-result").render() == before:
                    await pilot.pause(0.01)
                timed("what-if: d -> new prediction", time.perf_counter() - t)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=32, help="fat_tree_3 radix (32: 8,192 hosts)")
    ap.add_argument("--pages", type=int, default=40, help="pages to scroll through each table")
    ap.add_argument("--no-model", action="store_true", help="skip the impact model and what-if")
    args = ap.parse_args()
    t = time.perf_counter()
    report = build_report(args.k)
    timed(f"build report ({report.fabric['hosts']:,} hosts, {report.fabric['links']:,} links)", time.perf_counter() - t)
    with tempfile.TemporaryDirectory(prefix="fdtui-bench-") as tmp:
        path = Path(tmp) / "report.json"
        report.save(path)
        print(f"report file: {path.stat().st_size / 1e6:.1f} MB")
        t = time.perf_counter()
        data = json.loads(path.read_text())
        timed("load: JSON parse", time.perf_counter() - t)
        t = time.perf_counter()
        validate_report(data, str(path))
        timed("load: schema validation", time.perf_counter() - t)
        asyncio.run(run_app(path, args.pages, not args.no_model))
    return 0


if __name__ == "__main__":
    sys.exit(main())
