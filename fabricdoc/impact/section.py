"""The report's ``impact`` section: AllReduce busbw nominal / now / after draining, what-if, job cost."""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from fabricdoc.impact import jobcost
from fabricdoc.impact.busbw import ALGORITHMS, ImpactModel
from fabricdoc.impact.calibration import Efficiency, expected_section, sharp_busbw
from fabricdoc.impact.effects import uncosted
from fabricdoc.impact.records import (
    AlgorithmFigures,
    Bottleneck,
    Busbw,
    ExpectedBusbw,
    ImpactSection,
    JobCost,
    LinkEffectRow,
    Recommendation,
    Remedy,
    Uncosted,
    cable,
)
from fabricdoc.impact.remedies import best_remedies
from fabricdoc.impact.reroute import ENGINE_WORDS
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
    remedy_max_hosts: int = 16384,
    efficiency: Efficiency | None = None,
    sharp: bool = False,
) -> ImpactSection:
    """The report's impact section: AllReduce busbw nominal / now / after draining, what-if, job cost.

    ``checkpoint_minutes`` is the time one checkpoint takes to write.
    ``failure_rates`` may hold ``host_per_hour`` or ``host_mtbf_hours`` (else the
    documented default), ``link_per_hour`` / ``switch_per_hour`` (per component
    on the fabric, spread over the job's share of it), ``restart_minutes`` and
    ``source`` (a description). No figure is NaN or infinite (those are None).
    Above ``tree_max_hosts`` job hosts only the ring is computed (the headline
    is the ring either way). The recommendation is the best remedy by predicted
    job throughput (:mod:`fabricdoc.impact.remedies`: the drain list, plus port
    isolations and further drains); above ``remedy_max_hosts`` job hosts only
    drains are searched (each isolation reroutes the whole fabric).
    ``efficiency`` calibrates the expected busbw (:mod:`fabricdoc.impact.calibration`);
    ``sharp`` declares in-network reduction, which adds its figures.
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
    best = m.best_drains(alternatives, max_hosts=3)
    report_entry = m.what_if(drain)
    remedies = []
    if len(m.job_hosts) <= remedy_max_hosts:
        remedy_algs = algorithms if len(m.job_hosts) <= _REMEDY_TREE_MAX_HOSTS else ("ring",)
        remedies = best_remedies(m, drain, alternatives + 1, remedy_algs)
    chosen = remedies[0] if remedies and _beats(remedies[0], report_entry) else None
    recommended = m.what_if(chosen["drain"], algorithms, chosen["isolate_keys"]) if chosen else after
    for alg in algorithms:
        by_alg[alg]["recommended"] = _num(recommended[f"{alg}_busbw_gbps"])
    what_if = [{"choice": "report", **report_entry}, {"choice": "none", **m.what_if([])}]
    if chosen:
        what_if.insert(0, {"choice": "recommended", **m.what_if(chosen["drain"], ("ring",), chosen["isolate_keys"])})
    listed = {_key(w) for w in what_if}
    top = what_if[0]
    shown = 0
    for w in [*remedies[1:], *best]:
        if shown >= alternatives:
            break  # --alternatives K means K rows
        if _key(w) in listed or (chosen and _ties(w, top)):
            continue  # the same choice, or one that only ties the recommendation on every figure
        listed.add(_key(w))
        shown += 1
        what_if.append({"choice": "alternative", **{k: v for k, v in w.items() if k in _WHAT_IF_KEYS}})

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
    figures = {alg: {"nominal": by_alg[alg]["nominal"], "now": by_alg[alg]["now"],
                     "recommended": by_alg[alg]["recommended"]} for alg in algorithms}
    measured = {alg: ["now"] for alg in algorithms if (by_alg[alg]["bottleneck_now"] or {}).get("measured")}
    if sharp:
        figures["sharp"] = {"nominal": sharp_busbw(m, None, "nominal"), "now": sharp_busbw(m, None, "now"),
                            "recommended": sharp_busbw(m, [h for h in m.job_hosts if h not in set(recommended["drain"])])}
    headline = by_alg["ring"]
    return ImpactSection(
        algorithm="ring",
        job_hosts=len(m.job_hosts),
        rails=m.detail(None, "ring", "nominal")["rails"],
        allreduce_busbw_gbps=Busbw(**{k: headline[k] for k in ("nominal", "now", "after_drain", "recommended")}),
        by_algorithm={alg: _figures(fig) for alg, fig in by_alg.items()},
        routing_engine=ENGINE_WORDS[m.engine],
        recommendation=Recommendation(
            drain=tuple(recommended["drain"]), isolate=tuple(cable(c) for c in recommended["isolate"]),
            hosts=recommended["hosts"], ring_busbw_gbps=_fig(recommended["ring_busbw_gbps"]),
            tree_busbw_gbps=_fig(recommended["tree_busbw_gbps"]) if "tree" in algorithms else None,
            busbw_gbps=_fig(recommended["busbw_gbps"]), vs_nominal=_fig(recommended["vs_nominal"]),
            throughput_fraction=_fig(recommended["throughput_fraction"]),
            why=_why(chosen is not None, len(m.job_hosts) <= remedy_max_hosts),
            findings=tuple(_named_findings(m, recommended)),
        ),
        what_if=tuple(what_if_row(w) for w in what_if),
        expected_busbw=ExpectedBusbw.from_dict(_clean(expected_section(figures, efficiency, measured=measured))),
        job=JobCost.from_dict(_clean(job)),
        link_effects=tuple(
            LinkEffectRow(cable([[fabric.label(e.link.a.node), e.link.a.port], [fabric.label(e.link.b.node), e.link.b.port]]),
                          *_clean([e.capacity_gbps, fabric.links[e.link].nominal_gbps]), e.down, e.rule, e.finding)
            for e in m.effects.values()
        ),
        unmapped_findings=tuple(m.unmapped),
        uncosted_findings=tuple(Uncosted(u["finding"], u["why"]) for u in uncosted(m.findings)),
    )


def what_if_row(entry: dict[str, Any]) -> Remedy:
    """A what-if row from an :meth:`ImpactModel.what_if` result with its ``choice``, figures rounded."""
    return Remedy.from_dict(_clean(round_entry(entry)))


def _figures(fig: dict[str, Any]) -> AlgorithmFigures:
    """One algorithm's figures (or why it was skipped) as the section keeps them."""
    if "skipped" in fig:
        return AlgorithmFigures(skipped=fig["skipped"])
    bottleneck = fig["bottleneck_now"]
    return AlgorithmFigures(fig["nominal"], fig["now"], fig["after_drain"], tuple(fig["per_rail_now"]),
                            None if bottleneck is None else Bottleneck.from_dict(_clean(bottleneck)),
                            fig["recommended"])


