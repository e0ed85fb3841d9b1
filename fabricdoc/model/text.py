"""The one escape helper for untrusted text shown in a terminal.

Node descriptions, hostnames, interface names and anything read from a file
may carry control characters, ANSI/OSC escape sequences, newlines or Unicode
bidi overrides. :func:`escape` makes every non-printable character visible
(``\\x1b``, ``\\n``, ``\\u202e``) so such text can neither drive the terminal
nor break a line or a table row. Every renderer (text summary, TUI, impact
tables, history, error lines) passes untrusted strings through it.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any


def _code(c: str) -> str:
    n = ord(c)
    if n < 0x100:
        return f"\\x{n:02x}"
    if n < 0x10000:
        return f"\\u{n:04x}"
    return f"\\U{n:08x}"


def escape(text: Any) -> str:
    """``str(text)`` with every non-printable character (controls, ESC, bidi marks,
    line separators) shown as an escape code; printable text is returned as is."""
    s = text if isinstance(text, str) else str(text)
    if s.isprintable():
        return s
    return "".join(c if c.isprintable() else _code(c) for c in s)


# Code points JSON leaves raw that can still reorder or hide text where a JSON document is shown (a
# terminal, a browser, a log viewer): DEL and C1 controls, bidi marks and overrides, line and paragraph
# separators, the byte-order mark. JSON escapes C0 controls itself.
_JSON_UNSAFE = re.compile("[\x7f-\x9f\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069\ufeff]")


def json_safe(text: str) -> str:
    """JSON text (``json.dumps(..., ensure_ascii=False)``) with those code points written as ``\\uXXXX``
    escapes: the same JSON value, safe to show. They can only sit inside strings, so this is exact."""
    return _JSON_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", text)


def plural(n: int, word: str) -> str:
    """``1 round``, ``2 rounds``: a count with its noun in the right number."""
    return f"{n} {word}" if n == 1 else f"{n} {word}s"


def gbps_text(value: float | None) -> str:
    """A rate in Gb/s with one decimal, ``—`` when unknown."""
    return "—" if value is None else f"{value:,.1f} Gb/s"


def time_text(ts: float | None) -> str:
    """Epoch seconds as a UTC time with milliseconds (flap times are close together), ``—`` when unknown."""
    if ts is None:
        return "—"
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return escape(ts)
