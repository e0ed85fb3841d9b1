"""The fault class and the part to name, from all the evidence against one cable.

Counter rules, port states, events and bandwidth tomography each add faults to a
cable's :class:`~fabricdoc.analysis.blame.Blame`. Here they become one finding:
the class rules (the fault registry's ``absorbs``, data) decide what explains what — a
congested port explains the slow tests through it, symbol errors explain a slow
cable — and the evidence's sides decide the part: the port where congestion builds
up, the host's NIC when only the host side saw errors or the CA stopped answering,
the cable when both sides saw them. Where the counters cannot tell a NIC from its
cable (only one side saw errors, or slow tests with clean counters), the finding
names both and what would tell them apart. Congestion counters are told from error
counters by the counter table's class (:mod:`fabricdoc.model.counters`), not their spelling.
"""

from __future__ import annotations

from dataclasses import dataclass

from fabricdoc.analysis.blame import Blame
from fabricdoc.model.counters import canonical_class
from fabricdoc.model.evidence import CandidatesEvidence, CounterEvidence, Evidence
from fabricdoc.model.faults import FaultClass, registry
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.severity import Severity, worst
from fabricdoc.model.topology import Fabric

SWAP_TEST = ("swap the cable (or move it to another switch port): errors that stay with the host's port "
             "are the NIC, errors that follow the cable are the cable")
SLOW_HOST_TEST = ("re-test the host over another cable or port, and read both ends' counters under load: "
                  "slow with a good cable is the NIC")


@dataclass(frozen=True)
class Verdict:
    """What one cable's evidence names: the fault, the kind of part, its severity and the port it sits on."""

    fault: str
    kind: str  # link | nic | port
    severity: Severity
    port: PortRef | None  # the NIC's or the congested port; None for a cable
    candidates: CandidatesEvidence | None = None


def apply_classes(faults: dict[str, Severity], classes: tuple[FaultClass, ...] | None = None
                  ) -> dict[str, Severity]:
    """The faults left once each class that fired absorbed what it explains (``classes``: the
    registry's, in its order, by default)."""
    out = dict(faults)
    for c in registry().classes() if classes is None else classes:
        if c.fault not in out or any(u in out for u in c.unless):
            continue
        for a in c.absorbs:
            sev = out.pop(a, None)
            if sev is not None and c.severity == "max" and sev.rank > out[c.fault].rank:
                out[c.fault] = sev
    return out


def primary(faults: dict[str, Severity]) -> str:
    """The fault that names a finding: the most severe, then the first in the registry's naming order."""
    order = {f: i for i, f in enumerate(registry().naming_order())}
    return min(faults, key=lambda f: (-faults[f].rank, order.get(f, len(order)), f))


def classify(fabric: Fabric, key: LinkKey, blame: Blame,
             classes: tuple[FaultClass, ...] | None = None) -> Verdict:
    """The finding one cable's evidence supports (see the module docstring)."""
    faults = apply_classes(blame.faults, classes)
    fault = primary(faults)
    if fault == "down" and blame.flaps >= 2:
        # Sampled while down, but it went down and came back repeatedly in the window:
        # it is flapping (and will likely come back again), the down state is evidence.
        fault = "flapping"
    severity = worst(faults.values()) or Severity.ERROR
    ends = (key.a, key.b)
    host_end = next((e for e in ends if fabric.nodes[e.node].kind == "host"), None)
    lands_on = registry().get(fault).lands_on
    if lands_on == "port":
        return Verdict(fault, "port", severity, _congested_port(fabric, key, blame.evidence))
    if host_end is None:
        return Verdict(fault, "link", severity, None)
    if lands_on == "nic":
        return Verdict(fault, "nic", severity, host_end)
    if lands_on == "counting_end":
        sides = _error_sides(fabric, key, blame.evidence)
        nic, cable = _names(fabric, key, host_end)
        if sides == {host_end}:
            return Verdict(fault, "nic", severity, host_end, CandidatesEvidence(
                (nic, cable), f"only the host's end counted errors, its switch end is clean; {SWAP_TEST}"))
        if sides == {key.other(host_end)}:
            # The switch receives damaged frames from the host: its cable, or the NIC that sends them.
            return Verdict(fault, "link", severity, None, CandidatesEvidence(
                (cable, nic), f"only the switch's end counted errors, the host's end is clean: the cable or "
                f"the host NIC's transmitter; {SWAP_TEST}"))
        return Verdict(fault, "link", severity, None)
    if lands_on == "host_cable_or_nic":
        nic, cable = _names(fabric, key, host_end)
        return Verdict(fault, "nic", severity, host_end, CandidatesEvidence(
            (nic, cable), f"slow tests through the host's cable, with clean counters; {SLOW_HOST_TEST}"))
    return Verdict(fault, "link", severity, None)


def _names(fabric: Fabric, key: LinkKey, host_end: PortRef) -> tuple[str, str]:
    cable = f"cable {fabric.label(key.a.node)}[{key.a.port}] -- {fabric.label(key.b.node)}[{key.b.port}]"
    return f"NIC {fabric.label(host_end.node)} port {host_end.port}", cable


def _ends_by_label(fabric: Fabric, key: LinkKey) -> dict[tuple[str, int], PortRef]:
    """The cable's two ends keyed as evidence names a port: (label, port)."""
    return {(fabric.label(e.node), e.port): e for e in (key.a, key.b)}


def _error_sides(fabric: Fabric, key: LinkKey, evidence: list[Evidence]) -> set[PortRef]:
    """The cable's ends whose error counters moved (evidence names ends by label)."""
    by_label = _ends_by_label(fabric, key)
    out = set()
    for ev in evidence:
        if isinstance(ev, CounterEvidence) and not _congestion_counter(ev.counter):
            end = by_label.get((ev.node, ev.port))
            if end is not None:
                out.add(end)
    return out


def _congestion_counter(name: str) -> bool:
    """Whether a fabricdoc counter measures queueing (the counter table's class, not its spelling)."""
    return canonical_class(name) == "congestion"


def _congested_port(fabric: Fabric, key: LinkKey, evidence: list[Evidence]) -> PortRef:
    """The end where congestion builds up: the one whose congestion counters rose most
    (transmit wait first: it counts where packets queue)."""
    by_label = _ends_by_label(fabric, key)
    best: tuple[int, float] | None = None
    chosen = key.a
    for ev in evidence:
        if not isinstance(ev, CounterEvidence) or not _congestion_counter(ev.counter):
            continue
        end = by_label.get((ev.node, ev.port))
        if end is None:
            continue
        score = (1 if ev.counter == "xmit_wait_ticks" else 0, ev.per_second or ev.delta)
        if best is None or score > best:
            best, chosen = score, end
    return chosen


