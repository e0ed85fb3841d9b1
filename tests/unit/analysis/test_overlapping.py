"""Overlapping faults: a link trained low explains a slow test only as far as its lower rate does, so a
slow cable hiding behind it is named too; a fault that explains every slow test names nothing more."""

from __future__ import annotations

import pytest

from fabricdoc.analysis.localize import Options, localize
from fabricdoc.bandwidth.simulated import SimMeasure
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.records import LinkKey, Observations, PairResult, PortRef, PortState
from fabricdoc.sources.sim.simulator import Simulator
from fabricdoc.sweep import measure_and_retest

UPLINK = LinkKey.of(PortRef("leaf01", 3), PortRef("spine01", 1))
HOST_CABLE = LinkKey.of(PortRef("leaf01", 1), PortRef("node0001", 1))
EFFICIENCY = 0.92  # what a healthy test reaches of its bottleneck


def _named(findings) -> dict[LinkKey, str]:
    out = {}
    for f in findings:
        if f.kind in ("link", "nic", "port") and f.endpoints:
            key = LinkKey.of(PortRef(f.node_ids[0], f.endpoints[0][1]), PortRef(f.node_ids[1], f.endpoints[1][1]))
            out[key] = f.fault
    return out


def _half_rate_uplink(trained_in_fabric: bool):
    """fat_tree_2(4, 2, 2) whose leaf01-spine01 uplink trained at half speed (50 of 100 Gb/s a lane), as
    iblinkinfo reports it; the fabric shows the trained rate or (a topology file) the nominal one."""
    fabric = fat_tree_2(4, 2, 2)
    if trained_in_fabric:
        fabric.links[UPLINK].lane_gbps = 50.0
    states = [PortState(end.node, end.port, "Active", "LinkUp", lanes=4, lane_gbps=50.0, max_lanes=4,
                        max_lane_gbps=100.0, peer=UPLINK.other(end)) for end in (UPLINK.a, UPLINK.b)]
    return fabric, states


def _test(fabric, src: str, dst: str, rnd: int, cap: dict[LinkKey, float]) -> PairResult:
    """A test as the fabric would measure it: the slowest cable on its path, judged against the
    bottleneck the fabric description shows."""
    a, b = PortRef(src, 1), PortRef(dst, 1)
    path = fabric.path(a, b)
    expected = min(fabric.links[k].capacity_gbps for k in path)
    rate = min(cap.get(k, fabric.links[k].nominal_gbps) for k in path)
    return PairResult(a, b, "ok", rate * EFFICIENCY, expected, round=rnd)


# node0001's every test crosses the uplink; the others show the rest of the fabric healthy.
TESTS = [("node0001", "node0003"), ("node0001", "node0005"), ("node0007", "node0001"),
         ("node0002", "node0003"), ("node0003", "node0005"), ("node0004", "node0006"),
         ("node0008", "node0002"), ("node0005", "node0007"), ("node0006", "node0004")]


def test_a_slow_host_cable_behind_a_half_rate_uplink_is_named_with_the_uplink():
    fabric, states = _half_rate_uplink(trained_in_fabric=True)
    cap = {UPLINK: 200.0, HOST_CABLE: 0.3 * 400.0}  # the uplink at half rate, node0001's cable at 30%
    pairs = [_test(fabric, s, d, i, cap) for i, (s, d) in enumerate(TESTS)]
    through_cable = [p for p in pairs if HOST_CABLE in fabric.path(p.src, p.dst)]
    assert all(UPLINK in fabric.path(p.src, p.dst) for p in through_cable)  # the premise: it hides behind
    findings = localize(fabric, Observations(pairs=pairs, states=states))
    assert _named(findings) == {UPLINK: "speed_degraded", HOST_CABLE: "degraded_bandwidth"}
    assert not [f for f in findings if f.fault == "slow_unexplained"]


