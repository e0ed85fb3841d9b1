"""The best remedies for a job: port isolations and host drains searched together.

A switch-to-switch cable the findings blame can be taken out of service (the
subnet manager or ECMP routes around it, see :mod:`fabricdoc.impact.reroute`);
a host's cable cannot (the host would lose its route), so hosts are drained.
Each remedy keeps the report's drain list (the scheduler drains those hosts
for their faults) and adds isolations and further drains; remedies are ranked
by predicted job throughput, kept hosts x busbw of the first algorithm, then of
the others; at equal throughput fewer drains and more of the blamed cables out
of service (their findings' actions say to take them out) come first.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from fabricdoc.errors import TopologyError
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.impact.effects import finding_links
from fabricdoc.model.faults import fault as fault_info
from fabricdoc.model.records import LinkKey

_EXHAUSTIVE = 4  # up to this many candidate cables every subset is tried; above, greedy forward selection
_MAX_CANDIDATES = 8


def isolation_candidates(model: ImpactModel) -> list[LinkKey]:
    """Switch-to-switch cables the findings blame and routing has not already avoided, worst first."""
    fabric = model.fabric
    keys: set[LinkKey] = set()
    for f in model.findings:
        if f.kind not in ("link", "port") or not fault_info(f.fault).isolate:  # load, not a part: isolating moves it
            continue
        try:
            keys.update(finding_links(fabric, f))
        except TopologyError:
            continue
    keys |= {k for k, e in model.effects.items() if not e.down}
    down = model.down_now
    out = [k for k in keys if k not in down
           and fabric.nodes[k.a.node].kind == "switch" and fabric.nodes[k.b.node].kind == "switch"]
    cap = model.capacity["now"]
    return sorted(out, key=lambda k: (float(cap[2 * model.index[k]]), k))[:_MAX_CANDIDATES]


def _score(w: dict[str, Any], algorithms: Sequence[str]) -> tuple:
    """Best first: throughput of each algorithm in order (to 1e-9), then fewer drains, then more of the
    blamed cables out of service (their findings say to take them out anyway), then names."""
    tf = [-round(_fraction(w, a), 9) for a in algorithms]
    return (*tf, len(w["drain"]), -len(w["isolate"]), w["drain"], w["isolate"])


def _fraction(w: dict[str, Any], algorithm: str) -> float:
    return float(w.get(f"{algorithm}_throughput_fraction", w["throughput_fraction"]))


def evaluate(model: ImpactModel, drain: Iterable[str], isolate: Sequence[LinkKey],
             algorithms: Sequence[str]) -> dict[str, Any]:
    """One remedy's what-if with every algorithm's busbw and throughput fraction."""
    w = model.what_if(drain, algorithms, isolate)
    full = len(model.job_hosts)
    for alg in algorithms:
        nominal = model.nominal_busbw(alg)
        w[f"{alg}_throughput_fraction"] = (w["hosts"] * w[f"{alg}_busbw_gbps"]) / (full * nominal) if nominal and full else 0.0
    w["isolate_keys"] = list(isolate)
    return w


def _isolation_sets(model: ImpactModel, cands: list[LinkKey], keep: Sequence[str], algorithm: str) -> list[tuple]:
    """Candidate isolation sets, scored with the kept drains only: every subset of a few cables,
    else greedy forward selection (add the cable that helps most while throughput does not drop)."""
    if len(cands) <= _EXHAUSTIVE:
        return [c for r in range(len(cands) + 1) for c in itertools.combinations(cands, r)]
    chosen: tuple[LinkKey, ...] = ()
    sets = [chosen]
    best = model.what_if(keep, (algorithm,), chosen)["throughput_fraction"]
    left = list(cands)
    while left:
        trials = [(model.what_if(keep, (algorithm,), (*chosen, c))["throughput_fraction"], c) for c in left]
        tf, pick = max(trials, key=lambda t: (t[0], -left.index(t[1])))
        if tf < best * (1 - 1e-9):
            break
        chosen, best = (*chosen, pick), max(best, tf)
        left.remove(pick)
        sets.append(chosen)
    return sets + [tuple(cands)]


def best_remedies(model: ImpactModel, keep_drained: Iterable[str] = (), k: int = 3,
                  algorithms: Sequence[str] = ("ring",), max_drains: int = 3, isolation_sets: int = 3) -> list[dict[str, Any]]:
    """The ``k`` best remedies (what-if dicts with ``drain`` and ``isolate``), best first; the first is
    the recommendation. Every remedy drains ``keep_drained``; the search adds isolations of blamed
    switch-to-switch cables and up to ``max_drains`` further hosts (beam search per isolation set)."""
    keep = sorted(set(keep_drained))
    primary = algorithms[0]
    cands = isolation_candidates(model)
    sets = _isolation_sets(model, cands, keep, primary)
    scored = sorted(sets, key=lambda s: (-round(model.what_if(keep, (primary,), s)["throughput_fraction"], 9), -len(s), s))
    found: dict[tuple, tuple[tuple[str, ...], tuple[LinkKey, ...]]] = {}
    for iso in scored[:isolation_sets] + ([()] if () not in scored[:isolation_sets] else []):
        options = [tuple(keep)] + [tuple(w["drain"]) for w in model.best_drains(
            k, max_drains, primary, isolate=iso, keep_drained=keep)]
        for drain in options:
            found.setdefault((drain, tuple(sorted(iso))), (drain, tuple(sorted(iso))))
    # Ties on the first algorithm at its best are split by the others: evaluate a shortlist with all.
    quick = sorted(found.values(), key=lambda di: (-round(model.what_if(di[0], (primary,), di[1])["throughput_fraction"], 9),
                                                     len(di[0]), -len(di[1]), di))
    full = [evaluate(model, d, i, algorithms) for d, i in quick[: max(3 * k, 8)]]
    return sorted(full, key=lambda w: _score(w, algorithms))[:k]
