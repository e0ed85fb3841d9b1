"""The impact tab's Text: the report's AllReduce busbw figures and the what-if results."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from fabricdoc.impact.records import Busbw, ImpactSection, JobCost
from fabricdoc.model.text import plural
from fabricdoc.report.figures import busbw_figures, remedy_text, throughput_text
from fabricdoc.report.report import Report

from .formatting import fmt_gbps, fmt_num, port_name, safe
from .index import ReportIndex

NEAR_NOMINAL = 0.97  # a busbw this close to nominal is shown green
IMPACT_LOW = 0.8  # a busbw below this share of nominal is shown red (the report's --slow-ratio when given)


def _fraction_style(ratio: float, slow_ratio: float | None) -> str:
    low = IMPACT_LOW if slow_ratio is None else slow_ratio
    return "green" if ratio >= NEAR_NOMINAL else "yellow" if ratio >= low else "red"


def impact_text(report: Report, live: dict[str, float] | None) -> Text:
    """The report's impact section (or the model's live figures): busbw nominal / now / after drain.

    A figure below 0.8 of nominal (the report's --slow-ratio when it was given) is red.
    """
    imp = report.impact or ImpactSection()
    out = Text(end="")
    head = imp.allreduce_busbw_gbps or (Busbw(**live) if live else None)
    alg = imp.algorithm or "ring"
    out.append(f"AllReduce bus bandwidth ({alg}", style="bold")
    if imp.job_hosts is not None:
        rails = imp.rails
        out.append(f", {imp.job_hosts:,} hosts, " + (plural(rails, "rail") if isinstance(rails, int) else "? rails"),
                   style="bold")
    out.append(")\n", style="bold")
    if head is None:
        out.append("the report carries no impact section\n", style="dim")
        return out
    for fig in busbw_figures(head, len(report.drain)):
        out.append(f"  {fig.label:<24}")
        out.append(f"{fmt_gbps(fig.gbps):>14}", style="bold" if fig.key != "nominal" else "")
        if fig.key != "nominal" and fig.of_nominal is not None:
            out.append(f"  {fig.of_nominal:6.1%} of nominal", style=_fraction_style(fig.of_nominal, report.slow_ratio))
        out.append("\n")
    rec = imp.recommendation
    if rec is not None:
        out.append("  recommended remedy: ")
        out.append(safe(remedy_text(rec)))
        out.append(f"\n    {'?' if rec.hosts is None else rec.hosts} hosts, {throughput_text(rec.throughput_fraction)}\n",
                   style="dim")
    for alg_name, fig in (imp.by_algorithm or {}).items():
        if alg_name == alg or fig.nominal is None:
            continue
        shown = busbw_figures(fig, len(report.drain))
        out.append(f"  {alg_name}: " + " · ".join(f"{f.label} {fmt_gbps(f.gbps)}" for f in shown) + "\n", style="dim")
    own = (imp.by_algorithm or {}).get(alg)
    bottleneck = own.bottleneck_now if own is not None else None
    if bottleneck is not None and bottleneck.capacity_gbps is not None:
        out.append("  bottleneck now: ")
        out.append(safe(bottleneck.direction or bottleneck.reason or "?"))
        flows = bottleneck.flows
        out.append(f"  {fmt_gbps(bottleneck.capacity_gbps)} over "
                   + (plural(flows, "flow") if isinstance(flows, int) else "? flows"))
        if bottleneck.finding:
            out.append(safe(f"  ({bottleneck.finding} {bottleneck.reason or ''})", "dim"))
        out.append("\n")
    for w in imp.alternatives[:3]:
        out.append("  alternative: ")
        out.append(safe(remedy_text(w)))
        out.append(f" → {fmt_gbps(w.busbw_gbps)}, {'?' if w.hosts is None else w.hosts} hosts, "
                   f"{throughput_text(w.throughput_fraction, basis=False)}\n")
    if imp.job is not None:
        out.append(_job_line(imp.job))
    return out


def _job_line(job: JobCost) -> Text:
    def num(value: Any) -> float | None:
        return value if isinstance(value, int | float) else None

    parts = [f"{job.n_hosts:,} hosts" if job.n_hosts is not None else "",
             f"{fmt_num(job.hours)} h" if job.hours is not None else ""]
    facts = []
    if (p := num(job.failure_probability)) is not None:
        facts.append(f"failure probability {p:.1%}")
    if (m := num(job.mtbf_hours)) is not None:
        facts.append(f"MTBF {m:,.0f} h")
    if (c := num(job.recommended_checkpoint_minutes)) is not None:
        facts.append(f"checkpoint every {c:,.0f} min")
    if (lost := num(job.expected_lost_hours)) is not None:
        facts.append(f"expected loss {lost:,.2f} h")
    out = safe(f"  job ({', '.join(p for p in parts if p)}): " + " · ".join(facts), "dim")
    out.append("\n")
    return out


def whatif_head(drained: int, isolated: int = 0) -> Text:
    out = Text(f"what-if: drain {drained} host{'s' if drained != 1 else ''}", style="bold", end="")
    if isolated:
        out.append(f", take {isolated} link{'s' if isolated != 1 else ''} out of service", style="bold")
    out.append(" (d toggles, i: the links with findings, r resets)\n", style="bold")
    return out


def whatif_text(index: ReportIndex, drained: int, result: dict[str, Any], live: dict[str, float] | None,
                isolated: int = 0) -> Text:
    """An :meth:`ImpactModel.what_if` result: predicted ring busbw against nominal and draining nothing."""
    out = whatif_head(drained, isolated)
    if "error" in result:
        out.append(safe(f"the impact model failed: {result['error']}", "red"))
        return out
    bw = result.get("busbw_gbps")
    live = live or {}
    out.append("predicted ring busbw  ")
    out.append(fmt_gbps(bw), style="bold")
    if isinstance(bw, int | float) and live.get("nominal"):
        out.append(f"   {bw / live['nominal']:.0%} of nominal {fmt_gbps(live['nominal'])}")
    if isinstance(bw, int | float) and live.get("now") is not None:
        change = bw - live["now"]
        out.append(f"   {change:+,.1f} Gb/s vs draining nothing",
                   style="green" if change > 0 else "red" if change < 0 else "dim")
    out.append("\n")
    if "hosts" in result:
        out.append(f"hosts kept            {result['hosts']:,} of {len(index.hosts):,}\n")
    if "throughput_fraction" in result:
        out.append(f"{throughput_text(result['throughput_fraction'])}\n")
    for (a, pa), (b, pb) in result.get("isolate") or []:
        out.append("out of service        ")
        out.append(safe(f"{port_name(str(a), pa)} — {port_name(str(b), pb)}", "yellow"))
        out.append("  (routes recomputed around it)\n", style="dim")
    return out
