"""Which cables deserve a targeted re-test: the ones blamed from bandwidth alone, their twins, the
cables hidden behind a link trained low (every test through them also ran through it), and the host
cables behind a cable named from its counters (whose slow tests that cable took)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from collections.abc import Set as AbstractSet

from fabricdoc.analysis.blame import named_cable
from fabricdoc.errors import TopologyError
from fabricdoc.model.evidence import CounterEvidence, FlapEvidence, SlowPairsEvidence
from fabricdoc.model.faults import fault as fault_info
from fabricdoc.model.findings import Finding
from fabricdoc.model.paths import FINISHED, finished_crossed, pair_links
from fabricdoc.model.records import LinkKey, PairResult, PortRef
from fabricdoc.model.severity import Severity
from fabricdoc.model.topology import Fabric


def retest_suspects(fabric: Fabric, findings: Iterable[Finding],
                    pairs: Iterable[PairResult] | None = None) -> list[LinkKey]:
    """Cables that bandwidth tomography blamed (link and host-cable "nic" findings), the cables
    equally likely from the same tests, and the cables hidden behind a link named trained low,
    in order: what the re-test round probes (routing around the named links).

    Hidden cables are the trained-low link's neighbours (cables sharing a switch or host with it);
    given the sweep's ``pairs``, only those whose every test that ran also crossed a named link.
    """
    findings = list(findings)
    out: dict[LinkKey, None] = {}
    for f in findings:
        if f.kind not in ("link", "nic") or not fault_info(f.fault).retest or len(f.node_ids) != 2 or not f.endpoints:
            continue
        ends = [PortRef(f.node_ids[0], int(f.endpoints[0][1]))]
        for ev in f.evidence_of(SlowPairsEvidence):
            ends += [PortRef(a[0], int(a[1])) for a, _ in ev.alternatives]
        for end in ends:
            link = fabric.link_at(end)
            if link is not None:
                out[link.key] = None
    for key in hidden_cables(fabric, findings, pairs):
        out.setdefault(key, None)
    return list(out)


def hidden_cables(fabric: Fabric, findings: Iterable[Finding],
                  pairs: Iterable[PairResult] | None = None) -> list[LinkKey]:
    """The up cables next to a link a finding names trained low (width or speed) that no test showed on
    their own: with ``pairs``, those whose every finished test also crossed a named trained-low link."""
    low: list[LinkKey] = []
    for f in findings:
        if f.kind in ("link", "nic") and fault_info(f.fault).trained_low and len(f.node_ids) == 2:
            key = named_cable(fabric, f)
            if key is not None:
                low.append(key)
    if not low:
        return []
    named = set(low)
    near: dict[LinkKey, None] = {}
    for key in low:
        for end in (key.a, key.b):
            for link in fabric.node_links(end.node):
                if link.key not in named and link.state == "up":
                    near[link.key] = None
    if pairs is None:  # a host's cable carries the fewest tests: the likeliest to have had none of its own
        return [k for k in near if any(fabric.nodes[e.node].kind == "host" for e in (k.a, k.b))]
    alone: set[LinkKey] = set()  # cables some finished test crossed without a named trained-low link
    for p in pairs:
        if p.status != "ok":
            continue
        try:
            path = fabric.path(p.src, p.dst)
        except TopologyError:
            continue
        if not named.intersection(path):
            alone.update(path)
    return [k for k in near if k not in alone]


BEHIND_SLOW = 2  # slow tests through a counter-named cable that put a host's own cable in doubt


def behind_counters(fabric: Fabric, findings: Iterable[Finding], pairs: Iterable[PairResult],
                    slow: Callable[[int, PairResult], bool]) -> list[LinkKey]:
    """Host cables in doubt behind a cable named from its counters (flapping, symbol or receive errors):
    the host was at :data:`BEHIND_SLOW` or more slow tests (``slow(i, pair)``) through such a cable and
    at no finished test clear of every one. Tomography gives those slow tests to the cable whose
    counters already explain them, so a slow host cable behind it is never seen on its own; a re-test
    around the named cable shows it."""
    named: set[LinkKey] = set()
    for f in findings:
        if (f.kind != "link" or f.severity == Severity.INFO or fault_info(f.fault).retest
                or not (f.evidence_of(CounterEvidence) or f.evidence_of(FlapEvidence))):
            continue
        key = named_cable(fabric, f)
        if key is not None:
            named.add(key)
    if not named:
        return []
    behind: dict[PortRef, int] = {}
    clear: set[str] = set()
    for i, p in enumerate(pairs):
        path = pair_links(fabric, p) if p.status in FINISHED else None
        if path is None:
            continue
        if not named.intersection(path):
            clear.update((p.src.node, p.dst.node))
        elif slow(i, p):
            for end in (p.src, p.dst):
                behind[end] = behind.get(end, 0) + 1
    out: dict[LinkKey, None] = {}
    for end, n in behind.items():
        link = fabric.link_at(end)
        if n >= BEHIND_SLOW and end.node not in clear and link is not None and link.key not in named:
            out[link.key] = None
    return list(out)


def no_test_ran(pairs: Iterable[PairResult]) -> set[str]:
    """Hosts none of whose tests finished (a silent HCA, a host that cannot launch): a re-test needs others."""
    pairs = list(pairs)
    return {n for p in pairs for n in (p.src.node, p.dst.node)} - finished_hosts(pairs)


def finished_hosts(pairs: Iterable[PairResult]) -> set[str]:
    """The nodes at either end of a test that finished (ran to a figure, or hung)."""
    return {n for p in pairs if p.status in FINISHED for n in (p.src.node, p.dst.node)}


def unmeasured_cables(fabric: Fabric, planned: Iterable[LinkKey], pairs: Iterable[PairResult],
                      blamed: AbstractSet[LinkKey] = frozenset()) -> list[LinkKey]:
    """The up cables of ``planned`` (those the plan's tests were to cross) that no finished test
    crossed, because the tests through them could not run (a silent host, a failing launch) or hung on
    another cable already ``blamed`` (a test that never finished says nothing of the cables beside the
    one that stopped it): tested again from other hosts, so a slow cable does not go unseen behind a
    broken host or cable. A host's own cable whose host finished no test is left out (nothing else can
    test it)."""
    pairs = list(pairs)
    crossed, finished = finished_crossed(fabric, pairs, blamed), finished_hosts(pairs)
    out = []
    for key in planned:
        link = fabric.links.get(key)
        if link is None or link.state != "up" or key in crossed:
            continue
        hosts = [e.node for e in (key.a, key.b) if fabric.nodes[e.node].kind == "host"]
        if any(h not in finished for h in hosts):
            continue
        out.append(key)
    return out
