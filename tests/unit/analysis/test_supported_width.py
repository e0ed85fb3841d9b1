"""A link trained below what both its ends support (ibdiagnet PORTS: LinkWidthSupported, LinkSpeedSupported)
is degraded, even where most of the fabric trained low and the majority rule would call that normal."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest
from fabricdoc.probes.ib import ibdiagnet as diag

from fabricdoc.analysis.localize import localize
from fabricdoc.fabric.infiniband import cap_supported, expect_from_ports
from fabricdoc.model.evidence import StateEvidence
from fabricdoc.model.ib import IB_SPEEDS, IbPortState
from fabricdoc.model.records import Observations
from fabricdoc.sources.ibdiagnet import read_ibdiagnet_dir

SAMPLE = Path(__file__).resolve().parents[2] / "data" / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-31"
HDR, NDR = IB_SPEEDS["HDR"], IB_SPEEDS["NDR"]


@pytest.fixture(scope="module")
def sample():
    """The real NDR capture: its fabric, its PORTS rows (4X and NDR supported) and its link states."""
    run = read_ibdiagnet_dir(SAMPLE)
    db_csv = SAMPLE / "ibdiagnet2.db_csv"
    ports = diag.db_ports(diag.parse_db_csv(db_csv.read_text(encoding="utf-8"), str(db_csv)))
    return run.fabric, ports, run.observations.states


def _as_iblinkinfo(states, lanes: int, gbps: float) -> list[IbPortState]:
    """The live view of the same ports when every link trained at ``lanes`` x ``gbps`` and iblinkinfo
    hinted "Could be 12X" (what some firmware and ibsim print for every port) and nothing for the speed."""
    return [IbPortState(s.node, s.port, s.state, s.phys_state, lanes, gbps, 12, gbps, s.peer, "iblinkinfo",
                        max_lanes_from="could_be", max_lane_gbps_from="could_be") for s in states]


def test_every_link_trained_low_is_degraded_against_both_ends_supported_values(sample):
    fabric, ports, states = sample
    assert {(p.max_lanes, p.max_speed) for p in ports if p.state == "Active" and p.port} == {(4, "NDR")}
    live = cap_supported(_as_iblinkinfo(states, 1, HDR))
    assert not [s for s in live if s.lanes < s.max_lanes]  # the majority rule calls 1X normal here
    judged = expect_from_ports(live, ports)
    assert {(s.lanes, s.max_lanes, s.max_lanes_from) for s in judged} == {(1, 4, "supported")}
    assert {(s.lane_gbps, s.max_lane_gbps, s.max_lane_gbps_from) for s in judged} == {(HDR, NDR, "supported")}
    evidence = [e for f in localize(fabric, Observations(states=judged)) for e in f.evidence
                if isinstance(e, StateEvidence)]
    assert evidence and {e.expected_from for e in evidence} == {"supported"}
    assert {(e.lanes, e.supported_lanes) for e in evidence if e.lanes is not None} <= {(1, 4)}


def test_a_link_is_expected_at_the_lower_of_its_two_ends(sample):
    fabric, ports, states = sample
    one = next(s for s in states if s.state == "Active")
    # The far end supports only 1X at HDR: the link trained as well as it can.
    far = {(p.node_guid, p.port) for p in ports} & {(one.peer.node, one.peer.port)}
    assert far
    narrow = [replace(p, max_lanes=1, max_speed="HDR") if (p.node_guid, p.port) in far else p for p in ports]
    judged = {s.ref: s for s in expect_from_ports(_as_iblinkinfo(states, 1, HDR), narrow)}
    assert (judged[one.ref].max_lanes, judged[one.ref].max_lane_gbps) == (1, HDR)
    assert not [f for f in localize(fabric, Observations(states=[judged[one.ref], judged[one.peer]]))]


def test_an_expectation_from_the_expected_fabric_is_kept_and_the_majority_never_lowers_portinfo(sample):
    _, ports, states = sample
    topo = [replace(s, max_lanes=8, max_lanes_from="topology") for s in _as_iblinkinfo(states, 4, NDR)]
    assert {s.max_lanes for s in expect_from_ports(topo, ports)} == {8}
    read = expect_from_ports(_as_iblinkinfo(states, 1, HDR), ports)
    assert cap_supported(read) == read
