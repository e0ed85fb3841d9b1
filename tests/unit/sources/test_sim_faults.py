"""Simulator faults: each kind shows in the records a real probe would give, and nowhere else;
expected rates follow today's routes."""

import pytest

from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.errors import TopologyError
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.ib import NO_RESPONSE
from fabricdoc.model.paths import expected_gbps
from fabricdoc.model.records import PortCounters, PortRef
from fabricdoc.model.topology import Fabric
from fabricdoc.sources.sim.simulator import Simulator


def _grown(before: list[PortCounters], after: list[PortCounters], name: str) -> dict[tuple[str, int], int]:
    """Per port, how much ``name`` rose between the samples (only ports where it rose)."""
    out = {}
    for b, a in zip(before, after, strict=True):
        d = a.values[name] - b.values[name]
        if d:
            out[(b.node, b.port)] = d
    return out


def _with_lfts(fabric: Fabric) -> Fabric:
    """The fabric with forwarding tables read off its healthy routes (as ibroute would give them)."""
    lfts: dict[str, dict[int, int]] = {}
    for src in fabric.host_ports():
        for dst in fabric.host_ports():
            path = fabric.path(src, dst)
            here = src
            for key, nxt in zip(path, path[1:], strict=False):
                switch = key.other(here).node
                here = nxt.a if nxt.a.node == switch else nxt.b  # the port it leaves by
                lfts.setdefault(switch, {})[fabric.port_lids[dst]] = here.port
    fabric.lfts = lfts
    fabric.invalidate()
    return fabric


def test_expected_rates_and_flows_use_the_routes_after_a_spine_died():
    fabric = _with_lfts(fat_tree_2(4, 2, 4))
    slow = PortRef("leaf01", 6)  # leaf01's uplink to spine02, next to the dead spine01
    sim = Simulator(fabric, [Fault("dead_switch", switch="spine01"), Fault("slow", port=slow, factor=0.5)], seed=1)
    pairs = sim.run(plan_sweep(fabric).rounds).observations.pairs
    bad = fabric.link_at(slow).key
    # The subnet manager routed around spine01: every test still runs, judged on today's route.
    assert pairs and all(p.status == "ok" for p in pairs)
    for p in pairs:
        today = sim.truth.path(p.src, p.dst)
        assert all(sim.truth.links[k].state == "up" for k in today)
        assert p.expected_gbps == pytest.approx(expected_gbps(sim.truth, p.src, p.dst))
        if bad in today:
            assert p.ratio < 0.5  # every test through the slow cable looks slow
    assert any(bad in sim.truth.path(p.src, p.dst) for p in pairs)


def test_tables_from_before_a_failure_are_replaced_only_when_a_link_is_down():
    fabric = _with_lfts(fat_tree_2(4, 2, 4))
    assert Simulator(fabric, [Fault("slow", port=PortRef("leaf01", 6))]).truth.lfts == fabric.lfts
    truth = Simulator(fabric, [Fault("down", port=PortRef("leaf01", 5))]).truth
    assert truth.lfts != fabric.lfts
    assert 5 not in truth.lfts["leaf01"].values()  # nothing forwarded into the dead cable
    assert fabric.link_at(PortRef("leaf01", 5)).state == "up"  # the given fabric is untouched


def test_speed_degraded_cable_keeps_its_width_and_half_width_keeps_its_speed():
    fabric = fat_tree_2(2, 2, 2)
    speed = Simulator(fabric, [Fault("degraded", port=PortRef("leaf01", 3), lane_gbps=25.0)])
    link = speed.truth.link_at(PortRef("leaf01", 3))
    assert (link.lanes, link.lane_gbps, link.max_lane_gbps) == (4, 25.0, 100.0)
    width = Simulator(fabric, [Fault("degraded", port=PortRef("leaf01", 3))])
    link = width.truth.link_at(PortRef("leaf01", 3))
    assert (link.lanes, link.max_lanes, link.lane_gbps) == (2, 4, 100.0)