_REMEDY_TREE_MAX_HOSTS = 1024  # above, remedies are ranked by the ring alone (tree routes per state cost more)
_WHAT_IF_KEYS = ("drain", "isolate", "hosts", "ring_busbw_gbps", "busbw_gbps", "vs_nominal", "throughput_fraction")



def _ties(a: dict[str, Any], b: dict[str, Any]) -> bool:
    """Whether two what-ifs give the same hosts, busbw and job throughput (nothing to choose between)."""
    return (a.get("hosts") == b.get("hosts") and _num(a.get("busbw_gbps")) == _num(b.get("busbw_gbps"))
            and round(float(a.get("throughput_fraction") or 0), 4) == round(float(b.get("throughput_fraction") or 0), 4))

def _key(w: dict[str, Any]) -> tuple:
    return tuple(w["drain"]), repr(w.get("isolate", []))


def _beats(remedy: dict[str, Any], report_entry: dict[str, Any]) -> bool:
    """Whether a remedy predicts more job throughput than the drain list alone (the first algorithm)."""
    return remedy["throughput_fraction"] > report_entry["throughput_fraction"] * (1 + 1e-9) or (
        remedy["throughput_fraction"] >= report_entry["throughput_fraction"] * (1 - 1e-9)
        and remedy["drain"] == report_entry["drain"] and bool(remedy["isolate"]))


def _why(searched_better: bool, searched: bool) -> str:
    if searched_better:
        return ("the drain list, plus the port isolations and drains that predict the most job throughput "
                "(hosts x busbw)")
    if not searched:
        return "the drain list: port isolations are not searched for a job this large"
    return "the drain list: no port isolation or further drain predicts more job throughput"


def _named_findings(m: ImpactModel, entry: dict[str, Any]) -> list[str]:
    """Ids of the findings whose cables the entry takes out of service."""
    isolated = {repr(x) for x in entry["isolate"]}
    out = []
    for e in m.effects.values():
        if repr([[m.fabric.label(e.link.a.node), e.link.a.port], [m.fabric.label(e.link.b.node), e.link.b.port]]) in isolated:
            out.append(e.finding)
    return sorted(set(out))


def _num(x: float) -> float:
    return round(float(x), 4) if math.isfinite(x) else 0.0


def _fig(v: Any) -> Any:
    """A figure rounded for the report (a float; anything else as it is)."""
    return _num(v) if isinstance(v, float) else v


def round_entry(w: dict[str, Any]) -> dict[str, Any]:
    """A what-if entry with its figures rounded for the report."""
    return {k: _fig(v) for k, v in w.items()}


def _clean(obj: Any) -> Any:
    """Replace any non-finite float by None so the report stays strict JSON."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _clean(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_clean(v) for v in obj]
    return obj
