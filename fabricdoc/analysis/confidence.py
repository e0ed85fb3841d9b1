"""How sure a finding from bandwidth tests is, and how severe: one rule for pair and group tomography.

Confidence grows with the tests behind a part (``1 - 0.5^k``), times how far they sit below the
noise where that is known, split among the parts equally likely from the same tests. A part whose
tests reach :data:`HARD_SLOW` of what healthy tests reach, or less, is an error, else a warning; and
a finding less sure than :data:`MIN_CONFIDENCE` is at most a warning: nothing acts on a guess.
"""

from __future__ import annotations

from fabricdoc.model.severity import Severity

HARD_SLOW = 0.7  # tests through a part at this share of what healthy tests reach, or less: an error
MIN_CONFIDENCE = 0.5  # below it a finding is at most a warning (never drains)


def confidence(tests: int, alike: int, distance: float = 1.0, digits: int = 2) -> float:
    """``(1 - 0.5^tests) x distance / alike``, at most 0.99: ``tests`` behind the part, ``alike`` parts
    equally likely (itself included), ``distance`` in [0, 1] how far below the noise they sit.

    >>> confidence(2, 1), confidence(6, 2), confidence(3, 4, digits=3)
    (0.75, 0.49, 0.219)
    """
    return round(min(0.99, (1.0 / alike) * (1 - 0.5 ** tests) * distance), digits)


def slow_severity(worst_share: float | None) -> str:
    """``error`` for tests at :data:`HARD_SLOW` of what healthy ones reach or less, else ``warning``."""
    return "error" if worst_share is not None and worst_share < HARD_SLOW else "warning"


def severity_for(severity: Severity, confidence: float, floor: float = MIN_CONFIDENCE) -> Severity:
    """A finding below ``floor`` confidence is at most a warning: nothing acts on a guess."""
    if confidence < floor and severity.rank > Severity.WARNING.rank:
        return Severity.WARNING
    return severity
