"""The overview tab's Text: the report summary and the fabric tree's port labels."""

from __future__ import annotations

from collections import Counter

from rich.text import Text

from fabricdoc.model.severity import SEVERITIES
from fabricdoc.report.figures import busbw_figures
from fabricdoc.report.render import expectation_lines

from .formatting import SEV_STYLE, fmt_gbps, fmt_num, health_text, port_name, safe
from .index import LinkId, ReportIndex

VERDICT_STYLE = {"pass": "bold green", "degraded": "bold yellow", "fail": "bold white on red"}


def overview_text(index: ReportIndex) -> Text:
    """Verdict, fabric size, findings by kind and severity, busbw, drain count, tests and probe health."""
    rep = index.report
    out = Text(end="")
    out.append("verdict  ")
    out.append(rep.verdict.upper(), style=VERDICT_STYLE.get(rep.verdict, "bold"))
    out.append("\nfabric   ")
    out.append(safe(rep.fabric.get("name")))
    out.append(safe(f"  ({rep.fabric.get('source', '')})", "dim"))
    out.append(f"\n         {rep.fabric.get('hosts', 0):,} hosts · {rep.fabric.get('switches', 0):,} switches"
               f" · {rep.fabric.get('links', 0):,} links")
    out.append(f"\nmade     {rep.generated_at}\n\n")
    out.append("findings by kind\n", style="bold underline")
    counts = Counter((f.kind, str(f.severity)) for f in rep.findings)
    kinds = sorted({k for k, _ in counts})
    sevs = list(reversed(SEVERITIES))
    out.append(f"{'':8}" + "".join(f"{s:>10}" for s in sevs) + "\n", style="dim")
    for k in kinds:
        out.append(f"{k:8}")
        for s in sevs:
            n = counts.get((k, s), 0)
            out.append(f"{n:>10}", style=SEV_STYLE[s] if n else "dim")
        out.append("\n")
    if not kinds:
        out.append("none\n", style="green")
    busbw = rep.impact.allreduce_busbw_gbps if rep.impact is not None else None
    if busbw is not None:
        out.append("\nAllReduce busbw  ", style="bold")
        out.append(" · ".join(f"{fig.label} {fmt_gbps(fig.gbps)}" for fig in busbw_figures(busbw, len(rep.drain))))
        out.append("\n")
    bad_links = len(index.unhealthy_links())
    out.append(f"\nlinks with findings {bad_links:,} of {index.link_count:,}\n")
    out.append(f"hosts to drain      {len(rep.drain):,}\n", style="bold red" if rep.drain else "")
    t = rep.tests
    out.append("\ntests\n", style="bold underline")
    out.append(f"pairs {t.get('pairs_tested', 0):,} tested · {t.get('pairs_slow', 0):,} slow · "
               f"{t.get('pairs_hung', 0):,} hung · {t.get('pairs_wrong', 0):,} corrupt · "
               f"{t.get('pairs_error', 0):,} could not run\n")
    out.append(f"ports sampled {t.get('ports_sampled', 0):,} · rounds {t.get('rounds')} · "
               f"duration {fmt_num(t.get('duration_s'))} s\n")
    for line in expectation_lines(rep.expectations):  # what "slow" was judged against
        out.append(safe(line, "dim"))
        out.append("\n")
    for why in (rep.expectations or {}).get("contradictions") or []:
        out.append(safe(f"measurements contradict the topology: {why}", "bold yellow"))
        out.append("\n")
    status = Counter(str(p.get("status")) for p in rep.probes)
    if status:
        out.append("probes  " + " · ".join(f"{n} {s}" for s, n in sorted(status.items())) + "\n")
        for p in [p for p in rep.probes if p.get("status") != "ok"][:5]:
            out.append(safe(f"  {p.get('probe')} {p.get('target')}: {p.get('status')} {p.get('error') or ''}", "yellow"))
            out.append("\n")
    if not index.has_topology:
        out.append("\nthis report has no topology section: no tree, hosts or links\n", style="yellow")
    return out


def port_label(index: ReportIndex, lid: LinkId, mine: tuple[str, int], other: tuple[str, int]) -> Text:
    """One port under its node in the fabric tree: ``p5 → spine01[1]  4x100``."""
    label = health_text(index.link_health(lid), f"p{mine[1]} → {port_name(index.label(other[0]), other[1])}")
    label.append(f"  {index.speed(index.links[lid])}", style="dim")
    return label
