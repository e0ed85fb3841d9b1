"""Data corruption: tests whose data check failed blame the host port common to them.

Corruption is a different fault from slowness (a NIC or cable that flips bits),
so it is judged apart from tomography.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from fabricdoc.model.evidence import CorruptionEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import PairResult, PortRef
from fabricdoc.model.severity import Severity
from fabricdoc.model.topology import Fabric


def corruption_findings(fabric: Fabric, pairs: Iterable[PairResult]) -> list[Finding]:
    wrong = [p for p in pairs if p.status == "wrong"]
    if not wrong:
        return []
    count: dict[PortRef, int] = defaultdict(int)
    for p in wrong:
        count[p.src] += 1
        count[p.dst] += 1
    out = []
    explained: set[int] = set()
    for port, n in sorted(count.items(), key=lambda kv: (-kv[1], kv[0])):
        covers = {i for i, p in enumerate(wrong) if port in (p.src, p.dst)} - explained
        if not covers or (n < 2 and len(wrong) > 1):
            continue
        explained |= covers
        ev = CorruptionEvidence(n, tuple((fabric.label(wrong[i].src.node), fabric.label(wrong[i].dst.node),
                                          wrong[i].wrong) for i in sorted(covers)[:20]))
        out.append(Finding("", "nic", f"{fabric.label(port.node)} port {port.port}", "data_corruption",
                           Severity.CRITICAL, round(min(0.99, n / max(1, len(wrong)) + 0.2), 3), [ev], None,
                           [port.node]))
    return out
