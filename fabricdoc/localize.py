"""Localization: from counters, link states, events and pair bandwidth, name the faulty parts.

Direct evidence (a counter rule that fired on a port, a port that is down, a
link trained below what both ends support, link-down events) blames the cable
at that port. Bandwidth tomography blames what the counters cannot see: a
link is a suspect when every tested path through it was slow, and the slow
pairs are explained by the fewest suspects (greedy set cover, ties broken by
how slow and how well covered). A switch is blamed instead of its links when
most of them are bad; a host NIC when its own cable explains its pairs.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field

from fabricdoc import counters as ctr
from fabricdoc.errors import TopologyError
from fabricdoc.flows import directed, maxmin, shares_channels
from fabricdoc.model import Evidence, Finding, LinkKey, Observations, PairResult, PortRef
from fabricdoc.plan import is_bidirectional
from fabricdoc.topology import Fabric

SEVERITY_RANK = {"info": 0, "warning": 1, "error": 2, "critical": 3}
# Which fault names a finding when a component has several (first wins).
FAULT_PRIORITY = (
    "dead", "down", "flapping", "pause_storm", "width_degraded", "speed_degraded", "symbol_errors",
    "rcv_errors", "data_corruption", "hung", "degraded_bandwidth", "congestion",
)


@dataclass
class Options:
    """Tunable thresholds of the inference (the counter rules live in counters.py)."""

    slow_ratio: float = 0.80  # a pair below this fraction of expected bandwidth is slow
    suspect_fraction: float = 1.0  # fraction of a link's tests that must be slow
    switch_fraction: float = 0.5  # blame the switch when this share of its links is bad
    rules: tuple[ctr.Rule, ...] = ctr.DEFAULT_RULES


@dataclass
class _Blame:
    """Evidence gathered against one link before it becomes a finding."""

    faults: dict[str, str] = field(default_factory=dict)  # fault -> severity
    evidence: list[Evidence] = field(default_factory=list)
    confidence: float = 0.0
    flaps: int = 0  # distinct down transitions seen in the watch window


def localize(fabric: Fabric, obs: Observations, options: Options | None = None) -> list[Finding]:
    """All findings for one sweep, most severe first; ids are F001, F002, ... in that order."""
    opt = options or Options()
    blame: dict[LinkKey, _Blame] = defaultdict(_Blame)
    _from_counters(fabric, obs, opt, blame)
    _from_states(fabric, obs, blame)
    _from_events(fabric, obs, blame)
    _from_pairs(fabric, obs, opt, blame)
    findings = _to_findings(fabric, blame, opt)
    findings += _corruption(fabric, obs.pairs)
    findings += _gpu_findings(obs)
    findings.sort(key=lambda f: (-SEVERITY_RANK[f.severity], -f.confidence, f.name))
    for i, f in enumerate(findings, 1):
        f.id = f"F{i:03d}"
    return findings


def _add(b: _Blame, fault: str, severity: str, confidence: float, ev: Evidence) -> None:
    cur = b.faults.get(fault)
    if cur is None or SEVERITY_RANK[severity] > SEVERITY_RANK[cur]:
        b.faults[fault] = severity
    b.evidence.append(ev)
    b.confidence = max(b.confidence, confidence)


# -- direct evidence ----------------------------------------------------------

def _from_counters(fabric: Fabric, obs: Observations, opt: Options, blame: dict[LinkKey, _Blame]) -> None:
    ds = ctr.deltas(obs.before, obs.after, changed_only=True)
    for a in ctr.anomalies(ds, opt.rules):
        link = fabric.link_at(a.port)
        if link is None:
            continue
        for d in a.deltas:
            _add(
                blame[link.key],
                a.fault,
                a.severity,
                0.95,
                Evidence(
                    "counter",
                    {
                        "node": fabric.label(d.port.node),
                        "port": d.port.port,
                        "counter": d.name,
                        "raw": list(d.raw_names),
                        "delta": d.value,
                        "per_second": round(d.per_second, 6),
                        "interval_s": d.interval_s,
                        "at_least": d.at_least,
                        "reset": d.reset,
                    },
                ),
            )


def _from_states(fabric: Fabric, obs: Observations, blame: dict[LinkKey, _Blame]) -> None:
    for s in obs.states:
        port = PortRef(s.node, s.port)
        link = fabric.link_at(port)
        if link is None:
            continue
        detail = {"node": fabric.label(s.node), "port": s.port, "state": s.state, "phys_state": s.phys_state}
        if s.state.lower() in ("down", "polling", "disabled", "sleep") or link.state == "down":
            _add(blame[link.key], "down", "error", 0.99, Evidence("state", detail))
            continue
        if s.lanes and s.max_lanes and s.lanes < s.max_lanes:
            _add(
                blame[link.key], "width_degraded", "error", 0.99,
                Evidence("state", {**detail, "lanes": s.lanes, "supported_lanes": s.max_lanes}),
            )
        if s.lane_gbps and s.max_lane_gbps and s.lane_gbps < s.max_lane_gbps * 0.99:
            _add(
                blame[link.key], "speed_degraded", "error", 0.99,
                Evidence("state", {**detail, "lane_gbps": s.lane_gbps, "supported_lane_gbps": s.max_lane_gbps}),
            )
    for link in fabric.links.values():
        if link.state == "up" and link.lanes < (link.max_lanes or link.lanes) and link.key not in blame:
            _add(
                blame[link.key], "width_degraded", "error", 0.99,
                Evidence("state", {"lanes": link.lanes, "supported_lanes": link.max_lanes}),
            )


def _from_events(fabric: Fabric, obs: Observations, blame: dict[LinkKey, _Blame]) -> None:
    downs: dict[LinkKey, list[float]] = defaultdict(list)
    for e in obs.events:
        link = fabric.link_at(PortRef(e.node, e.port))
        if link is not None and e.state == "down":
            downs[link.key].append(e.timestamp)
    for key, times in downs.items():
        # Both ends report the same flap: count distinct times.
        flaps = sorted(set(round(t, 3) for t in times))
        if not flaps:
            continue
        span = (flaps[-1] - flaps[0]) if len(flaps) > 1 else 0.0
        blame[key].flaps = len(flaps)
        _add(
            blame[key], "flapping", "error" if len(flaps) > 1 else "warning", 0.95,
            Evidence("event", {"flaps": len(flaps), "first": flaps[0], "last": flaps[-1],
                               "per_minute": round(len(flaps) / (span / 60.0), 3) if span else None}),
        )


# -- bandwidth tomography -----------------------------------------------------

def _contention(
    fabric: Fabric, pairs: list[PairResult], paths: list[tuple[LinkKey, ...]], channels: list[list]
) -> dict[int, float]:
    """Per pair, the fraction of its path's rate its round allowed it on today's routes.

    Tests planned not to share links may share them after the fabric rerouted
    around a failure; such a pair is slow because of its neighbours, not its path.
    """
    by_round: dict[int, list[int]] = defaultdict(list)
    for i, p in enumerate(pairs):
        if p.status == "ok" and paths[i]:
            by_round[p.round].append(i)
    out: dict[int, float] = {}
    for members in by_round.values():
        flows = [channels[i] for i in members]
        if not shares_channels(flows):
            continue
        fair = maxmin(flows, lambda k: fabric.links[k].capacity_gbps)
        for j, i in enumerate(members):
            alone = min(fabric.links[k].capacity_gbps for k in paths[i])
            if alone > 0 and fair[j] < alone * 0.999:
                out[i] = float(fair[j] / alone)
    return out


def _from_pairs(fabric: Fabric, obs: Observations, opt: Options, blame: dict[LinkKey, _Blame]) -> None:
    tests_through: dict[LinkKey, list[int]] = defaultdict(list)
    slow: set[int] = set()
    pairs = obs.pairs
    paths: list[tuple[LinkKey, ...]] = []
    channels: list[list] = []
    for i, p in enumerate(pairs):
        try:
            path = fabric.path(p.src, p.dst)
            chan = directed(path, p.src)
            if is_bidirectional(p.test):
                back = fabric.path(p.dst, p.src)
                chan += directed(back, p.dst)
                path = tuple(dict.fromkeys((*path, *back)))
        except TopologyError:
            path, chan = (), []
        paths.append(path)
        channels.append(chan)
        if p.status == "wrong":
            continue  # corruption is judged separately
        if p.status in ("hung", "error") or (p.ratio is not None and p.ratio < opt.slow_ratio):
            slow.add(i)
        if p.status == "error" and not path:
            continue
        for key in path:
            tests_through[key].append(i)
    if not slow:
        return
    shared = _contention(fabric, pairs, paths, channels)
    if shared:
        slow = {i for i in slow if i not in shared or (pairs[i].ratio or 0.0) / shared[i] < opt.slow_ratio}
        if not slow:
            return
    # Slow pairs already explained by hard evidence (down, width) need no suspect. A down
    # link also slows the pairs rerouted around it, so its pairs' routes before the
    # failure count too.
    hard = {k for k, b in blame.items() if {"down", "width_degraded", "speed_degraded"} & set(b.faults)}
    down = [k for k in hard if "down" in blame[k].faults]
    before = fabric.with_all_links_up() if down and not fabric.lfts else None

    def explained(i: int) -> bool:
        if hard.intersection(paths[i]):
            return True
        if before is None:
            return False
        try:
            old = before.path(pairs[i].src, pairs[i].dst)
            if is_bidirectional(pairs[i].test):
                old = (*old, *before.path(pairs[i].dst, pairs[i].src))
            return bool(hard.intersection(old))
        except TopologyError:
            return False

    unexplained = {i for i in slow if not explained(i)}
    suspects: dict[LinkKey, set[int]] = {}
    for key, tests in tests_through.items():
        n_slow = sum(1 for i in tests if i in slow)
        if tests and n_slow >= opt.suspect_fraction * len(tests) and n_slow:
            suspects[key] = {i for i in tests if i in slow}
    chosen: list[LinkKey] = []
    remaining = set(unexplained)
    while remaining:
        best, best_score = None, None
        for key, covers in suspects.items():
            gain = len(covers & remaining)
            if not gain:
                continue
            ratios = [pairs[i].ratio or 0.0 for i in covers]
            score = (gain, key in blame, len(tests_through[key]), -sum(ratios) / len(ratios), str(key))
            if best_score is None or score > best_score:
                best, best_score = key, score
        if best is None:
            break  # slow pairs no single suspect explains (noise, or a fault off the tested paths)
        chosen.append(best)
        remaining -= suspects[best]
    for key in chosen:
        covers = suspects[key]
        # Equivalent candidates explain exactly the same slow pairs: split the confidence,
        # and name them so a targeted re-test can tell them apart.
        alternatives = sorted((k for k, c in suspects.items() if c == covers and k != key), key=str)
        twins = 1 + len(alternatives)
        n = len(tests_through[key])
        ratios = [pairs[i].ratio for i in covers if pairs[i].ratio is not None]
        worst = min(ratios) if ratios else 0.0
        median = sorted(ratios)[len(ratios) // 2] if ratios else 0.0
        hung = sum(1 for i in covers if pairs[i].status in ("hung", "error"))
        confidence = min(0.99, (1.0 / twins) * (1 - 0.5 ** n))
        severity = "error" if (median < 0.7 or hung) else "warning"
        fault = "hung" if hung == len(covers) else "degraded_bandwidth"
        slow_pairs = [
            {
                "src": [fabric.label(pairs[i].src.node), pairs[i].src.port],
                "dst": [fabric.label(pairs[i].dst.node), pairs[i].dst.port],
                "status": pairs[i].status,
                "busbw_gbps": pairs[i].busbw_gbps,
                "expected_gbps": pairs[i].expected_gbps,
                "ratio": None if pairs[i].ratio is None else round(pairs[i].ratio, 4),
            }
            for i in sorted(covers)[:20]
        ]
        _add(
            blame[key], fault, severity, confidence,
            Evidence("pairs", {"tests": n, "slow": len(covers), "worst_ratio": round(worst, 4),
                               "median_ratio": round(median, 4), "equivalent_suspects": twins,
                               "alternatives": [[[k.a.node, k.a.port], [k.b.node, k.b.port]] for k in alternatives[:8]],
                               "slow_pairs": slow_pairs}),
        )


# -- findings -------------------------------------------------------------------

def _to_findings(fabric: Fabric, blame: dict[LinkKey, _Blame], opt: Options) -> list[Finding]:
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
            fault, severity = "dead", "critical"
        else:
            fault = _primary({f: blame[k].faults[f] for k in bad for f in blame[k].faults})
            severity = max((s for k in bad for s in blame[k].faults.values()), key=SEVERITY_RANK.__getitem__)
        evidence = [Evidence("inference", {"links_bad": len(bad), "links_total": len(links),
                                           "links_down": len(down)})]
        for k in bad[:32]:
            evidence.extend(blame[k].evidence[:3])
        findings.append(
            Finding("", "switch", fabric.label(sw.id), fault, severity,  # type: ignore[arg-type]
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
        severity = max(b.faults.values(), key=SEVERITY_RANK.__getitem__)
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


def _primary(faults: dict[str, str]) -> str:
    order = {f: i for i, f in enumerate(FAULT_PRIORITY)}
    return min(faults, key=lambda f: (-SEVERITY_RANK[faults[f]], order.get(f, len(order)), f))


def _corruption(fabric: Fabric, pairs: Iterable[PairResult]) -> list[Finding]:
    """Pairs whose data check failed: blame the host port common to them."""
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
        out.append(
            Finding("", "nic", f"{fabric.label(port.node)} port {port.port}", "data_corruption", "critical",
                    round(min(0.99, n / max(1, len(wrong)) + 0.2), 3),
                    [Evidence("pairs", {"wrong_pairs": n, "pairs": [[fabric.label(wrong[i].src.node), fabric.label(wrong[i].dst.node), wrong[i].wrong] for i in sorted(covers)[:20]]})],
                    None, [port.node])
        )
    return out


def _gpu_findings(obs: Observations) -> list[Finding]:
    """GPUs whose NVML facts show a fault (the probe lists them in ``values['problems']``)."""
    out = []
    for g in obs.gpus:
        problems = g.values.get("problems") or []
        if g.status != "ok" or not problems:
            continue
        out.append(
            Finding("", "gpu", f"{g.host} GPU {g.index}", "gpu_error", "error", 0.9,
                    [Evidence("gpu", {"uuid": g.uuid, "problems": list(problems)})], None, [g.host])
        )
    return out
