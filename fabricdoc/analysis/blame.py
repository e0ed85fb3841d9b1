"""Evidence gathered against one cable before it becomes a finding (shared by the evidence passes), the
cable a finding names, and how slow a cable only slow pair tests blame is."""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field

from fabricdoc.errors import TopologyError
from fabricdoc.model.evidence import CounterEvidence, Evidence, SlowPairsEvidence
from fabricdoc.model.expectation import TestJudgement
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import LinkKey, PairResult, PortRef
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


def measured_only(evidence: Iterable[Evidence]) -> bool:
    """Whether slow pair tests blame a cable and no counter does: how slow it is, is what they measured (an
    erroring cable may get worse under load than one flow showed)."""
    kinds = [type(e) for e in evidence]
    return SlowPairsEvidence in kinds and CounterEvidence not in kinds


def slow_figures(fabric: Fabric, pairs: Sequence[PairResult], judged: TestJudgement,
                 cables: AbstractSet[LinkKey]) -> dict[LinkKey, float]:
    """How slow each of ``cables`` is: the median relative figure of the slow pair tests through it (a cable
    slow pair tests blame slows a group through it about that much, see
    :func:`~fabricdoc.model.expectation.explains`). Cables no slow finished test crossed get none."""
    figures: dict[LinkKey, list[float]] = {}
    for i, p in enumerate(pairs):
        rel = judged.pairs[i].relative
        if not cables or p.status != "ok" or rel is None or not judged.pair_slow(i, p):
            continue
        try:
            path = fabric.path(p.src, p.dst)
        except TopologyError:
            continue
        for key in cables.intersection(path):
            figures.setdefault(key, []).append(rel)
    return {k: statistics.median(v) for k, v in figures.items()}
