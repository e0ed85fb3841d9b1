"""Localization over simulated sweeps: one fault named exactly; several with high precision/recall."""

import numpy as np
import pytest

from fabricdoc.analysis.localize import Options, localize
from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2, fat_tree_3, rail_optimized
from fabricdoc.model.evidence import CounterEvidence, FlapEvidence, SlowPairsEvidence
from fabricdoc.model.records import LinkKey, Observations, PairResult, PortRef
from fabricdoc.report.report import Report
from fabricdoc.sources.sim.simulator import Simulator, random_faults

KINDS = ("slow", "degraded", "lossy", "down", "flapping", "congested")
FABRICS = {
    "fat-tree-2": lambda: fat_tree_2(8, 4, 4),
    "fat-tree-3": lambda: fat_tree_3(8),
    "rail-optimized": lambda: rail_optimized(4, 4, 8, 4),
}


def named_links(findings):
    """The cables the findings name: warnings and worse (an ``info`` cable is a suspect to re-test)."""
    out = set()
    for f in findings:
        if f.kind in ("link", "nic", "port") and f.endpoints and f.severity != "info":
            out.add(LinkKey.of(PortRef(f.node_ids[0], f.endpoints[0][1]), PortRef(f.node_ids[1], f.endpoints[1][1])))
    return out


def run(fabric, plan, faults, seed):
    result = Simulator(fabric, faults, seed=seed).run(plan.rounds)
    return result, localize(result.observed, result.observations)


@pytest.fixture(scope="module", params=sorted(FABRICS))
def fabric_and_plan(request):
    fabric = FABRICS[request.param]()
    return fabric, plan_sweep(fabric)


def named(findings):
    """Findings that name something: warnings and worse (``info`` is noise or a suspect to re-test)."""
    return [f for f in findings if f.severity != "info"]


def test_a_healthy_fabric_with_realistic_noise_names_nothing_and_passes(fabric_and_plan):
    fabric, plan = fabric_and_plan
    for seed in (3, 4, 5):
        result, findings = run(fabric, plan, [], seed=seed)
        assert named(findings) == [], (seed, [(f.name, f.fault, f.severity) for f in findings])
        assert Report.build(result.observed, findings, result.observations).verdict == "pass"


def test_any_single_faulty_link_is_named_exactly(fabric_and_plan):
    fabric, plan = fabric_and_plan
    for seed in range(25):
        faults = random_faults(fabric, 1, np.random.default_rng(seed), KINDS)
        result, findings = run(fabric, plan, faults, seed)
        assert named_links(findings) == result.faulty_links, (seed, faults, [(f.name, f.fault) for f in findings])


def test_a_slow_link_no_counter_shows_is_found_by_tomography_alone(fabric_and_plan):
    fabric, plan = fabric_and_plan
    for seed in range(15):
        faults = random_faults(fabric, 1, np.random.default_rng(100 + seed), ("slow",))
        result, findings = run(fabric, plan, faults, seed)
        assert named_links(findings) == result.faulty_links, (seed, [(f.name, f.severity) for f in findings])
        (finding,) = named(findings)
        assert finding.fault == "degraded_bandwidth"
        kinds = {e.kind for e in finding.evidence}
        assert kinds - {"candidates"} == {"pairs"}
        # A slow host cable with clean counters could be the NIC or the cable: both are named.
        assert ("candidates" in kinds) == (finding.kind == "nic")


@pytest.mark.parametrize("count", [2, 3])
def test_two_or_three_faults_keep_precision_and_recall_above_09(fabric_and_plan, count):
    fabric, plan = fabric_and_plan
    tp = named = truth = 0
    for seed in range(30):
        faults = random_faults(fabric, count, np.random.default_rng(1000 * count + seed), KINDS)
        result, findings = run(fabric, plan, faults, seed)
        got = named_links(findings)
        tp += len(got & result.faulty_links)
        named += len(got)
        truth += len(result.faulty_links)
    precision, recall = tp / max(named, 1), tp / truth
    print(f"{count} faults: precision {precision:.3f} recall {recall:.3f}")
    assert precision >= 0.9 and recall >= 0.9


def test_symbol_errors_on_one_port_blame_that_link_with_the_counter_as_evidence():
    fabric = fat_tree_2(4, 2, 2)
    faults = [Fault("lossy", port=PortRef("leaf03", 4), rate_per_hour=50_000)]
    result, findings = run(fabric, plan_sweep(fabric), faults, 0)
    (f,) = named(findings)
    assert f.fault == "symbol_errors" and f.kind == "link"
    assert sorted(f.endpoints) == [("leaf03", 4), ("spine02", 3)]
    counter = f.evidence_of(CounterEvidence)
    assert any(c.counter == "symbol_errors" and c.node == "leaf03" and c.delta > 0 for c in counter)


