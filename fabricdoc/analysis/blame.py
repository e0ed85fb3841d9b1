"""Evidence gathered against one cable before it becomes a finding (shared by the evidence passes)."""

from __future__ import annotations

from dataclasses import dataclass, field

from fabricdoc.model.evidence import Evidence
from fabricdoc.model.severity import Severity


@dataclass
class Blame:
    """Faults (with their worst severity), evidence and confidence against one link."""

    faults: dict[str, Severity] = field(default_factory=dict)
    evidence: list[Evidence] = field(default_factory=list)
    confidence: float = 0.0
    flaps: int = 0  # distinct down transitions seen in the watch window

    def add(self, fault: str, severity: str, confidence: float, ev: Evidence) -> None:
        sev = Severity(severity)
        cur = self.faults.get(fault)
        if cur is None or sev.rank > cur.rank:
            self.faults[fault] = sev
        self.evidence.append(ev)
        self.confidence = max(self.confidence, confidence)
