"""Helpers for the TUI tests: a fixed report with hostile labels, a history store of real-shaped
perfquery samples, running Pilot tests, reading what the screen shows."""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import io
import time
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any

from fabricdoc.analysis.localize import sort_findings
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.evidence import (
    CounterEvidence,
    FlapEvidence,
    GpuEvidence,
    PairSample,
    SlowPairsEvidence,
    StateEvidence,
)
from fabricdoc.model.findings import Finding, assign_ids
from fabricdoc.model.records import Observations, PairResult, PortCounters, PortRef
from fabricdoc.report.history import History
from fabricdoc.report.report import Report

MARKUP_LABEL = "[red]x[/red]"  # rich markup
CLICK_LABEL = "[@click=quit]"  # a Textual action link
ESCAPE_LABEL = "gpu\x1b[2J\x1b]0;owned\x07\u202ehost"  # clears the screen, sets the title, flips the text
ESCAPE_SHOWN = "gpu\\x1b[2J\\x1b]0;owned\\x07\\u202ehost"  # how fabricdoc.model.text.escape shows it
GENERATED_AT = "2025-01-01T00:00:00+00:00"
T0 = 1_760_000_000.0
EXPECTED_GBPS = 368.0
# One port's basic PortCounters (IBTA) as a real `perfquery LID PORT` printed them.
PERFQUERY_BASIC: dict[str, int | None] = {
    "SymbolErrorCounter": 57, "LinkErrorRecoveryCounter": 0, "LinkDownedCounter": 0, "PortRcvErrors": 0,
    "PortRcvRemotePhysicalErrors": 0, "PortRcvSwitchRelayErrors": 0, "PortXmitDiscards": 0,
    "PortXmitConstraintErrors": 0, "PortRcvConstraintErrors": 0, "LocalLinkIntegrityErrors": 0,
    "ExcessiveBufferOverrunErrors": 0, "QP1Dropped": 0, "VL15Dropped": 0, "PortXmitData": 35856,
    "PortRcvData": 35928, "PortXmitPkts": 498, "PortRcvPkts": 499, "PortXmitWait": 0,
}


def _counter(node: str, port: int, counter: str, raw: str, delta: float) -> CounterEvidence:
    """A counter rule's evidence as analysis.direct writes it: a delta over a 10 s sample."""
    return CounterEvidence(node=node, port=port, counter=counter, delta=delta, per_second=round(delta / 10.0, 6),
                           interval_s=10.0, raw=(raw,))


def _pair(src: str, dst: str, busbw: float, rnd: int = 0) -> PairResult:
    return PairResult(PortRef(src, 1), PortRef(dst, 1), "ok", busbw, EXPECTED_GBPS, round=rnd)


def _sample(fabric, p: PairResult) -> PairSample:
    """A slow test as tomography lists it: its ends by label."""
    return PairSample((fabric.label(p.src.node), p.src.port), (fabric.label(p.dst.node), p.dst.port), p.status,
                      p.busbw_gbps, p.expected_gbps, round(p.ratio, 4))


def make_report(**thresholds: float) -> Report:
    """A 16-host leaf/spine with a down host cable, a lossy uplink, a flapping uplink, a GPU fault, a slow NIC.

    The findings are written by hand in the shapes fabricdoc's analysis gives
    (so these tests do not move when the inference does), numbered in its order.
    Three hosts carry labels a hostile or careless fabric description could:
    rich markup, a Textual action link, and terminal escape sequences.
    """
    fabric = fat_tree_2(4, 2, 4)
    for nid, label in (("node0003", MARKUP_LABEL), ("node0006", CLICK_LABEL), ("node0010", ESCAPE_LABEL)):
        fabric.nodes[nid].label = label
        fabric.nodes[nid].attrs["host"] = label
    fabric.links[fabric.link_at(PortRef("node0006", 1)).key].state = "down"
    slow_nic = [_pair("node0003", "node0007", b, r) for r, b in enumerate((276.0, 275.2, 277.7))]
    slow_uplink = [_pair("node0009", "node0014", 256.2), _pair("node0011", "node0016", 255.1)]
    pairs = [_pair("node0001", "node0005", b, r) for r, b in enumerate((338.1, 340.2, 339.0))]
    pairs += slow_nic + slow_uplink + [_pair("node0012", "node0013", 341.5)]
    nic_ratios = sorted(p.ratio for p in slow_nic)
    uplink_ratios = sorted(p.ratio for p in slow_uplink)
    findings = [
        Finding("", "link", "leaf01[5] -- spine01[1]", "symbol_errors", "error", 0.95,
                [_counter("leaf01", 5, "symbol_errors", "SymbolErrorCounter", 10.0),
                 _counter("leaf01", 5, "rcv_errors", "PortRcvErrors", 1.0)],
                [("leaf01", 5), ("spine01", 1)], ["leaf01", "spine01"]),
        Finding("", "link", f"leaf02[2] -- {CLICK_LABEL}[1]", "down", "error", 0.99,
                [StateEvidence(node="leaf02", port=2, state="Down", phys_state="Polling", source="iblinkinfo"),
                 StateEvidence(node=CLICK_LABEL, port=1, state="Down", phys_state="Polling", source="iblinkinfo")],
                [("leaf02", 2), (CLICK_LABEL, 1)], ["leaf02", "node0006"]),
        Finding("", "link", "leaf03[6] -- spine02[3]", "flapping", "error", 0.95,
                [_counter("leaf03", 6, "link_downed", "LinkDownedCounter", 3.0),
                 FlapEvidence(3, T0 + 1.429, T0 + 7.143, round(3 / (5.714 / 60.0), 3)),
                 SlowPairsEvidence(tests=4, slow=2, worst_ratio=round(uplink_ratios[0], 4),
                                   median_ratio=round(uplink_ratios[1], 4),
                                   slow_pairs=tuple(_sample(fabric, p) for p in slow_uplink))],
                [("leaf03", 6), ("spine02", 3)], ["leaf03", "spine02"]),
        Finding("", "nic", f"{MARKUP_LABEL} port 1", "degraded_bandwidth", "warning", 0.875,
                [SlowPairsEvidence(tests=3, slow=3, worst_ratio=round(nic_ratios[0], 4),
                                   median_ratio=round(nic_ratios[1], 4),
                                   slow_pairs=tuple(_sample(fabric, p) for p in slow_nic))],
                [("leaf01", 3), (MARKUP_LABEL, 1)], ["leaf01", "node0003"]),
        Finding("", "gpu", f"{MARKUP_LABEL} GPU 0", "gpu_error", "error", 0.9,
                [GpuEvidence("GPU-5f0c3a52-8d0e-2b6f-41c4-9d3b7e1f0a66", ("xid 79", "row remap pending (reset the GPU)"))],
                None, [MARKUP_LABEL]),
    ]
    findings = sort_findings(findings)
    assign_ids(findings)
    obs = Observations(pairs=pairs, interval_s=10.0)
    report = Report.build(fabric, findings, obs, duration_s=12.5, thresholds=thresholds or None)
    report.generated_at = GENERATED_AT
    return report


