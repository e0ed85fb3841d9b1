"""The detail screen's heading: a component's title and a node's or a link's summary."""

from __future__ import annotations

from rich.text import Text

from fabricdoc.model.findings import Finding
from fabricdoc.model.text import escape

from .formatting import fmt_gbps, safe, sev_text
from .index import LinkId, ReportIndex


def detail_title(index: ReportIndex, node: str | None = None, link: LinkId | None = None,
                 finding: Finding | None = None) -> str:
    if link is not None:
        return f"link {escape(index.link_name(link))}"
    if node is not None:
        return f"{index.nodes.get(node, {}).get('kind', 'node')} {escape(index.label(node))}"
    if finding is not None:
        return f"finding {finding.id} {escape(finding.name)}"
    return ""


def link_summary(index: ReportIndex, lid: LinkId) -> Text:
    lk = index.links.get(lid)
    out = Text(end="")
    out.append("link  ", style="bold")
    out.append(safe(index.link_name(lid)))
    if lk is not None:
        nominal = (lk.get("max_lanes") or lk["lanes"]) * (lk.get("max_lane_gbps") or lk["lane_gbps"])
        out.append(f"\nspeed {index.speed(lk)} = {fmt_gbps(lk['lanes'] * lk['lane_gbps'])}"
                   f"  nominal {fmt_gbps(nominal)}  state ")
        out.append(safe(lk.get("state", "up")))
    out.append("\nhealth ")
    out.append(sev_text(index.link_health(lid)))
    return out


def node_summary(index: ReportIndex, nid: str) -> Text:
    n = index.nodes.get(nid, {"kind": "node", "label": nid, "ports": "?"})
    out = Text(end="")
    out.append(f"{n['kind']}  ", style="bold")
    out.append(safe(n["label"]))
    out.append("\nid ")
    out.append(safe(nid, "dim"))
    if n.get("guid"):
        out.append(safe(f"  guid {n['guid']}", "dim"))
    out.append(f"\nports {n['ports']}  ")
    out.append(safe(index.place(nid)))
    out.append("\nhealth ")
    out.append(sev_text(index.node_health(nid)))
    reason = index.drain_reason.get(index.host_name.get(nid, ""))
    if reason:
        out.append("\ndrain: ", style="bold red")
        out.append(safe(reason))
    return out
