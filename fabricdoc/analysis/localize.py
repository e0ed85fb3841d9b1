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

from fabricdoc.analysis import direct, grouptomo, tomography
from fabricdoc.analysis.blame import Blame
from fabricdoc.analysis.classify import classify
from fabricdoc.analysis.confidence import MIN_CONFIDENCE, severity_for
from fabricdoc.analysis.consistency import paths_contradiction
from fabricdoc.analysis.corruption import corruption_findings
from fabricdoc.analysis.gpu import gpu_findings
from fabricdoc.analysis.host_config import host_config_findings, kernel_findings
from fabricdoc.analysis.ras import ras_findings
from fabricdoc.analysis.rules import DEFAULT_RULES, Rule
from fabricdoc.analysis.runtime import runtime_findings
from fabricdoc.fabric.identity import host_nodes
from fabricdoc.model.evidence import (
    CandidatesEvidence,
    NcclLogEvidence,
    PairSample,
    SlowPairsEvidence,
    SwitchLinksEvidence,
)
from fabricdoc.model.expectation import Sample, TestJudgement, judge_observations
from fabricdoc.model.faults import fault as fault_info
from fabricdoc.model.findings import Finding, assign_ids
from fabricdoc.model.memory import gc_paused
from fabricdoc.model.records import LinkKey, Observations
from fabricdoc.model.severity import Severity, worst
from fabricdoc.model.topology import Fabric


@dataclass
class Options:
    """Tunable thresholds of the inference (the counter rules live in counter_rules.toml).

    The report records them (``Report.thresholds``) so every renderer judges as the sweep did.
    """

    # A test is slow when below what healthy tests of its shape reach here by more than the noise
    # explains (fabricdoc.model.expectation); given, below this share of that figure instead.
    slow_ratio: float | None = None
    suspect_fraction: float = 0.5  # more than this share of a link's tests must be slow
    switch_fraction: float = 0.5  # blame the switch when this share of its links is bad
    min_confidence: float = MIN_CONFIDENCE  # below it a finding is at most a warning (never drains)
    rules: tuple[Rule, ...] = DEFAULT_RULES
    history: tuple[Sample, ...] = ()  # earlier sweeps' test figures: what to expect where too few tests ran

    def thresholds(self) -> dict[str, float]:
        """The thresholds a report says it was judged with."""
        out = {"suspect_fraction": self.suspect_fraction, "switch_fraction": self.switch_fraction,
               "min_confidence": self.min_confidence}
        if self.slow_ratio is not None:
            out["slow_ratio"] = self.slow_ratio
        return out

    def judge(self, fabric: Fabric, obs: Observations, learn_rounds: int | None = None) -> TestJudgement:
        """Every test of ``obs`` judged against what healthy tests of its shape reach on ``fabric``
        (learned from the rounds before ``learn_rounds`` where given: the screening, not the re-tests)."""
        return judge_observations(fabric, obs.pairs, obs.groups, self.history, self.slow_ratio, learn_rounds)


def sort_findings(findings: list[Finding]) -> list[Finding]:
    """Most severe first, then most certain, then by name: the order reports and ids follow."""
    return sorted(findings, key=lambda f: (-f.severity.rank, -f.confidence, f.name))


def localize(fabric: Fabric, obs: Observations, options: Options | None = None,
             judged: TestJudgement | None = None) -> list[Finding]:
    """All findings for one sweep, most severe first, each with its stable id (:func:`assign_ids`).
    ``judged`` is every test of ``obs`` judged (:meth:`Options.judge`; judged here when None)."""
    options = options or Options()
    with gc_paused():  # builds evidence for thousands of ports and frees nothing meanwhile
        return _localize(fabric, obs, options, judged or options.judge(fabric, obs))


