"""Helpers for the TUI tests: fixed reports (a simulated sweep with real localization,
hostile labels), the screen as text, polling with a deadline, an impact stand-in."""

from __future__ import annotations

from fabricdoc.generators import fat_tree_2
from fabricdoc.model import Evidence, Finding, Observations, PairResult, PortRef
from fabricdoc.report import Report

MARKUP_LABEL = "[red]x[/red]"
CLICK_LABEL = "[@click=quit]"
GENERATED_AT = "2025-01-01T00:00:00+00:00"
T0 = 1_760_000_000.0


def _counter(node: str, port: int, name: str, raw: str, delta: int, **extra) -> Evidence:
    return Evidence("counter", {"node": node, "port": port, "counter": name, "raw": [raw], "delta": delta,
                                "per_second": delta / 10.0, "interval_s": 10.0, "at_least": False,
                                "reset": False, **extra})


def _pair(src: str, dst: str, busbw: float, rnd: int = 0) -> PairResult:
    return PairResult(PortRef(src, 1), PortRef(dst, 1), "ok", busbw, 368.0, round=rnd)


def make_report() -> Report:
    """A 16-host leaf/spine with a lossy uplink, a down host cable, a flapping uplink and a slow NIC.

    The findings are written by hand in the shapes fabricdoc.localize gives
    (so these tests do not move when the inference does). Two hosts carry
    labels that are Textual/rich markup, as a hostile or careless fabric
    description could.
    """
    fabric = fat_tree_2(4, 2, 4)
    for nid, label in (("node0003", MARKUP_LABEL), ("node0006", CLICK_LABEL)):
        fabric.nodes[nid].label = label
        fabric.nodes[nid].attrs["host"] = label
    fabric.links[fabric.link_at(PortRef("node0006", 1)).key].state = "down"
    slow = [{"src": [s, 1], "dst": [d, 1], "status": "ok", "busbw_gbps": b, "expected_gbps": 368.0,
             "ratio": round(b / 368.0, 4)} for s, d, b in (("node0009", "node0014", 256.2), ("node0011", "node0016", 255.1))]
    findings = [
        Finding("F001", "link", "leaf01[5] -- spine01[1]", "symbol_errors", "error", 0.99,
                [_counter("leaf01", 5, "symbol_errors", "SymbolErrorCounter", 10),
                 _counter("leaf01", 5, "rcv_errors", "PortRcvErrors", 1)],
                [("leaf01", 5), ("spine01", 1)], ["leaf01", "spine01"]),
        Finding("F002", "link", f"leaf02[2] -- {CLICK_LABEL}[1]", "down", "error", 0.99,
                [Evidence("state", {"node": "leaf02", "port": 2, "state": "Down", "phys_state": "Polling"}),
                 Evidence("state", {"node": CLICK_LABEL, "port": 1, "state": "Down", "phys_state": "Polling"})],
                [("leaf02", 2), (CLICK_LABEL, 1)], ["leaf02", "node0006"]),
        Finding("F003", "link", "leaf03[6] -- spine02[3]", "flapping", "error", 0.95,
                [_counter("leaf03", 6, "link_downed", "LinkDownedCounter", 3),
                 Evidence("event", {"flaps": 3, "first": T0 + 1.429, "last": T0 + 7.143, "per_minute": 31.502}),
                 Evidence("pairs", {"tests": 4, "slow": 2, "worst_ratio": 0.6932, "median_ratio": 0.6962,
                                    "equivalent_suspects": 1, "slow_pairs": slow})],
                [("leaf03", 6), ("spine02", 3)], ["leaf03", "spine02"]),
        Finding("F004", "nic", f"{MARKUP_LABEL} port 1", "degraded_bandwidth", "warning", 0.969,
                [Evidence("pairs", {"tests": 3, "slow": 3, "worst_ratio": 0.41, "median_ratio": 0.42,
                                    "equivalent_suspects": 1, "slow_pairs": []})],
                [("leaf01", 3), (MARKUP_LABEL, 1)], ["leaf01", "node0003"]),
        Finding("F005", "host", MARKUP_LABEL, "gpu_error", "warning", 0.5,
                [_counter(MARKUP_LABEL, 1, "[b]SymbolErrorCounter[/b]", "SymbolErrorCounter", 3,
                          history=[0, 1, 1, 2, 3])],
                None, ["node0003"]),
    ]
    pairs = [_pair("node0001", "node0005", 338.1, r) for r in range(3)]
    pairs += [_pair("node0003", "node0007", b, r) for r, b in enumerate((151.0, 150.2, 152.7))]
    pairs += [_pair("node0009", "node0014", 256.2), _pair("node0011", "node0016", 255.1)]
    obs = Observations(pairs=pairs, interval_s=10.0)
    report = Report.build(fabric, findings, obs, duration_s=12.5)
    report.generated_at = GENERATED_AT
    return report


def screen_text(app) -> str:
    """What the terminal shows now, as plain text (the same render an SVG screenshot takes)."""
    import io

    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


async def wait_for(pilot, condition, timeout: float = 10.0, what: str = "condition") -> None:
    """Poll the running app until ``condition()`` holds, failing after ``timeout`` seconds."""
    import time

    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await pilot.pause(0.02)


async def wait_main(pilot):
    """Wait until the report's main screen is up (files load in a worker)."""
    from fabricdoc.tui.screens import MainScreen

    await wait_for(pilot, lambda: isinstance(pilot.app.screen, MainScreen), what="the main screen")
    await pilot.pause()
    return pilot.app.screen

