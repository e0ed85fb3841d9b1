"""The job gate: are a job's hosts healthy enough to start on, by a policy, from a report?

A finding counts against the job when it names one of the job's hosts, when
the drain list puts a job host there for it, or (scope ``job``, with the
report's topology) when it sits on a link or switch that the job's ring
traffic crosses: the path from each job host to the next in sorted order, as
a ring AllReduce sends. The busbw-loss limit is judged on that same ring (the
job's own predicted AllReduce busbw against its nominal), not the fabric-wide
figure. Policies come from flags and/or a TOML file with strict keys.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from fabricdoc.errors import ConfigError, FabricdocError
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.impact.records import ImpactSection
from fabricdoc.model.findings import Finding
from fabricdoc.model.inputs import loads_toml, read_text, settings_from
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.severity import SEVERITIES, worse_than
from fabricdoc.model.text import escape as _clean
from fabricdoc.report.drain import finding_label, worst_finding
from fabricdoc.report.report import Report
from fabricdoc.scheduler.freshness import DEFAULT_MAX_AGE_H, staleness
from fabricdoc.scheduler.names import NameMap, topology_host


@dataclass(frozen=True)
class Policy:
    """When a job may start. Every field is a key of the TOML policy file."""

    max_severity: str = "warning"  # findings above this fail; "none": any finding fails
    min_confidence: float = 0.5  # findings less sure than this are ignored
    max_busbw_loss_pct: float | None = None  # predicted AllReduce busbw loss allowed
    busbw_basis: str = "now"  # "now" (fabric as it is) or "after_drain"
    missing_impact: str = "pass"  # report without an impact section: "pass" (with a note) or "fail"
    untested_hosts: str = "fail"  # job hosts the report did not cover: "fail" or "pass"
    scope: str = "job"  # "job": the job's hosts and paths; "fabric": every finding counts
    max_report_age_h: float | None = DEFAULT_MAX_AGE_H  # older (or future-dated): cannot judge; 0/None: no limit
    ignore_faults: tuple[str, ...] = ()  # fault names never counted (e.g. "congestion")

    def validate(self, where: str = "policy") -> Policy:
        _choice(where, "max_severity", self.max_severity, (*SEVERITIES, "none"))
        _choice(where, "busbw_basis", self.busbw_basis, ("now", "after_drain"))
        _choice(where, "missing_impact", self.missing_impact, ("pass", "fail"))
        _choice(where, "untested_hosts", self.untested_hosts, ("pass", "fail"))
        _choice(where, "scope", self.scope, ("job", "fabric"))
        _number(where, "min_confidence", self.min_confidence, 0.0, 1.0)
        if self.max_busbw_loss_pct is not None:
            _number(where, "max_busbw_loss_pct", self.max_busbw_loss_pct, 0.0, 100.0)
        if self.max_report_age_h is not None:
            _number(where, "max_report_age_h", self.max_report_age_h, 0.0, None)
        if not all(isinstance(f, str) for f in self.ignore_faults):
            raise ConfigError(f"{where}: key 'ignore_faults' must be a list of fault names")
        return self


def _choice(where: str, key: str, value: Any, allowed: tuple[str, ...]) -> None:
    if value not in allowed:
        raise ConfigError(f"{where}: key {key!r} is {value!r}; expected one of {', '.join(allowed)}")


def _number(where: str, key: str, value: Any, lo: float, hi: float | None) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(f"{where}: key {key!r} must be a number, got {value!r}")
    if value < lo or (hi is not None and value > hi):
        span = f"{lo:g}..{hi:g}" if hi is not None else f">= {lo:g}"
        raise ConfigError(f"{where}: key {key!r} is {value!r}; expected {span}")




def load_policy(path: str | Path, base: Policy | None = None) -> Policy:
    """Read a TOML policy; an unknown key or a bad value is a ConfigError naming file and key."""
    path = Path(path)
    data = loads_toml(read_text(path, "policy"), str(path))
    return policy_from(data, str(path), base)


def policy_from(data: dict[str, Any], where: str = "policy", base: Policy | None = None) -> Policy:
    """A Policy from plain keys (a parsed TOML file or CLI overrides), strictly checked."""
    return settings_from(Policy, data, where, base, lists=("ignore_faults",))


@dataclass
class GateResult:
    """The gate's answer: ``ok``, why not (``reasons``), and what it could not check (``notes``)."""

    ok: bool
    hosts: list[str]
    reasons: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    busbw_loss_pct: float | None = None
    busbw_scope: str = "fabric"  # "job": the job's own ring; "fabric": the report's impact section
    untested: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "hosts": self.hosts,
            "reasons": self.reasons,
            "notes": self.notes,
            "findings": [
                {"id": f.id, "key": f.key, "tag": f.id, "label": finding_label(f), "kind": f.kind, "name": f.name,
                 "fault": f.fault, "severity": f.severity, "confidence": f.confidence}
                for f in self.findings
            ],
            "busbw_loss_pct": self.busbw_loss_pct,
            "busbw_scope": self.busbw_scope,
            "untested": self.untested,
        }