def test_congested_port_waits_and_discards_at_full_width_and_speed_with_no_errors():
    fabric = fat_tree_2(2, 2, 2)
    port = PortRef("spine01", 1)
    sim = Simulator(fabric, [Fault("congested", port=port)], seed=3, interval_s=10.0)
    before, after = sim.counters()
    wait = _grown(before, after, "PortXmitWait")
    assert wait[("spine01", 1)] / 10.0 > 1e8
    assert all(v / 10.0 < 1e4 for k, v in wait.items() if k != ("spine01", 1))
    assert _grown(before, after, "PortXmitDiscards") == {("spine01", 1): 500}
    assert not _grown(before, after, "SymbolErrorCounter") and not _grown(before, after, "PortRcvErrors")
    state = next(s for s in sim.port_states() if (s.node, s.port) == ("spine01", 1))
    assert (state.state, state.lanes, state.lane_gbps) == ("Active", state.max_lanes, state.max_lane_gbps)


def test_bad_nic_counts_errors_on_the_host_side_only_and_slows_its_tests():
    fabric = fat_tree_2(2, 2, 2)
    nic = PortRef("node0002", 1)
    sim = Simulator(fabric, [Fault("bad_nic", port=nic)], seed=0)
    before, after = sim.counters()
    assert set(_grown(before, after, "PortRcvErrors")) == {("node0002", 1)}
    assert set(_grown(before, after, "SymbolErrorCounter")) == {("node0002", 1)}
    pairs = sim.run(plan_sweep(fabric).rounds).observations.pairs
    assert all((p.ratio < 0.5) == (nic in (p.src, p.dst)) for p in pairs)


def test_receive_errors_rise_without_symbol_errors():
    fabric = fat_tree_2(2, 2, 2)
    sim = Simulator(fabric, [Fault("rcv_errors", port=PortRef("leaf02", 3), rate_per_hour=3600)], seed=0)
    before, after = sim.counters()
    assert _grown(before, after, "PortRcvErrors") == {("leaf02", 3): 10}
    assert not _grown(before, after, "SymbolErrorCounter")


def test_silent_hca_answers_nothing_while_its_switch_port_stays_up():
    fabric = fat_tree_2(2, 2, 2)
    ca = PortRef("node0003", 1)
    sim = Simulator(fabric, [Fault("silent_hca", port=ca)], seed=0)
    obs = sim.run(plan_sweep(fabric).rounds).observations
    assert ("node0003", 1) not in {(c.node, c.port) for c in obs.before + obs.after}
    # Its only record is what the discovery observed (as the InfiniBand source records it): no answer.
    assert [s.state for s in obs.states if (s.node, s.port) == ("node0003", 1)] == [NO_RESPONSE]
    switch_port = fabric.peer(ca)
    state = next(s for s in obs.states if (s.node, s.port) == (switch_port.node, switch_port.port))
    assert (state.state, state.phys_state, state.peer) == ("Active", "LinkUp", None)
    assert sim.truth.link_at(ca).state == "up"  # nothing says the cable is down
    for p in obs.pairs:
        involved = ca in (p.src, p.dst)
        assert (p.status == "error") == involved
        if involved:
            assert "not responding" in p.error


def test_hung_cable_hangs_exactly_the_tests_through_it():
    fabric = fat_tree_2(4, 2, 2)
    bad = fabric.link_at(PortRef("leaf02", 3)).key
    sim = Simulator(fabric, [Fault("hung", port=PortRef("leaf02", 3))], seed=1)
    obs = sim.run(plan_sweep(fabric).rounds).observations
    assert any(p.status == "hung" for p in obs.pairs)
    for p in obs.pairs:
        assert (p.status == "hung") == (bad in fabric.path(p.src, p.dst))
        assert (p.busbw_gbps is None) == (p.status == "hung")
    assert all(s.state == "Active" for s in obs.states)


@pytest.mark.parametrize("kind", ["bad_nic", "silent_hca"])
def test_host_port_faults_on_a_switch_port_are_errors(kind):
    with pytest.raises(TopologyError, match="not a host port"):
        Simulator(fat_tree_2(2, 2, 2), [Fault(kind, port=PortRef("leaf01", 3))])
