"""What changed between two reports: findings matched by their stable key, drains, verdict, busbw, tests, coverage.

Findings are matched by :attr:`Finding.key` (the same fault on the same part in every sweep), never by
label or position. ``worse`` is what an operator must look at: a new finding of warning or worse (an
``info`` one, such as a single slow test nothing explains, is noise a re-sweep moves), a persisting one
whose severity rose, or a worse verdict (pass < incomplete < degraded < fail).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from fabricdoc.errors import FabricdocError
from fabricdoc.model.findings import Finding
from fabricdoc.model.severity import rank as severity_rank
from fabricdoc.model.times import parse_time
from fabricdoc.model.verdict import Verdict
from fabricdoc.report.figures import BUSBW_KEYS
from fabricdoc.report.report import Report

"""How bad a verdict is, for "worse" and "better": not seeing everything is worse than a pass, and
less bad than a warning found."""
COVERAGE_COUNTS = (("ports", "planned"), ("ports", "sampled"), ("hosts", "planned"), ("hosts", "seen"),
                   ("tests", "planned"), ("tests", "measured"))


def change_of(old_rank: int, new_rank: int) -> str:
    """``worse``, ``better`` or ``same``, from two ranks where higher is worse."""
    return "worse" if new_rank > old_rank else "better" if new_rank < old_rank else "same"


def _num(value: Any) -> float | None:
    return value if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Delta:
    """One figure in both reports (None where a report lacks it) and how it moved."""

    name: str
    old: float | None
    new: float | None

    @property
    def delta(self) -> float | None:
        if self.old is None or self.new is None:
            return None
        d = self.new - self.old
        return round(d, 6) if isinstance(d, float) else d

    def to_dict(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "delta": self.delta}


@dataclass(frozen=True)
class FindingRef:
    """A finding as the comparison shows it: its id, identity and how bad it is."""

    id: str
    key: str
    kind: str
    fault: str
    name: str
    severity: str
    confidence: float

    @property
    def label(self) -> str:
        """``<id> <fault>``, as :attr:`Finding.label` names a finding in a line."""
        return f"{self.id} {self.fault}"

    @classmethod
    def of(cls, f: Finding) -> FindingRef:
        return cls(f.id, f.key, str(f.kind), f.fault, f.name, str(f.severity), round(f.confidence, 3))

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "key": self.key, "kind": self.kind, "fault": self.fault, "name": self.name,
                "severity": self.severity, "confidence": self.confidence}


@dataclass(frozen=True)
class Persisting:
    """A finding in both reports: ``old`` and ``new`` as each report has it."""

    old: FindingRef
    new: FindingRef

    @property
    def change(self) -> str:
        """The severity's move: ``worse``, ``better`` or ``same`` (confidence alone changes nothing)."""
        from fabricdoc.model.severity import rank

        return change_of(rank(self.old.severity), rank(self.new.severity))

    def to_dict(self) -> dict[str, Any]:
        return {**self.new.to_dict(), "change": self.change,
                "old": {"id": self.old.id, "severity": self.old.severity, "confidence": self.old.confidence}}


@dataclass(frozen=True)
class Side:
    """What identifies one report of the two."""

    verdict: str
    fabric: str
    generated_at: str
    run_id: str

    @classmethod
    def of(cls, r: Report) -> Side:
        return cls(r.verdict, str(r.fabric.get("name", "")), r.generated_at, r.run_id)

    def to_dict(self) -> dict[str, str]:
        return {"verdict": self.verdict, "fabric": self.fabric, "generated_at": self.generated_at,
                "run_id": self.run_id}


@dataclass(frozen=True)
class Comparison:
    """OLD against NEW (see :func:`compare_reports`)."""

    old: Side
    new: Side
    new_findings: tuple[FindingRef, ...]
    cleared: tuple[FindingRef, ...]
    persisting: tuple[Persisting, ...]
    drain_added: tuple[str, ...]
    drain_removed: tuple[str, ...]
    busbw_gbps: tuple[Delta, ...]
    tests: tuple[Delta, ...]
    coverage: tuple[Delta, ...]
    complete: tuple[bool, bool]
    not_seen_added: tuple[str, ...]
    not_seen_cleared: tuple[str, ...]
    notes: tuple[str, ...]

    @property
    def verdict_change(self) -> str:
        return change_of(Verdict.parse(self.old.verdict).rank, Verdict.parse(self.new.verdict).rank)

    @property
    def worse(self) -> tuple[Persisting, ...]:
        """The persisting findings whose severity rose."""
        return tuple(p for p in self.persisting if p.change == "worse")

    @property
    def new_faults(self) -> tuple[FindingRef, ...]:
        """The new findings of warning severity or worse (info ones are listed, never news)."""
        return tuple(f for f in self.new_findings if severity_rank(f.severity) >= severity_rank("warning"))

    @property
    def got_worse(self) -> bool:
        """New findings of warning or worse, a finding whose severity rose, or a worse verdict: exit code 1."""
        return bool(self.new_faults or self.worse or self.verdict_change == "worse")

    def to_dict(self) -> dict[str, Any]:
        return {
            "old": self.old.to_dict(),
            "new": self.new.to_dict(),
            "verdict": {"old": self.old.verdict, "new": self.new.verdict, "change": self.verdict_change},
            "got_worse": self.got_worse,
            "notes": list(self.notes),
            "findings": {"new": [f.to_dict() for f in self.new_findings],
                         "cleared": [f.to_dict() for f in self.cleared],
                         "persisting": [p.to_dict() for p in self.persisting]},
            "drain": {"added": list(self.drain_added), "removed": list(self.drain_removed)},
            "allreduce_busbw_gbps": {d.name: d.to_dict() for d in self.busbw_gbps},
            "tests": {d.name: d.to_dict() for d in self.tests},
            "coverage": {"complete": {"old": self.complete[0], "new": self.complete[1]},
                         **{d.name: d.to_dict() for d in self.coverage},
                         "not_seen_added": list(self.not_seen_added),
                         "not_seen_cleared": list(self.not_seen_cleared)},
        }


