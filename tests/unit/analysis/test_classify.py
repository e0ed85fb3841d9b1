"""Fault class and part from all the evidence: congestion is not a broken cable, a NIC is not a cable
when only its side saw errors, overlapping slow parts are both named, nothing slow is dropped."""

from __future__ import annotations

import numpy as np
import pytest

from fabricdoc.analysis.blame import Blame
from fabricdoc.analysis.classify import apply_classes, classify
from fabricdoc.analysis.confidence import severity_for
from fabricdoc.analysis.localize import localize
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.evidence import CandidatesEvidence, CounterEvidence, SlowPairsEvidence
from fabricdoc.model.records import LinkKey, Observations, PairResult, PortRef
from fabricdoc.model.severity import Severity
from fabricdoc.report.report import Report

W, E = Severity.WARNING, Severity.ERROR


def _counter(node: str, port: int, counter: str, per_second: float = 1e8) -> CounterEvidence:
    return CounterEvidence(node=node, port=port, counter=counter, delta=per_second * 10, per_second=per_second,
                           interval_s=10.0)


def _blame(faults: dict[str, Severity], *evidence) -> Blame:
    b = Blame()
    for fault, sev in faults.items():
        b.add(fault, str(sev), 0.95, evidence[0] if evidence else SlowPairsEvidence(4, 4, 0.3, 0.4))
    b.evidence = list(evidence)
    return b


@pytest.fixture(scope="module")
def fabric():
    return fat_tree_2(4, 2, 2)


UPLINK = LinkKey.of(PortRef("leaf01", 3), PortRef("spine01", 1))
HOST_CABLE = LinkKey.of(PortRef("leaf01", 1), PortRef("node0001", 1))


def test_congestion_explains_the_slow_tests_through_it_and_names_the_port_where_it_builds_up(fabric):
    slow = SlowPairsEvidence(tests=4, slow=4, worst_ratio=0.3, median_ratio=0.4)
    b = _blame({"congestion": W, "degraded_bandwidth": E}, _counter("spine01", 1, "xmit_wait_ticks"),
               _counter("leaf01", 3, "xmit_discards", 50.0), slow)
    v = classify(fabric, UPLINK, b)
    assert (v.fault, v.kind, v.severity) == ("congestion", "port", W)
    assert v.port == PortRef("spine01", 1)  # transmit wait counts where packets queue


def test_congestion_with_symbol_errors_is_a_bad_link_first(fabric):
    b = _blame({"congestion": W, "symbol_errors": W, "degraded_bandwidth": E},
               _counter("spine01", 1, "xmit_wait_ticks"), _counter("leaf01", 3, "symbol_errors", 5.0))
    v = classify(fabric, UPLINK, b)
    # The slowdown is explained by the errors, and makes them matter more.
    assert (v.fault, v.kind, v.severity) == ("symbol_errors", "link", E)


def test_errors_only_on_the_host_side_name_the_nic_and_the_cable_with_what_tells_them_apart(fabric):
    b = _blame({"rcv_errors": E}, _counter("node0001", 1, "rcv_errors", 3.0))
    v = classify(fabric, HOST_CABLE, b)
    assert (v.fault, v.kind, v.port) == ("rcv_errors", "nic", PortRef("node0001", 1))
    assert isinstance(v.candidates, CandidatesEvidence)
    assert len(v.candidates.candidates) == 2 and "swap the cable" in v.candidates.tell_apart


def test_errors_on_both_ends_are_the_cable(fabric):
    both = _blame({"symbol_errors": E}, _counter("node0001", 1, "symbol_errors", 3.0),
                  _counter("leaf01", 1, "symbol_errors", 3.0))
    v = classify(fabric, HOST_CABLE, both)
    assert (v.kind, v.candidates) == ("link", None)


