"""Probes through one switch each: the switch's egress is the probe's bottleneck, so a switch that forwards
less under load slows the probe; probes of one round share no host and cross no other probed switch."""

from __future__ import annotations

from collections import Counter

from fabricdoc.bandwidth.switch_probes import Crossings, switch_probes
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2, fat_tree_3
from fabricdoc.model.groups import channel_load, group_flows, switch_load
from fabricdoc.model.paths import channel_ends
from fabricdoc.model.records import PortRef
from fabricdoc.sources.sim.simulator import Simulator


def _probe(fabric, sw, floor, want):
    (probe,) = switch_probes(fabric, fabric.host_ports(), [sw], Crossings(fabric), floor=Counter({sw: floor}),
                             want={sw: want}, limit={})
    return probe


def _busbw(fabric, faults, probe) -> float:
    (result,) = Simulator(fabric, faults, seed=1).measure_groups(0, [(probe.test, probe.members)])
    return result.busbw_gbps


def test_a_probe_through_a_core_slows_when_the_core_forwards_less_under_load():
    """3L k=6: a core that collapses above 6 flows. Senders all in one pod would fill the cable into the core
    first and pass however little the core forwards (0.3 of its rate: about what each of five flows per
    egress got anyway); the probe keeps an egress of the core its busiest direction instead."""
    fabric = fat_tree_3(6)
    probe = _probe(fabric, "core0003", floor=6, want=18)
    flows = group_flows(fabric, probe.members, probe.test)
    assert switch_load(fabric, flows)["core0003"] > 6
    load = channel_load(flows)
    per_gbps = {c: n / fabric.links[c[0]].capacity_gbps for c, n in load.items()}
    egress = max(v for c, v in per_gbps.items() if channel_ends(c)[0].node == "core0003")
    assert egress >= max(per_gbps.values())
    healthy = _busbw(fabric, [], probe)
    collapsed = _busbw(fabric, [Fault("switch_collapse", switch="core0003", flows=6)], probe)
    assert collapsed < 0.5 * healthy


def test_one_round_probes_every_spine_on_its_own_hosts_and_no_probe_crosses_another_spine():
    fabric = fat_tree_2(leaves=16, spines=8, hosts_per_leaf=8)
    spines = [f"spine{i:02d}" for i in range(1, 9)]
    probes = switch_probes(fabric, fabric.host_ports(), spines, Crossings(fabric), floor=Counter(dict.fromkeys(spines, 32)),
                           want=dict.fromkeys(spines, 512), limit={})
    assert probes is not None and len(probes) == 8
    members = [m for p in probes for m in p.members]
    assert len(members) == len(set(members))
    for sw, p in zip(spines, probes, strict=True):
        through = switch_load(fabric, group_flows(fabric, p.members, p.test))
        assert through[sw] > 32 and not set(through) & (set(spines) - {sw})


def test_a_probe_keeps_other_switches_within_their_limits_or_there_is_none():
    """3L k=4 with every core held to no flows: a probe through an aggregation switch stays inside its pod,
    where its four hosts cannot put more than a few flows through it."""
    fabric = fat_tree_3(4)
    cores = {f"core{i:04d}": 0 for i in range(1, 5)}
    crossed = Crossings(fabric)
    agg = "agg-p01-01"
    (probe,) = switch_probes(fabric, fabric.host_ports(), [agg], crossed, floor=Counter({agg: 1}), want={agg: 48},
                             limit=cores)
    through = switch_load(fabric, group_flows(fabric, probe.members, probe.test))
    assert through[agg] > 1 and not set(through) & set(cores)
    assert switch_probes(fabric, fabric.host_ports(), [agg], crossed, floor=Counter({agg: 8}), want={agg: 48},
                         limit=cores) is None
    assert switch_probes(fabric, fabric.host_ports(), [agg], crossed, floor=Counter({agg: 8}), want={agg: 48},
                         limit={}) is not None


def test_a_probe_crosses_no_cable_it_is_told_to_avoid_and_still_shows_its_switch():
    """Seven leaves, four spines: a failing fan already points at one spine's cable to a leaf. The probe
    through that spine leaves the cable out (a probe through it would fail for the cable) and still slows
    when the spine throttles."""
    fabric = fat_tree_2(leaves=7, spines=4, hosts_per_leaf=4)
    cable = fabric.link_at(fabric.peer(PortRef("leaf06", 5))).key
    (probe,) = switch_probes(fabric, fabric.host_ports(), ["spine01"], Crossings(fabric), floor=Counter({"spine01": 12}),
                             want={"spine01": 24}, limit={}, avoid={cable})
    flows = group_flows(fabric, probe.members, probe.test)
    assert switch_load(fabric, flows)["spine01"] > 12
    assert not any(c[0] == cable for c in channel_load(flows))
    healthy = _busbw(fabric, [], probe)
    throttled = _busbw(fabric, [Fault("switch_throttle", switch="spine01", flows=7)], probe)
    assert throttled < 0.7 * healthy
