"""Load-only faults in the simulator: full rate for a few flows, collapse when more meet; pair rounds never trip them."""

import pytest

from fabricdoc.bandwidth.groups import GroupTest, expected_round
from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.errors import TopologyError
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.fabric.realism import Realism
from fabricdoc.model.records import PortRef
from fabricdoc.sources.sim.simulator import Simulator


def _fabric():
    return fat_tree_2(leaves=4, spines=4, hosts_per_leaf=4)


def _host(i: int) -> PortRef:
    return PortRef(f"node{i:04d}", 1)


def _group(sim: Simulator, test: str, *hosts: int):
    members = tuple(_host(i) for i in hosts)
    (exp,) = expected_round(sim.truth, [GroupTest(members, test)])
    (g,) = sim.measure_groups(0, [(test, members)], [exp])
    return g


def test_a_collapsing_cable_keeps_its_rate_for_one_flow_and_falls_apart_with_more():
    fab = _fabric()
    sim = Simulator(fab, [Fault("incast_pfc", port=_host(6), flows=2, factor=0.25)], realism=Realism.ideal())
    # one flow into node0006: full rate
    assert _group(sim, "alltoall", 5, 6).ratio == pytest.approx(0.92, abs=0.01)
    # three flows converge on node0006 (a four-host alltoall): its egress collapses to a quarter
    assert _group(sim, "alltoall", 5, 6, 7, 8).ratio == pytest.approx(0.92 * 0.25, abs=0.02)


def test_incast_collapse_is_one_direction_only():
    fab = _fabric()
    sim = Simulator(fab, [Fault("incast_pfc", port=_host(6), flows=1, factor=0.25)], realism=Realism.ideal())
    # a ring puts one flow into node0006: full rate; an alltoall two: collapsed
    assert _group(sim, "all_reduce", 5, 6, 7).ratio == pytest.approx(0.92, abs=0.01)
    assert _group(sim, "alltoall", 5, 6, 7).ratio == pytest.approx(0.23, abs=0.02)
    # two flows out of node0006 toward one host each: the collapsing direction (into node0006) is idle
    out = sim.measure_round(0, [(_host(6), _host(5)), (_host(7), _host(8))])
    assert all(p.ratio == pytest.approx(0.92, abs=0.01) for p in out)


def test_a_switch_whose_shared_buffer_collapses_slows_every_flow_through_it_above_its_limit():
    fab = _fabric()
    sim = Simulator(fab, [Fault("switch_collapse", switch="leaf02", flows=4, factor=0.5)], realism=Realism.ideal())
    assert _group(sim, "alltoall", 5, 6).ratio == pytest.approx(0.92, abs=0.01)  # two flows cross leaf02
    assert _group(sim, "alltoall", 5, 6, 7, 8).ratio == pytest.approx(0.46, abs=0.02)  # twelve
    assert sim.run().faulty_switches == {"leaf02"}


def test_a_throttling_switch_forwards_a_fixed_share_so_each_flow_slows_as_more_meet():
    """A collapse drops to one fraction at once; a throttle keeps what it forwards: four flows' worth."""
    fab = _fabric()
    sim = Simulator(fab, [Fault("switch_throttle", switch="leaf02", flows=4)], realism=Realism.ideal())
    assert _group(sim, "alltoall", 5, 6).ratio == pytest.approx(0.92, abs=0.01)  # two flows cross leaf02
    assert _group(sim, "alltoall", 5, 6, 7).ratio == pytest.approx(0.92 * 4 / 6, abs=0.02)  # six
    assert _group(sim, "alltoall", 5, 6, 7, 8).ratio == pytest.approx(0.92 * 4 / 12, abs=0.02)  # twelve
    assert sim.run().faulty_switches == {"leaf02"}


def test_pair_rounds_never_trip_a_load_only_cable_fault():
    """Pair rounds put at most one flow on a cable direction (a switch may carry many of them: a
    switch_collapse with a low limit can show in pair rounds too)."""
    fab = _fabric()
    uplink = next(k for k in fab.links if fab.nodes[k.a.node].kind == fab.nodes[k.b.node].kind == "switch")
    faults = [Fault("load_collapse", port=uplink.a, flows=1), Fault("incast_pfc", port=_host(3), flows=1)]
    sim = Simulator(fab, faults, seed=3)
    plan = plan_sweep(sim.truth)
    pairs = sim.bandwidth(plan.rounds)
    # Measured exactly as on the same fabric without the faults (same seed: same noise draws).
    clean = Simulator(fab, seed=3).bandwidth(plan.rounds)
    assert pairs and all(p.status == "ok" for p in pairs)
    assert [p.busbw_gbps for p in pairs] == [p.busbw_gbps for p in clean]
    # and the same fabric's groups do see it
    (g,) = sim.measure_groups(0, [("alltoall", tuple(fab.host_ports()))], [None])
    (healthy,) = Simulator(fab, seed=3).measure_groups(0, [("alltoall", tuple(fab.host_ports()))], [None])
    assert g.busbw_gbps < 0.6 * healthy.busbw_gbps


def test_a_group_with_a_member_behind_a_down_cable_could_not_run():
    fab = _fabric()
    sim = Simulator(fab, [Fault("down", port=_host(2))])
    (g,) = sim.measure_groups(0, [("all_reduce", (_host(1), _host(2), _host(3)))], [None])
    assert g.status == "error" and g.busbw_gbps is None


def test_a_switch_fault_needs_a_switch():
    with pytest.raises(TopologyError, match="no switch"):
        Simulator(_fabric(), [Fault("switch_collapse", switch="node0001")])