def busbw_loss_pct(impact: ImpactSection | None, basis: str = "now") -> float | None:
    """Predicted AllReduce busbw loss in percent of nominal, from a report's impact section."""
    bw = impact.allreduce_busbw_gbps if impact is not None else None
    if bw is None:
        return None
    nominal, got = bw.figure("nominal"), bw.figure(basis)
    if nominal is None or got is None:
        return None
    return _loss_pct(nominal, got)


def _loss_pct(nominal: float, got: float) -> float | None:
    """How much of ``nominal`` busbw ``got`` loses, in percent (None without a nominal figure)."""
    return None if nominal <= 0 else max(0.0, (nominal - got) / nominal * 100.0)


class _HostIndex:
    """Report hosts by Slurm name, with their fabric ids and labels, from the topology."""

    def __init__(self, report: Report, names: NameMap) -> None:
        self.by_slurm: dict[str, str] = {}  # slurm name -> a fabric node id of the host (its first HCA)
        self.nodes_of: dict[str, set[str]] = {}  # slurm name -> every fabric node id of the host (each HCA)
        self.label_to_id: dict[str, str] = {}
        self.has_topology = bool(report.topology)
        for n in (report.topology or {}).get("nodes", []):
            self.label_to_id.setdefault(n["label"], n["id"])
            if n.get("kind") == "host":
                slurm = names.node_name(topology_host(n))
                self.by_slurm.setdefault(slurm, n["id"])
                self.nodes_of.setdefault(slurm, set()).add(n["id"])


def evaluate(
    report: Report,
    hosts: list[str],
    policy: Policy | None = None,
    names: NameMap | None = None,
    now: datetime | None = None,
) -> GateResult:
    """Decide whether a job on ``hosts`` (Slurm names) may start, by ``policy``, from ``report``.

    A report older than the policy's ``max_report_age_h`` or dated in the future raises
    :class:`StaleReport`: the gate cannot check on it, which is not a "no" about the hosts.
    """
    policy = policy or Policy()
    names = names or NameMap()
    hosts = sorted(dict.fromkeys(hosts))
    if not hosts:
        raise FabricdocError("gate: no job hosts given")
    res = GateResult(ok=True, hosts=hosts)
    index = _HostIndex(report, names)

    _check_age(report, policy, now)

    # Hosts the report covered.
    job_ids: dict[str, str] = {}
    if index.has_topology:
        for h in hosts:
            if h in index.by_slurm:
                job_ids[h] = index.by_slurm[h]
            else:
                res.untested.append(h)
        if res.untested:
            shown = ", ".join(_clean(h) for h in res.untested[:5]) + (" ..." if len(res.untested) > 5 else "")
            msg = f"{len(res.untested)} job host(s) not in the report: {shown}"
            (res.reasons if policy.untested_hosts == "fail" else res.notes).append(msg)
    else:
        res.notes.append("report has no topology: cannot tell whether the job's hosts were tested")

    # Drain list entries for the job's hosts.
    drained = {names.node_name(d.node): d for d in report.drain}
    by_key = {f.key: f for f in report.findings}
    drain_ids: set[str] = set()
    for h in hosts:
        if h in drained:
            worst = worst_finding(by_key[k] for k in drained[h].findings if k in by_key)
            label = f" ({finding_label(worst)})" if worst else ""
            res.reasons.append(f"{_clean(h)} is in the drain list{label}: {_clean(drained[h].reason)}")
            drain_ids.update(drained[h].findings)

    # Findings that touch the job.
    every_hca = {nid for h in job_ids for nid in index.nodes_of.get(h, ())}
    model = _ring_model(report, sorted(job_ids.values()), res) if policy.scope == "job" else None
    on_path = _ring_components(model, report, list(job_ids.values())) if policy.scope == "job" else None
    counted = []
    for f in report.findings:
        if f.fault in policy.ignore_faults or f.confidence < policy.min_confidence:
            continue
        if policy.scope == "fabric" or f.key in drain_ids or _touches(f, every_hca, index, on_path):
            counted.append(f)
    res.findings = counted
    too_bad = [f for f in counted if worse_than(f.severity, policy.max_severity)]
    for f in too_bad[:10]:
        res.reasons.append(f"{f.severity} finding {_clean(finding_label(f))}: {f.kind} {_clean(f.name)} "
                           f"{_clean(f.fault)} (confidence {f.confidence:.2f})")
    if len(too_bad) > 10:
        res.reasons.append(f"... and {len(too_bad) - 10} more findings above {policy.max_severity}")

    # Predicted bandwidth loss: the job's own ring where the report has the topology,
    # else the report's fabric-wide figure.
    own_ring = policy.scope == "job" and index.has_topology and len(job_ids) >= 2
    if own_ring and policy.max_busbw_loss_pct is not None:
        res.busbw_scope = "job"
        loss = job_busbw_loss_pct(report, sorted(job_ids.values()), policy.busbw_basis, model)
    else:
        loss = busbw_loss_pct(report.impact, policy.busbw_basis)
    res.busbw_loss_pct = loss
    whose = f"for the job's {len(job_ids)} hosts" if res.busbw_scope == "job" else "fabric-wide"
    if policy.max_busbw_loss_pct is not None:
        if loss is None:
            msg = "report has no impact prediction (allreduce_busbw_gbps): busbw loss not checked"
            (res.reasons if policy.missing_impact == "fail" else res.notes).append(msg)
        elif loss > policy.max_busbw_loss_pct:
            res.reasons.append(
                f"predicted AllReduce busbw loss {whose} {loss:.1f}% ({policy.busbw_basis}) "
                f"exceeds {policy.max_busbw_loss_pct:g}%"
            )
    res.ok = not res.reasons
    return res