def test_symbol_errors_only_at_the_switch_end_of_a_host_cable_name_the_cable_and_the_nic(fabric):
    switch_side = _blame({"symbol_errors": E}, _counter("leaf01", 1, "symbol_errors", 3.0))
    v = classify(fabric, HOST_CABLE, switch_side)
    assert (v.fault, v.kind) == ("symbol_errors", "link")
    assert v.candidates is not None
    assert v.candidates.candidates == ("cable leaf01[1] -- node0001[1]", "NIC node0001 port 1")
    assert "swap the cable" in v.candidates.tell_apart
    # Between two switches there is no NIC to name.
    uplink = classify(fabric, UPLINK, _blame({"symbol_errors": E}, _counter("leaf01", 3, "symbol_errors", 3.0)))
    assert (uplink.kind, uplink.candidates) == ("link", None)


def test_symbol_errors_at_the_switch_end_are_one_finding_naming_both_candidates(fabric):
    from fabricdoc.model.records import PortCounters

    before = [PortCounters("leaf01", 1, 0.0, {"SymbolErrorCounter": 0})]
    after = [PortCounters("leaf01", 1, 10.0, {"SymbolErrorCounter": 500})]
    (f,) = localize(fabric, Observations(before=before, after=after, interval_s=10.0))
    assert (f.kind, f.fault) == ("link", "symbol_errors")
    (cands,) = f.evidence_of(CandidatesEvidence)
    assert set(cands.candidates) == {"cable leaf01[1] -- node0001[1]", "NIC node0001 port 1"}


@pytest.mark.parametrize("counter", ["ce_received", "qdisc_drops", "qdisc_overlimits", "rx_out_of_buffer"])
def test_congestion_counters_are_known_by_the_counter_table_not_their_spelling(fabric, counter):
    # Congestion measured at the host's end (CE marks received, qdisc drops): the congested port is
    # the host's, and it is not mistaken for error evidence beside the switch's symbol errors.
    congested = _blame({"congestion": W}, _counter("leaf01", 1, "xmit_discards", 1.0), _counter("node0001", 1, counter))
    v = classify(fabric, HOST_CABLE, congested)
    assert (v.fault, v.kind, v.port) == ("congestion", "port", PortRef("node0001", 1))
    errors = _blame({"symbol_errors": E}, _counter("node0001", 1, "symbol_errors", 3.0),
                    _counter("leaf01", 1, counter))
    v = classify(fabric, HOST_CABLE, errors)
    assert (v.kind, v.port) == ("nic", PortRef("node0001", 1))  # only the host's end counted errors


def test_a_slow_host_cable_with_clean_counters_names_nic_and_cable(fabric):
    v = classify(fabric, HOST_CABLE, _blame({"degraded_bandwidth": E}, SlowPairsEvidence(3, 3, 0.4, 0.5)))
    assert v.kind == "nic" and v.candidates is not None and len(v.candidates.candidates) == 2


def test_class_rules_absorb_with_own_or_max_severity():
    assert apply_classes({"congestion": W, "degraded_bandwidth": E}) == {"congestion": W}
    assert apply_classes({"symbol_errors": W, "degraded_bandwidth": E}) == {"symbol_errors": E}
    assert apply_classes({"congestion": W, "down": E, "degraded_bandwidth": E}) == {
        "congestion": W, "down": E, "degraded_bandwidth": E}


def test_low_confidence_is_at_most_a_warning():
    assert severity_for(Severity.CRITICAL, 0.3, 0.5) == W
    assert severity_for(E, 0.5, 0.5) == E
    assert severity_for(Severity.INFO, 0.1, 0.5) == Severity.INFO


def _pair(src: str, dst: str, ratio: float, rnd: int = 0) -> PairResult:
    return PairResult(PortRef(src, 1), PortRef(dst, 1), "ok", 400.0 * ratio, 400.0, round=rnd)


