"""A finding and its evidence as Text: the findings tab's panel and the detail screen's findings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text

from fabricdoc.model.evidence import (
    CandidatesEvidence,
    CorruptionEvidence,
    CounterEvidence,
    Evidence,
    FlapEvidence,
    GpuEvidence,
    HostEvidence,
    NcclLogEvidence,
    NotDiscoveredEvidence,
    NotRespondingEvidence,
    SlowPairsEvidence,
    StateEvidence,
    SwitchLinksEvidence,
)
from fabricdoc.model.findings import Finding
from fabricdoc.report.render import evidence_line

from .actions import action_text
from .formatting import fmt_gbps, fmt_num, fmt_time, port_name, safe, sev_text
from .index import ReportIndex, link_id


def evidence_text(index: ReportIndex, evidence: Iterable[Evidence]) -> Text:
    """The evidence behind a finding, one item per line: counters with rates, states, flaps, tests, GPUs."""
    out = Text(end="")
    items = list(evidence)
    if not items:
        out.append("no evidence recorded\n", style="dim")
    for ev in items:
        out.append(f"{ev.kind:<9}", style="bold")
        out.append(_evidence_line(index, ev))
        out.append("\n")
    return out


def _evidence_line(index: ReportIndex, ev: Evidence) -> Text:
    out = Text(end="")
    indent = "\n" + " " * 10
    if isinstance(ev, CounterEvidence):
        out.append(safe(port_name(ev.node, ev.port) + " "))
        out.append(safe(ev.counter, "bold"))
        out.append(f"  Δ {'≥ ' if ev.at_least else ''}{fmt_num(ev.delta)}")
        if ev.per_second is not None:
            out.append(f"  ({fmt_num(ev.per_second)}/s)", style="magenta")
        if ev.interval_s is not None:
            out.append(f"  over {fmt_num(ev.interval_s)} s", style="dim")
        if ev.raw:
            out.append(safe(f"  raw: {', '.join(ev.raw)}", "dim"))
        if ev.at_least:
            out.append("  (at least: the counter saturated)", style="yellow")
        if ev.reset:
            out.append("  (counter was reset)", style="yellow")
    elif isinstance(ev, StateEvidence):
        if ev.node is not None:
            out.append(safe(port_name(ev.node, ev.port)))
        else:
            out.append("as the fabric describes it", style="dim")
        for value in (ev.state, ev.phys_state):
            if value:
                out.append("  ")
                out.append(safe(value, "bold"))
        if ev.lanes is not None:
            out.append(f"  {ev.lanes}x of {ev.supported_lanes if ev.supported_lanes is not None else '?'}x lanes")
        if ev.lane_gbps is not None:
            out.append(f"  lanes at {fmt_gbps(ev.lane_gbps)} of {fmt_gbps(ev.supported_lane_gbps)}")
        if ev.source:
            out.append(safe(f"  ({ev.source})", "dim"))
    elif isinstance(ev, FlapEvidence):
        out.append(f"{ev.flaps} link-down event{'s' if ev.flaps != 1 else ''}")
        if ev.per_minute is not None:
            out.append(f"  ({fmt_num(ev.per_minute)}/min)", style="magenta")
        out.append(f"  first {fmt_time(ev.first)}  last {fmt_time(ev.last)}")
    elif isinstance(ev, SlowPairsEvidence):
        if ev.slow_pairs and all(s.status == "hung" for s in ev.slow_pairs):
            out.append(f"{ev.slow} of {ev.tests} tests or job connections never finished (hung or failed)")
        else:
            out.append(f"{ev.slow} of {ev.tests} tests slow  worst ratio {ev.worst_ratio:.2f}"
                       f"  median {ev.median_ratio:.2f} of the line rate")
        if ev.median_relative is not None:
            healthy = f" (healthy tests reach {ev.healthy_efficiency:.2f})" if ev.healthy_efficiency else ""
            out.append(f"  {ev.median_relative:.2f} of what healthy tests reach{healthy}")
        if ev.suspect_only:
            out.append("  low, not clearly slow: a suspect to re-test", style="yellow")
        if ev.equivalent_suspects > 1:
            out.append(f"  {ev.equivalent_suspects} equally likely suspects", style="yellow")
        for (a, pa), (b, pb) in ev.alternatives:
            out.append(indent + "or ")
            out.append(safe(index.link_name(link_id((a, pa), (b, pb))), "yellow"))
        for p in ev.slow_pairs:
            out.append(indent)
            out.append(safe(f"{port_name(*p.src)} → {port_name(*p.dst)}"))
            # A test listed here ran (status ok) and read low: say "slow", never "ok".
            state = "slow" if p.status == "ok" else p.status
            out.append(f"  {state}  {fmt_gbps(p.busbw_gbps)} of {fmt_gbps(p.expected_gbps)}")
            if p.ratio is not None:
                out.append(f"  ratio {p.ratio:.2f}", style="yellow" if ev.suspect_only else "red")
            if p.relative is not None:
                out.append(f"  {p.relative:.2f} of healthy", style="yellow" if ev.suspect_only else "red")
    elif isinstance(ev, CorruptionEvidence):
        out.append(f"{ev.wrong_pairs} test{'s' if ev.wrong_pairs != 1 else ''} with wrong data")
        for src, dst, wrong in ev.pairs:
            out.append(indent)
            out.append(safe(f"{src} ↔ {dst}"))
            out.append(f"  {fmt_num(wrong)} wrong elements", style="red")
    elif isinstance(ev, SwitchLinksEvidence):
        out.append(f"{ev.links_bad} of {ev.links_total} links with findings, {ev.links_down} down")
    elif isinstance(ev, NotRespondingEvidence | NotDiscoveredEvidence):
        out.append(evidence_line(ev), style="red")  # already escaped, and rich Text reads no markup
    elif isinstance(ev, CandidatesEvidence):
        out.append("could be ", style="yellow")
        for i, cand in enumerate(ev.candidates):
            out.append(" or " if i else "")
            out.append(safe(cand, "yellow"))
        out.append(indent)
        out.append(safe(ev.tell_apart))
        for (a, pa), (b, pb) in ev.tests:
            out.append(indent + "re-test ")
            out.append(safe(f"{port_name(a, pa)} → {port_name(b, pb)}", "cyan"))
    elif isinstance(ev, GpuEvidence):
        out.append(safe(ev.uuid or "GPU (no UUID)"))
        for problem in ev.problems:
            out.append(indent)
            out.append(safe(problem, "red"))
    elif isinstance(ev, HostEvidence):
        out.append(safe(f"{ev.check} {ev.subject}", "yellow"))
        out.append(indent)
        out.append(safe(ev.reason + (f" (x{ev.count})" if ev.count > 1 else ""), "red"))
    elif isinstance(ev, NcclLogEvidence):
        out.append(safe(f"{ev.reason} on {ev.host}", "yellow"))
        out.append(indent)
        out.append(safe(f"{ev.source}:{ev.line_no}: {ev.line[:200]}"))
    return out


def finding_text(index: ReportIndex, f: Finding) -> Text:
    """One finding as the findings tab shows it: what, where, how sure, and its evidence."""
    text = Text(end="")
    text.append(f"{f.id}  ", style="bold")
    text.append(sev_text(f.severity))
    text.append(f"  {f.kind} {f.fault}  confidence {f.confidence:.2f}  ")
    text.append(safe(f.name, "bold"))
    if f.endpoints:
        text.append("\nends     ")
        text.append(safe("  ↔  ".join(port_name(label, port) for label, port in f.endpoints)))
    text.append("\nkey      ")
    text.append(safe(f.key, "dim"))  # the same in every sweep: what Slurm reasons and metrics carry
    text.append("\n")
    text.append(action_text(f))
    text.append(evidence_text(index, f.evidence))
    return text


def findings_text(index: ReportIndex, findings: Sequence[Finding]) -> Text:
    """The findings on one component with their evidence (the detail screen)."""
    text = Text(end="")
    for f in findings:
        text.append(f"{f.id} ", style="bold")
        text.append(sev_text(f.severity))
        text.append(f" {f.fault} ({f.confidence:.2f})  ")
        text.append(safe(f.name))
        text.append("\n")
        text.append(action_text(f))
        text.append(evidence_text(index, f.evidence))
    if not findings:
        text.append("none: this component is healthy in this report\n", style="green")
    return text
