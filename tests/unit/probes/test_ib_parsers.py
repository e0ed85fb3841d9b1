"""Parsers of infiniband-diags output, on real outputs captured under ibsim (tests/data/ib/)."""

from __future__ import annotations

import pytest
from fabricdoc.probes.ib.iblinkinfo import parse_iblinkinfo
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover, parse_ibnetdiscover_ports
from fabricdoc.probes.ib.ibqueryerrors import parse_ibqueryerrors
from fabricdoc.probes.ib.ibroute import parse_ibroute, parse_routes
from fabricdoc.probes.ib.ibtracert import parse_ibtracert
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricdoc.errors import ParseError, TopologyError
from fabricdoc.fabric.generators import fat_tree_2, rail_optimized
from fabricdoc.fabric.infiniband import cap_supported, fabric_from_ib
from fabricdoc.fabric.netfile import write_netfile
from fabricdoc.model.ib import guid_id
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.sources.infiniband import load_ibnetdiscover_file
from tests.helpers.ib import DATA, captured

LEAF01 = "0x0002c90200000003"
LEAF02 = "0x0002c90200000004"
LEAF04 = "0x0002c90200000006"
SPINE02 = "0x0002c90200000002"
NODE0001 = "0x0002c90300000001"
NODE0003 = "0x0002c90300000003"
NODE0006 = "0x0002c90300000006"
NODE0016 = "0x0002c90300000010"


def topo(case: str = "healthy"):
    return parse_ibnetdiscover(captured("ibnetdiscover", case), source=f"ibnetdiscover/{case}")


# -- ibnetdiscover -------------------------------------------------------------


def test_ibnetdiscover_keeps_the_generated_guids_lids_and_descriptions():
    gen = fat_tree_2(leaves=4, spines=2, hosts_per_leaf=4)
    t = topo()
    assert sorted(n.guid for n in t.nodes) == sorted(n.guid for n in gen.nodes.values())
    by_guid = {n.guid: n for n in t.nodes}
    for node in gen.nodes.values():
        rec = by_guid[node.guid]
        assert rec.description == node.label
        assert rec.type == ("Switch" if node.kind == "switch" else "Ca")
        if node.kind == "switch":
            assert rec.lid == node.lid
        else:
            assert rec.ports[0].lid == gen.port_lids[PortRef(node.id, 1)]


def test_ibnetdiscover_reads_each_cable_with_its_trained_width_and_speed():
    t = topo()
    leaf02 = t.node(LEAF02)
    port2 = next(p for p in leaf02.ports if p.port == 2)
    assert (port2.remote_guid, port2.remote_port, port2.remote_description) == (NODE0006, 1, "node0006")
    assert (port2.lanes, port2.speed, port2.lane_gbps) == (1, "HDR", 53.125)
    others = [p for n in t.nodes for p in n.ports if {n.guid, p.remote_guid} != {LEAF02, NODE0006}]
    assert {(p.lanes, p.speed) for p in others} == {(4, "HDR")}


def test_ibnetdiscover_after_unlink_no_longer_shows_the_cut_off_host():
    t = topo("unlinked")
    assert t.node(NODE0016) is None
    assert 4 not in {p.port for p in t.node(LEAF04).ports}
    assert len(t.nodes) == len(topo().nodes) - 1


def test_ibnetdiscover_whole_leaf_unlinked_loses_the_leaf_and_its_hosts():
    t = topo("leaf_unlinked")
    descs = {n.description for n in t.nodes}
    assert "leaf03" not in descs
    assert not descs & {"node0009", "node0010", "node0011", "node0012"}


@pytest.mark.parametrize(
    ("case", "line_no", "reason"),
    [
        ("truncated", 92, "ends early"),  # the last line: a node header the cut left without ports
        ("cut_mid_line", None, "middle of a line"),
        ("garbled", 11, "port line"),
    ],
)
def test_ibnetdiscover_bad_output_raises_parse_error_naming_source_and_line(case, line_no, reason):
    with pytest.raises(ParseError) as exc:
        parse_ibnetdiscover(captured("ibnetdiscover", case), source="ibnetdiscover")
    err = exc.value
    assert err.source == "ibnetdiscover"
    assert reason in err.reason
    if line_no is not None:
        assert err.line_no == line_no
    if case == "garbled":
        assert "\x00" in err.line
    assert "\n" not in str(err)


