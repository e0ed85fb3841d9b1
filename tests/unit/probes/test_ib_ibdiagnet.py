"""ibdiagnet's output files, one parser each, on a real NDR run (tests/data/ibdiagnet2/real_*)."""

from __future__ import annotations

from collections import Counter

import pytest
from fabricdoc.probes.ib import ibdiagnet as diag

from fabricdoc.errors import ParseError
from tests.helpers.paths import DATA

RUN = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-31"
SKIP_PM = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-15_skip_pm_vports"
CABLES = DATA / "ibdiagnet2" / "real_gary_sequoia_ndr_2025-03-15_cables" / "ibdiagnet2.cables"
MQM9700 = "0xb0cf0e0300d33fc0"


@pytest.fixture(scope="module")
def db():
    path = RUN / "ibdiagnet2.db_csv"
    return diag.parse_db_csv(path.read_text(), str(path))


def test_db_csv_sections_and_the_run_they_come_from(db):
    assert {"NODES", "PORTS", "LINKS", "PM_INFO", "PM_DELTA", "SWITCHES", "RUN_INFO"} <= set(db.sections)
    run = diag.db_run(db)
    assert (run.version, run.date) == ("IBDIAGNET 2.10.0.MLNX20220720.cd746c3", "2025-03-31 23:43:18 UTC +0000")


def test_db_csv_nodes_are_switches_hcas_and_aggregation_nodes(db):
    nodes = diag.db_nodes(db)
    assert Counter(n.type for n in nodes) == {"Switch": 9, "Ca": 15}
    spine = next(n for n in nodes if n.guid == MQM9700)
    assert (spine.description, spine.num_ports, spine.device_id) == ("MF0;ib-switch-sequoia:MQM9700/U1", 65, 54002)
    an = next(n for n in nodes if n.guid == "0xfc6a1c03008a4dc8")
    assert (an.description, an.device_id, an.system_guid) == ("Mellanox Technologies Aggregation Node", 53001,
                                                             "0xfc6a1c03008a4dc0")


def test_db_csv_ports_decode_state_width_and_ndr_speed(db):
    ports = {(p.node_guid, p.port): p for p in diag.db_ports(db)}
    assert len(ports) == 55
    hca = ports[("0x5c25730300e66b0e", 1)]  # is-north-7-compute-1 mlx5_3: LinkSpeedActv 2048, LinkSpeedSup 3841
    assert (hca.state, hca.phys_state, hca.lanes, hca.speed, hca.max_lanes, hca.max_speed, hca.lid) == (
        "Active", "LinkUp", 4, "NDR", 4, "NDR", 4)
    assert ports[("0xfc6a1c030091cf00", 0)].state is None  # a base switch port 0 has no PortState
    assert diag.active_speed(2052) == "NDR" and diag.active_speed(4) == "QDR" and diag.active_speed(0x10000) == "FDR10"
    assert diag.max_speed(3591) == "NDR" and diag.max_width(19) == 4


def test_db_csv_links_and_pm_sections(db):
    links = diag.db_links(db)
    assert len(links) == 23 and (MQM9700, 3) in {(g2, p2) for _, _, g2, p2, _ in links}
    info = diag.db_pm(db, "PM_INFO")
    delta = diag.db_pm(db, "PM_DELTA")
    assert set(info) == set(delta) and len(info) == 46
    leaf_port = info[("0xfc6a1c030091cf00", 1)][1]
    assert (leaf_port["LinkDownedCounter"], leaf_port["PortXmitDiscards"], leaf_port["PortXmitWait"]) == (12, 85, 5438358)
    assert leaf_port["retransmission_per_sec"] == 0 and leaf_port["PortLoopingErrors"] is None  # -1: not available
    assert delta[(MQM9700, 1)][1]["PortXmitPktsExtended"] == 293


