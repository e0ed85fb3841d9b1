"""A finding: the component fabricdoc blames, the fault, how sure it is, and the evidence."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from fabricdoc.model.evidence import Evidence, evidence_from_dict
from fabricdoc.model.severity import Severity

FindingKind = Literal["link", "switch", "host", "nic", "gpu", "port"]


@dataclass
class Finding:
    """A component fabricdoc blames, with how sure it is and why.

    ``name`` is what a person reads (labels); ``node_ids`` and ``endpoints``
    identify the component the way the fabric does (node ids, and for a cable
    its two ``(label, port)`` ends).
    """

    id: str
    kind: FindingKind
    name: str
    fault: str
    severity: Severity
    confidence: float
    evidence: list[Evidence] = field(default_factory=list)
    endpoints: list[tuple[str, int]] | None = None
    node_ids: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.severity = Severity(self.severity)

    def evidence_of(self, cls: type) -> list[Any]:
        """The evidence items of one kind (``finding.evidence_of(SlowPairsEvidence)``)."""
        return [e for e in self.evidence if isinstance(e, cls)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "name": self.name,
            "endpoints": [list(e) for e in self.endpoints] if self.endpoints else None,
            "node_ids": list(self.node_ids),
            "fault": self.fault,
            "severity": str(self.severity),
            "confidence": round(self.confidence, 3),
            "evidence": [e.to_dict() for e in self.evidence],
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "report") -> Finding:
        return cls(
            id=d["id"], kind=d["kind"], name=d["name"], fault=d["fault"], severity=Severity(d["severity"]),
            confidence=float(d["confidence"]),
            evidence=[evidence_from_dict(e, source) for e in d["evidence"]],
            endpoints=[(str(e[0]), int(e[1])) for e in d["endpoints"]] if d.get("endpoints") else None,
            node_ids=list(d.get("node_ids", [])),
        )  # fmt: skip
