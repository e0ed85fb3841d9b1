"""ibnetdiscover as real fabrics print it: public captures (tests/data/ibnetdiscover/real_*,
tests/data/ibnetdiscover-ports/real_*) and the formats captured under ibsim (tests/data/ib/)."""

from __future__ import annotations

from collections import Counter

import pytest
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover, parse_ibnetdiscover_ports

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import ToolWarning
from fabricdoc.sources.infiniband import load_ibnetdiscover_file, read_ibnetdiscover_file
from tests.helpers.ib import captured
from tests.helpers.paths import DATA

REAL = DATA / "ibnetdiscover"


def real(case: str, name: str, *, partial: bool = False, indent: int = 0):
    path = REAL / f"real_{case}" / name
    text = path.read_text()
    if indent:  # the man page and docstring copies keep their block indentation (see their READMEs)
        assert all(not ln or ln.startswith(" " * indent) for ln in text.splitlines())
    return parse_ibnetdiscover(text, str(path), partial=partial)


# -- warnings the tools print among their output ---------------------------------------------


def test_the_query_smp_timeout_line_is_kept_as_a_warning_with_its_line():
    t = real("junousi_nvidia_kb_querysmp_warning_loopbacks", "3.topo")
    assert t.warnings == (ToolWarning(
        str(REAL / "real_junousi_nvidia_kb_querysmp_warning_loopbacks" / "3.topo"), 1,
        "src/query_smp.c:195; umad (DR path slid 0; dlid 0; 0,1,1,31 Attr 0x11:0) bad status 110; "
        "Connection timed out"),)
    switchib = next(n for n in t.nodes if n.description == "SwitchIB Mellanox Technologies")
    # Ports cabled back to the same switch: each end lists the other.
    loops = {(p.port, p.remote_port) for p in switchib.ports if p.remote_guid == switchib.guid}
    assert loops == {(1, 2), (2, 1), (19, 21), (21, 19), (29, 30), (30, 29)}
    speeds = Counter(p.speed for n in t.nodes for p in n.ports)
    assert speeds == {"EDR": 8, "FDR": 6, "QDR": 4, "SDR": 2}


def test_ibwarn_and_query_smp_lines_from_stderr_are_warnings_and_the_rest_still_parses():
    t = parse_ibnetdiscover(captured("ibnetdiscover", "mad_drops_stderr"), source="cap")
    assert [(w.line_no, w.text.split(";")[0]) for w in t.warnings] == [
        (1, 'ibwarn: [31740] sim_connect: attached as client 1 at node "spine01"'),
        (2, "./libibnetdisc/query_smp.c:186"),
    ]
    assert "bad status 110" in t.warnings[1].text
    assert len(t.nodes) == 21 and "node0003" not in {n.description for n in t.nodes}  # the port dropping MADs


def test_a_saved_file_with_warnings_gives_warning_probe_runs_naming_file_and_line(tmp_path):
    path = tmp_path / "fabric.txt"
    path.write_text(captured("ibnetdiscover", "mad_drops_stderr"))
    saved = read_ibnetdiscover_file(path)
    runs = [r for r in saved.probes if r.probe == "ibnetdiscover"]
    assert [(r.status, r.target) for r in runs] == [("warning", str(path))] * 2
    assert runs[1].error.startswith(f"{path}:2: ./libibnetdisc/query_smp.c:186;")
    assert saved.fabric.summary() == {"hosts": 15, "switches": 6, "links": 23}


def test_a_fatal_iberror_line_is_a_parse_error_not_a_warning():
    text = "ibnetdiscover: iberror: failed: discover failed\n"
    with pytest.raises(ParseError, match="the tool failed"):
        parse_ibnetdiscover(text, source="x")


# -- the other output modes -------------------------------------------------------------------


def test_full_output_reads_past_the_s_w_v_fields_after_the_speed():
    text = captured("ibnetdiscover", "full")
    assert " 4xHDR s=4 w=2 v=4" in text
    full, plain = parse_ibnetdiscover(text, source="f"), parse_ibnetdiscover(captured("ibnetdiscover", "healthy"))
    assert {n.guid: [(p.port, p.remote_guid, p.lanes, p.speed) for p in n.ports] for n in full.nodes} == \
        {n.guid: [(p.port, p.remote_guid, p.lanes, p.speed) for p in n.ports] for n in plain.nodes}


