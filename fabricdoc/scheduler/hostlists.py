"""The one host-list reader: Slurm hostlist syntax (``gpu[001-016],login1``) through python-hostlist.

Used wherever a user names a job's hosts: ``--job-hosts FILE`` (whitespace-
or line-separated hostlists, ``#`` comments, ``-`` for stdin), ``--job-nodelist``
and ``$SLURM_JOB_NODELIST``. A malformed expression is a ParseError naming it.
"""

from __future__ import annotations

import sys

import hostlist

from fabricdoc.errors import ConfigError, ParseError
from fabricdoc.model.inputs import read_text

MAX_HOSTS = 1_000_000


def _slurm_grammar(expr: str, source: str, line_no: int) -> None:
    """Refuse what Slurm refuses but python-hostlist accepts: text after a name's last ``]``
    (``a[1-3]-ib``); Slurm allows text only before and between bracket groups."""
    depth, item_has_group, tail = 0, False, ""
    for ch in expr + ",":
        if ch == "[":
            depth += 1
            item_has_group, tail = True, ""
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            if item_has_group and tail:
                raise ParseError(source, line_no, expr, f"text {tail!r} after ']' (Slurm allows only another [range] there)")
            item_has_group, tail = False, ""
        elif depth == 0:
            tail += ch


def expand_hostlist(expr: str, source: str = "hostlist", line_no: int = 1) -> list[str]:
    """Expand a Slurm hostlist into names in order, each once, like ``scontrol show hostnames``."""
    _slurm_grammar(expr.strip(), source, line_no)
    try:
        names = hostlist.expand_hostlist(expr.strip())
    except hostlist.BadHostlist as exc:
        raise ParseError(source, line_no, expr, f"not a Slurm hostlist ({exc})") from None
    if len(names) > MAX_HOSTS:
        raise ParseError(source, line_no, expr[:80], f"expands to more than {MAX_HOSTS:,} hosts")
    return list(dict.fromkeys(names))


def parse_host_list(text: str, source: str) -> list[str]:
    """Names from a host-list text: whitespace-separated hostlists, ``#`` comments, each name once."""
    out: list[str] = []
    for no, line in enumerate(text.splitlines(), 1):
        for token in line.split("#", 1)[0].split():
            out.extend(expand_hostlist(token, source, no))
    return list(dict.fromkeys(out))


def read_host_list(path: str) -> list[str]:
    """The hosts of a host-list file (``-``: stdin); an empty list is a ConfigError."""
    if path == "-":
        text, source = sys.stdin.read(), "stdin"
    else:
        text, source = read_text(path, "host list"), path
    hosts = parse_host_list(text, source)
    if not hosts:
        raise ConfigError(f"{source}: host list is empty")
    return hosts
