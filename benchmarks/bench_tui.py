"""How fast the TUI opens and scrolls a 65,536-host fat-tree report (fat_tree_3(64)).

Targets (issue 16): open, the first show of every tab and a what-if answer each
under 2 s, memory under 1 GiB. Prints: report size and load (Report.load: JSON
parse, schema validation, columns expanded); then, in a first app, the time until
the main screen is up, the first show of every tab, per-page scroll time through
the hosts and links tables, a filter, when the impact model was ready (its process
starts with the app reading the file; timed from opening, while the tour above ran)
and the what-if per key press with the real impact model, then the process's
memory; last, in an app of its own (its model as cold as a user finds it), a
what-if asked as soon as the main screen is up (the impact tab, ``d`` on its first
host), timed from the main screen and from opening. Headless (App.run_test), so the
figures are the app's own work, not a terminal's. Every wait has a deadline: a
stuck condition ends the run with a message, never a hang.

With ``--no-levels`` the switches carry no ``level`` attribute, as a discovered
(ibnetdiscover) fabric's report comes: the TUI works the levels out from the
cabling (the report's fabric rebuilt once, in a worker) for the tree and the map.

    python benchmarks/bench_tui.py [--k 64] [--pages 40] [--no-model] [--open-only] [--copy-report] [--no-levels]
                                   [--what-if-only N]
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import resource
import sys
import tempfile
import time
from pathlib import Path

from fabricdoc.report.report import Report

WAIT_S = 600.0  # the longest any one step may take before the run gives up


def build_report(k: int, levels: bool = True) -> Report:
    """The fabric with a few dozen link findings (every tenth cable down, the rest symbol errors);
    ``levels=False``: its switches without a ``level`` attribute (as discovered fabrics come).
    (Imported here: the impact model's process imports this file as its main module, as it
    imports the ``fabricdoc`` command's, and should not pay for what only building needs.)"""
    from fabricdoc.analysis.localize import sort_findings
    from fabricdoc.fabric.generators import fat_tree_3
    from fabricdoc.model.evidence import CounterEvidence, StateEvidence
    from fabricdoc.model.findings import Finding, assign_ids
    from fabricdoc.model.records import Observations

    fabric = fat_tree_3(k)
    if not levels:
        for sw in fabric.switches():
            sw.attrs.pop("level", None)
    findings = []
    links = list(fabric.links.values())
    for i, lk in enumerate(links[:: max(1, len(links) // 40)][:40]):
        a, b = lk.key.a, lk.key.b
        la, lb = fabric.label(a.node), fabric.label(b.node)
        if i % 10 == 0:
            fault, sev, conf = "down", "error", 0.99
            evidence = [StateEvidence(node=la, port=a.port, state="Down", phys_state="Polling", source="iblinkinfo")]
        else:
            fault, sev, conf = "symbol_errors", "warning", 0.95
            evidence = [CounterEvidence(node=la, port=a.port, counter="symbol_errors", delta=57.0, per_second=5.7,
                                        interval_s=10.0, raw=("SymbolErrorCounter",))]
        findings.append(Finding("", "link", f"{la}[{a.port}] -- {lb}[{b.port}]", fault, sev, conf, evidence,
                                [(la, a.port), (lb, b.port)], [a.node, b.node]))
    findings = sort_findings(findings)
    assign_ids(findings)
    return Report.build(fabric, findings, Observations())


async def until(pilot, condition, what: str, poll_s: float = 0.01) -> None:
    """Let the app work until ``condition()`` holds; SystemExit naming ``what`` after WAIT_S."""
    deadline = time.perf_counter() + WAIT_S
    while not condition():
        if time.perf_counter() > deadline:
            raise SystemExit(f"bench_tui: gave up after {WAIT_S:.0f} s waiting for {what}")
        await pilot.pause(poll_s)


def timed(label: str, seconds: float, extra: str = "") -> None:
    print(f"{label:<44} {seconds * 1000:9.1f} ms {extra}")


def rss_mib(pid: int | None = None) -> float:
    """This process's (or process ``pid``'s) resident memory now (Linux), else this one's peak."""
    try:
        for line in Path(f"/proc/{pid or 'self'}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def run_app(path: Path, pages: int, with_model: bool, open_only: bool = False, copy_report: bool = False) -> None:
    from fabricdoc.tui.app import FabricdocApp, default_impact_factory
    from fabricdoc.tui.screens.main import TABS, MainScreen
    from fabricdoc.tui.widgets.table import ReportTable

    factory = default_impact_factory
    if copy_report:  # as before issue 16's last step: the Report object pickled to the model's process
        def factory(report):
            return default_impact_factory(report)
    app = FabricdocApp(path, impact_factory=factory if with_model else None)
    t0 = time.perf_counter()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        await pilot.pause()
        timed("open: start -> main screen up (incl. load)", time.perf_counter() - t0)
        screen = app.screen
        tree = screen.query_one("#fabric-tree")
        if str(tree.root.children[0].label).startswith("switches:"):  # levels worked out from the cabling
            await until(pilot, lambda: not str(tree.root.children[0].label).startswith("switches:"),
                        "the switch levels in the tree")
            timed("open: switch levels in the tree (from the cabling)", time.perf_counter() - t0)
        impact = screen.tab("impact")
        # The model's process starts once the screen is drawn: the app must still answer keys then.
        await until(pilot, lambda: impact._model_started, "the impact model's start")
        t = time.perf_counter()
        await pilot.press("2")
        await pilot.pause()
        timed("open: first key after the main screen is up", time.perf_counter() - t0,
              f"(the key itself {1000 * (time.perf_counter() - t):.0f} ms)")
        if open_only:
            return
        await pilot.press("1")
        await pilot.pause()
        for n, tab_cls in list(enumerate(TABS, 1))[1:] + [(1, TABS[0])]:
            tab = screen.tab(tab_cls.TAB_ID)
            t = time.perf_counter()
            await pilot.press(str(n))
            await until(pilot, lambda tab=tab: tab.loaded and screen.active_tab == tab.TAB_ID, f"the {tab.TAB_ID} tab")
            await pilot.pause()
            if hasattr(tab, "ready"):  # the map draws its grids in a worker
                await until(pilot, lambda tab=tab: tab.ready, "the map's grids")
                await pilot.pause()
            table = tab.table()
            rows = f"({table.row_count:,} rows)" if table is not None else ""
            timed(f"{tab.TAB_ID}: first show", time.perf_counter() - t, rows)
        await pilot.press("6")
        fabric_map = screen.query_one("#fabric-map")
        if not fabric_map.win.unit:  # drawn in blocks: zoom into the first (enter on one cable opens it)
            t = time.perf_counter()
            await pilot.press("enter")
            await pilot.pause()
            timed("map: zoom into a block", time.perf_counter() - t, f"({len(fabric_map.win.row_blocks)} rows shown)")
            await pilot.press("backspace")
        t = time.perf_counter()
        await pilot.press("v")
        await pilot.pause()
        timed("map: show the next grid", time.perf_counter() - t)
        for tab_id, key in (("hosts", "3"), ("links", "4")):
            await pilot.press(key)
            await pilot.pause()
            table = screen.query_one(f"#{tab_id}-table", ReportTable)
            t = time.perf_counter()
            for _ in range(pages):
                await pilot.press("pagedown")
            await pilot.pause()
            per = (time.perf_counter() - t) / max(1, pages)
            timed(f"{tab_id}: scroll, per page", per, f"(cursor at row {table.cursor_row:,})")
            t = time.perf_counter()
            await pilot.press("ctrl+end")
            await pilot.pause()
            timed(f"{tab_id}: jump to the last row", time.perf_counter() - t, f"(row {table.cursor_row:,})")
        await pilot.press("3")
        table = screen.query_one("#hosts-table", ReportTable)
        t = time.perf_counter()
        await pilot.press("slash", *"p0", "enter")
        await until(pilot, lambda: table.filter_text == "p0", "the filter")
        timed("hosts: filter 'p0'", time.perf_counter() - t, f"({len(table.shown):,} rows)")
        await pilot.press("escape")
        print(f"memory before the impact model: {rss_mib():,.0f} MiB")
        if not with_model:
            return
        # The model is built once, in the background, from when the main screen is up.
        impact = screen.tab("impact")
        await pilot.press("5")
        await until(pilot, lambda: impact.model_state != "loading", "the impact model", 0.05)
        timed("impact model ready (from opening, with the tour)", impact.settled_at - t0,
              impact.model_error or f"({len(impact.model.job_hosts):,} job hosts)")
        if impact.model is None:
            return
        result = screen.query_one("#whatif-result")
        await until(pilot, lambda: "predicted" in str(result.content), "the first prediction")
        for _ in range(3):
            before = result.content
            t = time.perf_counter()
            await pilot.press("j", "d")
            await until(pilot, lambda b=before: result.content is not b and "predicted" in str(result.content),
                        "the new prediction")
            timed("what-if: d -> new prediction", time.perf_counter() - t)
        print(f"memory with the impact model: {rss_mib():,.0f} MiB")


async def first_what_if(path: Path) -> None:
    """Open the report and ask a what-if at once: the time until it is answered is the impact
    model's build (its process starts when the app starts reading the file) plus the what-if."""
    from fabricdoc.tui.app import FabricdocApp
    from fabricdoc.tui.screens.main import MainScreen

    app = FabricdocApp(path)
    t0 = time.perf_counter()
    async with app.run_test(size=(160, 48)) as pilot:
        await until(pilot, lambda: isinstance(app.screen, MainScreen), "the main screen")
        await pilot.pause()
        t_main = time.perf_counter()
        screen = app.screen
        impact = screen.tab("impact")
        await pilot.press("5")
        await until(pilot, lambda: impact.loaded, "the impact tab")
        await pilot.press("d")
        result = screen.query_one("#whatif-result")
        head = f"what-if: drain {len(impact.drained)} host"  # the report's drains and the one just toggled
        await until(pilot, lambda: impact.model is not None and "predicted" in str(result.content)
                    and str(result.content).startswith(head), "the first what-if answer")
        done = time.perf_counter()
        timed("what-if asked at once: answer after main screen", done - t_main,
              f"(main screen up {1000 * (t_main - t0):.0f} ms after opening; from opening {1000 * (done - t0):.0f} ms)")
        if impact.model_error:
            print(f"impact model: {impact.model_error}")
        child = getattr(getattr(impact.model, "_process", None), "pid", None)
        if child is not None:
            print(f"memory of the impact model's process: {rss_mib(child):,.0f} MiB (the app's: {rss_mib():,.0f} MiB)")


def handoff(path: Path) -> None:
    """How long handing the report to the impact model's process holds the app: the Report object
    pickled to it (the old way) against the file's path, with the longest stall another thread
    (the app's event loop) sees meanwhile. The child is closed at once: its build is not timed here."""
    import threading

    from fabricdoc.tui.impact_process import ModelProcess

    report = Report.load(path)
    for mode in ("copy the Report", "pass the path"):
        gaps: list[float] = []
        stop = threading.Event()

        def tick(gaps: list[float] = gaps, stop: threading.Event = stop) -> None:
            last = time.perf_counter()
            while not stop.wait(0.005):
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        ticker = threading.Thread(target=tick)
        ticker.start()
        t = time.perf_counter()
        model = ModelProcess(report, path if mode == "pass the path" else None)
        spent = time.perf_counter() - t
        stop.set()
        ticker.join()
        model.close()
        timed(f"impact process hand-off: {mode}", spent, f"(longest stall of another thread {max(gaps, default=0) * 1000:.0f} ms)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--k", type=int, default=64, help="fat_tree_3 radix (64: 65,536 hosts; 4: the smallest)")
    ap.add_argument("--pages", type=int, default=40, help="pages to scroll through each table")
    ap.add_argument("--no-model", action="store_true", help="skip the impact model and what-if")
    ap.add_argument("--open-only", action="store_true", help="stop once the main screen is up and answers a key")
    ap.add_argument("--what-if-only", type=int, default=0, metavar="N",
                    help="only time a what-if asked as soon as the main screen is up, N times")
    ap.add_argument("--no-levels", action="store_true",
                    help="switches without a level attribute (a discovered fabric): levels from the cabling")
    ap.add_argument("--copy-report", action="store_true",
                    help="hand the impact model's process the Report object, not the file's path (the old way)")
    args = ap.parse_args()
    t = time.perf_counter()
    report = build_report(args.k, levels=not args.no_levels)
    timed(f"build report ({report.fabric['hosts']:,} hosts, {report.fabric['links']:,} links)", time.perf_counter() - t)
    with tempfile.TemporaryDirectory(prefix="fdtui-bench-") as tmp:
        path = Path(tmp) / "report.json"
        report.save(path)
        del report  # the app loads its own copy, as `fabricdoc tui` does
        print(f"report file: {path.stat().st_size / 1e6:.1f} MB")
        t = time.perf_counter()
        Report.load(path)
        timed("load: Report.load (parse, validate, build)", time.perf_counter() - t)
        if args.what_if_only:
            for _ in range(args.what_if_only):
                gc.collect()  # the last app's objects: not this one's to walk
                asyncio.run(first_what_if(path))
            return 0
        if not args.no_model:
            handoff(path)
        asyncio.run(run_app(path, args.pages, not args.no_model, args.open_only, args.copy_report))
        if not args.no_model and not args.open_only:
            gc.collect()  # the first app's objects: not this one's to walk
            asyncio.run(first_what_if(path))
    print(f"peak memory (max RSS, incl. building the report): {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:,.0f} MiB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