def test_the_non_chassis_nodes_heading_of_grouping_mode_is_read():
    t = parse_ibnetdiscover(captured("ibnetdiscover", "grouping"), source="g")
    assert len(t.nodes) == 22
    old = real("rdma_core_manpage_2007_voltaire_non_chassis", "ibnetdiscover-g.rst-indented.txt", indent=3)
    assert [(n.type, n.description) for n in old.nodes][:2] == [("Switch", "ISR9024 Voltaire"), ("Switch", "SW-6IB4 Voltaire")]
    sw = old.nodes[1]
    assert (sw.lid, sw.device_id) == (3, 0x5A05)
    degraded = {(n.description, p.port) for n in old.nodes for p in n.ports if p.lanes == 1}
    assert degraded == {("SW-6IB4 Voltaire", 1), ("MT23108 InfiniHost Mellanox Technologies", 1)}
    ca = old.node("0x0008f10403960558")
    assert [(p.port, p.lid, p.port_guid) for p in ca.ports] == [(2, 14, "0x0008f1040396055a"), (1, 10, "0x0008f10403960559")]


def test_the_ports_report_is_a_topology_input():
    t = parse_ibnetdiscover_ports(captured("ibnetdiscover", "ports"), source="p")
    assert Counter(n.type for n in t.nodes) == {"Ca": 16, "Switch": 6}
    assert sum(len(n.ports) for n in t.nodes) == 48
    leaf02 = t.node("0x0002c90200000004")
    port2 = next(p for p in leaf02.ports if p.port == 2)
    assert (port2.remote_description, port2.lanes, port2.speed) == ("node0006", 1, "HDR")


def test_a_saved_ports_report_loads_as_the_same_fabric(tmp_path):
    path = tmp_path / "ports.txt"
    path.write_text(captured("ibnetdiscover", "ports"))
    fabric = load_ibnetdiscover_file(path)
    assert fabric.summary() == {"hosts": 16, "switches": 6, "links": 24}
    assert fabric.nodes["0x0002c90300000004"].attrs["host"] == "node0003"  # keyed by port GUID


def test_the_real_osc_ports_report_reads_down_ports_as_uncabled():
    path = DATA / "ibnetdiscover-ports" / "real_treydock_osc_edr_fixture" / "test.out"
    t = parse_ibnetdiscover_ports(path.read_text(), str(path), partial=True)
    sw = t.node("0x7cfe9003009ce5b0")
    assert (sw.description, sw.lid) == ("ib-i1l1s01", 1719)
    assert [(p.port, p.remote_description, p.speed) for p in sw.ports] == [
        (1, "ib-i1l2s01", "EDR"), (10, "o0001 HCA-1", "EDR"), (11, "o0002 HCA-1", "EDR")]
    assert t.node("0x506b4b03005c2740").num_ports == 37  # its '4x ???' port 37 is down: no cable
    assert t.undescribed == 1  # ib-i1l2s01 is not in the extract


def test_a_ports_report_whose_two_ends_disagree_names_the_line():
    # A contributor's fixture: one aggregation node GUID cabled to two switches (lines 1 and 5).
    path = DATA / "ibnetdiscover-ports" / "real_treydock_hdr_sharp_fixture" / "test2.out"
    with pytest.raises(ParseError) as info:
        parse_ibnetdiscover_ports(path.read_text(), str(path), partial=True)
    assert info.value.line_no == 1 and "disagrees with line 5" in info.value.reason


# -- real fabrics -------------------------------------------------------------------------------