def _localize(fabric: Fabric, obs: Observations, opt: Options, judged: TestJudgement) -> list[Finding]:
    blame: dict[LinkKey, Blame] = defaultdict(Blame)
    direct.from_counters(fabric, obs, opt.rules, blame)
    direct.from_states(fabric, obs, blame)
    direct.from_events(fabric, obs, blame)
    unexplained = tomography.from_pairs(fabric, obs, judged, opt.suspect_fraction, blame)
    loaded_switches = grouptomo.from_groups(fabric, obs, judged, blame)  # load-only faults
    findings = _to_findings(fabric, blame, opt) + loaded_switches
    findings += _unexplained_findings(fabric, unexplained)
    findings += corruption_findings(fabric, obs.pairs)
    findings += gpu_findings(obs.gpus, fabric)
    findings += _on_fabric(fabric, host_config_findings(obs.host_checks) + kernel_findings(obs.kernel_events))
    findings += runtime_findings(fabric, obs, findings)  # NCCL transports; log lines on cables
    findings = _explained_by_host(fabric, findings)
    findings += ras_findings(fabric, obs, findings)  # NCCL RAS: lost ranks' hosts
    findings = sort_findings(_merge_same_key(findings))
    assign_ids(findings)
    misfit = paths_contradiction(fabric, obs, judged, findings)
    if misfit and misfit not in judged.expectations.contradictions:
        judged.expectations.contradictions.append(misfit)  # the report's coverage says it: never a pass
    return findings


def _down(b: Blame) -> bool:
    return bool({"down", "not_discovered"} & b.faults.keys())


def _to_findings(fabric: Fabric, blame: dict[LinkKey, Blame], opt: Options) -> list[Finding]:
    verdicts = {key: classify(fabric, key, b) for key, b in blame.items() if b.faults}
    switches = [sw for sw in fabric.switches() if len(fabric.node_links(sw.id)) >= 2]
    # Dead switches first: every link down. Their links are theirs, so a neighbour that lost
    # one link to a dead switch is not "failing with most of its links" because of it.
    dead = {sw.id: [lk.key for lk in fabric.node_links(sw.id)] for sw in switches
            if all(lk.key in blame and _down(blame[lk.key]) for lk in fabric.node_links(sw.id))}
    findings = [_switch_finding(fabric, blame, sid, keys, len(keys), "dead", Severity.CRITICAL, 0.99)
                for sid, keys in dead.items()]
    absorbed = {k for keys in dead.values() for k in keys}
    for sw in switches:
        if sw.id in dead:
            continue
        links = fabric.node_links(sw.id)
        bad = [lk.key for lk in links if lk.key in verdicts and lk.key not in absorbed
               and verdicts[lk.key].severity.rank > Severity.INFO.rank]
        if not bad:
            continue
        # "Most of its links fail the same way": the largest group of one fault class must be
        # strictly more than the fraction of the switch's links, and at least three, so
        # independent faults that happen to meet on one switch stay separate findings.
        groups: dict[str, list[LinkKey]] = defaultdict(list)
        for k in bad:
            groups[verdicts[k].fault].append(k)
        fault, same = max(groups.items(), key=lambda kv: (len(kv[1]), kv[0]))
        if len(same) < 3 or len(same) <= opt.switch_fraction * len(links):
            continue
        severity = worst(s for k in same for s in blame[k].faults.values()) or Severity.ERROR
        findings.append(_switch_finding(fabric, blame, sw.id, same, len(links), fault, severity,
                                        round(min(0.99, 0.5 + 0.5 * len(same) / len(links)), 3)))
        absorbed.update(same)
    for key, v in verdicts.items():
        if key in absorbed:
            continue
        b = blame[key]
        confidence = round(b.confidence, 3)
        severity = severity_for(v.severity, confidence, opt.min_confidence)
        ends = [(fabric.label(key.a.node), key.a.port), (fabric.label(key.b.node), key.b.port)]
        node_ids = [key.a.node, key.b.node]
        name = f"{ends[0][0]}[{ends[0][1]}] -- {ends[1][0]}[{ends[1][1]}]"
        if v.port is not None:
            # A NIC or a port: its own end first (its identity), the far end second.
            if v.port != key.a:
                ends.reverse()
                node_ids.reverse()
            name = f"{ends[0][0]} port {ends[0][1]}"
            if v.kind == "port":
                name += f" (to {ends[1][0]} port {ends[1][1]})"
        evidence = list(b.evidence) + ([v.candidates] if v.candidates else [])
        findings.append(Finding("", v.kind, name, v.fault, severity, confidence, evidence,  # type: ignore[arg-type]
                                ends, node_ids))
    return findings


