"""Fault records: which cable a fault sits on, and the kinds the simulator injects."""

import pytest

from fabricdoc.errors import TopologyError
from fabricdoc.fabric.faults import FAULT_KINDS, HOST_FAULT_KINDS, Fault
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.records import PortRef


def test_a_fault_names_its_cable_by_either_end():
    fabric = fat_tree_2(2, 2, 2)
    near, far = PortRef("leaf01", 3), fabric.peer(PortRef("leaf01", 3))
    assert Fault("slow", port=near).link(fabric) == Fault("slow", port=far).link(fabric)


def test_a_fault_without_a_cabled_port_is_an_error():
    fabric = fat_tree_2(2, 2, 2)
    with pytest.raises(TopologyError, match="needs a port"):
        Fault("slow").link(fabric)
    with pytest.raises(TopologyError, match="not cabled"):
        Fault("slow", port=PortRef("spine01", 9)).link(fabric)


def test_every_fault_the_benchmark_scores_is_a_kind_and_host_kinds_are_among_them():
    wanted = {"down", "flapping", "degraded", "slow", "lossy", "rcv_errors", "congested", "hung",
              "dead_switch", "bad_nic", "silent_hca"}
    assert wanted <= set(FAULT_KINDS)
    assert {"bad_nic", "silent_hca"} == HOST_FAULT_KINDS
