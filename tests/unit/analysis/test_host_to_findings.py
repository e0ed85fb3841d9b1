"""Host records from real formats reach localization: an mlx5 PFC storm and a flapping RDMA port."""

from __future__ import annotations

import os
from dataclasses import replace

from fabricdoc.probes.host import ethtool
from fabricdoc.probes.host import sysfs as ibsysfs

from fabricdoc.analysis.localize import localize
from fabricdoc.model.evidence import CounterEvidence
from fabricdoc.model.records import Node, Observations, PortRef
from fabricdoc.model.topology import Fabric
from tests.helpers.paths import DATA


def fabric(host: str) -> Fabric:
    fab = Fabric(name="fdh-unit")
    fab.add_node(Node(host, "host", host, 1))
    fab.add_node(Node("leaf1", "switch", "leaf1", 8))
    fab.add_link(PortRef(host, 1), PortRef("leaf1", 3))
    return fab


def test_pause_storm_counters_from_mlx5_ethtool_become_a_finding():
    with open(os.path.join(DATA, "ethtool", "mlx5_cx6", "ethtool-S.txt")) as fh:
        stats = ethtool.parse_ethtool_stats(fh.read())
    before = ethtool.ethtool_counters(stats, "gpu017", 1, "ens1f0np0", timestamp=0.0)
    grown = dict(before.values, tx_pause_storm_warning_events=5, rx_prio3_pause=263144 + 600000)
    after = replace(before, timestamp=60.0, values=grown)
    findings = localize(fabric("gpu017"), Observations(before=[before], after=[after]))
    storm = [f for f in findings if f.fault == "pause_storm"]
    assert len(storm) == 1
    raw = {n for e in storm[0].evidence_of(CounterEvidence) for n in e.raw}
    assert "tx_pause_storm_warning_events" in raw


def test_link_downed_on_an_rdma_port_from_sysfs_becomes_flapping():
    raw = ibsysfs.read_tree(os.path.join(DATA, "sysfs", "mlx5_host"))
    counters, _states, _ = ibsysfs.parse_tree(raw, timestamp=0.0)
    roce = next(c for c in counters if c.ifname == "ens1f0np0")
    after = replace(roce, timestamp=300.0, values=dict(roce.values, link_downed=4))
    findings = localize(fabric(roce.node), Observations(before=[roce], after=[after]))
    assert [f.fault for f in findings] == ["flapping"]
    (ev,) = findings[0].evidence_of(CounterEvidence)
    assert ev.raw == ("link_downed",) and ev.delta == 3
