"""The report's headline figures as a person reads them: one label and one basis for each.

The sweep summary, ``impact``, the TUI and ``/metrics`` all take busbw (nominal, now, after drain,
recommended), job throughput and remedies from here, so one report never reads two ways.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from fabricdoc.impact.records import BUSBW_KEYS, AlgorithmFigures, Busbw
from fabricdoc.model.text import escape, plural

THROUGHPUT_BASIS = "hosts kept x busbw, against every host at nominal busbw"


@dataclass(frozen=True)
class Figure:
    """One AllReduce busbw figure: ``key`` as the JSON names it, ``label`` as people read it."""

    key: str
    label: str
    gbps: float | None
    of_nominal: float | None


class Remedial(Protocol):
    """What a remedy changes: the hosts it drains and the cables it takes out of service."""

    @property
    def drain(self) -> Sequence[str]: ...

    @property
    def isolate(self) -> Sequence[Any] | None: ...


def busbw_figures(bw: Busbw | AlgorithmFigures | None, drained: int) -> list[Figure]:
    """Nominal, now, after drain (of ``drained`` hosts) and recommended busbw in Gb/s, each with its share
    of nominal (``bw``: the impact section's headline figures, or one algorithm's); recommended only where
    there is one."""
    if bw is None:
        return []
    nominal = _num(bw.nominal)
    labels = {"nominal": "nominal", "now": "now", "after_drain": f"after drain ({plural(drained, 'host')})",
              "recommended": "recommended"}
    out = []
    for key in BUSBW_KEYS:
        if key == "recommended" and bw.recommended is None:
            continue
        value = _num(getattr(bw, key))
        share = value / nominal if value is not None and nominal else None
        out.append(Figure(key, labels[key], value, share))
    return out


def throughput_text(fraction: Any, basis: bool = True) -> str:
    """``job throughput 96.9% of nominal (hosts kept x busbw, ...)``: the one way it is said (``basis``:
    with the basis; a list of remedies states it once)."""
    value = _num(fraction)
    shown = "n/a" if value is None else f"{value:.1%}"
    return f"job throughput {shown} of nominal" + (f" ({THROUGHPUT_BASIS})" if basis else "")


def remedy_text(entry: Remedial, limit: int = 6) -> str:
    """What a remedy changes: the hosts it drains and the cables it takes out of service (names escaped;
    ``limit`` names each at most, 0 only counts them)."""
    drain = [str(h) for h in entry.drain or ()]
    cables = [cable_text(c) for c in entry.isolate or ()]
    parts = []
    if drain:
        parts.append("drain " + _listed(drain, limit, "host"))
    if cables:
        parts.append("out of service " + _listed(cables, limit, "cable"))
    return "; ".join(parts) or "nothing drained or out of service"


def cable_text(link: Any) -> str:
    """``a[1] -- b[2]`` for a report's ``[[label, port], [label, port]]`` cable (names escaped)."""
    return " -- ".join(f"{escape(str(n))}[{p}]" for n, p in link)


def _listed(names: list[str], limit: int, noun: str) -> str:
    if limit <= 0 or len(names) > limit:
        shown = ", ".join(escape(n) for n in names[:limit]) if limit > 0 else ""
        rest = len(names) - max(limit, 0)
        return f"{shown} (+{rest})" if shown else plural(len(names), noun)
    return ", ".join(escape(n) for n in names)


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
