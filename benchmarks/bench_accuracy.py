"""Scored accuracy of localization on simulated faults, per noise level: location, component kind and fault class.

Generates fault sets of every kind the simulator injects (single faults; 2-4 at once,
adjacent = on one switch's cables, overlapping = on one tested path, random; and healthy
fabrics for false positives) on every generator at several sizes, runs the sweep's own
measure -> localize -> re-test loop on the simulator at each noise level (:data:`NOISE`:
the ideal simulator, the default realistic one, and clusters from a good NDR fabric at 0.97
efficiency to an old one at 0.78 with 4% jitter and 2% transient outliers), and scores what
the findings say:

- location: a finding names the injected part (the cable's two ends, the NIC's port, the switch);
- kind: it names it as the right kind of part (link / nic / port / switch);
- class: it gives it the right fault class (congestion, degraded_bandwidth, symbol_errors, ...).

Recall is per injected fault (was it named, with the right kind, with the right class);
precision is per finding (did it name an injected part, with the right kind and class).
A finding names a part when it is a warning or worse; ``info`` cables are suspects to re-test,
counted on their own line. Slow cables come at 0.5x, 0.7x (hard) and 0.85x (gray, on its own
line), and a finding whose slow tests are all transient outliers counts as an outlier blamed.
A slow cable that no finished test crossed (on the simulator's min-hop forwarding tables some
core cables carry no route) cannot be seen by any test and is scored apart, on its own line.
Per fault kind, a finding counts for the kinds of the faults it names, or, when it names
none, for every kind in its fault set ("healthy" when there was none). The truth for
every kind is the one table ``TRUTH`` below. Reports of slow tests nothing explains
(``slow_unexplained``) name no part: they are counted per fault-set family and, in a separate
figure, as false positives of location precision. Prints figures, asserts nothing.

Usage: python benchmarks/bench_accuracy.py [--seed S] [--reps N] [--large] [--noise NAME ...] [--json OUT]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricdoc.analysis.localize import Options
from fabricdoc.bandwidth.simulated import SimMeasure
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2, fat_tree_3, rail_optimized
from fabricdoc.fabric.realism import DEFAULT, Realism
from fabricdoc.model.evidence import SlowPairsEvidence
from fabricdoc.model.findings import Finding
from fabricdoc.model.paths import finished_crossed
from fabricdoc.model.records import LinkKey, Observations, PortRef
from fabricdoc.model.topology import Fabric
from fabricdoc.sources.sim.simulator import Simulator, rerouted_lfts
from fabricdoc.sweep import measure_and_retest

CABLE = frozenset({"link", "nic"})  # a host's cable: the counters may not tell the NIC from the cable
NOT_A_PART = frozenset({"pair"})  # finding kinds that report observations, not a part to blame


@dataclass(frozen=True)
class Truth:
    """How one benchmark fault kind is injected and what a right finding says about it.

    ``on``: what it sits on (``link`` any cable, ``host_port`` a host's port, ``switch``).
    ``kinds`` / ``host_kinds``: finding kinds accepted on a switch-to-switch cable / on a
    host's cable. ``classes``: fault classes accepted (the first is the one expected).
    ``near``: which end of a host's cable the counters rise on (``switch`` or ``host``).
    """

    sim_kind: str
    params: dict[str, Any]
    on: str
    kinds: frozenset[str]
    host_kinds: frozenset[str]
    classes: tuple[str, ...]
    near: str = "switch"


# The one truth table: benchmark fault kind -> injection and expected (kind, class).
TRUTH: dict[str, Truth] = {
    "slow": Truth("slow", {"factor": 0.5}, "link", frozenset({"link"}), CABLE, ("degraded_bandwidth",)),
    "slow_0.7": Truth("slow", {"factor": 0.7}, "link", frozenset({"link"}), CABLE, ("degraded_bandwidth",)),
    "gray": Truth("slow", {"factor": 0.85}, "link", frozenset({"link"}), CABLE, ("degraded_bandwidth",)),
    "half_width": Truth("degraded", {"lanes": 2}, "link", frozenset({"link"}), CABLE, ("width_degraded",)),
    "speed_degraded": Truth("degraded", {"lane_gbps": 25.0}, "link", frozenset({"link"}), CABLE,
                            ("speed_degraded",)),
    "symbol_errors": Truth("lossy", {"rate_per_hour": 36000.0}, "link", frozenset({"link"}), CABLE,
                           ("symbol_errors",)),
    "rcv_errors": Truth("rcv_errors", {"rate_per_hour": 3600.0}, "link", frozenset({"link"}), CABLE,
                        ("rcv_errors",)),
    "flapping": Truth("flapping", {}, "link", frozenset({"link"}), CABLE, ("flapping",)),
    "down": Truth("down", {}, "link", frozenset({"link"}), CABLE, ("down",)),
    # Congestion builds up at a port: the switch's egress toward the host on a host's cable.
    "congestion": Truth("congested", {}, "link", frozenset({"port", "link"}), frozenset({"port", "link"}),
                        ("congestion",)),
    "hung": Truth("hung", {}, "link", frozenset({"link"}), CABLE, ("hung",)),
    "dead_switch": Truth("dead_switch", {}, "switch", frozenset({"switch"}), frozenset({"switch"}), ("dead",)),
    # Host-side receive and symbol errors, the switch side clean: the NIC, with an error class.
    "bad_nic": Truth("bad_nic", {}, "host_port", frozenset({"nic"}), frozenset({"nic"}),
                     ("rcv_errors", "symbol_errors"), near="host"),
    "silent_hca": Truth("silent_hca", {}, "host_port", frozenset({"nic"}), frozenset({"nic"}),
                        ("not_responding",), near="host"),
}
LINK_KINDS = [k for k, t in TRUTH.items() if t.on == "link"]
BANDWIDTH_ONLY = frozenset({"slow", "slow_0.7", "gray"})  # faults only a bandwidth test through the cable shows
HOST_KINDS = [k for k, t in TRUTH.items() if t.on == "host_port"]


@dataclass
class Injected:
    """One injected fault: its benchmark kind, the simulator fault, and the part it sits on."""

    kind: str
    fault: Fault
    link: LinkKey | None  # the cable (None for a switch)
    host_end: PortRef | None  # the cable's host end, if it is a host's cable
    switch: str | None = None

    @property
    def accepted_kinds(self) -> frozenset[str]:
        """Finding kinds that name this fault's part rightly."""
        t = TRUTH[self.kind]
        return t.host_kinds if self.host_end is not None else t.kinds


@dataclass
class Scenario:
    """One fault set on one fabric."""

    fabric_name: str
    fabric: Fabric
    set_kind: str  # single | adjacent | overlapping | random | healthy
    faults: list[Injected] = field(default_factory=list)


# -- building fault sets --------------------------------------------------------------------


def _host_end(fabric: Fabric, key: LinkKey) -> PortRef | None:
    """The host's end of a cable, or None for a switch-to-switch cable."""
    return next((e for e in (key.a, key.b) if fabric.nodes[e.node].kind == "host"), None)


def inject(fabric: Fabric, kind: str, rng: np.random.Generator, *, key: LinkKey | None = None,
           switch: str | None = None) -> Injected:
    """The fault of benchmark ``kind`` on cable ``key`` (or ``switch``)."""
    t = TRUTH[kind]
    if t.on == "switch":
        return Injected(kind, Fault("dead_switch", switch=switch), None, None, switch)
    assert key is not None
    host = _host_end(fabric, key)
    if host is not None:
        near = host if t.near == "host" else key.other(host)
    else:
        near = key.a if rng.random() < 0.5 else key.b
    return Injected(kind, Fault(t.sim_kind, port=near, **t.params), key, host)


def _pick_kind(rng: np.random.Generator, key: LinkKey, fabric: Fabric) -> str:
    """A random fault kind that can sit on cable ``key``."""
    kinds = LINK_KINDS + (HOST_KINDS if _host_end(fabric, key) is not None else [])
    return str(kinds[int(rng.integers(len(kinds)))])


def _random_key(fabric: Fabric, rng: np.random.Generator, host_cable: bool | None = None) -> LinkKey:
    """A random cable: a host's (True), between switches (False), or either (None, even odds)."""
    if host_cable is None:
        host_cable = bool(rng.random() < 0.5)
    keys = [k for k in fabric.links if (_host_end(fabric, k) is not None) == host_cable]
    return keys[int(rng.integers(len(keys)))]


def single(fabric: Fabric, kind: str, rng: np.random.Generator) -> list[Injected]:
    """One fault of ``kind`` on a random suitable part."""
    t = TRUTH[kind]
    if t.on == "switch":
        switches = sorted(n.id for n in fabric.switches())
        return [inject(fabric, kind, rng, switch=switches[int(rng.integers(len(switches)))])]
    key = _random_key(fabric, rng, True if t.on == "host_port" else None)
    return [inject(fabric, kind, rng, key=key)]


def adjacent(fabric: Fabric, rng: np.random.Generator) -> list[Injected]:
    """2-4 faults on one switch's cables; half the time one is a dead neighbouring switch."""
    switches = sorted(n.id for n in fabric.switches())
    sw = switches[int(rng.integers(len(switches)))]
    links = [lk.key for lk in fabric.node_links(sw)]
    n = int(rng.integers(2, 5))
    out: list[Injected] = []
    neighbours = sorted({k.other(k.a if k.a.node == sw else k.b).node for k in links} - {sw})
    neighbours = [x for x in neighbours if fabric.nodes[x].kind == "switch"]
    if neighbours and rng.random() < 0.5:
        dead = neighbours[int(rng.integers(len(neighbours)))]
        out.append(inject(fabric, "dead_switch", rng, switch=dead))
        links = [k for k in links if dead not in (k.a.node, k.b.node)]
    order = rng.permutation(len(links))
    for i in order[: max(0, n - len(out))]:
        key = links[int(i)]
        out.append(inject(fabric, _pick_kind(rng, key, fabric), rng, key=key))
    return out


def overlapping(fabric: Fabric, rng: np.random.Generator) -> list[Injected]:
    """2-4 faults on the cables of one host-to-host path (e.g. a slow uplink over a degraded host cable)."""
    ports = fabric.host_ports()
    for _ in range(50):
        src, dst = (ports[int(i)] for i in rng.choice(len(ports), 2, replace=False))
        path = fabric.path(src, dst)
        if len(path) >= 3:
            break
    n = int(rng.integers(2, min(4, len(path)) + 1))
    chosen = sorted(int(i) for i in rng.choice(len(path), n, replace=False))
    return [inject(fabric, _pick_kind(rng, path[i], fabric), rng, key=path[i]) for i in chosen]


def scattered(fabric: Fabric, rng: np.random.Generator) -> list[Injected]:
    """2-4 faults on random distinct cables anywhere."""
    n = int(rng.integers(2, 5))
    keys: list[LinkKey] = []
    while len(keys) < n:
        key = _random_key(fabric, rng)
        if key not in keys:
            keys.append(key)
    return [inject(fabric, _pick_kind(rng, k, fabric), rng, key=k) for k in keys]


def with_lfts(fabric: Fabric) -> Fabric:
    """``fabric`` with min-hop forwarding tables, as a discovery with ibroute gives it: paths come from the tables."""
    fabric.lfts = rerouted_lfts(fabric)
    fabric.invalidate()
    return fabric


def fabrics(large: bool) -> list[tuple[str, Callable[[], Fabric]]]:
    """Every generator at several sizes, some with forwarding tables; bigger ones with ``--large``."""
    small = [
        ("fat-tree 2L 16 hosts + LFTs", lambda: with_lfts(fat_tree_2(4, 2, 4))),
        ("fat-tree 3L k=4 + LFTs", lambda: with_lfts(fat_tree_3(4))),
        ("fat-tree 2L 16 hosts", lambda: fat_tree_2(4, 2, 4)),
        ("fat-tree 2L 64 hosts", lambda: fat_tree_2(8, 4, 8)),
        ("fat-tree 3L k=4 16 hosts", lambda: fat_tree_3(4)),
        ("fat-tree 3L k=6 54 hosts", lambda: fat_tree_3(6)),
        ("rail-opt 8 hosts x 4 rails", lambda: rail_optimized(2, 4, 4, 2)),
        ("rail-opt 16 hosts x 8 rails", lambda: rail_optimized(2, 8, 8, 4)),
    ]
    big = [
        ("fat-tree 2L 512 hosts", lambda: fat_tree_2(16, 16, 32)),
        ("fat-tree 3L k=12 432 hosts", lambda: fat_tree_3(12)),
        ("rail-opt 128 hosts x 8 rails", lambda: rail_optimized(4, 32, 8, 4)),
        ("fat-tree 2L 128 hosts + LFTs", lambda: with_lfts(fat_tree_2(8, 8, 16))),
    ]
    return small + big if large else small


def scenarios(large: bool, reps: int, rng: np.random.Generator) -> list[Scenario]:
    """Every fault set the benchmark scores, in a fixed order for a given seed."""
    out: list[Scenario] = []
    for name, make in fabrics(large):
        fabric = make()
        for _ in range(reps):
            for kind in TRUTH:
                out.append(Scenario(name, fabric, "single", single(fabric, kind, rng)))
            for set_kind, build in (("adjacent", adjacent), ("overlapping", overlapping), ("random", scattered)):
                for _ in range(2):
                    out.append(Scenario(name, fabric, set_kind, build(fabric, rng)))
            out.append(Scenario(name, fabric, "healthy", []))
    return out


# -- running and scoring --------------------------------------------------------------------


# Noise levels: the ideal simulator the analysis was first tuned on, the default realistic one, and
# clusters across the range real ones span (issue 26: efficiency 0.78-0.97, 1-4% jitter, 1-2% outliers).
NOISE: dict[str, Realism] = {
    "ideal (0.92, no noise)": Realism.ideal(),
    "default": DEFAULT,
    "good NDR (0.97, 1% jitter)": Realism({"sendrecv": 0.97, "all_reduce": 0.95, "alltoall": 0.88, "fan": 0.9},
                                          jitter=0.01, outlier_rate=0.01),
    "RoCE (0.85, 4% jitter)": Realism({"sendrecv": 0.85, "all_reduce": 0.82, "alltoall": 0.75, "fan": 0.78},
                                      jitter=0.04, outlier_rate=0.02),
    "old IB (0.78, 3% jitter)": Realism({"sendrecv": 0.78, "all_reduce": 0.76, "alltoall": 0.7, "fan": 0.72},
                                        jitter=0.03, outlier_rate=0.02),
}
BLAMING = frozenset({"warning", "error", "critical"})


def findings_for(sc: Scenario, seed: int, realism: Realism = DEFAULT
                 ) -> tuple[list[Finding], set[tuple], set[LinkKey]]:
    """Simulate the sweep of one scenario and localize with re-tests, as ``fabricdoc sweep`` does;
    the findings, the tests the simulator made transiently slow, and the cables finished tests crossed."""
    sim = Simulator(sc.fabric, [f.fault for f in sc.faults], seed=seed, realism=realism)
    before, after = sim.counters()
    obs = Observations(before=before, after=after, states=sim.port_states(), events=sim.events(),
                       interval_s=sim.interval_s)
    found = measure_and_retest(sim.truth, obs, SimMeasure(sim), Options(), retest=True).findings
    transients = {(sc.fabric.label(src.node), src.port, sc.fabric.label(dst.node), dst.port)
                  for t in sim.transients if len(t) == 3 for src, dst in [t[1:]]}
    return found, transients, finished_crossed(sim.truth, obs.pairs)


def locates(fabric: Fabric, finding: Finding, inj: Injected) -> bool:
    """Whether ``finding`` names the part ``inj`` sits on."""
    if inj.switch is not None:
        return finding.kind == "switch" and inj.switch in finding.node_ids
    if finding.kind == "switch" or inj.link is None:
        return False
    key = inj.link
    ends = {(fabric.label(e.node), e.port) for e in (key.a, key.b)}
    named = {(str(a), int(b)) for a, b in finding.endpoints or ()}
    if named == ends:
        return True
    h = inj.host_end
    if h is None:
        return False
    host = (fabric.label(h.node), h.port)
    return named == {host} or (not named and finding.kind in ("nic", "host") and h.node in finding.node_ids)


@dataclass
class Tally:
    """Counts behind one row's precision and recall."""

    faults: int = 0
    loc_hit: int = 0
    kind_hit: int = 0
    class_hit: int = 0
    findings: float = 0.0  # a finding shared by several kinds counts a share for each
    loc_ok: float = 0.0
    kind_ok: float = 0.0
    class_ok: float = 0.0

    def row(self) -> dict[str, float | int | None]:
        """Precision and recall of location, kind and class."""
        def ratio(a: float, b: float) -> float | None:
            return round(a / b, 3) if b else None

        return {
            "faults": self.faults, "findings": round(self.findings, 2),
            "location_precision": ratio(self.loc_ok, self.findings), "location_recall": ratio(self.loc_hit, self.faults),
            "kind_precision": ratio(self.kind_ok, self.findings), "kind_recall": ratio(self.kind_hit, self.faults),
            "class_precision": ratio(self.class_ok, self.findings), "class_recall": ratio(self.class_hit, self.faults),
        }


@dataclass
class Score:
    """All tallies and confusions of a benchmark run."""

    per_kind: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    per_set: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    per_fabric: dict[str, Tally] = field(default_factory=lambda: defaultdict(Tally))
    total: Tally = field(default_factory=Tally)
    class_confusions: Counter[tuple[str, str]] = field(default_factory=Counter)
    kind_confusions: Counter[tuple[str, str]] = field(default_factory=Counter)
    missed: Counter[str] = field(default_factory=Counter)
    healthy_fabrics: int = 0
    healthy_findings: int = 0
    false_positive_classes: Counter[str] = field(default_factory=Counter)
    crashes: list[str] = field(default_factory=list)
    unexplained_reports: int = 0
    unexplained_by_set: Counter[str] = field(default_factory=Counter)
    suspects: int = 0  # info cables: suspects to re-test, not named
    suspects_on_faults: int = 0  # of them, on an injected part
    outliers_blamed: int = 0  # named findings on no injected part whose slow tests are all transient outliers
    healthy_pass: int = 0  # healthy fabrics with no warning or worse at all
    unloaded: Counter[str] = field(default_factory=Counter)  # slow cables no finished test crossed, per kind

    def add(self, sc: Scenario, findings: list[Finding], transients: set[tuple] = frozenset(),
            crossed: set[LinkKey] | None = None) -> None:
        """Score one scenario's findings against its injected faults. A slow cable no finished test
        crossed (no route of the tests uses it) is scored apart: only bandwidth shows it, no test could
        load it, and the report lists the cable as untested (coverage.cables)."""
        rows = [self.total, self.per_set[sc.set_kind], self.per_fabric[sc.fabric_name]]
        if sc.set_kind == "healthy" and not any(f.severity in BLAMING for f in findings):
            self.healthy_pass += 1
        # "These slow tests have no explanation" names no part: counted apart, not scored.
        unexplained = sum(1 for f in findings if f.kind in NOT_A_PART and f.severity in BLAMING)
        self.unexplained_reports += unexplained
        self.unexplained_by_set[sc.set_kind] += unexplained
        info = [f for f in findings if f.kind not in NOT_A_PART and f.severity not in BLAMING]
        self.suspects += len(info)
        self.suspects_on_faults += sum(1 for f in info if any(locates(sc.fabric, f, inj) for inj in sc.faults))
        findings = [f for f in findings if f.kind not in NOT_A_PART and f.severity in BLAMING]
        for f in findings:
            if not any(locates(sc.fabric, f, inj) for inj in sc.faults) and _only_transients(f, transients):
                self.outliers_blamed += 1
        if sc.set_kind == "healthy":
            self.healthy_fabrics += 1
            self.healthy_findings += len(findings)
        for inj in sc.faults:
            if crossed is not None and inj.kind in BANDWIDTH_ONLY and inj.link not in crossed:
                self.unloaded[inj.kind] += 1
                continue
            hits = [f for f in findings if locates(sc.fabric, f, inj)]
            loc, kind_ok = bool(hits), any(f.kind in inj.accepted_kinds for f in hits)
            class_ok = any(f.fault in TRUTH[inj.kind].classes for f in hits)
            for t in (*rows, self.per_kind[inj.kind]):
                t.faults += 1
                t.loc_hit += loc
                t.kind_hit += kind_ok
                t.class_hit += class_ok
            where = "host cable" if inj.host_end is not None else "switch" if inj.switch else "switch cable"
            if not loc:
                self.missed[f"{inj.kind} ({where})"] += 1
            else:
                if not class_ok:
                    for f in hits:
                        self.class_confusions[(inj.kind, f.fault)] += 1
                if not kind_ok:
                    for f in hits:
                        self.kind_confusions[(f"{inj.kind} ({where})", f.kind)] += 1
        present = sorted({inj.kind for inj in sc.faults}) or ["healthy"]
        for f in findings:
            named = [inj for inj in sc.faults if locates(sc.fabric, f, inj)]
            kind_ok = any(f.kind in inj.accepted_kinds for inj in named)
            class_ok = any(f.fault in TRUTH[inj.kind].classes for inj in named)
            if not named:
                self.false_positive_classes[f"{f.kind}/{f.fault}"] += 1
            owners = sorted({inj.kind for inj in named}) or present
            for t in rows:
                t.findings += 1
                t.loc_ok += bool(named)
                t.kind_ok += kind_ok
                t.class_ok += class_ok
            for k in owners:
                t = self.per_kind[k]
                t.findings += 1 / len(owners)
                t.loc_ok += bool(named) / len(owners)
                t.kind_ok += kind_ok / len(owners)
                t.class_ok += class_ok / len(owners)


def _only_transients(f: Finding, transients: set[tuple]) -> bool:
    """Whether every slow test a finding lists was a transient outlier of the simulator."""
    tests = [(p.src[0], p.src[1], p.dst[0], p.dst[1]) for ev in f.evidence_of(SlowPairsEvidence) for p in ev.slow_pairs]
    return bool(tests) and all(t in transients for t in tests)


def _fmt(v: float | int | None) -> str:
    """A ratio as a percentage column ('-' when undefined)."""
    return "     -" if v is None else f"{100 * v:5.1f}%"


def print_table(title: str, rows: dict[str, dict[str, Any]]) -> None:
    """One table of precision and recall rows."""
    head = (f"{title:30} {'faults':>6} {'finds':>7} | {'loc P':>6} {'loc R':>6} | {'kind P':>6} {'kind R':>6} "
            f"| {'cls P':>6} {'cls R':>6}")
    print(head)
    print("-" * len(head))
    for name, r in rows.items():
        print(f"{name:30} {r['faults']:>6} {r['findings']:>7.1f} | {_fmt(r['location_precision'])} "
              f"{_fmt(r['location_recall'])} | {_fmt(r['kind_precision'])} {_fmt(r['kind_recall'])} "
              f"| {_fmt(r['class_precision'])} {_fmt(r['class_recall'])}")
    print()


def run_level(all_sets: list[Scenario], seed: int, realism: Realism) -> Score:
    """Score every fault set at one noise level."""
    score = Score()
    for n, sc in enumerate(all_sets):
        try:
            findings, transients, crossed = findings_for(sc, seed + n, realism)
        except Exception as exc:  # noqa: BLE001 - a crash is a figure too: count it, keep scoring
            score.crashes.append(f"{sc.fabric_name} {sc.set_kind} {[i.kind for i in sc.faults]}: "
                                 f"{type(exc).__name__}: {exc}")
            continue
        score.add(sc, findings, transients, crossed)
    return score


def level_row(score: Score) -> dict[str, Any]:
    """One noise level's headline figures: location precision and recall, hard and gray slow-cable recall,
    healthy fabrics that pass, suspects listed, outliers blamed."""
    def recall(kinds: tuple[str, ...]) -> float | None:
        faults = sum(score.per_kind[k].faults for k in kinds if k in score.per_kind)
        hits = sum(score.per_kind[k].loc_hit for k in kinds if k in score.per_kind)
        return round(hits / faults, 3) if faults else None

    total = score.total.row()
    return {
        "location_precision": total["location_precision"], "location_recall": total["location_recall"],
        "class_precision": total["class_precision"], "class_recall": total["class_recall"],
        "slow_hard_recall": recall(("slow", "slow_0.7")), "gray_recall": recall(("gray",)),
        "healthy_fabrics": score.healthy_fabrics, "healthy_pass": score.healthy_pass,
        "healthy_findings": score.healthy_findings, "suspects": score.suspects,
        "suspects_on_faults": score.suspects_on_faults, "outliers_blamed": score.outliers_blamed,
        "unexplained_warnings": score.unexplained_reports, "crashes": len(score.crashes),
        "unloaded_slow_cables": dict(score.unloaded),
    }


def main() -> None:
    """Build the fault sets, run them at every noise level, print (and optionally write) the figures."""
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--seed", type=int, default=15, help="seed of the fault sets and the simulator (default 15)")
    ap.add_argument("--reps", type=int, default=3, help="fault sets of each shape per fabric (default 3)")
    ap.add_argument("--large", action="store_true", help="add fabrics of 128-512 hosts (slow)")
    ap.add_argument("--noise", nargs="+", metavar="NAME", choices=sorted(NOISE),
                    help="noise levels to run (default: all of " + "; ".join(NOISE).replace("%", "%%") + ")")
    ap.add_argument("--detail", default="default", metavar="NAME",
                    help="the noise level whose per-kind, per-set and per-fabric tables are printed (default: default)")
    ap.add_argument("--json", metavar="OUT", help="write the figures as JSON to OUT")
    args = ap.parse_args()
    started = time.perf_counter()
    all_sets = scenarios(args.large, args.reps, np.random.default_rng(args.seed))
    levels = args.noise or list(NOISE)
    scores: dict[str, Score] = {}
    took: dict[str, float] = {}
    for name in levels:
        t0 = time.perf_counter()
        scores[name] = run_level(all_sets, args.seed, NOISE[name])
        took[name] = time.perf_counter() - t0
    runtime = time.perf_counter() - started
    command = " ".join(["python", "benchmarks/bench_accuracy.py", f"--seed {args.seed}", f"--reps {args.reps}"]
                       + (["--large"] if args.large else []) + (["--noise", *map(repr, levels)] if args.noise else []))
    print(f"fault sets {len(all_sets)} per noise level  seed {args.seed}  runtime {runtime:.1f}s\nreproduce: {command}\n")
    head = (f"{'noise level':28} {'loc P':>6} {'loc R':>6} {'cls P':>6} {'cls R':>6} | {'hard R':>6} | "
            f"{'healthy pass':>12} | {'suspects (on faults)':>20} {'outliers blamed':>15} {'pair warnings':>13} | {'runtime':>7}")
    print("per noise level (named = warning or worse; hard = slow cables at 0.5x and 0.7x)")
    print(head)
    print("-" * len(head))
    rows = {name: level_row(sc) for name, sc in scores.items()}
    for name, r in rows.items():
        print(f"{name:28} {_fmt(r['location_precision'])} {_fmt(r['location_recall'])} {_fmt(r['class_precision'])} "
              f"{_fmt(r['class_recall'])} | {_fmt(r['slow_hard_recall'])} | "
              f"{r['healthy_pass']:>5} of {r['healthy_fabrics']:<4} | {r['suspects']:>11} ({r['suspects_on_faults']:>5}) "
              f"{r['outliers_blamed']:>15} {r['unexplained_warnings']:>13} | {took[name]:6.1f}s")
    print("gray faults (0.85x slow cables), recall per noise level: "
          + "; ".join(f"{name} {_fmt(r['gray_recall']).strip()}" for name, r in rows.items()))
    print("slow cables no finished test crossed (no route of the tests uses them; scored apart, the report lists "
          "them as untested): " + "; ".join(f"{name} {sum(r['unloaded_slow_cables'].values())}"
                                           for name, r in rows.items()) + "\n")
    detail = args.detail if args.detail in scores else levels[0]
    score = scores[detail]
    per_kind = {k: score.per_kind[k].row() for k in [*TRUTH, "healthy"] if k in score.per_kind}
    per_set = {k: v.row() for k, v in score.per_set.items()}
    per_fabric = {k: v.row() for k, v in score.per_fabric.items()}
    print(f"noise level {detail!r} in detail")
    print_table("per fault kind", per_kind)
    print_table("per fault set", per_set)
    print_table("per fabric", per_fabric)
    print_table("total", {"all": score.total.row()})
    print(f"healthy fabrics: {score.healthy_fabrics}, findings on them: {score.healthy_findings}")
    by_set = {k: score.unexplained_by_set.get(k, 0) for k in score.per_set}
    print(f"warnings of slow tests nothing explains (slow_unexplained, repeated): {score.unexplained_reports}  "
          + "  ".join(f"{k} {v}" for k, v in by_set.items()))
    strict = score.total.loc_ok / (score.total.findings + score.unexplained_reports) if (
        score.total.findings + score.unexplained_reports) else None
    print(f"location precision counting slow_unexplained warnings as false positives: {_fmt(strict).strip()}")
    print("\nmost frequent class confusions (injected -> named):")
    for (want, got), c in score.class_confusions.most_common(12):
        print(f"  {c:4}  {want} -> {got}")
    print("most frequent kind confusions (injected -> named kind):")
    for (want, got), c in score.kind_confusions.most_common(12):
        print(f"  {c:4}  {want} -> {got}")
    print("missed (no finding named the part):")
    for what, c in score.missed.most_common(12):
        print(f"  {c:4}  {what}")
    print("findings that named no injected part (kind/class):")
    for what, c in score.false_positive_classes.most_common(12):
        print(f"  {c:4}  {what}")
    crashes = [c for sc in scores.values() for c in sc.crashes]
    if crashes:
        print(f"crashed fault sets: {len(crashes)}")
        for line in crashes[:5]:
            print(f"  {line[:200]}")
    if args.json:
        out = {
            "seed": args.seed, "command": command, "argv": sys.argv, "runtime_s": round(runtime, 2),
            "fault_sets": len(all_sets), "noise_levels": rows, "detail": detail,
            "per_kind": per_kind, "per_set": per_set, "per_fabric": per_fabric, "total": score.total.row(),
            "healthy": {"fabrics": score.healthy_fabrics, "findings": score.healthy_findings,
                        "pass": score.healthy_pass},
            "unexplained_slow_warnings": score.unexplained_reports,
            "unexplained_slow_by_set": dict(by_set),
            "location_precision_with_unexplained": None if strict is None else round(strict, 3),
            "class_confusions": [{"injected": w, "named": g, "count": c}
                                 for (w, g), c in score.class_confusions.most_common()],
            "kind_confusions": [{"injected": w, "named": g, "count": c}
                                for (w, g), c in score.kind_confusions.most_common()],
            "missed": dict(score.missed.most_common()),
            "unmatched_findings": dict(score.false_positive_classes.most_common()),
            "crashes": crashes,
        }
        with open(args.json, "w", encoding="utf-8") as fh:
            json.dump(out, fh, indent=2)


if __name__ == "__main__":
    main()
