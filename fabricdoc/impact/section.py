"""The report's ``impact`` section: AllReduce busbw nominal / now / after draining, what-if, job cost."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from fabricdoc.impact import jobcost
from fabricdoc.impact.busbw import ALGORITHMS, ImpactModel
from fabricdoc.model.findings import Finding
from fabricdoc.model.topology import Fabric


def impact_section(
    fabric: Fabric,
    findings: Iterable[Finding],
    drain_hosts: Iterable[str],
    job_hosts: Iterable[str] | None = None,
    hours: float = 24.0,
    checkpoint_minutes: float | None = None,
    failure_rates: dict[str, float] | None = None,
    *,
    model: ImpactModel | None = None,
    alternatives: int = 3,
    tree_max_hosts: int = 8192,
) -> dict[str, Any]:
    """The report's ``impact`` dict: AllReduce busbw nominal / now / after draining, what-if, job cost.

    ``checkpoint_minutes`` is the time one checkpoint takes to write.
    ``failure_rates`` may hold ``host_per_hour`` or ``host_mtbf_hours`` (else the
    documented default), ``link_per_hour`` / ``switch_per_hour`` (per component
    on the fabric, spread over the job's share of it), ``restart_minutes`` and
    ``source`` (a description). Every value is JSON-able (no NaN or infinity).
    Above ``tree_max_hosts`` job hosts only the ring is computed (the headline
    is the ring either way).
    """

    m = model or ImpactModel(fabric, findings, job_hosts)
    drain = sorted(set(drain_hosts))
    algorithms = ALGORITHMS if len(m.job_hosts) <= tree_max_hosts else ("ring",)
    after = m.what_if(drain, algorithms)
    by_alg: dict[str, Any] = {}
    for alg in algorithms:
        nominal = m.detail(None, alg, "nominal")
        now = m.detail(None, alg, "now")
        by_alg[alg] = {
            "nominal": _num(nominal["busbw_gbps"]),
            "now": _num(now["busbw_gbps"]),
            "after_drain": _num(after[f"{alg}_busbw_gbps"]),
            "per_rail_now": [_num(x) for x in now["per_rail_gbps"]],
            "bottleneck_now": now["bottleneck"],
        }
    if "tree" not in by_alg:
        by_alg["tree"] = {"skipped": f"more than {tree_max_hosts} job hosts (tree routes are computed per pair)"}
    best = m.best_drains(alternatives)
    report_entry = m.what_if(drain)
    what_if = [{"choice": "report", **report_entry}, {"choice": "none", **m.what_if([])}]
    listed = {tuple(w["drain"]) for w in what_if}
    what_if += [{"choice": "alternative", **w} for w in best if tuple(w["drain"]) not in listed]

    rates = dict(failure_rates or {})
    n_job = after["hosts"]
    extra = 0.0
    hosts_total = max(1, len(fabric.hosts()))
    share = len(m.job_hosts) / hosts_total
    extra += float(rates.get("link_per_hour", 0.0)) * len(fabric.links) * share
    extra += float(rates.get("switch_per_hour", 0.0)) * len(fabric.switches()) * share
    job = jobcost.job_cost(
        n_job,
        hours,
        host_failures_per_hour=rates.get("host_per_hour"),
        host_mtbf_hours=rates.get("host_mtbf_hours"),
        checkpoint_write_minutes=checkpoint_minutes if checkpoint_minutes is not None else jobcost.DEFAULT_CHECKPOINT_WRITE_MINUTES,
        restart_minutes=float(rates.get("restart_minutes", 0.0)),
        extra_failures_per_hour=extra,
        rate_source=rates.get("source"),  # type: ignore[arg-type]
    )
    headline = by_alg["ring"]
    return _clean({
        "algorithm": "ring",
        "job_hosts": len(m.job_hosts),
        "rails": m.detail(None, "ring", "nominal")["rails"],
        "allreduce_busbw_gbps": {k: headline[k] for k in ("nominal", "now", "after_drain")},
        "by_algorithm": by_alg,
        "what_if": [_round_entry(w) for w in what_if],
        "job": job,
        "link_effects": [
            {"link": [[fabric.label(e.link.a.node), e.link.a.port], [fabric.label(e.link.b.node), e.link.b.port]],
             "capacity_gbps": e.capacity_gbps, "nominal_gbps": fabric.links[e.link].nominal_gbps,
             "down": e.down, "rule": e.rule, "finding": e.finding}
            for e in m.effects.values()
        ],
        "unmapped_findings": m.unmapped,
    })


def _num(x: float) -> float:
    return round(float(x), 4) if math.isfinite(x) else 0.0


def _round_entry(w: dict[str, Any]) -> dict[str, Any]:
    return {k: (_num(v) if isinstance(v, float) else v) for k, v in w.items()}


def _clean(obj: Any) -> Any:
    """Replace any non-finite float by None so the report stays strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj
