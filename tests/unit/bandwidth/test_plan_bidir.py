"""Bidirectional rail plans (two-rank all_reduce, nccl-tests): within the round budget, every cable twice, unambiguous."""

from __future__ import annotations

import pytest

from fabricdoc.bandwidth.plan import plan_sweep, round_budget, verify_plan
from fabricdoc.fabric.generators import rail_optimized
from fabricdoc.model.paths import tested_links as links_of
from fabricdoc.model.records import LinkKey
from tests.helpers.hashseed import outputs_under_seeds


@pytest.mark.parametrize(
    "units,hosts_per_unit,rails,spines",
    [(1, 32, 8, 32), (2, 16, 8, 16), (2, 32, 8, 32), (4, 32, 8, 32), (8, 32, 8, 32), (8, 32, 8, 8),
     (3, 16, 4, 8), (4, 4, 8, 4), (2, 4, 2, 2)],
)
def test_bidirectional_rail_plans_stay_within_the_round_budget(units, hosts_per_unit, rails, spines):
    f = rail_optimized(units=units, hosts_per_unit=hosts_per_unit, rails=rails, spines=spines)
    plan = plan_sweep(f, bidirectional=True)
    assert plan.bidirectional
    assert verify_plan(f, plan) == []  # both directions of every path are this test's alone in its round
    assert len(plan.rounds) <= round_budget(plan.hosts)
    assert set(plan.coverage) == set(f.links)
    assert min(plan.coverage.values()) >= 2
    assert plan.ambiguous == 0


def test_every_cable_of_a_bidirectional_rail_plan_lies_on_two_tests_over_different_paths():
    f = rail_optimized(units=1, hosts_per_unit=32, rails=8, spines=32)  # the tightest budget: 14 rounds
    plan = plan_sweep(f, bidirectional=True)
    through: dict[LinkKey, set[tuple[LinkKey, ...]]] = {}
    for _, src, dst in plan.tests():
        links = links_of(f, src, dst, bidirectional=True)
        for k in links:
            through.setdefault(k, set()).add(links)
    assert set(through) == set(f.links)
    assert all(len(paths) >= 2 for paths in through.values())


def test_a_bidirectional_rail_plan_is_the_same_in_every_process():
    code = (
        "from fabricdoc.fabric.generators import rail_optimized\n"
        "from fabricdoc.bandwidth.plan import plan_sweep\n"
        "print(plan_sweep(rail_optimized(2, 16, 8, 16), bidirectional=True).rounds)\n"
    )
    assert len(outputs_under_seeds(code, (1, 2))) == 1


def test_planning_leaves_the_garbage_collector_as_it_found_it():
    import gc

    from fabricdoc.errors import TopologyError
    from fabricdoc.model.topology import Fabric

    assert gc.isenabled()
    plan_sweep(rail_optimized(units=1, hosts_per_unit=4, rails=2, spines=2), bidirectional=True)
    assert gc.isenabled()
    with pytest.raises(TopologyError):
        plan_sweep(Fabric(name="empty"))  # fewer than two host ports
    assert gc.isenabled()
    gc.disable()
    try:
        rail_optimized(units=1, hosts_per_unit=4, rails=2, spines=2)
        assert not gc.isenabled()  # a caller that turned it off keeps it off
    finally:
        gc.enable()
