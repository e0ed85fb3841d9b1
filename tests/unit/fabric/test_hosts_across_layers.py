"""A host with one CA per HCA is one host everywhere: the test plan, the impact rings, the summary."""

from __future__ import annotations

from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.impact.busbw import ImpactModel
from tests.helpers.fabrics import multi_hca_hosts

HCAS = (3, 0, 2, 1)


def test_the_plan_counts_hosts_not_hcas_and_never_pairs_a_host_with_itself():
    fabric = multi_hca_hosts(HCAS, hosts=("a", "b", "c"), spine=True)
    plan = plan_sweep(fabric)
    host = {n.id: n.attrs["host"] for n in fabric.hosts()}
    assert plan.hosts == 3 and plan.ports_per_host == 4
    assert plan.test_count > 0
    assert all(host[s.node] != host[d.node] for _, s, d in plan.tests())
    assert plan.stats()["all_pairs_host_tests"] == 3


def test_the_summary_counts_a_multi_hca_host_once():
    assert multi_hca_hosts(HCAS, hosts=("a", "b", "c")).summary()["hosts"] == 3


def test_impact_rings_meet_rail_to_rail_even_where_guid_order_differs_between_hosts():
    # No spine: a ring edge from rail r of one host to another rail of the next has no path at all.
    fabric = multi_hca_hosts(HCAS, reverse_guids_on=("dgxb",))
    model = ImpactModel(fabric)
    a, b = model.host_ports["dgxa"], model.host_ports["dgxb"]
    for pa, pb in zip(a, b, strict=True):
        assert fabric.peer(pa).node == fabric.peer(pb).node  # the same rail's leaf
    assert model.busbw(["dgxa", "dgxb"], "ring", "nominal") > 0