def compare_reports(old: Report, new: Report) -> Comparison:
    """OLD against NEW. Reports of different fabrics, or a NEW older than OLD, are still compared; a note says so."""
    before = {f.key: f for f in old.findings}
    after = {f.key: f for f in new.findings}
    old_drain, new_drain = [d.node for d in old.drain], [d.node for d in new.drain]
    old_not_seen, new_not_seen = _not_seen(old.coverage), _not_seen(new.coverage)
    old_side, new_side = Side.of(old), Side.of(new)
    return Comparison(
        old=old_side,
        new=new_side,
        new_findings=tuple(FindingRef.of(f) for k, f in after.items() if k not in before),
        cleared=tuple(FindingRef.of(f) for k, f in before.items() if k not in after),
        persisting=tuple(Persisting(FindingRef.of(before[k]), FindingRef.of(f)) for k, f in after.items()
                         if k in before),
        drain_added=_only_in(new_drain, old_drain),
        drain_removed=_only_in(old_drain, new_drain),
        busbw_gbps=_deltas(_busbw(old), _busbw(new), BUSBW_KEYS),
        tests=_deltas(old.tests, new.tests),
        coverage=_deltas(_coverage_counts(old.coverage), _coverage_counts(new.coverage)),
        complete=(bool(old.coverage.get("complete", True)), bool(new.coverage.get("complete", True))),
        not_seen_added=_only_in(new_not_seen, old_not_seen),
        not_seen_cleared=_only_in(old_not_seen, new_not_seen),
        notes=_notes(old_side, new_side),
    )


def _only_in(these: list[str], those: list[str]) -> tuple[str, ...]:
    """``these`` not in ``those``, in order, each once."""
    other = set(those)
    return tuple(dict.fromkeys(x for x in these if x not in other))


def _busbw(r: Report) -> dict[str, Any]:
    """The report's headline busbw figures by name (none without an impact section)."""
    bw = r.impact.allreduce_busbw_gbps if r.impact is not None else None
    return {} if bw is None else {key: bw.figure(key) for key in BUSBW_KEYS}


def _deltas(old: dict[str, Any], new: dict[str, Any], order: tuple[str, ...] = ()) -> tuple[Delta, ...]:
    """A Delta for every numeric figure in either dict: ``order`` first, then the rest as they come."""
    names = [*order, *(k for k in (*old, *new) if k not in order)]
    seen: dict[str, Delta] = {}
    for name in names:
        a, b = _num(old.get(name)), _num(new.get(name))
        if name not in seen and (a is not None or b is not None):
            seen[name] = Delta(name, a, b)
    return tuple(seen.values())


def _coverage_counts(cov: dict[str, Any]) -> dict[str, Any]:
    """The coverage's counts, flat (``ports_sampled``, ``not_seen_count``...)."""
    counts = {f"{part}_{field}": (cov.get(part) or {}).get(field) for part, field in COVERAGE_COUNTS}
    return {**counts, "not_seen_count": cov.get("not_seen_count", len(cov.get("not_seen") or []))}


def _not_seen(cov: dict[str, Any]) -> list[str]:
    return [str(item.get("what", "")) for item in cov.get("not_seen") or [] if isinstance(item, dict)]


def _notes(old: Side, new: Side) -> tuple[str, ...]:
    notes = []
    if old.fabric != new.fabric:
        notes.append(f"the reports are of different fabrics ({old.fabric!r} and {new.fabric!r}): "
                     "findings are matched by key all the same")
    try:
        if parse_time(new.generated_at, "NEW's generated_at") < parse_time(old.generated_at, "OLD's generated_at"):
            notes.append(f"NEW ({new.generated_at}) is older than OLD ({old.generated_at}): "
                         "new and cleared read backwards in time")
    except FabricdocError as e:
        notes.append(f"cannot tell which report is newer: {e}")
    return tuple(notes)
