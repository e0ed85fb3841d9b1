"""Localization: from counters, link states, events and pair bandwidth, name the faulty parts.

Direct evidence (:mod:`~fabricdoc.analysis.direct`) blames the cable at the
port where it was seen; bandwidth tomography (:mod:`~fabricdoc.analysis.tomography`)
blames what the counters cannot see. A switch is blamed instead of its links
when most of them are bad; a host NIC when its own cable explains its pairs.
Corruption and GPU faults are judged on their own.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from fabricdoc.analysis import direct, tomography
from fabricdoc.analysis.blame import Blame
from fabricdoc.analysis.corruption import corruption_findings
from fabricdoc.analysis.gpu import gpu_findings
from fabricdoc.analysis.rules import DEFAULT_RULES, Rule
from fabricdoc.model.evidence import SwitchLinksEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import LinkKey, Observations
from fabricdoc.model.severity import Severity, worst
from fabricdoc.model.topology import Fabric

# Which fault names a finding when a component has several (first wins).
FAULT_PRIORITY = (
    "dead", "down", "flapping", "pause_storm", "width_degraded", "speed_degraded", "symbol_errors",
    "rcv_errors", "data_corruption", "hung", "degraded_bandwidth", "congestion",
)


@dataclass
class Options:
    """Tunable thresholds of the inference (the counter rules live in counter_rules.toml).

    The report records them (``Report.thresholds``) so every renderer judges as the sweep did.
    """

    slow_ratio: float = 0.80  # a pair below this fraction of expected bandwidth is slow
    suspect_fraction: float = 1.0  # fraction of a link's tests that must be slow
    switch_fraction: float = 0.5  # blame the switch when this share of its links is bad
    rules: tuple[Rule, ...] = DEFAULT_RULES

    def thresholds(self) -> dict[str, float]:
        """The thresholds a report says it was judged with."""
        return {"slow_ratio": self.slow_ratio, "suspect_fraction": self.suspect_fraction,
                "switch_fraction": self.switch_fraction}


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Most severe first, then most certain, then by name: the order reports and ids follow."""
    return sorted(findings, key=lambda f: (-f.severity.rank, -f.confidence, f.name))


def localize(fabric: Fabric, obs: Observations, options: Options | None = None) -> list[Finding]:
    """All findings for one sweep, most severe first; ids are F001, F002, ... in that order."""
    opt = options or Options()
    blame: dict[LinkKey, Blame] = defaultdict(Blame)
    direct.from_counters(fabric, obs, opt.rules, blame)
    direct.from_states(fabric, obs, blame)
    direct.from_events(fabric, obs, blame)
    tomography.from_pairs(fabric, obs, opt.slow_ratio, opt.suspect_fraction, blame)
    findings = _to_findings(fabric, blame, opt)
    findings += corruption_findings(fabric, obs.pairs)
    findings += gpu_findings(obs.gpus, fabric)
    findings = sort_findings(findings)
    for i, f in enumerate(findings, 1):
        f.id = f"F{i:03d}"
    return findings


def _to_findings(fabric: Fabric, blame: dict[LinkKey, Blame], opt: Options) -> list[Finding]:
    findings: list[Finding] = []
    absorbed: set[LinkKey] = set()
    for sw in fabric.switches():
        links = fabric.node_links(sw.id)
        if len(links) < 2:
            continue
        bad = [lk.key for lk in links if lk.key in blame]
        down = [k for k in bad if "down" in blame[k].faults]
        # "Most of its links": strictly more than the fraction, and at least three, so
        # two independent faults on a small switch stay two findings.
        if len(bad) < 3 or len(bad) <= opt.switch_fraction * len(links):
            continue
        # One switch finding replaces its links' findings when most of them fail together.
        if len(down) == len(links):
            fault, severity = "dead", Severity.CRITICAL
        else:
            fault = _primary({f: blame[k].faults[f] for k in bad for f in blame[k].faults})
            severity = worst(s for k in bad for s in blame[k].faults.values()) or Severity.ERROR
        evidence = [SwitchLinksEvidence(len(bad), len(links), len(down))]
        for k in bad[:32]:
            evidence.extend(blame[k].evidence[:3])
        findings.append(
            Finding("", "switch", fabric.label(sw.id), fault, severity,
                    round(min(0.99, 0.5 + 0.5 * len(bad) / len(links)), 3), evidence, None, [sw.id])
        )
        absorbed.update(bad)
    for key, b in blame.items():
        if key in absorbed or not b.faults:
            continue
        fault = _primary(b.faults)
        if fault == "down" and b.flaps >= 2:
            # Sampled while down, but it went down and came back repeatedly in the window:
            # it is flapping (and will likely come back again), the down state is evidence.
            fault = "flapping"
        severity = worst(b.faults.values()) or Severity.ERROR
        a_node, b_node = fabric.nodes[key.a.node], fabric.nodes[key.b.node]
        host_end = key.a if a_node.kind == "host" else key.b if b_node.kind == "host" else None
        kind = "nic" if host_end is not None and fault in ("degraded_bandwidth", "rcv_errors", "hung") else "link"
        name = f"{fabric.label(key.a.node)}[{key.a.port}] -- {fabric.label(key.b.node)}[{key.b.port}]"
        if kind == "nic":
            name = f"{fabric.label(host_end.node)} port {host_end.port}"  # type: ignore[union-attr]
        findings.append(
            Finding("", kind, name, fault, severity, round(b.confidence, 3), b.evidence,  # type: ignore[arg-type]
                    [(fabric.label(key.a.node), key.a.port), (fabric.label(key.b.node), key.b.port)],
                    [key.a.node, key.b.node])
        )
    return findings


def _primary(faults: dict[str, Severity]) -> str:
    order = {f: i for i, f in enumerate(FAULT_PRIORITY)}
    return min(faults, key=lambda f: (-faults[f].rank, order.get(f, len(order)), f))
