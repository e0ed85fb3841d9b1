"""iblinkinfo and ibqueryerrors on real captures (tests/data/iblinkinfo/real_*, tests/data/ibqueryerrors/real_*)."""

from __future__ import annotations

from collections import Counter

import pytest
from fabricdoc.probes.ib.iblinkinfo import could_be, parse_iblinkinfo, parse_iblinkinfo_lines
from fabricdoc.probes.ib.ibqueryerrors import parse_ibqueryerrors

from fabricdoc.errors import ParseError
from tests.helpers.paths import DATA


def linkinfo(case: str, name: str = "iblinkinfo.txt"):
    path = DATA / "iblinkinfo" / f"real_{case}" / name
    return path, path.read_text()


# -- iblinkinfo ---------------------------------------------------------------------------------


@pytest.mark.parametrize(("hint", "lanes", "gbps"), [
    # The hint is "(%s %s)" of a width and a speed message (rdma-core ibdiag_common.c get_max_msg).
    ("( )", None, None),
    ("(Could be 12X )", 12, None),
    ("( Could be 53.125 Gbps)", None, 53.125),
    ("(Could be 12X Could be 10.0 Gbps)", 12, 10.0),
    ("( Could be FDR10 (Found link at QDR but expected speed is FDR10))", None, 10.3125),
])
def test_both_could_be_hints_are_read(hint, lanes, gbps):
    assert could_be(hint) == (lanes, gbps)


def test_an_edr_link_on_an_hdr_switch_says_it_could_be_hdr():
    path, text = linkinfo("blog_hdr_mqm8700_switch_S_could_be", "iblinkinfo-S.txt")
    states = {s.port: s for s in parse_iblinkinfo(text, str(path))}
    assert len(states) == 41
    hca = states[21]
    assert (hca.state, hca.lanes, hca.lane_gbps, hca.max_lanes, hca.max_lane_gbps) == ("Active", 4, 25.78125, 4, 53.125)
    isl = states[40]
    assert (isl.lane_gbps, isl.max_lane_gbps) == (53.125, 53.125)
    assert Counter(s.state for s in states.values()) == {"Down": 35, "Active": 6}


def test_a_20_node_hdr_cluster_reads_every_port_and_the_aggregation_node():
    path, text = linkinfo("blog_hdr_quantum_20node_sharp_an")
    ports = parse_iblinkinfo_lines(text, str(path))
    assert Counter((p.state, p.lanes, p.lane_gbps) for p in ports) == {
        ("Active", 4, 53.125): 44, ("Down", None, None): 19}
    an = next(p for p in ports if p.description == "Mellanox Technologies Aggregation Node")
    assert (an.remote_description, an.remote_lid, an.remote_port) == ("Quantum Mellanox Technologies", 3, 41)


def test_an_elided_capture_is_refused_at_the_elision():
    path, text = linkinfo("nccl_tests_issue71_v100_edr_on_mqm8700")
    with pytest.raises(ParseError) as info:
        parse_iblinkinfo_lines(text, str(path))
    assert info.value.line_no == 14 and info.value.line.strip() == "..."


def test_a_capture_missing_a_node_still_parses_what_it_has():
    path, text = linkinfo("notes_edr_sb7700_2node_2019")
    ports = parse_iblinkinfo_lines(text, str(path))
    assert Counter(p.description for p in ports) == {"MF0;SB7700:MSB7700/U1": 18, "n02 HCA-1": 1, "mgt mlx5_0": 1}
    assert {p.lane_gbps for p in ports if p.state == "Active"} == {25.78125}


# -- ibqueryerrors ------------------------------------------------------------------------------


def unquoted() -> str:
    """The mailing-list capture without its e-mail quote prefix and the author's prompt line (see README)."""
    path = DATA / "ibqueryerrors" / "real_linux_rdma_2021_sx6036_ceph_quoted" / "ibqueryerrors.quoted.txt"
    lines = path.read_text().splitlines()
    assert lines[0] == "> # ibqueryerrors" and all(ln.startswith(">") for ln in lines)
    return "".join(ln[2:] + "\n" for ln in lines[1:])


def test_saturated_counters_read_at_their_register_maximum():
    r = parse_ibqueryerrors(unquoted(), source="mail", timestamp=0.0)
    by = {(c.node, c.port): c.values for c in r.counters}
    assert by[("0x0002c903006e29b0", 5)]["SymbolErrorCounter"] == 65535
    assert by[("0x0002c903006e29b0", 6)] == {"LinkDownedCounter": 9, "PortRcvSwitchRelayErrors": 2285,
                                             "PortXmitDiscards": 14176, "PortXmitWait": 4294967295}
    assert ("0x0002c903006e29b0", "ALL") not in by and len(r.counters) == 14
    assert (r.nodes_checked, r.ports_checked, r.bad_ports) == (4, 43, 14)
    assert r.descriptions["0x0002c903006e29b0"] == "MF0;ys23ib4:SX6036/U1"


@pytest.mark.parametrize(("old", "new", "why"), [
    ("[SymbolErrorCounter == 65535] [LinkErrorRecoveryCounter == 8]",
     "[SymbolErrorCounter == 70000] [LinkErrorRecoveryCounter == 8]", "16-bit register"),
    ("[LinkDownedCounter == 9]", "[LinkDownedCounter == 256]", "8-bit register"),
    ("[PortXmitWait == 76959324]", "[PortXmitWait == 4294967296]", "32-bit register"),
    ("[VL15Dropped == 14]", "[VL15Dropped == -3]", "outside its 16-bit register"),
])
def test_a_value_its_ibta_register_cannot_hold_is_refused_with_its_line(old, new, why):
    text = unquoted()
    assert old in text
    bad = text.replace(old, new, 1)
    line_no = next(i for i, ln in enumerate(bad.splitlines(), 1) if new in ln)
    with pytest.raises(ParseError, match=why) as info:
        parse_ibqueryerrors(bad, source="mail")
    assert info.value.line_no == line_no


def test_iblinkinfo_reads_both_could_be_phrases_and_a_far_end_that_does_not_answer():
    from tests.helpers.ib import captured

    sdr = [s for s in parse_iblinkinfo(captured("iblinkinfo", "sdr_on_qdr")) if s.lane_gbps == 2.5]
    assert len(sdr) == 2
    assert {(s.lanes, s.max_lanes, s.max_lane_gbps, s.max_lanes_from, s.max_lane_gbps_from) for s in sdr} == {
        (4, 12, 10.0, "could_be", "could_be")}
    silent = [s for s in parse_iblinkinfo(captured("iblinkinfo", "ca_not_responding")) if s.far_answered is False]
    assert [(s.node, s.port, s.state, s.phys_state, s.peer) for s in silent] == [
        ("0x0002c90200000005", 2, "Active", "LinkUp", None)]
