"""Link-level what-if: ports out of service, routed around as the fabric would, searched with drains."""

from __future__ import annotations

import json

import pytest

from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.impact.remedies import best_remedies, isolation_candidates
from fabricdoc.impact.reroute import resolve_link
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import PortRef
from fabricdoc.sources.sim.simulator import rerouted_lfts
from tests.helpers.evidence import slow_pairs, symbol_errors


def _fabric():
    return fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)


def _ring_uplink(fabric):
    """The leaf01 -> spine cable the job ring's node0002 -> node0003 edge climbs."""
    return fabric.path(PortRef("node0002", 1), PortRef("node0003", 1))[1]


def _slow(fabric, key, fid="F001", ratio=0.25):
    ends = [(fabric.label(key.a.node), key.a.port), (fabric.label(key.b.node), key.b.port)]
    return Finding(fid, "link", "slow", "degraded_bandwidth", "error", 0.9, [slow_pairs(ratio)], ends,
                   [key.a.node, key.b.node])


def test_taking_the_slow_spine_cable_out_of_service_restores_the_ring():
    f = _fabric()
    key = _ring_uplink(f)
    m = ImpactModel(f, [_slow(f, key)])
    assert m.busbw() == pytest.approx(100.0)
    w = m.what_if([], ("ring", "tree"), isolate_links=[key])
    assert w["busbw_gbps"] == pytest.approx(400.0) and w["hosts"] == 4
    assert w["isolate"] == [[[f.label(key.a.node), key.a.port], [f.label(key.b.node), key.b.port]]]
    rerouted = m.routes[m.isolation_state([key])]
    assert all(key not in rerouted.path(s, d) for s in f.host_ports() for d in f.host_ports() if s != d)


def test_the_what_if_without_isolation_keeps_its_shape_and_names_nothing_isolated():
    f = _fabric()
    m = ImpactModel(f, [_slow(f, _ring_uplink(f))])
    w = m.what_if(["node0001"])
    assert {"drain", "hosts", "busbw_gbps", "vs_nominal", "throughput_fraction", "ring_busbw_gbps"} <= set(w)
    assert w["isolate"] == [] and w["drain"] == ["node0001"] and w["hosts"] == 3


def test_a_cable_can_be_named_by_its_ends_and_an_unknown_one_is_refused():
    f = _fabric()
    key = _ring_uplink(f)
    ends = [[f.label(key.b.node), key.b.port], [f.label(key.a.node), key.a.port]]
    assert resolve_link(f, ends) == key and resolve_link(f, ends[0]) == key
    from fabricdoc.errors import TopologyError

    with pytest.raises(TopologyError, match="is not cabled to"):
        resolve_link(f, [["leaf01", 1], ["spine01", 1]])  # leaf01[1] is node0001's cable
    with pytest.raises(TopologyError, match="unknown node"):
        resolve_link(f, [["leaf99", 1], ["spine01", 1]])


def test_isolating_a_hosts_only_cable_leaves_the_host_without_a_route():
    f = _fabric()
    host_cable = f.link_at(PortRef("node0001", 1)).key
    m = ImpactModel(f)
    assert m.what_if([], isolate_links=[host_cable])["busbw_gbps"] == 0.0
    assert m.what_if(["node0001"], isolate_links=[host_cable])["busbw_gbps"] == pytest.approx(400.0)


def test_forwarding_tables_are_recomputed_minhop_when_the_fabric_has_them():
    f = _fabric()
    f.lfts = rerouted_lfts(f)
    key = _ring_uplink(f)
    m = ImpactModel(f, [_slow(f, key)])
    assert m.engine == "minhop"
    state = m.isolation_state([key])
    rerouted = m.routes[state]
    assert rerouted.lfts and rerouted.lfts != f.lfts
    assert all(key not in rerouted.path(s, d) for s in f.host_ports() for d in f.host_ports() if s != d)
    assert m.what_if([], isolate_links=[key])["busbw_gbps"] == pytest.approx(400.0)


def test_candidates_are_the_blamed_switch_cables_not_host_cables_or_congestion():
    f = _fabric()
    spine = _ring_uplink(f)
    host = f.link_at(PortRef("node0004", 1)).key
    congested = Finding("F003", "port", "busy", "congestion", "warning", 0.9, [], [("leaf02", 3)], ["leaf02"])
    m = ImpactModel(f, [_slow(f, spine), _slow(f, host, "F002"), congested])
    assert isolation_candidates(m) == [spine]


def test_the_best_remedy_isolates_the_spine_cable_and_drains_the_slow_host():
    f = _fabric()
    spine = _ring_uplink(f)
    host = f.link_at(PortRef("node0004", 1)).key
    m = ImpactModel(f, [_slow(f, spine), _slow(f, host, "F002", ratio=0.5)])
    best = best_remedies(m, keep_drained=[], k=3, algorithms=("ring", "tree"))[0]
    assert best["drain"] == ["node0004"] and len(best["isolate"]) == 1
    assert best["busbw_gbps"] == pytest.approx(400.0) and best["hosts"] == 3


def test_a_cable_with_symbol_errors_and_no_bandwidth_loss_is_still_taken_out_when_it_costs_nothing():
    f = _fabric()
    key = _ring_uplink(f)
    ends = [(f.label(key.a.node), key.a.port), (f.label(key.b.node), key.b.port)]
    noisy = Finding("F001", "link", "noisy", "symbol_errors", "error", 0.9, [symbol_errors(ends[0][0], ends[0][1])],
                    ends, [key.a.node, key.b.node])
    m = ImpactModel(f, [noisy])
    best = best_remedies(m, k=1)[0]
    assert best["isolate"] and best["busbw_gbps"] == pytest.approx(400.0)


def test_the_demo_recommendation_takes_the_bad_spine_cables_out_and_raises_busbw(tmp_path):
    from fabricdoc.report.render import summary_text
    from fabricdoc.sweep import SweepConfig, run_sweep

    report = run_sweep(SweepConfig(fabric="demo"))
    impact = json.loads(report.to_json())["impact"]
    bw = impact["allreduce_busbw_gbps"]
    assert bw["recommended"] > bw["after_drain"] * 1.5
    rec = impact["recommendation"]
    spine_faults = {f.id for f in report.findings if f.kind == "link" and all("spine" in e[0] or "leaf" in e[0]
                                                                            for e in f.endpoints)}
    assert spine_faults and set(rec["findings"]) == spine_faults
    assert all({e[0][:4] for e in link} == {"leaf", "spin"} for link in rec["isolate"])
    assert [d.node for d in report.drain] == rec["drain"]
    assert impact["what_if"][0]["choice"] == "recommended"
    text = summary_text(report)
    assert "take out of service (3 cables, routed around)" in text and "recommended 400.0" in text
    assert all(f.action is not None for f in report.findings)


def test_the_incremental_what_if_with_a_port_out_of_service_equals_the_ring_computed_from_scratch():
    from fabricdoc.fabric.generators import rail_optimized

    f = rail_optimized(units=3, hosts_per_unit=8, rails=2, spines=2)
    key = f.link_at(PortRef("leaf-su01-r1", 9)).key
    m = ImpactModel(f, [_slow(f, key)])
    state = m.isolation_state([key])
    for drop in ([], ["gpu0001"], ["gpu0008", "gpu0009", "gpu0017"]):
        kept = [h for h in m.job_hosts if h not in drop]
        assert m.what_if(drop, isolate_links=[key])["busbw_gbps"] == pytest.approx(m.busbw(kept, "ring", state))