def _overlap(fabric, through_both: float) -> list:
    # node0001's cable is slow (0.48 alone); every test through the leaf01-spine01 uplink also
    # crosses it. Other tests show the remaining cables healthy.
    pairs = [
        _pair("node0001", "node0002", 0.48, 0),
        _pair("node0001", "node0003", through_both, 1),
        _pair("node0001", "node0005", through_both, 2),
        _pair("node0003", "node0005", 0.95, 0),
        _pair("node0004", "node0002", 0.95, 1),
        _pair("node0007", "node0003", 0.95, 3),
    ]
    for p in pairs:
        if UPLINK in fabric.path(p.src, p.dst):
            assert HOST_CABLE in fabric.path(p.src, p.dst)  # the premise: the uplink hides behind the cable
    return localize(fabric, Observations(pairs=pairs))


def _links(findings) -> set[LinkKey]:
    return {LinkKey.of(PortRef(f.node_ids[0], f.endpoints[0][1]), PortRef(f.node_ids[1], f.endpoints[1][1]))
            for f in findings if f.kind in ("link", "nic")}


def test_a_slow_uplink_hidden_behind_a_slow_host_cable_is_named_too(fabric):
    findings = _overlap(fabric, 0.22)
    assert _links(findings) == {HOST_CABLE, UPLINK}


def test_tests_only_as_slow_as_the_named_cable_explains_name_nothing_more(fabric):
    findings = _overlap(fabric, 0.45)
    assert _links(findings) == {HOST_CABLE}


def test_a_lone_slow_test_nothing_explains_is_reported_as_noise_not_dropped(fabric):
    # The slow test's every cable also carried a healthy test: no cable explains it, and nothing
    # repeats it: a transient slowdown (info), reported, and no reason to withhold a pass.
    pairs = [_pair("node0001", "node0003", 0.3, 0), _pair("node0001", "node0002", 0.95, 1),
             _pair("node0002", "node0003", 0.95, 2)]
    obs = Observations(pairs=pairs)
    (f,) = localize(fabric, obs)
    assert (f.kind, f.fault, f.severity) == ("pair", "slow_unexplained", Severity.INFO)
    assert f.name == "node0001[1] -> node0003[1]"
    report = Report.from_dict(Report.build(fabric, [f], obs).to_dict())  # schema-valid
    assert report.findings[0].key == f.key and report.verdict == "pass"


def test_a_slow_test_nothing_explains_that_repeats_is_a_warning(fabric):
    # The same pair slow in two tests (a re-test confirmed it); each of its two cables (the hosts share
    # leaf01) carried as many healthy tests as slow ones, so neither explains it.
    pairs = [_pair("node0001", "node0002", 0.3, 0), _pair("node0001", "node0002", 0.32, 3),
             _pair("node0001", "node0003", 0.95, 1), _pair("node0001", "node0005", 0.95, 2),
             _pair("node0002", "node0003", 0.95, 4), _pair("node0002", "node0005", 0.95, 5)]
    obs = Observations(pairs=pairs)
    findings = localize(fabric, obs)
    assert [(f.kind, f.fault, f.severity) for f in findings] == [("pair", "slow_unexplained", W)]
    assert Report.build(fabric, findings, obs).verdict == "degraded"


def test_equally_likely_cables_are_all_named_with_a_test_that_separates_them(fabric):
    # Both tests from node0001 cross its cable and the uplink: the two explain the same slow tests.
    pairs = [_pair("node0001", "node0003", 0.3, 0), _pair("node0001", "node0005", 0.3, 1),
             _pair("node0003", "node0005", 0.95, 2)]
    findings = localize(fabric, Observations(pairs=pairs))
    (f,) = [f for f in findings if f.kind in ("link", "nic")]
    assert f.confidence < 0.5 and f.severity == W  # a guess between two never drains
    (cands,) = [e for e in f.evidence if isinstance(e, CandidatesEvidence) and e.tests]
    assert len(cands.candidates) == 2
    (src, dst), = cands.tests
    path = fabric.path(fabric.resolve_port(*src), fabric.resolve_port(*dst))
    named, other = sorted(_links([f])), {UPLINK, HOST_CABLE} - _links([f])
    assert set(named) <= set(path) and not (other & set(path))


