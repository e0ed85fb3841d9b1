"""Plain-text summary of a report for humans; every fabric string is escaped first."""

from __future__ import annotations

from typing import Any

from fabricdoc.impact.records import ExpectedBusbw, Recommendation
from fabricdoc.model.evidence import (
    CandidatesEvidence,
)
from fabricdoc.model.findings import Action
from fabricdoc.model.text import escape as safe
from fabricdoc.model.text import plural
from fabricdoc.report.evidence_text import evidence_line
from fabricdoc.report.figures import busbw_figures, cable_text, throughput_text
from fabricdoc.report.report import Report


def action_line(action: Action) -> str:
    """What to do, who does it and how soon, on one line."""
    return f"{action.urgency.upper()} ({safe(action.who)}): {safe(action.do)}"


def expected_lines(expected: ExpectedBusbw | None) -> list[str]:
    """The calibrated expected ring busbw and where its efficiency came from (nothing when uncalibrated)."""
    if expected is None or not expected.calibrated:
        return []
    ring = (expected.by_algorithm or {}).get("ring")
    fig = list(ring.expected.items()) if ring is not None and ring.expected is not None else []
    if ring is None or not fig or not isinstance(ring.efficiency, int | float):
        return []
    kept = set(ring.measured or ())
    parts = " / ".join(f"{k} {v:.1f}" + (" (measured)" if k in kept else "")
                       for k, v in fig if isinstance(v, int | float))
    return [f"expected (ring, x{ring.efficiency:.2f} efficiency {safe(expected.efficiency_source or '')}): {parts}"]


def recommendation_lines(rec: Recommendation | None) -> list[str]:
    """The impact section's recommendation: ports to take out of service and hosts to drain, and what it predicts."""
    if rec is None:
        return []
    frac = rec.throughput_fraction
    head = f"recommended: {rec.hosts} hosts"
    if isinstance(frac, int | float):
        head += f", {throughput_text(frac)}"
    isolate = rec.isolate
    if not isolate and rec.why:
        head += f" ({safe(rec.why)})"
    lines = [head]
    if isolate:
        ids = ", ".join(safe(f) for f in rec.findings or ())
        cables = plural(len(isolate), "cable")
        lines.append(f"  take out of service ({cables}, routed around){f' for {ids}' if ids else ''}:")
        lines += ["    " + cable_text(link) for link in isolate]
    drain = rec.drain
    lines.append(f"  drain: {', '.join(safe(h) for h in drain[:10])}{f' (+{len(drain) - 10})' if len(drain) > 10 else ''}"
                 if drain else "  drain: none")
    return lines


def skipped_lines(probes: list[dict], shown: int = 10) -> list[str]:
    """Inputs left out on purpose (an nccl-tests log that is not a pair test or does not name its test), with why."""
    skipped = [p for p in probes if p.get("status") == "skipped"]
    if not skipped:
        return []
    lines = [f"not used ({len(skipped)} skipped):"]
    lines += [f"  {safe(p.get('probe', ''))} on {safe(p.get('target', ''))}: {safe(p.get('error') or 'no detail')}"
              for p in skipped[:shown]]
    if len(skipped) > shown:
        lines.append(f"  (+{len(skipped) - shown} more in the JSON report's probes)")
    return lines


def warning_lines(probes: list[dict], shown: int = 10) -> list[str]:
    """Probe-health warnings: inputs read with something worth knowing (an HCA on another rail's leaf,
    CAs with no host name, tool warnings inside a saved output); the first ``shown``, then a count."""
    warned = [p for p in probes if p.get("status") == "warning"]
    if not warned:
        return []
    lines = [f"warnings ({len(warned)}):"]
    for p in warned[:shown]:
        target, error = str(p.get("target", "")), str(p.get("error") or "no detail")
        where = "" if target and error.startswith(target + ":") else f" on {safe(target)}"  # said once, not twice
        lines.append(f"  {safe(p.get('probe', ''))}{where}: {safe(error)}")
    if len(warned) > shown:
        lines.append(f"  (+{len(warned) - shown} more in the JSON report's probes)")
    return lines


def expectation_lines(expectations: dict[str, Any] | None) -> list[str]:
    """What healthy tests reach here, the largest size of each test kind (every shape is in the JSON):
    the figure slowness was judged against, where it came from, and what contradicts the topology."""
    if not expectations:
        return []
    best: dict[str, dict[str, Any]] = {}
    for shape in expectations.get("shapes") or []:
        if shape.get("path_cables") is None and shape["size_bytes"] >= best.get(shape["test"], {}).get("size_bytes", -1):
            best[shape["test"]] = shape
    parts = []
    for test, shape in sorted(best.items()):
        parts.append(f"{safe(test)} {shape['efficiency']:.0%} of the line rate (spread {shape['spread']:.1%}, "
                     f"{_SOURCES.get(shape['source'], safe(shape['source']))}{' from ' + str(shape['tests']) + ' tests' if shape['tests'] else ''})")
    out = ["healthy tests reach: " + "; ".join(parts)] if parts else []
    if expectations.get("slow_ratio") is not None:
        out.append(f"slow below {expectations['slow_ratio']:g} x that (--slow-ratio)")
    return out


_SOURCES = {"learned": "learned", "history": "learned from earlier sweeps", "pairs": "as the pair tests",
            "prior": "too few tests to learn: the stated prior"}


