"""The one severity type: four levels, ordered, with a rank for sorting and comparing."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Severity(StrEnum):
    """How bad a finding is. Compares equal to its text (``Severity.ERROR == "error"``)."""

    INFO = "info"
    WARNING = "warning"
    ERROR = "error"
    CRITICAL = "critical"

    @property
    def rank(self) -> int:
        return _RANK[self]


SEVERITIES: tuple[str, ...] = tuple(s.value for s in Severity)
_RANK = {s: i for i, s in enumerate(Severity)}


def rank(severity: str) -> int:
    """0 (info) .. 3 (critical); ValueError for anything else."""
    return _RANK[Severity(severity)]


def worst(severities: Iterable[str]) -> Severity | None:
    """The most severe of ``severities``, or None when there are none."""
    found = [Severity(s) for s in severities]
    return max(found, key=_RANK.__getitem__) if found else None


def worse_than(severity: str, limit: str) -> bool:
    """Whether ``severity`` is above ``limit``, a severity or ``"none"`` (then every severity is)."""
    return limit == "none" or rank(severity) > rank(limit)


def at_least(severity: str, floor: str) -> bool:
    """Whether ``severity`` is ``floor`` or worse."""
    return rank(severity) >= rank(floor)