def _simulated(faults):
    from fabricdoc.bandwidth.plan import plan_sweep
    from fabricdoc.sources.sim.simulator import Simulator

    fabric = fat_tree_2(4, 2, 2)
    result = Simulator(fabric, faults, seed=5).run(plan_sweep(fabric).rounds)
    return localize(result.observed, result.observations)


def test_a_dead_neighbour_and_two_cable_faults_do_not_make_a_leaf_the_culprit():
    from fabricdoc.fabric.faults import Fault

    findings = _simulated([Fault("dead_switch", switch="spine02"), Fault("lossy", port=PortRef("leaf02", 1)),
                           Fault("down", port=PortRef("leaf02", 2))])
    switches = {(f.name, f.fault) for f in findings if f.kind == "switch"}
    assert switches == {("spine02", "dead")}
    fabric = fat_tree_2(4, 2, 2)
    named = {(link, f.fault) for f in findings if f.kind in ("link", "nic") for link in _links([f])}
    lossy, down = (fabric.link_at(PortRef("leaf02", p)).key for p in (1, 2))
    assert (lossy, "symbol_errors") in named or (lossy, "rcv_errors") in named
    assert (down, "down") in named


def test_most_links_of_a_switch_failing_the_same_way_blame_the_switch():
    from fabricdoc.fabric.faults import Fault

    findings = _simulated([Fault("lossy", port=PortRef("leaf02", p)) for p in (1, 2, 3, 4)])
    assert [(f.kind, f.name, f.fault) for f in findings] == [("switch", "leaf02", "symbol_errors")]


def _through(fabric, key, way, exclude=()):
    """Host-port pairs whose route crosses ``key`` in direction ``way`` (0: a to b), not using ``exclude``."""
    from fabricdoc.model.paths import directed

    ports = fabric.host_ports()
    return [(s, d) for s in ports for d in ports if s.node != d.node and s not in exclude and d not in exclude
            and (key, way) in directed(fabric.path(s, d), s)]


@pytest.mark.parametrize(("fine_way", "slow_ratios"), [("same", (0.38, 0.33)), ("other", (0.38, 0.33)),
                                                      ("same", (0.58, 0.55))])
def test_a_test_through_a_cable_well_above_its_slow_tests_clears_it_the_same_way_only(fine_way, slow_ratios):
    # Two slow tests through an uplink one way (transient slowdowns do this) and one more test through it
    # at the healthy figure: the same way, the cable carried 1.6-2.6 times what the slow ones reached, so
    # it is only a suspect to re-test; the other way, a one-way fault stays possible and it is named.
    fab = fat_tree_2(4, 2, 4)
    uplink = next(k for k in fab.links if {k.a.node, k.b.node} == {"leaf02", "spine01"})
    rng = np.random.default_rng(1)
    slow = _through(fab, uplink, 0)[:2]
    fine = _through(fab, uplink, 0 if fine_way == "same" else 1, exclude={p for t in slow for p in t})[0]
    pairs = [PairResult(s, d, "ok", 380.0 * r, 400.0, size_bytes=1 << 28, round=i)
             for i, ((s, d), r) in enumerate(zip(slow, slow_ratios, strict=True))]
    pairs.append(PairResult(*fine, "ok", 380.0, 400.0, size_bytes=1 << 28, round=2))
    others = [(s, d) for s in fab.host_ports() for d in fab.host_ports()
              if s.node != d.node and uplink not in fab.path(s, d) and uplink not in fab.path(d, s)]
    for n, i in enumerate(rng.choice(len(others), 24, replace=False)):
        pairs.append(PairResult(*others[int(i)], "ok", 380.0 * float(np.exp(rng.normal(0, 0.02))), 400.0,
                                size_bytes=1 << 28, round=3 + n))
    named = {f.severity for f in localize(fab, Observations(pairs=pairs))
             if f.kind == "link" and set(f.node_ids) == {"leaf02", "spine01"}}
    assert named == ({Severity.INFO} if fine_way == "same" else {E})