@pytest.mark.parametrize("trained_in_fabric", [True, False])
def test_a_half_rate_uplink_that_explains_every_slow_test_names_nothing_more(trained_in_fabric):
    # Judged against the trained rate, tests through the uplink are not slow; judged against the
    # nominal rate they are, exactly as much as half the rate accounts for.
    fabric, states = _half_rate_uplink(trained_in_fabric)
    pairs = [_test(fabric, s, d, i, {UPLINK: 200.0}) for i, (s, d) in enumerate(TESTS)]
    findings = localize(fabric, Observations(pairs=pairs, states=states))
    assert [(f.kind, f.fault) for f in findings] == [("link", "speed_degraded")]
    assert _named(findings) == {UPLINK: "speed_degraded"}


def test_a_half_rate_uplink_judged_on_nominal_rates_does_not_hide_a_slower_cable():
    fabric, states = _half_rate_uplink(trained_in_fabric=False)
    cap = {UPLINK: 200.0, HOST_CABLE: 0.3 * 400.0}
    pairs = [_test(fabric, s, d, i, cap) for i, (s, d) in enumerate(TESTS)]
    findings = localize(fabric, Observations(pairs=pairs, states=states))
    assert _named(findings) == {UPLINK: "speed_degraded", HOST_CABLE: "degraded_bandwidth"}


def _swept(faults):
    fabric = fat_tree_2(4, 2, 2)
    sim = Simulator(fabric, faults, seed=7)
    before, after = sim.counters()
    obs = Observations(before=before, after=after, states=sim.port_states(), events=sim.events(),
                       interval_s=sim.interval_s)
    return measure_and_retest(sim.truth, obs, SimMeasure(sim), Options(), retest=True).findings


def test_a_swept_half_rate_uplink_and_a_slow_host_cable_on_its_paths_are_both_named():
    findings = _swept([Fault("degraded", port=UPLINK.a, lane_gbps=50.0),
                       Fault("slow", port=HOST_CABLE.b, factor=0.3)])
    assert _named(findings) == {UPLINK: "speed_degraded", HOST_CABLE: "degraded_bandwidth"}
    assert not [f for f in findings if f.fault == "slow_unexplained"]


def test_a_swept_half_rate_uplink_alone_is_the_only_finding():
    findings = _swept([Fault("degraded", port=UPLINK.a, lane_gbps=50.0)])
    assert [(f.kind, f.fault) for f in findings] == [("link", "speed_degraded")]
    assert _named(findings) == {UPLINK: "speed_degraded"}


HUNG_UPLINK = LinkKey.of(PortRef("leaf04", 6), PortRef("spine02", 4))
SLOW_UPLINK = LinkKey.of(PortRef("leaf03", 6), PortRef("spine02", 3))
LOSSY_UPLINK = LinkKey.of(PortRef("leaf01", 6), PortRef("spine02", 1))


@pytest.mark.parametrize("seed", [15, 3])
def test_a_hung_uplink_whose_tests_also_cross_slow_cables_is_named_with_them(seed):
    # Every test through the black-holing uplink also crosses one of two cables whose tests run,
    # slowly or with errors: those explain slow tests, never a test that hung, so the hung one is named too.
    fabric = fat_tree_2(4, 2, 4)
    sim = Simulator(fabric, [Fault("hung", port=HUNG_UPLINK.a), Fault("slow", port=SLOW_UPLINK.b, factor=0.7),
                             Fault("lossy", port=LOSSY_UPLINK.a, rate_per_hour=3600.0),
                             Fault("down", port=PortRef("leaf02", 6))], seed=seed)
    before, after = sim.counters()
    obs = Observations(before=before, after=after, states=sim.port_states(), events=sim.events(),
                       interval_s=sim.interval_s)
    findings = measure_and_retest(sim.truth, obs, SimMeasure(sim), Options(), retest=True).findings
    hung = [p for p in obs.pairs if p.status == "hung"]
    assert hung and all(HUNG_UPLINK in sim.truth.path(p.src, p.dst) for p in hung)  # the premise
    assert all({SLOW_UPLINK, LOSSY_UPLINK} & set(sim.truth.path(p.src, p.dst)) for p in hung)
    named = _named([f for f in findings if f.severity != "info"])
    assert named.get(HUNG_UPLINK) == "hung", findings
    assert named.get(SLOW_UPLINK) == "degraded_bandwidth", findings


