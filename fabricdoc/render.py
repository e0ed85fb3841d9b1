"""Plain-text summary of a report for humans; every fabric string is escaped first."""

from __future__ import annotations

from typing import Any

from fabricdoc.report import Report

_CONTROL = {i: f"\\x{i:02x}" for i in [*range(0x20), 0x7F, *range(0x80, 0xA0)]}


def safe(text: Any) -> str:
    """Fabric-supplied text with control characters (ANSI escapes, newlines) made visible."""
    return str(text).translate(_CONTROL)


def evidence_line(ev: dict[str, Any]) -> str:
    """One line per evidence item, in the words an engineer uses."""
    kind = ev.get("type")
    if kind == "counter":
        bound = "≥" if ev.get("at_least") else ""
        reset = " (counter reset)" if ev.get("reset") else ""
        raw = "/".join(ev.get("raw") or []) or ev.get("counter")
        return (
            f"{safe(raw)} {bound}+{ev.get('delta', 0):g} in {ev.get('interval_s', 0):g}s "
            f"({ev.get('per_second', 0):.3g}/s) at {safe(ev.get('node'))}[{ev.get('port')}]{reset}"
        )
    if kind == "state":
        extra = ""
        if "lanes" in ev:
            extra = f", {ev['lanes']}X trained of {ev.get('supported_lanes')}X supported"
        if "lane_gbps" in ev:
            extra += f", {ev['lane_gbps']:g} Gb/s/lane of {ev.get('supported_lane_gbps'):g}"
        where = f" at {safe(ev['node'])}[{ev['port']}]" if ev.get("node") is not None else ""
        state = f"port {safe(ev.get('state'))}" if ev.get("state") else "link"
        return f"{state}{where}{extra}"
    if kind == "event":
        rate = f", {ev['per_minute']:g}/min" if ev.get("per_minute") else ""
        return f"{ev.get('flaps')} link-down events{rate}"
    if kind == "pairs" and "tests" in ev:
        return (
            f"{ev['slow']}/{ev['tests']} tests through it slow, median {ev['median_ratio']:.0%} "
            f"of expected (worst {ev['worst_ratio']:.0%})"
            + (f"; {ev['equivalent_suspects']} equally likely suspects" if ev.get("equivalent_suspects", 1) > 1 else "")
        )
    if kind == "pairs" and "wrong_pairs" in ev:
        return f"data check failed in {ev['wrong_pairs']} tests"
    if kind == "inference":
        return f"{ev.get('links_bad')} of {ev.get('links_total')} links bad ({ev.get('links_down')} down)"
    if kind == "gpu":
        return "GPU: " + ", ".join(safe(p) for p in ev.get("problems", []))
    return safe({k: v for k, v in ev.items() if k != "type"})


def summary_text(report: Report, evidence_per_finding: int = 3) -> str:
    """The verdict, what was tested, each finding with its strongest evidence, and the drain list."""
    f = report.fabric
    t = report.tests
    lines = [
        f"fabricdoc: {safe(f['name'])} ({f['hosts']} hosts, {f['switches']} switches, {f['links']} links)"
        f" -- verdict: {report.verdict.upper()}",
    ]
    tested = []
    if t.get("pairs_tested"):
        tested.append(
            f"{t['pairs_tested']} bandwidth tests in {t.get('rounds')} rounds "
            f"({t.get('pairs_slow', 0)} slow, {t.get('pairs_hung', 0)} hung, {t.get('pairs_wrong', 0)} corrupt)"
        )
    if t.get("ports_sampled"):
        secs = float(t.get("interval_s") or 0)
        tested.append(f"{t['ports_sampled']} ports sampled over {secs:.0f}s" if secs >= 100
                      else f"{t['ports_sampled']} ports sampled over {secs:.3g}s")
    if tested:
        lines.append("tested: " + "; ".join(tested))
    failed = [p for p in report.probes if p.get("status") != "ok"]
    if failed:
        lines.append(f"could not see: {len(failed)} probe runs failed")
        for p in failed[:10]:
            lines.append(f"  {safe(p['probe'])} on {safe(p['target'])}: {p['status']}: {safe(p.get('error') or '')}")
    if not report.findings:
        lines.append("no findings: every link, switch and host looked healthy")
    else:
        lines.append("")
        lines.append(f"{'ID':<5} {'SEVERITY':<9} {'KIND':<7} {'FAULT':<19} {'CONF':>4}  COMPONENT")
        for fd in report.findings:
            lines.append(
                f"{fd.id:<5} {fd.severity:<9} {fd.kind:<7} {fd.fault:<19} {fd.confidence:>4.2f}  {safe(fd.name)}"
            )
            for ev in fd.evidence[:evidence_per_finding]:
                lines.append(f"{'':>6}- {evidence_line({'type': ev.type, **ev.detail})}")
            if len(fd.evidence) > evidence_per_finding:
                lines.append(f"{'':>6}  (+{len(fd.evidence) - evidence_per_finding} more evidence items in the JSON report)")
    if report.impact and report.impact.get("allreduce_busbw_gbps"):
        bw = report.impact["allreduce_busbw_gbps"]
        lines.append("")
        lines.append(
            "AllReduce busbw (Gb/s): nominal {} / now {} / after drain {}".format(
                *(f"{bw.get(k):.1f}" if isinstance(bw.get(k), int | float) else "n/a" for k in ("nominal", "now", "after_drain"))
            )
        )
    lines.append("")
    if report.drain:
        lines.append(f"drain ({len(report.drain)} hosts):")
        for d in report.drain:
            lines.append(f"  {safe(d.node)}: {safe(d.reason)}")
    else:
        lines.append("drain: none")
    return "\n".join(lines)
