"""Text formatters: untrusted strings kept literal, severity and health labels, numbers, times."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from rich.text import Text

from fabricdoc.model.severity import Severity
from fabricdoc.model.text import escape

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


def fmt_gbps(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} Gb/s"


def fmt_time(ts: float | None) -> str:
    """Epoch seconds as a UTC time with milliseconds (flap times are close together)."""
    if ts is None:
        return "—"
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ts)


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