def test_a_run_that_skipped_pm_has_no_pm_sections():
    path = SKIP_PM / "ibdiagnet2.db_csv"
    db = diag.parse_db_csv(path.read_text(), str(path))
    assert diag.db_pm(db) == {} and "--skip dup_guids" in diag.db_run(db).args
    assert len(diag.db_nodes(db)) == 24 and len(diag.db_links(db)) == 23


@pytest.mark.parametrize(("edit", "line_no", "why"), [
    (lambda t: t.replace("\nEND_LINKS\n", "\n", 1), 179, "no END_LINKS"),
    (lambda t: t[: t.index("END_STAGE_PERF_INFO")], None, "no END_STAGE_PERF_INFO: the file ends early"),
    (lambda t: t.replace("0xb0cf0e0300e5b940,1,0x5c25730300c06f60,1\n", "0xb0cf0e0300e5b940,1,0x5c25730300c06f60\n"),
     156, "LINKS row has 3 fields, its header 4"),
    (lambda t: t.replace("0xb0cf0e0300e5b940,1,0x5c25730300c06f60,1\n", "0xb0cf0e0300e5b940,one,0x5c25730300c06f60,1\n"),
     156, "not a number or GUID"),
])
def test_a_damaged_db_csv_names_the_line(edit, line_no, why):
    text = edit((RUN / "ibdiagnet2.db_csv").read_text())
    with pytest.raises(ParseError, match=why) as info:
        db = diag.parse_db_csv(text, "db")
        diag.db_links(db)
    if line_no:
        assert info.value.line_no == line_no


def test_lst_lines_give_both_ends_of_every_link():
    links = diag.parse_ibdiagnet_lst((RUN / "ibdiagnet2.lst").read_text())
    assert len(links) == 23
    first = links[0]
    assert (first.a.description, first.a.lid, first.a.port, first.b.description, first.b.port) == (
        "is-north-7-compute-1 mlx5_10", 0x9C, 1, "Quantum-2 Mellanox Technologies", 1)
    assert (first.lanes, first.state, first.speed) == (4, "Active", "NDR")
    assert Counter(link.b.type for link in links) == {"Switch": 16, "Ca": 7}


def test_net_dump_rows_give_every_switch_port_state():
    rows = diag.parse_ibdiagnet_net_dump((RUN / "ibdiagnet2.net_dump").read_text())
    assert Counter((r.state, r.phys_state, r.lanes, r.speed) for r in rows) == {
        ("Active", "LinkUp", 4, "NDR"): 42, ("Down", "Polling", None, None): 88}
    first = rows[0]
    assert (first.switch_guid, first.label, first.port, first.neighbor_description) == (
        "0xfc6a1c03008a5c00", "1/1/1", 1, "is-north-7-compute-1 mlx5_11")


def test_pm_blocks_are_the_same_counters_as_pm_info(db):
    blocks = diag.parse_ibdiagnet_pm((RUN / "ibdiagnet2.pm").read_text())
    assert len(blocks) == 13
    info = diag.db_pm(db)
    for b in blocks:
        row = info[(b.guid, b.port)][1]
        assert b.values["link_down_counter"] == row["LinkDownedCounter"]
        assert b.values["port_xmit_data_extended"] == row["PortXmitDataExtended"]
    assert blocks[0].values["port_looping_errors"] is None  # "NA"


def test_cable_blocks_keep_what_the_module_reads_and_drop_what_it_cannot():
    cables = {(c.node_guid, c.port): c for c in diag.parse_ibdiagnet_cables(CABLES.read_text(), str(CABLES))}
    assert len(cables) == 8
    c = cables[("0xb0cf0e0300e5b940", 3)]
    assert (c.vendor, c.part_number, c.serial, c.temperature_c) == ("FS", "OSFP-SR8-800G", "G2430284247", 57.0)
    assert c.rx_power_mw == (1.585, None, 1.585, 1.585)  # "RX2 Power: -999.999 mW": no reading
    assert cables[("0xb0cf0e0300d33fc0", 32)].rx_power_mw == (None, None, None, None)  # "inf mW" readings