def _swept_16(faults, seed):
    sim = Simulator(fat_tree_2(4, 2, 4), faults, seed=seed)
    before, after = sim.counters()
    obs = Observations(before=before, after=after, states=sim.port_states(), events=sim.events(),
                       interval_s=sim.interval_s)
    found = measure_and_retest(sim.truth, obs, SimMeasure(sim), Options(), retest=True).findings
    return [(f.fault, f.endpoints) for f in found if f.severity != "info"]


DOWN_UPLINK = [Fault("down", port=PortRef("leaf03", 5))]


@pytest.mark.parametrize("seed", range(4))
def test_a_slow_host_cable_on_a_leaf_whose_uplink_is_down_is_still_named(seed):
    # Every test of node0009 was rerouted around the down uplink; rerouting may slow a test, so none
    # is reported for that, but all of one host's tests slow on every route still name its cable.
    named = _swept_16([Fault("slow", port=PortRef("leaf03", 1), factor=0.7), *DOWN_UPLINK], seed)
    assert ("degraded_bandwidth", [("node0009", 1), ("leaf03", 1)]) in named, named
    assert len(named) == 2, named


@pytest.mark.parametrize("seed", range(4))
def test_a_down_uplink_alone_names_no_host_on_its_leaf(seed):
    assert _swept_16(DOWN_UPLINK, seed) == [("down", [("leaf03", 5), ("spine01", 3)])]


def test_a_cable_whose_slow_tests_another_cable_explains_as_well_is_named_with_it_as_an_alternative():
    # node0002's only tests both went through the leaf01-spine01 uplink, which also carried a test of
    # node0001 (slow for node0001's own cable): from these tests alone node0002's cable and the uplink
    # are equally likely, so whichever is named lists the other and is no more than a coin toss.
    from fabricdoc.model.evidence import SlowPairsEvidence

    fabric = fat_tree_2(4, 2, 4)
    up = LinkKey.of(PortRef("leaf01", 5), PortRef("spine01", 1))
    host1 = LinkKey.of(PortRef("leaf01", 1), PortRef("node0001", 1))
    host2 = LinkKey.of(PortRef("leaf01", 2), PortRef("node0002", 1))
    others = [f"node{i:04d}" for i in range(5, 17)]
    via = [d for d in others if up in fabric.path(PortRef("node0002", 1), PortRef(d, 1))]
    assert len(via) >= 3  # the premise: node0002 reaches some hosts over the uplink
    tests = [("node0002", via[0]), ("node0002", via[1]), ("node0001", via[2])]
    tests += [("node0001", d) for d in others if d not in via][:2]
    tests += [(others[i], others[(i + 5) % len(others)]) for i in range(len(others))]
    cap = {up: 0.7 * 400.0, host1: 0.5 * 400.0}
    pairs = [_test(fabric, s, d, i, cap) for i, (s, d) in enumerate(tests)]
    findings = localize(fabric, Observations(pairs=pairs))
    named = {k: f for f in findings if f.kind in ("link", "nic") and f.endpoints for k in [
        LinkKey.of(PortRef(f.node_ids[0], f.endpoints[0][1]), PortRef(f.node_ids[1], f.endpoints[1][1]))]}
    assert host1 in named and named[host1].confidence >= 0.5
    (pick,) = [k for k in (up, host2) if k in named]
    other = host2 if pick == up else up
    (ev,) = named[pick].evidence_of(SlowPairsEvidence)
    alternatives = {LinkKey.of(PortRef(*a), PortRef(*b)) for a, b in ev.alternatives}
    assert other in alternatives and named[pick].confidence < 0.5, named[pick]
