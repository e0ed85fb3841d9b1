"""Which cables deserve a targeted re-test: the ones blamed from bandwidth alone, and their twins."""

from __future__ import annotations

from collections.abc import Iterable

from fabricdoc.model.evidence import SlowPairsEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric

RETEST_FAULTS = frozenset({"degraded_bandwidth", "hung"})


def retest_suspects(fabric: Fabric, findings: Iterable[Finding]) -> list[LinkKey]:
    """Cables that bandwidth tomography blamed (link and host-cable "nic" findings) and the
    cables equally likely from the same tests, in order: what the re-test round probes."""
    out: dict[LinkKey, None] = {}
    for f in findings:
        if f.kind not in ("link", "nic") or f.fault not in RETEST_FAULTS or len(f.node_ids) != 2 or not f.endpoints:
            continue
        ends = [PortRef(f.node_ids[0], int(f.endpoints[0][1]))]
        for ev in f.evidence_of(SlowPairsEvidence):
            ends += [PortRef(a[0], int(a[1])) for a, _ in ev.alternatives]
        for end in ends:
            link = fabric.link_at(end)
            if link is not None:
                out[link.key] = None
    return list(out)