def test_a_dead_leaf_is_one_switch_finding_and_its_hosts_are_drained():
    fabric = fat_tree_2(4, 2, 2)
    result, findings = run(fabric, plan_sweep(fabric), [Fault("dead_switch", switch="leaf02")], 0)
    switch = [f for f in findings if f.kind == "switch"]
    assert [(f.name, f.fault) for f in switch] == [("leaf02", "dead")]
    assert not [f for f in findings if f.kind == "link"]
    report = Report.build(result.observed, findings, result.observations)
    assert sorted(d.node for d in report.drain) == ["node0003", "node0004"]


def test_a_bad_nic_is_named_as_the_hosts_nic_and_drained():
    fabric = fat_tree_2(4, 2, 2)
    result, findings = run(fabric, plan_sweep(fabric), [Fault("bad_nic", port=PortRef("node0006", 1))], 0)
    (f,) = findings
    assert f.kind in ("nic", "link") and "node0006" in f.node_ids
    report = Report.build(result.observed, findings, result.observations)
    assert [d.node for d in report.drain] == ["node0006"]


def test_corrupted_data_blames_the_common_host_port():
    from fabricdoc.model.records import Observations, PairResult

    fabric = fat_tree_2(2, 2, 2)
    bad = PortRef("node0002", 1)
    pairs = [
        PairResult(bad, PortRef("node0003", 1), "wrong", 90.0, 92.0, wrong=12),
        PairResult(PortRef("node0004", 1), bad, "wrong", 90.0, 92.0, wrong=3),
        PairResult(PortRef("node0001", 1), PortRef("node0004", 1), "ok", 91.0, 92.0),
    ]
    findings = localize(fabric, Observations(pairs=pairs))
    (f,) = findings
    assert f.fault == "data_corruption" and f.node_ids == ["node0002"] and f.severity == "critical"


def test_equally_likely_suspects_are_named_and_all_get_retested():
    from fabricdoc.analysis.suspects import retest_suspects
    from fabricdoc.model.records import Observations, PairResult

    # One test only, through node0001's cable, leaf01->spine, spine->leaf02 and node0003's cable:
    # every link on it is equally to blame.
    fabric = fat_tree_2(2, 1, 2)
    src, dst = PortRef("node0001", 1), PortRef("node0003", 1)
    path = fabric.path(src, dst)
    obs = Observations(pairs=[PairResult(src, dst, "ok", 40.0, 92.0)])
    (finding,) = localize(fabric, obs)
    (ev,) = finding.evidence_of(SlowPairsEvidence)
    assert ev.equivalent_suspects == len(path) == 4
    assert finding.confidence <= 0.25
    assert set(retest_suspects(fabric, [finding])) == set(path)


def _watched_link(downs: int):
    from fabricdoc.model.records import LinkEvent, Observations, PortState

    fabric = fat_tree_2(2, 2, 2)
    events = []
    for i in range(downs):
        events.append(LinkEvent("node0002", 1, 100.0 + i, "down"))
        if i < downs - 1:
            events.append(LinkEvent("node0002", 1, 100.5 + i, "up"))
    # The closing sample caught the port after its last down.
    obs = Observations(states=[PortState("node0002", 1, "down", source="netlink")], events=events)
    return localize(fabric, obs)


def test_a_link_sampled_down_between_repeated_flaps_is_named_flapping_with_the_state_as_evidence():
    (f,) = _watched_link(4)
    assert f.fault == "flapping" and "node0002" in f.node_ids
    assert {e.kind for e in f.evidence} == {"state", "event"}
    assert [e.flaps for e in f.evidence_of(FlapEvidence)] == [4]


def test_a_link_that_went_down_once_and_stayed_down_is_named_down():
    (f,) = _watched_link(1)
    assert f.fault == "down"


@pytest.mark.parametrize("efficiency", [0.78, 0.85])
def test_a_slow_host_cable_on_a_low_efficiency_fabric_is_named_not_its_leaf(efficiency):
    # Every healthy test reads 0.78 of the line rate here: the expectation is learned, so the leaf's other
    # cables are not slow, and blame stays with the one cable (its NIC or cable), never the whole switch.
    from fabricdoc.fabric.realism import Realism

    fabric = fat_tree_2(8, 4, 4)
    realism = Realism({"sendrecv": efficiency}, jitter=0.03, outlier_rate=0.015)
    faults = [Fault("slow", port=PortRef("node0010", 1), factor=0.5)]
    result = Simulator(fabric, faults, seed=4, realism=realism).run(plan_sweep(fabric, min_cover=3).rounds)
    found = named(localize(result.observed, result.observations))
    assert [(f.kind, f.node_ids[0]) for f in found] == [("nic", "node0010")], [(f.name, f.fault) for f in found]


