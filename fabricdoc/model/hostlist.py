"""The one host-list rule: Slurm hostlist syntax (``gpu[001-016],login1``) through python-hostlist.

Every place that reads or writes several host names uses it: ``--job-hosts FILE``
(whitespace- or line-separated hostlists, ``#`` comments, ``-`` for stdin),
``--job-nodelist``, ``$SLURM_JOB_NODELIST``, ``sweep --hosts``, a drain policy's
maintenance list, Slurm reservations. A malformed expression is an error naming
the input, never read as a literal name.

>>> expand_hostlist("node[01-03],gpu7")
['node01', 'node02', 'node03', 'gpu7']
>>> compress_hostlist(["node03", "node01", "node02", "gpu7"])
'gpu7,node[01-03]'
"""

from __future__ import annotations

import sys
from collections.abc import Iterable

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
    """Expand a Slurm hostlist into names in order, each once, like ``scontrol show hostnames``.

    A malformed one is a ParseError naming ``source`` (and ``line_no``; 0 for a one-line value).
    """
    _slurm_grammar(expr.strip(), source, line_no)
    try:
        names = hostlist.expand_hostlist(expr.strip())
    except hostlist.BadHostlist as exc:
        raise ParseError(source, line_no, expr, f"not a Slurm hostlist ({exc})") from None
    if len(names) > MAX_HOSTS:
        raise ParseError(source, line_no, expr[:80], f"expands to more than {MAX_HOSTS:,} hosts")
    return list(dict.fromkeys(names))


def compress_hostlist(names: Iterable[str]) -> str:
    """The shortest Slurm hostlist naming exactly ``names`` (sorted, zero padding kept), like
    ``scontrol show hostlist``; :func:`expand_hostlist` reads it back to the same set."""
    return str(hostlist.collect_hostlist(list(dict.fromkeys(names))))


def parse_host_list(text: str, source: str) -> list[str]:
    """Names from a host-list text: whitespace-separated hostlists, ``#`` comments, each name once."""
    out: list[str] = []
    for no, line in enumerate(text.splitlines(), 1):
        for token in line.split("#", 1)[0].split():
            out.extend(expand_hostlist(token, source, no))
    return list(dict.fromkeys(out))


def hosts_arg(value: str, option: str) -> list[str]:
    """The hosts a command-line value names (hostlists separated by commas or spaces,
    ``node[01-04],gpu7``); a malformed one is a ParseError and none at all a ConfigError, naming ``option``."""
    hosts = list(dict.fromkeys(h for token in value.split() for h in expand_hostlist(token, option, 0)))
    if not hosts:
        raise ConfigError(f"{option}: no host names in {value!r}")
    return hosts


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
