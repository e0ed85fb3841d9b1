"""The one escape helper for untrusted text shown in a terminal.

Node descriptions, hostnames, interface names and anything read from a file
may carry control characters, ANSI/OSC escape sequences, newlines or Unicode
bidi overrides. :func:`escape` makes every non-printable character visible
(``\\x1b``, ``\\n``, ``\\u202e``) so such text can neither drive the terminal
nor break a line or a table row. Every renderer (text summary, TUI, impact
tables, history, error lines) passes untrusted strings through it.
"""

from __future__ import annotations

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