@pytest.mark.parametrize(
    ("case", "parse"),
    [
        ("ibnetdiscover/healthy", parse_ibnetdiscover),
        ("ibnetdiscover/fat_tree_64", parse_ibnetdiscover),
        ("ibnetdiscover/ports", parse_ibnetdiscover_ports),
        ("dump_fts/fat_tree_64", parse_routes),
    ],
)
def test_a_saved_file_whose_last_line_has_no_line_end_reads_the_same(case, parse):
    text = (DATA / case / "stdout.txt").read_text()
    assert text.endswith("\n")
    assert parse(text.rstrip("\n"), source="saved") == parse(text, source="saved")
    # Cut inside that last line, it is refused: the line is not whole.
    last = text.rstrip("\n").rsplit("\n", 1)[1]
    for keep in (len(last) // 2, len(last.rstrip()) - 1):
        cut = text.rstrip("\n")[: len(text.rstrip("\n")) - len(last) + keep]
        with pytest.raises(ParseError, match="middle of a line|ends early"):
            parse(cut, source="saved")


def test_ibnetdiscover_empty_output_is_an_error():
    with pytest.raises(ParseError, match="no nodes"):
        parse_ibnetdiscover("", source="ibnetdiscover")


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_ibnetdiscover_any_cut_is_rejected_or_keeps_every_node(data):
    text = captured("ibnetdiscover", "healthy")
    cut = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    prefix = text[:cut]
    try:
        t = parse_ibnetdiscover(prefix, source="cut")
    except ParseError as err:
        assert err.source == "cut"
        return
    assert len(t.nodes) == len(topo().nodes)  # only trailing blank lines were cut


@settings(max_examples=40, deadline=None)
@given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=30))
def test_ibnetdiscover_a_foreign_line_is_reported_with_its_number(junk):
    junk = junk.replace("\n", " ").replace("\r", " ").strip()
    if not junk or junk.startswith("#"):
        return
    lines = captured("ibnetdiscover", "healthy").splitlines(keepends=True)
    lines.insert(20, junk + "\n")
    try:
        parse_ibnetdiscover("".join(lines), source="x")
    except ParseError as err:
        assert err.line_no in (0, 21)
        return
    # The junk happened to be a valid header directive (e.g. 'devid=1'): nothing lost.
    assert junk.split("=")[0].strip() in ("vendid", "devid", "sysimgguid", "switchguid", "caguid", "rtguid",
                                           "caguids", "hcaguid", "hcaguids", "width", "speed", "module",
                                           "include", "pdebug", "do") or junk.startswith(("do", "width", "speed"))


def test_the_net_file_parses_to_the_same_guids_as_the_live_discovery():
    net = parse_ibnetdiscover((DATA / "fabric.net").read_text(), source="fabric.net")
    live = topo()
    assert {n.guid: n.description for n in net.nodes} == {n.guid: n.description for n in live.nodes}

    def cables(t):
        return {LinkKey.of(PortRef(n.guid, p.port), PortRef(p.remote_guid, p.remote_port)) for n in t.nodes for p in n.ports}

    assert cables(net) == cables(live)


def test_load_ibnetdiscover_file_builds_a_fabric_and_names_the_file_when_truncated(tmp_path):
    good = tmp_path / "fabric.txt"
    good.write_text(captured("ibnetdiscover", "healthy"))
    fabric = load_ibnetdiscover_file(good)
    assert fabric.summary() == {"hosts": 16, "switches": 6, "links": 24}
    host = fabric.nodes[NODE0003]
    assert (host.label, host.attrs["host"], host.kind) == ("node0003", "node0003", "host")
    bad = tmp_path / "cut.txt"
    bad.write_text(captured("ibnetdiscover", "truncated"))
    with pytest.raises(ParseError) as exc:
        load_ibnetdiscover_file(bad)
    assert exc.value.source == str(bad)


def test_hca_description_first_word_is_the_host():
    text = captured("ibnetdiscover", "healthy").replace('# "node0003"', '# "dgx001 mlx5_0"')
    fabric = fabric_from_ib(parse_ibnetdiscover(text))
    assert fabric.nodes[NODE0003].attrs["host"] == "dgx001"
    assert fabric.nodes[NODE0003].label == "dgx001 mlx5_0"


# -- ibqueryerrors -------------------------------------------------------------


def test_ibqueryerrors_lists_each_injected_error_on_its_port():
    t = topo()
    r = parse_ibqueryerrors(captured("ibqueryerrors", "errors"), port_guid_to_node=t.port_guids())
    got = {(c.node, c.port): c.values for c in r.counters}
    assert got == {
        (NODE0003, 1): {"PortRcvErrors": 4, "PortXmitDiscards": 12},
        (LEAF02, 6): {"LinkDownedCounter": 3},
        (LEAF01, 5): {"SymbolErrorCounter": 57},
    }
    assert (r.nodes_checked, r.bad_ports) == (22, 3)


