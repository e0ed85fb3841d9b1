"""Host identity on real fabrics: HCAs grouped into hosts and rails, non-hosts kept out, names resolved or explained.

Inputs are real captures (tests/data/ibnetdiscover/real_*, tests/data/ibdiagnet2/real_*; each README says
where they come from and what was trimmed). The DGX capture is trimmed to 5 of 40 switches, so it is read
with ``partial=True``.
"""

from __future__ import annotations

import pytest
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover

from fabricdoc.errors import ConfigError
from fabricdoc.fabric.generators import fat_tree_2, rail_optimized
from fabricdoc.fabric.hostmap import load_host_map
from fabricdoc.fabric.identity import (
    ca_name,
    host_index,
    host_name,
    host_nodes,
    host_rails,
    identify,
    resolve_hosts,
    unnamed,
)
from fabricdoc.fabric.infiniband import fabric_from_ib
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import PortRef
from fabricdoc.report.drain import drain_list
from tests.helpers.paths import DATA

DGX = DATA / "ibnetdiscover" / "real_topograph_dgx_h100_superpod_ndr" / "example.out"
SEQUOIA = DATA / "ibnetdiscover" / "real_gary_sequoia_ndr_ibdiagnet2_mlx5_naming" / "ibdiagnet2.ibnetdiscover"
SEQUOIA_HCA = DATA / "ibnetdiscover" / "real_gary_sequoia_ndr_ibdiagnet2_hca_naming" / "ibdiagnet2.ibnetdiscover"
DEFAULT_DESC = ("0xe09d730300857448", "0xe09d730300858d88", "0xe09d730300858f00")  # "MT4129 ConnectX7 ..."


def fabric_of(path, host_map=None):
    return fabric_from_ib(parse_ibnetdiscover(path.read_text(), str(path), partial=True), host_map=host_map)


@pytest.fixture(scope="module")
def dgx():
    return fabric_of(DGX)


# -- descriptions ----------------------------------------------------------------------


@pytest.mark.parametrize(("desc", "host", "device"), [
    ("a08-p1-dgx-04-c01 mlx5_5", "a08-p1-dgx-04-c01", "mlx5_5"),
    ("a06-p1-dgx-02-c01 HCA-6", "a06-p1-dgx-02-c01", "HCA-6"),
    ("worker20 mlx5_3", "worker20", "mlx5_3"),
    ("gpu7 ibp12s0", "gpu7", "ibp12s0"),
    ("node1 bnxt_re0", "node1", "bnxt_re0"),
    ("node2 irdma1", "node2", "irdma1"),
    ("p5-st-0 efa_3", "p5-st-0", "efa_3"),
    ("stage90 mlx4_0", "stage90", "mlx4_0"),
    ("node0003", "node0003", None),
])
def test_a_ca_description_names_its_host_and_device(desc, host, device):
    assert (ca_name(desc).host, ca_name(desc).device) == (host, device)


@pytest.mark.parametrize("desc", ["MT4129 ConnectX7   Mellanox Technologies", "MT23108 InfiniHost Mellanox Technologies",
                                  "localhost mlx5_0", "", "three word description"])
def test_a_default_or_unreadable_description_names_no_host_and_says_why(desc):
    name = ca_name(desc)
    assert name.host is None and name.reason


# -- the DGX H100 SuperPOD capture -------------------------------------------------------


def test_dgx_hcas_group_into_hosts_with_rails_in_device_order(dgx):
    rails = {h: [(dgx.nodes[n].attrs["device"], dgx.nodes[n].attrs["rail"]) for n in ids]
             for h, ids in host_index(dgx).items() if not h.startswith("0x")}
    # The capture keeps all CA blocks of two DGX hosts: 4 HCAs each are on this fabric.
    assert rails["a08-p1-dgx-04-c01"] == [("mlx5_0", 0), ("mlx5_1", 1), ("mlx5_4", 2), ("mlx5_5", 3)]
    assert rails["a06-p1-dgx-02-c01"] == [("HCA-1", 0), ("HCA-2", 1), ("HCA-5", 2), ("HCA-6", 3)]
    assert rails["B11-P1-CUFM-02"] == [("mlx5_0", 0), ("mlx5_1", 1)]  # the UFM host
    assert sorted(rails) == ["B11-P1-CUFM-02", "a06-p1-dgx-02-c01", "a08-p1-dgx-04-c01", "ubuntu"]