def finding_id(report: Report, fault: str) -> str:
    """The id of the report's (only) finding with this fault."""
    (f,) = [f for f in report.findings if f.fault == fault]
    return f.id


# -- history store -------------------------------------------------------------------

def perfquery_sample(node: str, port: int, timestamp: float, **values: int) -> PortCounters:
    """One port's PortCounters as the perfquery probe gives them (every basic counter), some set."""
    unknown = set(values) - set(PERFQUERY_BASIC)
    assert not unknown, f"perfquery reports no {unknown}"
    return PortCounters(node, port, timestamp, {**PERFQUERY_BASIC, **values}, source="perfquery")


def write_history(report: Report, path: Path, symbol_errors: list[int], start: float = 1_735_689_600.0) -> None:
    """One sweep a minute for each value: leaf01[5] reads ``symbol_errors``, its peer spine01[1] none.

    Both ports move data at a steady 1,000 words/s, as a busy fabric's do.
    """
    with History(path) as store:
        for i, errors in enumerate(symbol_errors):
            ts = start + 60 * i
            sweep = dataclasses.replace(report, generated_at=f"2025-01-01T00:{i:02d}:00+00:00", run_id=f"sweep-{i}")
            words = 60_000 * i
            store.append(sweep, [
                perfquery_sample("leaf01", 5, ts, SymbolErrorCounter=errors, PortXmitData=words, PortRcvData=words),
                perfquery_sample("spine01", 1, ts, PortXmitData=words, PortRcvData=words),
            ])


# -- running the app -----------------------------------------------------------------

def async_test(fn: Callable[..., Coroutine[Any, Any, None]]) -> Callable[..., None]:
    """Run an ``async def`` test in a fresh event loop (App.run_test() needs one; no asyncio plugin here)."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> None:
        asyncio.run(fn(*args, **kwargs))

    return run


async def settle(pilot, condition: Callable[[], Any], what: str, timeout_s: float = 10.0) -> None:
    """Let the running app work until ``condition()`` holds; AssertionError naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what}")
        await pilot.pause(0.02)


async def wait_main(pilot):
    """Wait until the report's main screen is up (files load in a worker); return it."""
    from fabricdoc.tui.screens.main import MainScreen

    await settle(pilot, lambda: isinstance(pilot.app.screen, MainScreen), "the main screen")
    await pilot.pause()
    return pilot.app.screen


# -- what is shown -------------------------------------------------------------------

def screen_text(app) -> str:
    """What the terminal shows now, as plain text (the same render an SVG screenshot takes)."""
    from rich.console import Console

    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), force_terminal=True,
                      color_system="truecolor", record=True, legacy_windows=False, safe_box=False)
    console.print(app.screen._compositor.render_update(full=True, screen_stack=app._background_screens))
    return console.export_text()


def words(text: str) -> str:
    """Text with every run of whitespace as one space: phrases match whatever the column widths."""
    return " ".join(text.split())


def shown(app) -> str:
    """The screen's words (see :func:`words`)."""
    return words(screen_text(app))


def text_of(widget) -> str:
    """The plain text a Panel (or any Static) holds, whitespace collapsed."""
    content = widget.content
    return words(getattr(content, "plain", str(content)))