def test_ibqueryerrors_ca_block_carries_the_port_guid_until_mapped():
    r = parse_ibqueryerrors(captured("ibqueryerrors", "errors"))
    assert "0x0002c90300000004" in {c.node for c in r.counters}  # node0003's port GUID


def test_ibqueryerrors_healthy_lists_nothing_but_has_its_summary():
    r = parse_ibqueryerrors(captured("ibqueryerrors", "healthy"))
    assert r.counters == () and r.ports_checked == 48


def test_ibqueryerrors_counters_gives_64_bit_data_counters_for_every_port():
    r = parse_ibqueryerrors(captured("ibqueryerrors", "counters"))
    ports = {(c.node, c.port) for c in r.counters}
    assert (LEAF01, 5) in ports and (NODE0001, 1) in ports
    assert len([p for p in ports if p[1] != 0]) == 48  # every cabled port end
    c = next(c for c in r.counters if (c.node, c.port) == (LEAF01, 5))
    assert c.width_bits["PortXmitData"] == 64 and c.values["PortXmitData"] > 0


def test_ibqueryerrors_with_data_and_link_info_parses():
    r = parse_ibqueryerrors(captured("ibqueryerrors", "errors_data_links"))
    c = next(c for c in r.counters if (c.node, c.port) == (LEAF01, 5))
    assert c.values["SymbolErrorCounter"] == 57 and "PortXmitData" in c.values


def test_ibqueryerrors_without_summary_is_truncated():
    with pytest.raises(ParseError, match="Summary"):
        parse_ibqueryerrors(captured("ibqueryerrors", "truncated"), source="ibqueryerrors")


# -- iblinkinfo ----------------------------------------------------------------


def test_iblinkinfo_gives_state_width_speed_and_peer_of_every_port():
    t = topo()
    states = parse_iblinkinfo(captured("iblinkinfo", "healthy"), port_guid_to_node=t.port_guids(), lid_to_port=t.lids())
    by = {(s.node, s.port): s for s in states}
    s = by[(NODE0006, 1)]
    assert (s.state, s.phys_state, s.lanes, s.lane_gbps) == ("Active", "LinkUp", 1, 53.125)
    assert s.peer == PortRef(LEAF02, 2)
    assert by[(LEAF02, 2)].peer == PortRef(NODE0006, 1)
    assert by[(LEAF01, 6)].peer == PortRef(SPINE02, 1)
    assert s.max_lanes == 12  # what ibsim's PortInfo says every port supports
    assert len(states) == 48


def test_supported_width_is_capped_at_the_fabric_design_so_only_the_1x_link_is_degraded():
    t = topo()
    states = cap_supported(
        parse_iblinkinfo(captured("iblinkinfo", "healthy"), port_guid_to_node=t.port_guids(), lid_to_port=t.lids())
    )
    degraded = {(s.node, s.port) for s in states if s.lanes < s.max_lanes}
    assert degraded == {(NODE0006, 1), (LEAF02, 2)}


def test_iblinkinfo_unlinked_port_is_down_polling_without_peer():
    t = topo("unlinked")
    states = parse_iblinkinfo(captured("iblinkinfo", "unlinked"), port_guid_to_node=t.port_guids(), lid_to_port=t.lids())
    s = next(s for s in states if (s.node, s.port) == (LEAF04, 4))
    assert (s.state, s.phys_state, s.peer, s.lanes) == ("Down", "Polling", None, None)


def test_iblinkinfo_cut_mid_line_raises():
    with pytest.raises(ParseError):
        parse_iblinkinfo(captured("iblinkinfo", "cut_mid_line"), source="iblinkinfo")


# -- ibroute / ibtracert -------------------------------------------------------


def test_ibroute_reads_the_lft_and_its_destinations():
    r = parse_ibroute(captured("ibroute", "leaf01"))
    assert (r.switch_guid, r.switch_lid, r.description) == (LEAF01, 3, "leaf01")
    assert r.lft[4] == 1 and r.lft[3] == 0  # node0001 on port 1, itself on port 0
    assert r.destinations[4] == "0x0002c90300000002"  # node0001's port GUID
    assert len(r.lft) == 22


