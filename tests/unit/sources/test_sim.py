"""The simulator: reproducible, fair sharing, faults show where they should."""

import numpy as np
import pytest

from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.errors import TopologyError
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.fabric.realism import Realism
from fabricdoc.model.flows import maxmin
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.sources.sim.simulator import Simulator


def test_maxmin_splits_a_shared_link_and_gives_the_rest_to_others():
    a, b = LinkKey.of(PortRef("x", 1), PortRef("y", 1)), LinkKey.of(PortRef("y", 2), PortRef("z", 1))
    caps = {a: 100.0, b: 30.0}
    rates = maxmin([[(a, 0), (b, 0)], [(a, 0)], []], caps.__getitem__)
    assert rates[0] == pytest.approx(30.0)
    assert rates[1] == pytest.approx(70.0)
    assert rates[2] == 0.0


def test_same_seed_same_records():
    fabric = fat_tree_2(4, 2, 2)
    plan = plan_sweep(fabric)
    faults = [Fault("slow", port=PortRef("leaf01", 3))]
    one = Simulator(fabric, faults, seed=7).run(plan.rounds).observations
    two = Simulator(fabric, faults, seed=7).run(plan.rounds).observations
    assert one.pairs == two.pairs
    assert [c.values for c in one.after] == [c.values for c in two.after]


def test_the_ideal_simulator_measures_every_healthy_test_at_one_efficiency():
    fabric = fat_tree_2(4, 2, 2)
    obs = Simulator(fabric, seed=1, realism=Realism.ideal(0.92)).run(plan_sweep(fabric).rounds).observations
    ratios = [p.ratio for p in obs.pairs]
    assert ratios and all(r == pytest.approx(0.92, abs=1e-3) for r in ratios)


def test_healthy_measurements_scatter_like_a_real_clusters_below_the_line_rate():
    fabric = fat_tree_2(8, 4, 4)
    realism = Realism({"sendrecv": 0.85}, host_variance=0.02, jitter=0.03, outlier_rate=0.05, background=0.02)
    sim = Simulator(fabric, seed=3, realism=realism)
    plan = plan_sweep(fabric)
    pairs = [p for k in range(4) for p in sim.bandwidth(plan.rounds, first_round=k * len(plan.rounds))]
    ratios = np.array([p.ratio for p in pairs])
    assert ratios.max() <= 0.99  # never faster than the line: hardware does not
    calm = np.array([p.ratio for p in pairs if (p.round, p.src, p.dst) not in sim.transients])
    assert 0.78 < np.median(calm) < 0.86  # the efficiency, less other traffic's share
    assert 0.02 < np.std(np.log(calm)) < 0.07  # hosts, jitter and background: a few percent
    # Transient outliers: about the rate asked for, each between 0.3 and 0.8 of a calm test.
    assert 0.02 < len(sim.transients) / len(pairs) < 0.09
    slow = [p.ratio for p in pairs if (p.round, p.src, p.dst) in sim.transients]
    assert slow and max(slow) < 0.8 * np.median(calm) * 1.1


def test_each_host_has_its_own_factor_and_a_test_runs_at_its_slower_host():
    fabric = fat_tree_2(4, 2, 4)
    sim = Simulator(fabric, seed=5, realism=Realism({"sendrecv": 0.9}, host_variance=0.03, jitter=0.0,
                                                     outlier_rate=0.0, background=0.0))
    assert len(set(sim.host_factor.values())) == len(fabric.hosts())
    for p in sim.bandwidth(plan_sweep(fabric).rounds):
        slower = min(sim.host_factor[p.src.node], sim.host_factor[p.dst.node])
        # The efficiency at the simulator's message size (256 MiB), times the slower host.
        assert p.ratio == pytest.approx(min(0.99, sim.realism.at("sendrecv", 1 << 28) * slower), abs=2e-3)


def test_efficiency_rises_with_the_message_size():
    r = Realism({"sendrecv": 0.9}, half_size_bytes=4 << 20)
    sizes = [1 << 16, 1 << 20, 1 << 24, 1 << 28]
    effs = [r.at("sendrecv", s) for s in sizes]
    assert effs == sorted(effs) and effs[0] < 0.1 and effs[-1] > 0.88
    assert r.at("fan:4", 1 << 28) == r.at("fan", 1 << 28)


def test_slow_link_slows_exactly_the_pairs_through_it():
    fabric = fat_tree_2(4, 2, 2)
    bad = fabric.link_at(PortRef("leaf02", 3)).key
    obs = Simulator(fabric, [Fault("slow", port=PortRef("leaf02", 3), factor=0.4)], seed=1).run(
        plan_sweep(fabric).rounds).observations
    for p in obs.pairs:
        through = bad in fabric.path(p.src, p.dst)
        assert (p.ratio < 0.5) == through


def test_lossy_link_raises_symbol_errors_at_that_port_only():
    fabric = fat_tree_2(2, 2, 2)
    sim = Simulator(fabric, [Fault("lossy", port=PortRef("spine01", 2), rate_per_hour=36000)], seed=0)
    before, after = sim.counters()
    grew = {(b.node, b.port) for b, a in zip(before, after, strict=True)
            if a.values["SymbolErrorCounter"] > b.values["SymbolErrorCounter"]}
    assert grew == {("spine01", 2)}


def test_dead_switch_takes_down_every_port():
    fabric = fat_tree_2(2, 2, 2)
    sim = Simulator(fabric, [Fault("dead_switch", switch="leaf01")])
    down = {(s.node, s.port) for s in sim.port_states() if s.state == "Down"}
    assert ("leaf01", 1) in down and len([d for d in down if d[0] == "leaf01"]) == 4


def test_unknown_fault_kind_and_uncabled_port_are_errors():
    fabric = fat_tree_2(2, 2, 2)
    with pytest.raises(TopologyError, match="unknown fault kind"):
        Simulator(fabric, [Fault("gremlins", port=PortRef("leaf01", 1))])
    with pytest.raises(TopologyError, match="no switch"):
        Simulator(fabric, [Fault("dead_switch", switch="spine09")])
    assert np.isfinite(Simulator(fabric).interval_s)


def test_a_simulated_sweep_is_stamped_with_the_real_clock():
    import time

    fabric = fat_tree_2(4, 2, 2)
    before = time.time()
    obs = Simulator(fabric, [Fault("flapping", port=PortRef("leaf01", 3))], seed=1,
                    interval_s=5.0).run(plan_sweep(fabric).rounds).observations
    after = time.time()
    stamps = [c.timestamp for c in obs.before + obs.after] + [e.timestamp for e in obs.events]
    assert obs.events and stamps
    # Samples span the interval ending now; events fall inside it: history and flaps per week need real times.
    assert all(before - 5.0 - 1 <= t <= after + 5.0 + 1 for t in stamps)
    assert max(c.timestamp for c in obs.after) - min(c.timestamp for c in obs.before) == pytest.approx(5.0)
