"""A finding's action (what to do, who, how soon) as a table cell and as text."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from fabricdoc.model.findings import Finding

from .formatting import safe

URGENCY_STYLE = {"now": "bold red", "next maintenance": "yellow", "watch": "cyan"}
URGENCY_ORDER = ("watch", "next maintenance", "now")


def action_of(f: Finding) -> Any:
    """The finding's :class:`~fabricdoc.model.findings.Action` (what to do, who, how soon), or None."""
    return getattr(f, "action", None)


def action_cell(f: Finding) -> Text:
    """The findings table's action cell: how soon, then what to do."""
    action = action_of(f)
    if action is None:
        return Text("—", style="dim", end="")
    out = safe(f"{action.urgency}: ", URGENCY_STYLE.get(str(action.urgency), ""))
    out.append(safe(action.do))
    return out


def action_text(f: Finding) -> Text:
    """A finding's action as the evidence panel and the detail show it: what, who, how soon, why."""
    action = action_of(f)
    out = Text(end="")
    if action is None:
        return out
    out.append("action   ", style="bold")
    out.append(safe(action.do, "bold"))
    out.append("  (")
    out.append(safe(action.who))
    out.append(", ")
    out.append(safe(action.urgency, URGENCY_STYLE.get(str(action.urgency), "")))
    out.append(")")
    if action.why:
        out.append("\n         ")
        out.append(safe(action.why, "dim"))
    out.append("\n")
    return out
