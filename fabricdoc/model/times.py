"""The one time parser: report and record timestamps as timezone-aware UTC datetimes."""

from __future__ import annotations

from datetime import UTC, datetime

from fabricdoc.errors import ConfigError


def parse_time(text: str, what: str = "time") -> datetime:
    """ISO 8601 text as an aware datetime (a naive time is UTC); ConfigError naming ``what`` otherwise."""
    try:
        t = datetime.fromisoformat(str(text))
    except (TypeError, ValueError):
        raise ConfigError(f"{what} {str(text)[:80]!r} is not an ISO 8601 time") from None
    return t if t.tzinfo is not None else t.replace(tzinfo=UTC)


def epoch(text: str, what: str = "time") -> float:
    """ISO 8601 text as seconds since the epoch."""
    return parse_time(text, what).timestamp()


def now_iso() -> str:
    """The current UTC time in the form reports carry (seconds precision)."""
    return datetime.now(UTC).isoformat(timespec="seconds")


def age_hours(text: str, now: datetime | None = None, what: str = "time") -> float:
    """Hours from ``text`` to ``now`` (negative for a time in the future)."""
    return ((now or datetime.now(UTC)) - parse_time(text, what)).total_seconds() / 3600.0