def test_dgx_default_descriptions_are_hcas_without_a_host_never_one_fake_host(dgx):
    assert sorted(unnamed(dgx)) == sorted(DEFAULT_DESC)
    assert "MT4129" not in host_index(dgx) and "MT4129 ConnectX7   Mellanox Technologies" not in host_index(dgx)
    for guid in DEFAULT_DESC:
        assert dgx.nodes[guid].kind == "host" and host_name(dgx, guid) == guid
        assert "default node description" in dgx.nodes[guid].attrs["unnamed"]
    assert not set(DEFAULT_DESC) & {p.node for ports in host_rails(dgx).values() for p in ports}


def test_dgx_aggregation_nodes_stay_in_the_fabric_but_are_not_hosts(dgx):
    ans = [n for n in dgx.nodes.values() if n.label == "Mellanox Technologies Aggregation Node"]
    assert len(ans) == 3
    for an in ans:
        assert (an.kind, an.attrs["role"]) == ("switch", "aggregation")
        assert dgx.link_at(PortRef(an.id, 1)) is not None  # its cable to the leaf's port 65 is kept
    assert {an.id for an in ans}.isdisjoint(n.id for n in dgx.hosts())
    # 4 + 4 + 2 + 2 named HCAs and the 3 with default descriptions are the host nodes; ANs are not.
    assert len(dgx.hosts()) == 15


def test_dgx_scheduler_names_resolve_or_say_why_not(dgx):
    r = resolve_hosts(dgx, ["a08-p1-dgx-04-c01", "a08-p1-dgx-04-c02", "A06-P1-DGX-02-C01",
                            "Mellanox Technologies Aggregation Node", "ubuntu.cluster"])
    assert r.hosts == {"a08-p1-dgx-04-c01": ["0xe09d7303007a4fbc", "0xe09d7303007a4fc0", "0xe09d7303007a4bd4",
                                              "0xe09d7303007a4bd8"]}
    assert "3 HCAs have no host name" in r.unresolved["a08-p1-dgx-04-c02"]  # its CA block is not in the capture
    assert "differs only in case" in r.unresolved["A06-P1-DGX-02-C01"]
    assert "SHARP aggregation node" in r.unresolved["Mellanox Technologies Aggregation Node"]
    assert "the fabric names 'ubuntu'" in r.unresolved["ubuntu.cluster"]


def test_host_nodes_gives_every_hca_of_a_host_in_rail_order(dgx):
    ids = host_nodes(dgx, "a06-p1-dgx-02-c01")
    assert [dgx.nodes[n].attrs["device"] for n in ids] == ["HCA-1", "HCA-2", "HCA-5", "HCA-6"]
    assert host_nodes(dgx, "0xe09d730300858d88") == ["0xe09d730300858d88"]  # an unnamed HCA by its GUID
    assert host_nodes(dgx, "no-such-host") == []


# -- one host's 8 rails (the Sequoia NDR capture, two namings of the same HCAs) -----------


