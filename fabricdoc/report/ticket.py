"""A short summary of a report, or of some of its findings, fit to paste into a ticket.

Markdown (the default) or plain text. ``fabricdoc summary`` prints it; the TUI's export writes it with
the filter and what-if the person had on screen. Every fabric string is escaped for a terminal and, in
Markdown, for Markdown, so a hostile node description neither moves a cursor nor forms a link.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabricdoc.model.findings import Finding
from fabricdoc.model.text import escape, plural
from fabricdoc.report.evidence_text import evidence_line
from fabricdoc.report.figures import busbw_figures, remedy_text, throughput_text
from fabricdoc.report.render import action_line
from fabricdoc.report.report import Report

FORMATS = ("markdown", "text")
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>|])")  # what forms links, images, HTML, code, tables, emphasis


@dataclass(frozen=True)
class WhatIf:
    """A what-if a person tried (the TUI's Impact tab): hosts drained, cables out of service, and the
    figures the impact model predicted for it (``busbw_gbps``, ``hosts``, ``throughput_fraction``)."""

    drain: tuple[str, ...] = ()
    isolate: tuple[Any, ...] = ()
    result: dict[str, Any] = field(default_factory=dict)


def ticket(report: Report, ids: Sequence[str] = (), fmt: str = "markdown", filter_text: str = "",
           what_if: WhatIf | None = None) -> str:
    """The summary: verdict and fabric, the findings (those ``ids`` name, else all; ``filter_text`` says
    which filter chose them), busbw, the remedy, the drain list, what could not be seen, and a what-if."""
    md = fmt == "markdown"
    t = _md if md else escape
    findings = chosen(report, ids)
    out = [("# " if md else "") + f"fabricdoc: {t(report.fabric.get('name', '?'))} — {report.verdict.upper()}"
           f" ({plural(len(report.findings), 'finding')})", ""]
    out.append(f"report made {t(report.generated_at)}; {report.fabric.get('hosts', 0)} hosts, "
               f"{report.fabric.get('switches', 0)} switches, {report.fabric.get('links', 0)} links")
    if filter_text:
        out.append(f"findings shown: {len(findings)} of {len(report.findings)}, filtered by {t(filter_text)!s}")
    elif ids:
        out.append(f"findings shown: {len(findings)} of {len(report.findings)}")
    for why in (report.coverage or {}).get("not_seen") or []:
        out.append(f"could not see {t(why.get('what', ''))}: {t(why.get('why', ''))}")
    out += ["", ("## " if md else "") + "Findings", ""]
    if not findings:
        out.append("none")
    for f in findings:
        out += _finding(f, md)
    while out and not out[-1]:
        out.pop()
    figures = busbw_figures(report.impact.allreduce_busbw_gbps if report.impact else None, len(report.drain))
    if figures:
        out += ["", ("## " if md else "") + "AllReduce busbw (Gb/s)", ""]
        shown = [f"{f.gbps:.1f}" if f.gbps is not None else "n/a" for f in figures]
        if md:
            out += ["| " + " | ".join(f.label for f in figures) + " |", "|" + "---|" * len(figures),
                    "| " + " | ".join(shown) + " |"]
        else:
            out.append(" / ".join(f"{f.label} {s}" for f, s in zip(figures, shown, strict=True)))
        rec = report.impact.recommendation if report.impact else None
        if rec is not None:
            out += ["", f"recommended: {t(remedy_text(rec, limit=20))}; {rec.hosts} hosts, "
                        f"{throughput_text(rec.throughput_fraction)}"]
    if what_if is not None:
        out += ["", ("## " if md else "") + "What-if tried", "", _what_if(what_if, t)]
    out += ["", ("## " if md else "") + "Drain", ""]
    out += [f"- {t(d.node)}: {t(d.tag)} {t(d.reason)}" for d in report.drain] or ["none"]
    return "\n".join(out).rstrip() + "\n"


def chosen(report: Report, ids: Iterable[str]) -> list[Finding]:
    """The findings ``ids`` name (each a finding id or a leading part of one), in report order; all when
    none are given. An id that names no finding, or more than one, is refused in one line."""
    wanted = [i.strip().lower() for i in ids if i.strip()]
    if not wanted:
        return list(report.findings)
    picked: list[Finding] = []
    for want in wanted:
        hits = [f for f in report.findings if f.id.startswith(want)]
        if len(hits) != 1:
            from fabricdoc.errors import ConfigError

            what = "no finding" if not hits else f"{len(hits)} findings"
            raise ConfigError(f"--finding {escape(want)}: {what} of this report has that id "
                              f"(ids: {', '.join(f.id for f in report.findings[:8]) or 'none'})")
        if hits[0] not in picked:
            picked.append(hits[0])
    return [f for f in report.findings if f in picked]


def _finding(f: Finding, md: bool) -> list[str]:
    t = _md if md else escape
    head = f"{f.id} {f.severity} {f.kind} {t(f.fault)}: {t(f.name)} (confidence {f.confidence:.2f})"
    out = [("### " if md else "") + head]
    out += [f"- {_md(evidence_line(ev)) if md else evidence_line(ev)}" for ev in f.evidence]
    if f.action is not None:
        line = action_line(f.action)
        out.append(f"- **do**: {_md(line)}" if md else f"- do: {line}")
    out.append("")
    return out


def _what_if(w: WhatIf, t: Any) -> str:
    r = w.result
    figures = []
    if isinstance(r.get("busbw_gbps"), int | float):
        figures.append(f"ring busbw {r['busbw_gbps']:.1f} Gb/s")
    if "hosts" in r:
        figures.append(f"{r['hosts']} hosts")
    if "throughput_fraction" in r:
        figures.append(throughput_text(r["throughput_fraction"]))
    return f"{t(remedy_text(w, limit=20))} → " + (", ".join(figures) or "not computed")


def _md(text: Any) -> str:
    """Terminal-safe and Markdown-inert: controls shown as escapes, Markdown's specials backslashed."""
    return _MD_SPECIAL.sub(r"\\\1", escape(text))