# The netns lab's pair rounds on a 2-core machine (tests/integration/gloo/test_group_load.py, a failed run):
# the four tests of round 0 ran at once and shared the cores, 0.65-0.73 of the line rate; round 1 and the
# re-tests 0.74-0.95. Two of round 0's tests and one of round 1's crossed node0006's cable.
_LAB_ROUNDS = [
    [("node0002", "node0006", 0.695), ("node0005", "node0003", 0.648), ("node0003", "node0001", 0.657),
     ("node0006", "node0005", 0.730)],
    [("node0004", "node0005", 0.895), ("node0006", "node0001", 0.854), ("node0001", "node0002", 0.936),
     ("node0003", "node0004", 0.742)],
    [("node0005", "node0003", 0.947), ("node0004", "node0001", 0.936)],
    [("node0003", "node0001", 0.897), ("node0004", "node0003", 0.916)],
]


@pytest.mark.parametrize("slow_cable", [False, True])
def test_a_given_slow_ratio_makes_drops_above_it_no_evidence_against_a_cable(slow_cable):
    fabric = fat_tree_2(leaves=3, spines=1, hosts_per_leaf=2, lanes=1, lane_gbps=0.1)
    obs = Observations()
    for r, tests in enumerate(_LAB_ROUNDS):
        for s, d, ratio in tests:
            if slow_cable and "node0004" in (s, d):
                ratio *= 0.2  # a cable at a fifth of its rate: well below the given ratio
            obs.pairs.append(PairResult(PortRef(s, 1), PortRef(d, 1), "ok", 0.1 * ratio, 0.1, size_bytes=1 << 20,
                                        round=r))
    named = [f for f in localize(fabric, obs, Options(slow_ratio=0.3)) if f.severity != "info"]
    # Without the given ratio node0006's cable was named at warning: its three tests sat two spreads
    # below the noise the quieter rounds showed, which the user's 0.3 calls noise on this lab.
    assert {n for f in named for n in f.node_ids} == ({"node0004", "leaf02"} if slow_cable else set()), named


def test_a_cable_whose_slow_test_read_zero_counts_every_test_that_ran_through_it_as_carried():
    """A slow test at 0 (a log row of 0.00 GB/s) has no log: the cable carried any test that ran the same
    way (as the 1.5x bar read it), instead of the carried check failing on log(0)."""
    from types import SimpleNamespace

    from fabricdoc.analysis.tomography import _carried

    key = LinkKey(PortRef("leaf01", 1), PortRef("node0001", 1))
    base = SimpleNamespace(spread=0.04)
    judged = SimpleNamespace(pairs=[SimpleNamespace(relative=r, baseline=base) for r in (0.0, 0.98, 0.97)])
    pairs = [SimpleNamespace(status="ok")] * 3
    channels = [[(key, 0)], [(key, 0)], [(key, 1)]]  # the third crossed it the other way
    assert _carried(key, {0}, [0, 1, 2], channels, pairs, judged) == 1


def test_fabric_cables_the_tests_cannot_tell_apart_are_each_named_with_the_other_as_alternative():
    # Rail-local sendrecv tests across two units of a rail-optimized fabric: every test through leaf-su01-r4's
    # uplink to spine04 also crosses leaf-su02-r4's (one carries each test's way out, the other its way back),
    # so no analysis of these tests can say which of the two is slow. Naming one of them (the cover's pick)
    # took the healthy one out of service half the time; each is named, the other its equally likely alternative.
    fabric = rail_optimized(2, 4, 8, 4)
    slow = next(k for k in fabric.links if {k.a.node, k.b.node} == {"leaf-su01-r4", "spine04"})
    ports = sorted(fabric.host_ports(), key=lambda p: (p.node, p.port))
    rng = np.random.default_rng(7)
    obs = Observations()
    for shift in (8, 16, 24):  # every port to the same rail's port 1, 2 and 3 hosts on, one test at a time
        for i, src in enumerate(ports):
            dst = ports[(i + shift) % len(ports)]
            ratio = 0.85 * (1.0 + rng.normal(0.0, 0.02))
            if slow in (*fabric.path(src, dst), *fabric.path(dst, src)):
                ratio *= 0.5
            obs.pairs.append(PairResult(src, dst, "ok", 400.0 * ratio, 400.0, size_bytes=1 << 30,
                                        round=len(obs.pairs), test="nccl-tests:sendrecv"))
    found = named(localize(fabric, obs))
    twin = next(k for k in fabric.links if {k.a.node, k.b.node} == {"leaf-su02-r4", "spine04"})
    assert named_links(found) == {slow, twin}, [f.name for f in found]
    for f in found:
        assert f.severity == "error" and f.confidence == pytest.approx(0.5, abs=0.01)
        (ev,) = f.evidence_of(SlowPairsEvidence)
        other = twin if named_links([f]) == {slow} else slow
        assert ev.equivalent_suspects == 2
        assert [tuple(sorted(alt)) for alt in ev.alternatives] == [tuple(sorted((e.node, e.port) for e in (other.a, other.b)))]