def test_the_dgx_superpod_capture_reads_switches_hcas_and_aggregation_nodes():
    t = real("topograph_dgx_h100_superpod_ndr", "example.out", partial=True)
    kinds = Counter(n.type for n in t.nodes)
    assert kinds == {"Switch": 5, "Ca": 18}
    leaf = t.node("0x2c5eab0300b87b40")
    assert (leaf.description, leaf.lid, leaf.num_ports) == ("MF0;A09-P1-IBLEAF-04-04:MQM9701/U1", 73, 65)
    assert {(p.lanes, p.speed) for n in t.nodes for p in n.ports} == {(4, "NDR")}
    an = t.node("0x2c5eab0300b87b50")
    assert (an.device_id, an.system_guid) == (0xCF09, leaf.system_guid)  # the AN lives in the leaf
    assert t.undescribed == 185  # the capture keeps 5 of 40 switches: cables to the rest are left out


def test_a_trimmed_capture_is_refused_unless_read_as_partial():
    path = REAL / "real_topograph_dgx_h100_superpod_ndr" / "example.out"
    with pytest.raises(ParseError, match="never described") as info:
        parse_ibnetdiscover(path.read_text(), str(path))
    assert info.value.line_no == 12


def test_an_hca_with_no_active_port_is_a_node_with_a_warning_not_a_cut_output():
    t = real("topograph_gb200_lone_ca_no_links", "example-bad.out")
    assert [(n.type, n.description, n.ports) for n in t.nodes] == [("Ca", "dgx-gb200-n01-c1 HCA-1", ())]
    assert len(t.warnings) == 1 and t.warnings[0].line_no == 10
    assert "has no active port" in t.warnings[0].text


def test_a_router_block_is_read_with_its_xdr_port():
    t = real("xdr_q3400_router_node_snippet", "router_block.indented.txt", partial=True, indent=4)
    rt = t.nodes[0]
    assert (rt.type, rt.guid, rt.num_ports, rt.description) == ("Rt", "0xb8e924030000b928", 8,
                                                                 "MF0;mamba-2132:Q3400_RA/U2/RT")
    p = rt.ports[0]
    assert (p.port, p.remote_port, p.lanes, p.speed, p.lid, p.remote_lid, p.port_guid) == (
        2, 149, 1, "XDR", 9, 8, "0xb8e924030000b929")


def test_ibdiagnet_s_copy_with_port_labels_is_read():
    t = real("gary_sequoia_ndr_ibdiagnet2_mlx5_naming", "ibdiagnet2.ibnetdiscover", partial=True)
    spine = t.node("0xb0cf0e0300d33fc0")
    assert [(p.port, p.remote_port, p.port_guid) for p in spine.ports[:2]] == [(1, 63, None), (2, 63, None)]
    hca = next(n for n in t.nodes if n.description == "is-north-7-compute-1 mlx5_9")
    assert [(p.port, p.port_guid, p.lid, p.remote_lid) for p in hca.ports] == [(1, "0x5c25730300e6757e", 169, 115)]
    an = next(n for n in t.nodes if n.guid == "0xb0cf0e0300e5b948")
    assert an.ports[0].port_guid == "0xb0cf0e0300e5b948"  # "[1](1)(b0cf...)": label 1, then the GUID


def test_a_2014_fdr10_fabric_reads_fdr10_isls_and_a_dual_homed_host():
    t = real("loginoff_2014_sx6036_fdr10_mlx4", "topo.txt", partial=True)
    assert Counter(n.type for n in t.nodes) == {"Ca": 84, "Switch": 8}
    assert Counter(p.speed for n in t.nodes for p in n.ports) == {"QDR": 230, "FDR10": 94}
    tank1 = next(n for n in t.nodes if n.description == "tank1 mlx4_0")
    assert [(p.port, p.remote_guid) for p in tank1.ports] == [(1, "0xf4521403007eaa70"), (2, "0xf4521403007eaa70")]


@pytest.mark.parametrize(("case", "name", "nodes"), [
    ("junousi_fujitsu_bx900_qdr_2009", "test2.topo", 2),
    ("junousi_ibm_pcm_sdr_infiniscale3_2009", "2.topo", 3),
    ("gary_sequoia_ndr_ibdiagnet2_hca_naming", "ibdiagnet2.ibnetdiscover", 25),
])
def test_the_other_real_captures_parse(case, name, nodes):
    assert len(real(case, name, partial=True).nodes) == nodes
