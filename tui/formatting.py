"""Text formatters: untrusted strings kept literal, severity and health labels, numbers, times."""

from __future__ import annotations

from typing import Any

from rich.text import Text

from fabricdoc.model.severity import Severity
from fabricdoc.model.text import escape, gbps_text, time_text

SEV_STYLE = {"critical": "bold white on red", "error": "bold red", "warning": "yellow", "info": "cyan", "ok": "green"}
HEALTH_GLYPH = {"critical": "✖", "error": "✖", "warning": "▲", "info": "●", "ok": "●"}


def safe(value: object, style: str = "") -> Text:
    """Untrusted text as a Text: control characters escaped, never parsed as markup."""
    return Text("" if value is None else escape(value), style=style, no_wrap=True, end="")


def sev_text(severity: str | None) -> Text:
    """A severity (or ``ok``) as a coloured label."""
    sev = str(severity or "ok")
    return Text(sev, style=SEV_STYLE.get(sev, ""), end="")


def health_rank(severity: Severity | None) -> int:
    """-1 for healthy, else the severity's rank: what tables sort by."""
    return -1 if severity is None else severity.rank


def health_text(severity: str | None, label: str) -> Text:
    """A glyph and label coloured by health; the label is untrusted and stays literal."""
    state = str(severity or "ok")
    out = Text(f"{HEALTH_GLYPH[state]} ", style=SEV_STYLE.get(state, ""), end="")
    out.append(safe(label, "" if state == "ok" else SEV_STYLE[state]))
    return out


fmt_gbps = gbps_text  # a rate in Gb/s (fabricdoc.model.text, shared with the text report)
fmt_time = time_text  # an epoch time in UTC with milliseconds


def fmt_num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.6g}"
    return str(value)


def port_name(label: str, port: int | None) -> str:
    return f"{label}[{'?' if port is None else port}]"