def job_busbw_loss_pct(report: Report, job_nodes: list[str], basis: str = "now",
                       model: ImpactModel | None = None) -> float | None:
    """Predicted ring AllReduce busbw loss (percent of nominal) of a job on ``job_nodes`` alone.

    A degraded link the job's ring never crosses costs it nothing, whatever it
    costs the whole fabric. ``after_drain`` also leaves out the job's hosts on the
    report's drain list. None when the job has no AllReduce over the fabric.
    """
    model = model or ImpactModel(report.fabric_model(), report.findings, job_nodes)
    got = model.busbw(None, "ring", "now") if basis == "now" else model.what_if([d.node for d in report.drain])["busbw_gbps"]
    return _loss_pct(model.busbw(None, "ring", "nominal"), got)


class StaleReport(FabricdocError):
    """A report too old, or dated in the future: nothing can be judged on it ("could not check")."""


def _check_age(report: Report, policy: Policy, now: datetime | None) -> None:
    stale = staleness(report.generated_at, policy.max_report_age_h, now)
    if stale:
        raise StaleReport(stale)


def _ring_model(report: Report, job_ids: list[str], res: GateResult) -> ImpactModel | None:
    """The impact model of the job's ring (the one ring the impact section uses), or None."""
    if not report.topology or len(job_ids) < 2:
        return None
    try:
        return ImpactModel(report.fabric_model(), report.findings, job_ids)
    except FabricdocError as exc:
        res.notes.append(f"could not route the job's ring ({exc}): every link and switch finding counts")
        return None


def _ring_components(model: ImpactModel | None, report: Report, job_ids: list[str]) -> set[Any] | None:
    """Links (LinkKey) and switch ids on the paths of the job's ring, or None when unknown."""
    if model is None:
        return set() if report.topology and len(job_ids) < 2 else None
    links = model.ring_links()
    return set(links) | {end.node for k in links for end in (k.a, k.b)}


def _touches(f: Finding, job_ids: set[str], index: _HostIndex, on_path: set[Any] | None) -> bool:
    if set(f.node_ids) & job_ids:
        return True
    ends = []
    for label, port in f.endpoints or []:
        nid = index.label_to_id.get(label, label)
        ends.append(PortRef(nid, int(port)))
        if nid in job_ids:
            return True
    if f.kind in ("host", "nic", "gpu"):
        return False
    if on_path is None:
        return True  # cannot tell: count it
    if f.kind == "link" and len(ends) == 2:
        return LinkKey.of(ends[0], ends[1]) in on_path
    if f.kind == "port" and ends:
        return any(end.node in on_path for end in ends) and any(
            isinstance(k, LinkKey) and ends[0] in (k.a, k.b) for k in on_path
        )
    return bool(set(f.node_ids) & on_path)
