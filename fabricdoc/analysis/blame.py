"""Evidence gathered against one cable before it becomes a finding (shared by the evidence passes), the
cable a finding names, and how slow a cable only slow pair tests blame is."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from fabricdoc.model.evidence import CounterEvidence, Evidence, GroupLoadEvidence, SlowPairsEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.severity import Severity
from fabricdoc.model.topology import Fabric


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


def named_cable(fabric: Fabric, f: Finding) -> LinkKey | None:
    """The cable a finding names: the one at its first end (a cable's either end, a NIC's port)."""
    if not f.node_ids or f.node_ids[0] not in fabric.nodes:
        return None
    link = fabric.link_at(PortRef(f.node_ids[0], int(f.endpoints[0][1]))) if f.endpoints else None
    return link.key if link is not None else None


def slow_figure(evidence: Iterable[Evidence]) -> float | None:
    """How slow a cable is that only slow pair tests blame: the median relative figure of the tests it
    explains (a gray cable slows a group through it about that much, see
    :func:`~fabricdoc.model.expectation.explains`). None where nothing measured it so, or a counter or a
    group test blames it too (an erroring cable may get worse under load than one flow showed; one that
    collapses under load is as slow as that load makes it)."""
    evidence = list(evidence)
    if any(isinstance(e, (CounterEvidence, GroupLoadEvidence)) for e in evidence):
        return None
    figures = [e.median_relative for e in evidence if isinstance(e, SlowPairsEvidence) and e.median_relative is not None]
    return min(figures) if figures else None