def test_ibroute_truncated_is_rejected():
    with pytest.raises(ParseError, match="ends early"):
        parse_ibroute(captured("ibroute", "truncated"), source="ibroute 3")


def test_ibtracert_hops_agree_with_the_captured_lfts():
    t = topo()
    trace = parse_ibtracert(captured("ibtracert", "node0001_to_node0016"))
    links = trace.links(t.port_guids())
    assert links[0] == LinkKey.of(PortRef(NODE0001, 1), PortRef(LEAF01, 1))
    assert links[-1] == LinkKey.of(PortRef(LEAF04, 4), PortRef(NODE0016, 1))
    leaf01 = parse_ibroute(captured("ibroute", "leaf01"))
    assert trace.hops[1][0] == leaf01.lft[22]  # leaf01 forwards LID 22 where ibtracert went


def test_ibtracert_failure_text_is_a_parse_error():
    with pytest.raises(ParseError):
        parse_ibtracert(captured("ibtracert", "unreachable"), source="ibtracert")


def test_guid_forms_normalise():
    assert guid_id("S-0002c90200000003") == guid_id("0x2c90200000003") == guid_id("2c90200000003") == LEAF01


# -- net file writer -----------------------------------------------------------


def test_write_netfile_trains_a_degraded_link_down_on_one_end_only():
    gen = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)
    gen.link_at(PortRef("node0002", 1)).lanes = 1
    text = write_netfile(gen)
    lines = [ln for ln in text.splitlines() if '"node0002"[1]' in ln or ('"leaf01"[2]' in ln)]
    widths = sorted(ln.rsplit(" ", 1)[1] for ln in lines)
    assert widths == ["1xHDR", "4xHDR"]
    t = parse_ibnetdiscover(text, source="net")
    assert {n.guid for n in t.nodes} == {n.guid for n in gen.nodes.values()}


def test_write_netfile_refuses_labels_ibsim_cannot_hold():
    gen = fat_tree_2(leaves=1, spines=1, hosts_per_leaf=1)
    gen.nodes["node0001"].label = 'evil"#name'
    with pytest.raises(TopologyError, match="cannot be an ibsim"):
        write_netfile(gen)


def test_write_netfile_splits_a_multi_rail_host_into_one_hca_per_port():
    gen = rail_optimized(units=1, hosts_per_unit=2, rails=2, spines=2)
    t = parse_ibnetdiscover(write_netfile(gen), source="net")
    cas = [n for n in t.nodes if n.type == "Ca"]
    assert sorted(n.description for n in cas) == ["gpu0001 mlx5_0", "gpu0001 mlx5_1", "gpu0002 mlx5_0", "gpu0002 mlx5_1"]
    assert len({n.guid for n in cas}) == 4
    fabric = fabric_from_ib(t)
    assert {n.attrs["host"] for n in fabric.hosts()} == {"gpu0001", "gpu0002"}


def test_ibroute_keeps_an_entry_whose_destination_it_could_not_name():
    r = parse_ibroute(captured("ibroute", "unknown_destination"))
    full = parse_ibroute(captured("ibroute", "leaf01"))
    assert r.lft == full.lft
    assert 9 not in r.destinations and 9 in full.destinations


def test_iblinkinfo_far_end_not_answering_is_an_active_port_without_peer():
    t = topo("mad_drops")
    states = parse_iblinkinfo(
        captured("iblinkinfo", "port_not_available"), port_guid_to_node=t.port_guids(), lid_to_port=t.lids()
    )
    s = next(s for s in states if (s.node, s.port) == (LEAF01, 3))
    assert (s.state, s.lanes, s.peer) == ("Active", 4, None)


def test_a_port_that_drops_every_mad_vanishes_from_discovery_and_error_scans():
    assert topo("mad_drops").node(NODE0003) is None
    r = parse_ibqueryerrors(captured("ibqueryerrors", "mad_drops"))
    assert r.nodes_checked == 21 and NODE0003 not in {c.node for c in r.counters}


def test_a_node_block_printed_twice_names_both_lines():
    text = captured("ibnetdiscover", "healthy")
    blocks = text.split("\n\n")
    i = next(k for k, b in enumerate(blocks) if b.lstrip().startswith(("Switch", "vendid")) and "Switch" in b)
    doubled = "\n\n".join([*blocks[: i + 1], blocks[i], *blocks[i + 1:]])
    with pytest.raises(ParseError, match=r"is described twice \(first at line \d+\)") as exc:
        parse_ibnetdiscover(doubled, source="joined.txt")
    assert exc.value.source == "joined.txt" and exc.value.line_no > 0