def test_a_dgx_style_host_has_its_8_rails_in_device_number_order():
    fabric = fabric_of(SEQUOIA)
    ids = host_nodes(fabric, "is-north-7-compute-1")
    assert [fabric.nodes[n].attrs["device"] for n in ids] == [
        "mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3", "mlx5_8", "mlx5_9", "mlx5_10", "mlx5_11"]
    assert [fabric.nodes[n].attrs["rail"] for n in ids] == list(range(8))
    # GUID order, what Fabric.host_ports() sorts by, is not the rail order: rings over it cross rails.
    assert sorted(ids) != ids
    # The capture keeps 2 of the 8 leaves: the cabled HCAs come in rail order.
    cabled = [n for n in ids if fabric.host_ports(n)]
    assert [fabric.nodes[n].attrs["device"] for n in cabled] == ["mlx5_8", "mlx5_11"]
    assert [p.node for p in host_rails(fabric)["is-north-7-compute-1"]] == cabled
    assert len([n for n in fabric.nodes.values() if n.attrs.get("role") == "aggregation"]) == 7


def test_the_same_hcas_named_hca_n_two_weeks_earlier_group_the_same_way():
    fabric = fabric_of(SEQUOIA_HCA)
    assert sorted(h for h in host_index(fabric)) == ["h4-1-gpu", "h4-2-gpu"]
    assert [fabric.nodes[n].attrs["device"] for n in host_nodes(fabric, "h4-2-gpu")] == [
        "HCA-1", "HCA-2", "HCA-3", "HCA-4", "HCA-5", "HCA-6", "HCA-11", "HCA-12"]


def test_drains_are_per_host_not_per_hca():
    fabric = fabric_of(SEQUOIA)
    ids = host_nodes(fabric, "is-north-7-compute-1")
    findings = [Finding(f"F00{i}", "nic", fabric.label(n), "dead", "critical", 0.9, node_ids=[n])
                for i, n in enumerate(ids[:2], 1)]
    drains = drain_list(fabric, findings)
    assert [(d.node, d.findings) for d in drains] == [("is-north-7-compute-1", sorted(f.key for f in findings))]


# -- the host map --------------------------------------------------------------------------


def test_a_csv_host_map_names_default_description_hcas_and_their_rails(tmp_path):
    path = tmp_path / "hosts.csv"
    path.write_text("# HCAs nothing named\nguid,lid,description,host,rail\n"
                    "0xe09d730300858d88,,,a06-p1-dgx-02-c06,5\n,495,,a06-p1-dgx-02-c08,5\n")
    fabric = fabric_of(DGX, load_host_map(path))
    assert host_nodes(fabric, "a06-p1-dgx-02-c06") == ["0xe09d730300858d88"]
    assert host_nodes(fabric, "a06-p1-dgx-02-c08") == ["0xe09d730300857448"]  # port LID 495 in the capture
    assert fabric.nodes["0xe09d730300857448"].attrs["rail"] == 5
    assert sorted(unnamed(fabric)) == ["0xe09d730300858f00"]


def test_a_yaml_host_map_reads_the_same_and_reports_lines_that_name_no_hca(tmp_path):
    path = tmp_path / "hosts.yaml"
    path.write_text('- {guid: "0xe09d730300858f00", host: b08-p1-dgx-08-c03, rail: 5}\n'
                    "- {lid: 4242, host: nowhere}\n")
    host_map = load_host_map(path)
    fabric = fabric_of(DGX, host_map)
    assert host_nodes(fabric, "b08-p1-dgx-08-c03") == ["0xe09d730300858f00"]
    runs = identify(fabric, host_map).probe_runs("dgx")
    assert any("host map line 2: lid 4242 names no HCA" in (r.error or "") for r in runs)
    assert all(r.status == "warning" for r in runs)


