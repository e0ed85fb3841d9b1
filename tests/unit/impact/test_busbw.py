"""AllReduce model: hand-computable rail-optimized cases, finding rules, rerouting, drains, JSON."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricdoc.fabric.generators import fat_tree_2, rail_optimized
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.impact.collectives import btree_parents, dtree_parents
from fabricdoc.impact.effects import link_effects
from fabricdoc.impact.section import impact_section
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import PortRef
from tests.helpers.evidence import port_down, slow_pairs, symbol_errors, trained

# rail_optimized(units=2, hosts_per_unit=4, rails=2, spines=2): 4 x 100 Gb/s = 400 Gb/s links.
# Ring on rail 1: gpu0001..gpu0004 on leaf-su01-r1, gpu0005..gpu0008 on leaf-su02-r1.
# The two unit-crossing edges gpu0004->gpu0005 and gpu0008->gpu0001 both use the cable
# leaf-su01-r1[5]--spine01[1] (D-mod-K picks spine01 for destination port index 0 mod 4),
# one flow in each direction. Halving it halves rail 1, and the rails split the buffer
# evenly, so ring busbw = 2 rails x 200 = 400 instead of 2 x 400 = 800.
HALF_LINK = [("leaf-su01-r1", 5), ("spine01", 1)]


def _rail_fabric():
    return rail_optimized(units=2, hosts_per_unit=4, rails=2, spines=2)


def _link_finding(fault, evidence, endpoints=HALF_LINK, fid="F001", kind="link"):
    return Finding(fid, kind, "test link", fault, "error", 0.9, evidence, list(endpoints),
                   [endpoints[0][0], endpoints[1][0]])


def _half_by_ratio():
    return _link_finding("degraded_bandwidth", [slow_pairs(0.5)])


def test_the_crossing_edges_of_rail_one_use_the_halved_cable_in_both_directions():
    f = _rail_fabric()
    key = f.link_at(PortRef("leaf-su01-r1", 5)).key
    assert key in f.path(PortRef("gpu0004", 1), PortRef("gpu0005", 1))
    assert key in f.path(PortRef("gpu0008", 1), PortRef("gpu0001", 1))


def test_nominal_ring_busbw_is_rails_times_link_rate_and_tree_is_that_times_n_minus_1_over_n():
    m = ImpactModel(_rail_fabric())
    assert m.busbw(algorithm="ring", state="nominal") == pytest.approx(800.0)
    assert m.busbw(algorithm="tree", state="nominal") == pytest.approx(800.0 * 7 / 8)


def test_half_capacity_leaf_spine_link_on_one_rail_halves_the_ring_exactly():
    half = _half_by_ratio()
    m = ImpactModel(_rail_fabric(), [half])
    d = m.detail(algorithm="ring", state="now")
    assert d["busbw_gbps"] == pytest.approx(400.0)
    assert d["per_rail_gbps"] == pytest.approx([200.0, 400.0])
    assert d["bottleneck"]["link"] == [list(e) for e in HALF_LINK]
    assert d["bottleneck"]["finding"] == half.id
    assert m.busbw(algorithm="ring", state="nominal") == pytest.approx(800.0)


def test_a_link_trained_at_half_width_gives_the_same_ring_as_a_measured_half_ratio():
    f = _rail_fabric()
    f.links[f.link_at(PortRef("leaf-su01-r1", 5)).key].lanes = 2  # trained 2 of 4 lanes
    finding = _link_finding("width_degraded", [trained("leaf-su01-r1", 5, 2)])
    m = ImpactModel(f, [finding])
    assert m.busbw(state="now") == pytest.approx(400.0)
    assert m.busbw(state="nominal") == pytest.approx(800.0)


def test_width_evidence_lowers_a_link_the_topology_still_shows_at_full_width():
    finding = _link_finding("width_degraded", [trained("leaf-su01-r1", 5, 1)])
    m = ImpactModel(_rail_fabric(), [finding])
    assert m.busbw(state="now") == pytest.approx(2 * 100.0)


def test_the_tree_does_not_feel_the_halved_link_its_bottleneck_is_the_host_nic():
    m = ImpactModel(_rail_fabric(), [_half_by_ratio()])
    assert m.busbw(algorithm="tree", state="now") == pytest.approx(700.0)


def test_best_drain_is_the_two_hosts_whose_removal_moves_both_crossings_off_the_link():
    # Draining gpu0005 makes gpu0006 (port index 10, 10 mod 4 = 2: spine02) the first host of
    # unit 2; draining gpu0001 makes gpu0002 (index 2: spine02) the first of unit 1.
    m = ImpactModel(_rail_fabric(), [_half_by_ratio()])
    best = m.best_drains(k=3)
    assert best[0]["drain"] == ["gpu0001", "gpu0005"]
    assert best[0]["busbw_gbps"] == pytest.approx(800.0)
    assert best[0]["throughput_fraction"] == pytest.approx(6 * 800 / (8 * 800))
    # no single-host drain helps, so none is listed as an alternative
    assert all(len(w["drain"]) == 2 for w in best)
    assert m.what_if([])["throughput_fraction"] == pytest.approx(0.5)
    assert m.what_if(["gpu0005"])["busbw_gbps"] == pytest.approx(400.0)


def test_a_nic_measured_at_a_quarter_slows_every_rail_and_draining_its_host_restores_it():
    f = _rail_fabric()
    nic = _link_finding("degraded_bandwidth", [slow_pairs(0.25)],
                        endpoints=[("gpu0003", 2), ("leaf-su01-r2", 3)], kind="nic")
    m = ImpactModel(f, [nic])
    assert m.busbw(state="now") == pytest.approx(2 * 100.0)
    best = m.best_drains(k=1)
    assert best[0]["drain"] == ["gpu0003"]
    assert best[0]["busbw_gbps"] == pytest.approx(800.0)


def test_a_down_host_link_makes_the_job_zero_until_that_host_is_drained():
    f = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)
    down = _link_finding("down", [port_down("leaf-su01-r1", 5)],
                         endpoints=[("node0002", 1), ("leaf01", 2)])
    m = ImpactModel(f, [down])
    assert m.busbw(state="now") == 0.0
    after = m.what_if(["node0002"])
    assert after["busbw_gbps"] == pytest.approx(400.0)


def test_a_down_spine_link_is_routed_around_and_the_detour_shares_a_link():
    # 2 leaves x 2 spines x 2 hosts: the ring crosses leaves twice. With leaf01--spine01 down
    # both crossings go through spine02: still one flow per direction, so no loss.
    f = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)
    down = _link_finding("down", [], endpoints=[("leaf01", 3), ("spine01", 1)])
    m = ImpactModel(f, [down])
    assert m.routes["now"] is not m.routes["nominal"]
    assert m.busbw(state="now") == pytest.approx(400.0)
    # with one spine left and 4 hosts per leaf, the tree's crossings pile onto one uplink
    f4 = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=4)
    m4 = ImpactModel(f4, [_link_finding("down", [], endpoints=[("leaf01", 5), ("spine01", 1)])])
    assert m4.busbw(algorithm="tree", state="now") <= m4.busbw(algorithm="tree", state="nominal")


def test_a_dead_switch_takes_its_links_down_and_the_ring_reroutes():
    f = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)
    dead = Finding("F001", "switch", "spine01", "dead", "critical", 0.99, [], None, ["spine01"])
    effects, unmapped = link_effects(f, [dead])
    assert len(effects) == 2 and all(e.down for e in effects.values())
    assert not unmapped
    m = ImpactModel(f, [dead])
    assert m.busbw(state="now") == pytest.approx(400.0)


def test_findings_that_do_not_cost_bandwidth_leave_capacity_alone_and_unknown_links_are_listed():
    f = _rail_fabric()
    symbols = _link_finding("symbol_errors", [symbol_errors("leaf-su01-r1", 5, 57)])
    ghost = _link_finding("down", [], endpoints=[("no-such-switch", 1), ("spine01", 1)], fid="F009")
    effects, unmapped = link_effects(f, [symbols, ghost])
    assert effects == {}
    assert unmapped == [ghost.id]


def test_job_hosts_restrict_the_ring_and_unknown_hosts_are_an_error():
    m = ImpactModel(_rail_fabric(), [_half_by_ratio()], job_hosts=["gpu0002", "gpu0003", "gpu0006", "gpu0007"])
    # ring gpu0003 -> gpu0006 (index 10: spine02) and gpu0007 -> gpu0002 (index 2: spine02)
    assert m.busbw(state="now") == pytest.approx(800.0)
    with pytest.raises(Exception, match="not a host"):
        ImpactModel(_rail_fabric(), job_hosts=["gpu9999"])


def test_nccl_binary_tree_shapes():
    assert btree_parents(4).tolist() == [-1, 2, 0, 2]
    assert btree_parents(8).tolist() == [-1, 2, 4, 2, 0, 6, 4, 6]
    first, second = dtree_parents(4)
    assert second.tolist() == [1, 3, 1, -1]  # the first mirrored: rank r -> n-1-parent(n-1-r)


@given(st.integers(min_value=2, max_value=300))
def test_both_trees_span_every_rank_with_one_root(n):
    for parents in dtree_parents(n):
        p = parents.tolist()
        assert sum(1 for x in p if x < 0) == 1
        assert all(x < n for x in p)
        for r in range(n):  # walking up reaches the root without a cycle
            seen, here = set(), r
            while p[here] >= 0:
                assert here not in seen
                seen.add(here)
                here = p[here]


@given(st.integers(min_value=2, max_value=24), st.sampled_from([1, 2, 4]))
def test_healthy_fabric_busbw_is_rails_times_link_rate_for_any_job_size(n_hosts, rails):
    f = rail_optimized(units=3, hosts_per_unit=8, rails=rails, spines=2)
    hosts = sorted(h.id for h in f.hosts())[:n_hosts]
    m = ImpactModel(f, job_hosts=hosts)
    assert m.busbw(state="now") == pytest.approx(rails * 400.0)
    # Within one leaf every rank sends at most 4 tree flows (interior in one tree, leaf in the
    # other): at worst (n-1)/n of the rate; small trees load their ranks less. Across leaves the
    # static D-mod-K routes may pile tree flows onto one spine port: never above the ring.
    tree = m.busbw(algorithm="tree", state="now")
    assert 0 < tree <= rails * 400.0 + 1e-6
    if n_hosts <= 8:
        assert tree >= rails * 400.0 * (n_hosts - 1) / n_hosts - 1e-6
    if n_hosts == 8:
        assert tree == pytest.approx(rails * 400.0 * 7 / 8)


def test_impact_section_has_the_issue_shape_and_is_strict_json():
    f = _rail_fabric()
    half = _half_by_ratio()
    section = impact_section(f, [half], drain_hosts=[], hours=24.0, checkpoint_minutes=5.0,
                             failure_rates={"host_mtbf_hours": 2400.0 * 8 / 100})
    out = section.as_dict()
    json.dumps(out, allow_nan=False)
    assert out["algorithm"] == "ring"
    # The half-rate cable joins a leaf and a spine: out of service, the spines' other cables carry it all.
    assert out["allreduce_busbw_gbps"] == {"nominal": 800.0, "now": 400.0, "after_drain": 400.0, "recommended": 800.0}
    assert out["recommendation"]["isolate"] == [[list(e) for e in HALF_LINK]]
    assert out["recommendation"]["drain"] == [] and out["recommendation"]["findings"] == [half.id]
    job = out["job"]
    for key in ("failure_probability", "mtbf_hours", "recommended_checkpoint_minutes", "expected_goodput"):
        assert key in job
    # 8 hosts at 192 h MTBF each -> job MTBF 24 h -> sqrt(2 x 5 x 1440) = 120 min
    assert section.job.mtbf_hours == pytest.approx(24.0)
    assert section.job.recommended_checkpoint_minutes == pytest.approx(120.0)
    choices = [w.choice for w in section.what_if]
    assert choices[:3] == ["recommended", "report", "none"] and "alternative" in choices
    drains_only = [w for w in section.alternatives if not w.isolate]
    assert drains_only[0].drain == ("gpu0001", "gpu0005")


def test_after_drain_uses_the_report_drain_list():
    f = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)
    down = _link_finding("down", [], endpoints=[("node0002", 1), ("leaf01", 2)])
    out = impact_section(f, [down], drain_hosts=["node0002"])
    assert out.allreduce_busbw_gbps.now == 0.0
    assert out.allreduce_busbw_gbps.after_drain == pytest.approx(400.0)
    assert out.job.n_hosts == 3
    assert out.by_algorithm["ring"].bottleneck_now.capacity_gbps == 0.0


@given(st.lists(st.integers(min_value=0, max_value=23), max_size=8), st.sampled_from([1, -1]))
def test_incremental_what_if_equals_the_ring_computed_from_scratch(drop, step):
    f = rail_optimized(units=3, hosts_per_unit=8, rails=2, spines=2)
    findings = [
        _link_finding("degraded_bandwidth", [slow_pairs(0.3)],
                      endpoints=[("leaf-su02-r1", 9), ("spine01", 5)]),
        _link_finding("degraded_bandwidth", [slow_pairs(0.6)],
                      endpoints=[("gpu0011", 2), ("leaf-su02-r2", 3)], fid="F002", kind="nic"),
    ]
    m = ImpactModel(f, findings, ring_step=step)
    drained = {m.job_hosts[i] for i in drop}
    kept = [h for h in m.job_hosts if h not in drained]
    assert m.what_if(drained)["busbw_gbps"] == pytest.approx(m.busbw(kept, "ring", "now"))


def test_above_the_tree_limit_only_the_ring_is_computed():
    out = impact_section(_rail_fabric(), [_half_by_ratio()], drain_hosts=[], tree_max_hosts=4)
    assert out.by_algorithm["tree"].skipped
    assert out.as_dict()["by_algorithm"]["tree"] == {"skipped": out.by_algorithm["tree"].skipped}
    assert out.allreduce_busbw_gbps.now == pytest.approx(400.0)
    json.dumps(out.as_dict(), allow_nan=False)


def test_what_if_accepts_node_ids_and_guids_and_ignores_hosts_outside_the_job():
    f = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)
    down = _link_finding("down", [], endpoints=[("node0002", 1), ("leaf01", 2)])
    m = ImpactModel(f, [down])
    guid = f.nodes["node0002"].guid
    assert m.what_if([guid])["drain"] == ["node0002"]
    assert m.what_if([guid, "not-a-host"])["busbw_gbps"] == pytest.approx(400.0)
