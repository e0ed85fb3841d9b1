"""Whether a report is fresh enough to act on: not older than a maximum age, not dated in the future.

Every consumer that acts without a person (gate, NPD, taints, the exporter)
asks this first. A month-old report says nothing about the fabric now, and a
report dated ahead of this host's clock (a wrong clock, a hand-edited file)
cannot be aged at all: both are refused, never read as "healthy".
"""

from __future__ import annotations

from datetime import datetime

from fabricdoc.errors import ConfigError
from fabricdoc.model.times import age_hours

DEFAULT_MAX_AGE_H = 24.0  # a sweep a day is the usual cadence before large jobs
FUTURE_SLACK_S = 300.0  # clocks of the sweeping host and this one may differ this much


def staleness(generated_at: str, max_age_h: float | None = DEFAULT_MAX_AGE_H,
              now: datetime | None = None) -> str | None:
    """None when a report made at ``generated_at`` may be acted on; else one line saying why not.

    ``max_age_h`` None (or 0 from a flag meaning "no limit") turns the age limit off;
    a time in the future beyond :data:`FUTURE_SLACK_S` is refused either way.
    """
    try:
        age_h = age_hours(generated_at, now, "report time")
    except ConfigError as exc:
        return f"{exc}: cannot tell its age"
    if age_h * 3600.0 < -FUTURE_SLACK_S:
        return (f"report is dated {-age_h:.1f} h in the future ({generated_at}): "
                "check the clocks of the sweeping host and this one")
    if max_age_h and age_h > max_age_h:
        return f"report is {age_h:.1f} h old (limit {max_age_h:g} h): sweep again"
    return None
