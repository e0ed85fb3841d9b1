"""How each kind of evidence reads, declared once: segments of text with a role, joined by the CLI, styled by the TUI.

A new evidence kind adds one function here and one line in :data:`WRITERS`; the text report, the TUI's
finding detail and the test that runs every kind through both come from it. Every fabric string
(node labels, counter names, log lines) is escaped here, so no renderer can forget it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

from fabricdoc.model.evidence import (
    CandidatesEvidence,
    CorruptionEvidence,
    CounterEvidence,
    Evidence,
    FlapEvidence,
    GpuEvidence,
    GroupLoadEvidence,
    HostEvidence,
    NcclLogEvidence,
    NotDiscoveredEvidence,
    NotRespondingEvidence,
    SlowPairsEvidence,
    StateEvidence,
    SwitchLinksEvidence,
)
from fabricdoc.model.text import escape as safe
from fabricdoc.model.text import gbps_text, time_text

# part: a port, cable, host or counter the evidence is about; figure: a measured number; rate: a per-time
# figure; note: context (where a figure came from); warn: a caveat the reader must not miss; bad: what failed.
Role = Literal["", "part", "figure", "rate", "note", "warn", "bad"]
Segment = tuple[str, Role]


def _port(node: str, port: int) -> str:
    return f"{safe(node)}[{port}]"


def _counter(ev: CounterEvidence) -> list[Segment]:
    bound = "≥" if ev.at_least else ""
    rate = f"{ev.per_second:.3g}/s" if ev.per_second is not None else "no rate: zero interval"
    interval = f"{ev.interval_s:g}s" if ev.interval_s is not None else "an unknown interval"
    out: list[Segment] = [(safe("/".join(ev.raw) or ev.counter), "part"), (f" {bound}+{ev.delta:g}", "figure"),
                          (f" in {interval} ", "note"), (f"({rate})", "rate"), (" at ", ""),
                          (_port(ev.node, ev.port), "part")]
    if ev.reset:
        out.append((" (counter reset)", "warn"))
    return out


def _state(ev: StateEvidence) -> list[Segment]:
    extra = ""
    if ev.lanes is not None:
        extra = f", {ev.lanes}X trained of {ev.supported_lanes}X supported"
    if ev.lane_gbps is not None:
        extra += f", {ev.lane_gbps:g} Gb/s/lane of {ev.supported_lane_gbps or 0:g}"
    phys = f"/{safe(ev.phys_state)}" if ev.state and ev.phys_state else ""
    out: list[Segment] = [(f"port {safe(ev.state)}{phys}" if ev.state else "link", "figure")]
    if ev.node is not None:
        out += [(" at ", ""), (_port(ev.node, ev.port), "part")]
    if extra:
        out.append((extra, "figure"))
    if ev.expected_from and extra:
        out.append((f", expected from {safe(ev.expected_from)}", "note"))
    if ev.source:
        out.append((f" ({safe(ev.source)})", "note"))
    return out


def _not_responding(ev: NotRespondingEvidence) -> list[Segment]:
    facing = f"{safe(ev.switch_state)}{'/' + safe(ev.switch_phys_state) if ev.switch_phys_state else ''}"
    out: list[Segment] = [(_port(ev.node, ev.port), "part"), (" not responding: missing from the live discovery "
                                                              "while ", ""),
                          (_port(ev.switch, ev.switch_port), "part"), (" facing it is ", ""), (facing, "figure")]
    if ev.far_answered is False:
        out.append(("; the far end did not answer", "warn"))
    if ev.source:
        out.append((f" ({safe(ev.source)})", "note"))
    return out


def _not_discovered(ev: NotDiscoveredEvidence) -> list[Segment]:
    out: list[Segment] = [(_port(ev.node, ev.port), "part"), (" not discovered; no tool read its state", "")]
    if ev.source:
        out.append((f" ({safe(ev.source)})", "note"))
    return out


def _flaps(ev: FlapEvidence) -> list[Segment]:
    out: list[Segment] = [(f"{ev.flaps} link-down events", "figure")]
    if ev.per_minute:
        out.append((f", {ev.per_minute:g}/min", "rate"))
    return out


def _slow_pairs(ev: SlowPairsEvidence) -> list[Segment]:
    if ev.slow_pairs and all(s.status == "hung" for s in ev.slow_pairs):
        out: list[Segment] = [(f"{ev.slow}/{ev.tests} tests or job connections through it never finished "
                               "(hung or failed)", "figure")]
    else:
        out = [(f"{ev.slow}/{ev.tests} tests through it slow", "figure"), (", median ", ""),
               (f"{ev.median_ratio:.0%}", "figure"), (" of the line rate ", ""),
               (f"(worst {ev.worst_ratio:.0%})", "note")]
    if ev.median_relative is not None:
        out += [("; ", ""), (f"{ev.median_relative:.0%}", "figure"), (" of what healthy tests reach", "")]
        if ev.healthy_efficiency:
            out.append((f" ({ev.healthy_efficiency:.0%} of the line rate)", "note"))
    if ev.carried:
        out.append((f"; {ev.carried} other test{'s' if ev.carried > 1 else ''} crossed it the same way much faster "
                    "(a cable carries what it carried): its slow tests had another cause", "warn"))
    if ev.suspect_only:
        out.append(("; low, not clearly slow: a suspect to re-test", "warn"))
    if ev.equivalent_suspects > 1:
        out.append((f"; {ev.equivalent_suspects} equally likely suspects", "warn"))
    return out


def _corruption(ev: CorruptionEvidence) -> list[Segment]:
    return [("data check failed in ", ""), (f"{ev.wrong_pairs} tests", "figure")]


def _switch_links(ev: SwitchLinksEvidence) -> list[Segment]:
    return [(f"{ev.links_bad} of {ev.links_total} links bad", "figure"), (f" ({ev.links_down} down)", "note")]


def _gpu(ev: GpuEvidence) -> list[Segment]:
    return [("GPU: ", "part"), (", ".join(safe(p) for p in ev.problems), "")]


def _host(ev: HostEvidence) -> list[Segment]:
    out: list[Segment] = [(safe(ev.check), "part"), (" ", ""), (safe(ev.subject), "part"),
                          (f": {safe(ev.reason)}", "")]
    if ev.count > 1:
        out.append((f" x{ev.count}", "figure"))
    out.append((f" ({safe(ev.source)})", "note"))
    return out


def _nccl_log(ev: NcclLogEvidence) -> list[Segment]:
    return [(safe(ev.reason), "figure"), (" on ", ""), (safe(ev.host), "part"), (": ", ""),
            (f"{safe(ev.source)}:{ev.line_no}: ", "note"), (safe(ev.line[:200]), "")]


def _group_load(ev: GroupLoadEvidence) -> list[Segment]:
    out: list[Segment] = [(f"{ev.failing} group tests failing with >={ev.failing_flows} flows on it", "figure")]
    if ev.toward:
        out += [(" toward ", ""), (_port(ev.toward[0], ev.toward[1]), "part")]
    out.append((", ", ""))
    out.append((f"passing with <={ev.passing_flows}", "figure") if ev.passing_flows
               else ("no passing test crossed it", "warn"))
    out += [(f" (worst {ev.worst_ratio:.0%})", "note"), (f"; {ev.pair_tests} pair tests through it, ", ""),
            (f"{ev.pair_slow} slow", "figure")]
    if ev.alternatives:
        out.append(("; equally likely: " + ", ".join(safe(a) for a in ev.alternatives[:3]), "warn"))
    return out


def _candidates(ev: CandidatesEvidence) -> list[Segment]:
    out: list[Segment] = [("could be ", ""), (" or ".join(safe(c) for c in ev.candidates), "part"),
                          (f": {safe(ev.tell_apart)}", "note")]
    if ev.tests:
        out.append(("; re-test " + ", ".join(f"{_port(*a)} -> {_port(*b)}" for a, b in ev.tests), ""))
    return out


WRITERS: dict[type, Callable[..., list[Segment]]] = {
    CounterEvidence: _counter,
    StateEvidence: _state,
    NotRespondingEvidence: _not_responding,
    NotDiscoveredEvidence: _not_discovered,
    FlapEvidence: _flaps,
    SlowPairsEvidence: _slow_pairs,
    CorruptionEvidence: _corruption,
    SwitchLinksEvidence: _switch_links,
    GpuEvidence: _gpu,
    HostEvidence: _host,
    NcclLogEvidence: _nccl_log,
    GroupLoadEvidence: _group_load,
    CandidatesEvidence: _candidates,
}


def evidence_segments(ev: Evidence) -> list[Segment]:
    """How ``ev`` reads, as segments with roles (every fabric string escaped)."""
    write = WRITERS.get(type(ev))
    return write(ev) if write is not None else [(safe(ev), "")]


def evidence_line(ev: Evidence) -> str:
    """One line per evidence item, in the words an engineer uses (the segments joined)."""
    return "".join(text for text, _ in evidence_segments(ev))


def _default_cable(a: tuple[str, int], b: tuple[str, int]) -> str:
    return f"{_port(*a)} -- {_port(*b)}"


def evidence_details(ev: Evidence, cable_name: Callable[[tuple[str, int], tuple[str, int]], str] | None = None,
                     ) -> list[list[Segment]]:
    """The lines under an evidence item's one line where a person looks closer (the TUI's finding detail):
    each slow test, each equally likely cable, each test with wrong data, the flaps' first and last
    times, the GPU. ``cable_name`` names a cable from its two ``(node, port)`` ends (the TUI's labels)."""
    name = cable_name or _default_cable
    out: list[list[Segment]] = []
    if isinstance(ev, SlowPairsEvidence):
        out += [[("or ", ""), (safe(name(a, b)), "warn")] for a, b in ev.alternatives]
        tone: Role = "warn" if ev.suspect_only else "bad"
        for p in ev.slow_pairs:
            state = "slow" if p.status == "ok" else p.status  # a test listed here ran and read low
            line: list[Segment] = [(f"{_port(*p.src)} → {_port(*p.dst)}", "part"),
                                   (f"  {safe(state)}  {gbps_text(p.busbw_gbps)} of {gbps_text(p.expected_gbps)}", "figure")]
            if p.ratio is not None:
                line.append((f"  ratio {p.ratio:.2f}", tone))
            if p.relative is not None:
                line.append((f"  {p.relative:.2f} of healthy", tone))
            out.append(line)
    elif isinstance(ev, CorruptionEvidence):
        out += [[(f"{safe(src)} ↔ {safe(dst)}", "part"), (f"  {wrong:,} wrong elements", "bad")]
                for src, dst, wrong in ev.pairs]
    elif isinstance(ev, FlapEvidence):
        out.append([(f"first {time_text(ev.first)}  last {time_text(ev.last)}", "note")])
    elif isinstance(ev, GpuEvidence):
        out.append([("GPU ", ""), (safe(ev.uuid or "(no UUID)"), "part")])
    return out
