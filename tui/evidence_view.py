"""A finding and its evidence as Text: the findings tab's panel and the detail screen's findings."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.text import Text

from fabricdoc.model.evidence import (
    Evidence,
)
from fabricdoc.model.findings import Finding
from fabricdoc.report.evidence_text import evidence_details, evidence_segments

from .actions import action_text
from .formatting import port_name, safe, sev_text
from .index import ReportIndex, link_id


def evidence_text(index: ReportIndex, evidence: Iterable[Evidence]) -> Text:
    """The evidence behind a finding, one item per line: counters with rates, states, flaps, tests, GPUs."""
    out = Text(end="")
    items = list(evidence)
    if not items:
        out.append("no evidence recorded\n", style="dim")
    for ev in items:
        out.append(f"{ev.kind:<9} ", style="bold")
        out.append(_evidence_line(index, ev))
        out.append("\n")
    return out


ROLE_STYLE = {"": "", "part": "bold", "figure": "", "rate": "magenta", "note": "dim", "warn": "yellow", "bad": "red"}


def _evidence_line(index: ReportIndex, ev: Evidence) -> Text:
    """The evidence's one line and its detail lines, as fabricdoc.report.evidence_text declares them, styled
    by role (the text is escaped there; rich Text reads no markup)."""
    out = Text(end="")
    indent = "\n" + " " * 10

    def cable(a: tuple[str, int], b: tuple[str, int]) -> str:
        return index.link_name(link_id(a, b))

    for text, role in evidence_segments(ev):
        out.append(text, style=ROLE_STYLE[role])
    for line in evidence_details(ev, cable):
        out.append(indent)
        for text, role in line:
            out.append(text, style=ROLE_STYLE[role])
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