@pytest.mark.parametrize(("name", "text", "where", "why"), [
    ("m.csv", "guid,host,colour\n0x1,h,red\n", ":1:", "unknown column 'colour'"),
    ("m.csv", "guid,lid,host\n0x1,7,h\n", ":2:", "exactly one of guid, lid, description"),
    ("m.csv", "guid,host\nzz,h\n", ":2:", "is not a GUID"),
    ("m.csv", "lid,host\n70000,h\n", ":2:", "not a unicast LID"),
    ("m.csv", "guid,host,rail\n0x1,h,-1\n", ":2:", "rail '-1'"),
    ("m.csv", "guid,host\n0x1,h\n0x0000000000000001,g\n", ":3:", "already mapped on line 2"),
    ("m.csv", "guid,host\n0x1,bad host\n", ":2:", "not a host name"),
    ("m.yaml", "- {guid: '0x1', host: h, colour: red}\n", ":1:", "unknown key 'colour'"),
    ("m.yaml", "guid: 0x1\n", ":1:", "a list of entries"),
    ("m.txt", "guid,host\n", "m.txt", "a .csv or .yaml file"),
])
def test_a_bad_host_map_is_one_error_naming_file_and_line(tmp_path, name, text, where, why):
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(ConfigError) as info:
        load_host_map(path)
    assert str(path) in str(info.value) and where in str(info.value) and why in str(info.value)


def test_a_description_entry_that_matches_several_hcas_is_refused(tmp_path):
    path = tmp_path / "hosts.csv"
    path.write_text("description,host\nMT4129 ConnectX7   Mellanox Technologies,dgx9\n")
    with pytest.raises(ConfigError, match=r"hosts.csv:2: description .* matches 3 CAs"):
        fabric_of(DGX, load_host_map(path))


# -- fabrics that are not InfiniBand captures keep their names ---------------------------


def test_generated_fabrics_keep_their_host_names_and_rail_ports():
    fabric = rail_optimized(units=1, hosts_per_unit=2, rails=2, spines=2)
    identify(fabric)
    assert host_nodes(fabric, "gpu0001") == ["gpu0001"]
    assert host_rails(fabric)["gpu0001"] == fabric.host_ports("gpu0001")
    small = fat_tree_2(leaves=1, spines=1, hosts_per_leaf=2)
    assert identify(small).hosts == {} and host_name(small, "node0001") == "node0001"


def test_a_ca_inside_a_switch_system_or_named_like_a_switch_is_switch_management_not_a_host():
    # No public capture shows one, so the rule is held on nodes built in memory, as identify sees them.
    from fabricdoc.model.records import Node
    from fabricdoc.model.topology import Fabric

    fabric = Fabric("f")
    fabric.add_node(Node("0x10", "switch", "MF0;sw1:SX6036/U1", 36, "0x10",
                         attrs={"ib_type": "Switch", "system_guid": "0x0000000000000010"}))
    fabric.add_node(Node("0x11", "host", "sw1 mlx4_0", 1, "0x11", attrs={"ib_type": "Ca", "system_guid": "0x0000000000000010"}))
    fabric.add_node(Node("0x12", "host", "MF0;sw2:SX6036/U1", 1, "0x12", attrs={"ib_type": "Ca"}))
    fabric.add_node(Node("0x13", "host", "gpu1 mlx5_0", 1, "0x13", attrs={"ib_type": "Ca"}))
    report = identify(fabric)
    assert report.not_hosts == {"0x11": "switch-management", "0x12": "switch-management"}
    assert [n.id for n in fabric.hosts()] == ["0x13"] and report.hosts == {"gpu1": ["0x13"]}


def test_align_keeps_group_tests_on_fabric_ids_and_drops_one_naming_an_unknown_host():
    from fabricdoc.fabric.generators import fat_tree_2
    from fabricdoc.fabric.identity import align
    from fabricdoc.model.records import GroupResult, Observations, PortRef

    fabric = fat_tree_2(2, 1, 2)
    ok = GroupResult((PortRef("node0001", 1), PortRef("node0003", 1)), "all_reduce", "ok", 90.0, 100.0)
    stray = GroupResult((PortRef("node0001", 1), PortRef("elsewhere", 1)), "all_reduce", "ok", 90.0, 100.0)
    out = align(fabric, Observations(groups=[ok, stray]))
    assert out.groups == [ok]
    assert any(p.target == "elsewhere" and p.status == "error" for p in out.probes)