def summary_text(report: Report, evidence_per_finding: int = 3) -> str:
    """The verdict, what was tested, each finding with its strongest evidence, and the drain list."""
    f = report.fabric
    t = report.tests
    lines = [
        f"fabricdoc: {safe(f['name'])} ({f['hosts']} hosts, {f['switches']} switches, {f['links']} links)"
        f" -- verdict: {report.verdict.upper()}",
    ]
    tested = []
    conns, failed = t.get("connections_seen", 0), t.get("connections_failed", 0)
    if t.get("pairs_tested", 0) > conns:
        tested.append(
            f"{plural(t['pairs_tested'] - conns, 'bandwidth test')} in {plural(t.get('rounds') or 0, 'round')} "
            f"({t.get('pairs_slow', 0)} slow, {t.get('pairs_hung', 0) - failed} hung, {t.get('pairs_wrong', 0)} corrupt, "
            f"{t.get('pairs_error', 0)} could not run)"
        )
    if conns:
        tested.append(f"{conns} job connections between NIC ports from NCCL's log ({failed} failed)")
    if t.get("groups_tested"):
        rounds = f" in {plural(t['group_rounds'], 'round')}" if t.get("group_rounds") else ""
        tested.append(f"{plural(t['groups_tested'], 'group test')}{rounds} ({t.get('groups_failing', 0)} failing, "
                      f"{t.get('groups_error', 0)} could not run)")
    if t.get("ports_sampled"):
        secs = float(t.get("interval_s") or 0)
        tested.append(f"{t['ports_sampled']} ports sampled over {secs:.0f}s" if secs >= 100
                      else f"{t['ports_sampled']} ports sampled over {secs:.3g}s")
    if tested:
        lines.append("tested: " + "; ".join(tested))
    lines += expectation_lines(report.expectations)
    cov = report.coverage or {}
    missing = cov.get("not_seen") or []
    if missing:
        lines.append(f"could not see ({cov.get('not_seen_count', len(missing))}):")
        for item in missing[:10]:
            lines.append(f"  {safe(item['what'])}: {safe(item['why'])}")
        if cov.get("not_seen_count", len(missing)) > 10:
            lines.append(f"  (+{cov['not_seen_count'] - 10} more in the JSON report's coverage)")
    untested = (cov.get("cables") or {}).get("untested")
    if untested:
        shown = (cov.get("cables") or {}).get("untested_shown") or []
        more = f" (+{untested - len(shown[:3])} more in the JSON report's coverage)" if untested > len(shown[:3]) else ""
        lines.append(f"no bandwidth test crossed {plural(untested, 'cable')} (no test's route crosses it, or its "
                     f"tests could not run): {', '.join(safe(c) for c in shown[:3])}{more}")
    lines += skipped_lines(report.probes)
    lines += warning_lines(report.probes)
    if not report.findings and missing:
        lines.append("no findings in what was seen: the verdict is INCOMPLETE, not a pass")
    elif not report.findings:
        lines.append("no findings: everything planned was seen, and every link, switch and host looked healthy")
    else:
        lines.append("")
        w = max(6, *(len(fd.id) for fd in report.findings))  # stable ids: six hex, more on a clash
        lines.append(f"{'ID':<{w}} {'SEVERITY':<9} {'KIND':<7} {'FAULT':<19} {'CONF':>4}  COMPONENT")
        for fd in report.findings:
            lines.append(
                f"{fd.id:<{w}} {fd.severity:<9} {fd.kind:<7} {safe(fd.fault):<19} {fd.confidence:>4.2f}  {safe(fd.name)}"
            )
            # What the evidence cannot tell apart is always shown: it decides what to do next.
            facts = [ev for ev in fd.evidence if not isinstance(ev, CandidatesEvidence)]
            for ev in facts[:evidence_per_finding] + fd.evidence_of(CandidatesEvidence):
                lines.append(f"{'':>{w + 1}}- {evidence_line(ev)}")
            if len(facts) > evidence_per_finding:
                lines.append(f"{'':>{w + 1}}  (+{len(facts) - evidence_per_finding} more evidence items in the JSON report)")
            if fd.action is not None:
                lines.append(f"{'':>{w + 1}}> {action_line(fd.action)}")
    impact = report.impact
    if impact is not None and impact.allreduce_busbw_gbps is not None:
        lines.append("")
        lines.append("AllReduce busbw (Gb/s): " + " / ".join(
            f"{fig.label} {fig.gbps:.1f}" if fig.gbps is not None else f"{fig.label} n/a"
            for fig in busbw_figures(impact.allreduce_busbw_gbps, len(report.drain))))
        lines += expected_lines(impact.expected_busbw)
        lines += recommendation_lines(impact.recommendation)
        lines += [f"not in the figures: {safe(u.finding)}: {safe(u.why)}" for u in impact.uncosted_findings or ()]
    lines.append("")
    if report.drain:
        lines.append(f"drain ({plural(len(report.drain), 'host')}):")
        for d in report.drain:
            tag = f"{safe(d.tag)} " if d.tag else ""  # the finding's id, as the Slurm reason / NPD message carry it
            lines.append(f"  {safe(d.node)}: {tag}{safe(d.reason)}")
    else:
        lines.append("drain: none")
    if report.drain_held:
        mode = (report.drain_policy or {}).get("mode", "drain")
        lines.append(f"held back by the drain policy ({plural(len(report.drain_held), 'host')}, not drained):")
        for h in report.drain_held:
            tag = f"{safe(h.tag)} " if h.tag else ""
            lines.append(f"  {safe(h.node)}: {tag}{safe(h.why)}")
        if mode == "comment":
            lines.append("  (comment-only mode: the drain list is annotated in Slurm, not drained)")
    elif (report.drain_policy or {}).get("mode") == "comment":
        lines.append("drain policy: comment-only (nodes are annotated, not drained)")
    return "\n".join(lines)