def _switch_finding(fabric: Fabric, blame: dict[LinkKey, Blame], switch: str, keys: list[LinkKey], total: int,
                    fault: str, severity: Severity, confidence: float) -> Finding:
    """One finding for a switch whose ``keys`` links fail together, with a sample of their evidence."""
    evidence: list = [SwitchLinksEvidence(len(keys), total, sum(1 for k in keys if _down(blame[k])))]
    for k in keys[:32]:
        evidence.extend(blame[k].evidence[:3])
    return Finding("", "switch", fabric.label(switch), fault, severity, confidence, evidence, None, [switch])


def _unexplained_findings(fabric: Fabric, left: tomography.Unexplained, limit: int = 20) -> list[Finding]:
    """Slow tests no suspect explains, slowest first: said as such, never dropped. A lone one is noise
    (``info``: a transient slowdown nothing else confirms); a pair slow again in another test is a warning."""
    order = sorted(range(len(left.pairs)), key=lambda i: (not left.repeated[i], left.relative[i] or -1.0,
                                                           str(left.pairs[i].src), str(left.pairs[i].dst)))
    out = []
    for i in order[:limit]:
        p, rel = left.pairs[i], left.relative[i]
        ends = [(fabric.label(p.src.node), p.src.port), (fabric.label(p.dst.node), p.dst.port)]
        sample = PairSample(ends[0], ends[1], p.status, p.busbw_gbps, p.expected_gbps,
                            None if p.ratio is None else round(p.ratio, 4), None if rel is None else round(rel, 4))
        ratio = 0.0 if p.ratio is None else round(p.ratio, 4)
        evidence = SlowPairsEvidence(tests=1, slow=1, worst_ratio=ratio, median_ratio=ratio, slow_pairs=(sample,),
                                     median_relative=None if rel is None else round(rel, 4))
        severity = Severity.WARNING if left.repeated[i] else Severity.INFO
        out.append(Finding("", "pair", f"{ends[0][0]}[{ends[0][1]}] -> {ends[1][0]}[{ends[1][1]}]",
                           "slow_unexplained", severity, 0.0, [evidence], ends, [p.src.node, p.dst.node]))
    return out


def _on_fabric(fabric: Fabric, findings: list[Finding]) -> list[Finding]:
    """Host-side findings name hosts as the probe did (its host name); point their ``node_ids`` at
    the host's fabric nodes (its HCAs on InfiniBand), so drains and job gates find them."""
    for f in findings:
        ids = [nid for name in f.node_ids for nid in (host_nodes(fabric, name) or [name])]
        f.node_ids = list(dict.fromkeys(ids))
    return findings


_ONLY_SLOWNESS = (SlowPairsEvidence, CandidatesEvidence, NcclLogEvidence)


def _explained_by_host(fabric: Fabric, findings: list[Finding]) -> list[Finding]:
    """A host cable blamed only for slow tests, on a host whose configuration slows its traffic, is that
    host's configuration, not a cable: its slow tests become evidence on the host's finding."""
    hosts = [f for f in findings if fault_info(f.fault).slows_host]  # GPUDirect off, a NIC at x8...
    if not hosts:
        return findings
    out = []
    for f in findings:
        host_ids = {n for n in f.node_ids if n in fabric.nodes and fabric.nodes[n].kind == "host"}
        owner = next((g for g in hosts if host_ids & set(g.node_ids)), None) if (
            f.kind in ("link", "nic", "port") and f.fault == "degraded_bandwidth" and host_ids
            and all(isinstance(e, _ONLY_SLOWNESS) for e in f.evidence)) else None
        if owner is None:
            out.append(f)
        else:  # the slow tests, not the cable-or-NIC candidates (there is no cable to swap)
            owner.evidence.extend(e for e in f.evidence if not isinstance(e, CandidatesEvidence))
    return out


def _merge_same_key(findings: list[Finding]) -> list[Finding]:
    """One finding per key: the same fault on the same part seen by two sources (a host's sysfs
    checks and its NCCL transports) is one finding with both sources' evidence."""
    by_key: dict[str, Finding] = {}
    for f in findings:
        seen = by_key.get(f.key)
        if seen is None:
            by_key[f.key] = f
            continue
        seen.evidence = [*seen.evidence, *f.evidence]
        seen.severity = worst((seen.severity, f.severity)) or seen.severity
        seen.confidence = max(seen.confidence, f.confidence)
    return list(by_key.values())
