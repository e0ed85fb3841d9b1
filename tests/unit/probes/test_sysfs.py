"""RDMA sysfs on a tree laid out like a real mlx5 host: formats, names, widths, broken files."""

from __future__ import annotations

import os
import shutil

import pytest
from fabricdoc.probes.host import sysfs as ibsysfs

from fabricdoc.errors import ParseError
from fabricdoc.model.counters import lookup, raw_delta
from tests.helpers.paths import DATA

ROOT = os.path.join(DATA, "sysfs", "mlx5_host")


def records(root=ROOT):
    return ibsysfs.parse_tree(ibsysfs.read_tree(root), host="gpu017", timestamp=1.0)


def by_node(items):
    return {(r.node, r.port): r for r in items}


def test_kernel_formats_parse():
    assert ibsysfs.parse_enum("4: ACTIVE\n", "state") == (4, "ACTIVE")
    assert ibsysfs.parse_enum("5: LinkUp\n", "phys_state") == (5, "LinkUp")
    assert ibsysfs.parse_rate("200 Gb/sec (4X HDR)\n", "rate") == (200.0, 4, "HDR")
    assert ibsysfs.parse_rate("2.5 Gb/sec (1X SDR)\n", "rate") == (2.5, 1, "SDR")
    assert ibsysfs.parse_counter("N/A (no PMA)\n", "c") is None
    with pytest.raises(ParseError, match="rate"):
        ibsysfs.parse_rate("fast\n", "ports/1/rate")


def test_ports_are_named_by_hca_guid_with_state_and_speed():
    counters, states, problems = records()
    assert problems == []
    st = by_node(states)
    roce = st[("0xb8cef60300a12b3c", 1)]
    assert (roce.state, roce.phys_state, roce.lanes, roce.lane_gbps) == ("Active", "LinkUp", 4, 50.0)
    assert roce.ifname == "ens1f0np0"
    ib = st[("0xb8cef60300a12b3d", 1)]
    assert (ib.lanes, ib.lane_gbps) == (4, 100.0)
    down = st[("0xb8cef60300a12b3e", 1)]
    assert (down.state, down.phys_state) == ("Down", "Disabled")
    assert len(counters) == 3


def test_counters_keep_sysfs_and_hw_counter_names_and_widths():
    counters, _states, _ = records()
    c = by_node(counters)
    roce = c[("0xb8cef60300a12b3c", 1)]
    v = roce.values
    assert v["np_ecn_marked_roce_packets"] == 1843211
    assert v["np_cnp_sent"] == 921604 and v["rp_cnp_handled"] == 884312
    assert v["out_of_sequence"] == 4211 and v["packet_seq_err"] == 37
    assert v["local_ack_timeout_err"] == 2 and v["implied_nak_seq_err"] == 19
    assert v["port_xmit_wait"] is None  # "N/A (no PMA)": unknown, never 0
    assert "lifespan" not in v  # a setting, not a counter
    # port_xmit_data counts 4-byte words, as the kernel documents
    assert v["port_xmit_data"] == 7884968635904
    assert roce.width_bits["symbol_error"] == 16 and roce.width_bits["out_of_sequence"] == 32
    ib = c[("0xb8cef60300a12b3d", 1)]
    assert ib.values["symbol_error"] == 65535 and ib.source == "sysfs"


def test_every_issue_named_hw_counter_is_in_the_counter_table():
    names = ["np_ecn_marked_roce_packets", "np_cnp_sent", "rp_cnp_handled", "out_of_sequence",
             "packet_seq_err", "local_ack_timeout_err", "implied_nak_seq_err", "symbol_error",
             "link_downed", "port_xmit_data"]
    assert [n for n in names if lookup(n) is None] == []


def test_unreadable_file_is_one_line_and_other_records_are_kept(tmp_path):
    root = tmp_path / "host"
    shutil.copytree(ROOT, root)
    sym = root / "sys/class/infiniband/mlx5_0/ports/1/counters/symbol_error"
    sym.unlink()
    sym.symlink_to(tmp_path / "gone")  # reading it fails like a vanished device's file
    (root / "sys/class/infiniband/mlx5_1/ports/1/rate").write_text("garbage\n")
    counters, states, problems = records(root)
    assert len(counters) == 3 and len(states) == 3
    assert by_node(counters)[("0xb8cef60300a12b3c", 1)].values["symbol_error"] is None
    assert by_node(counters)[("0xb8cef60300a12b3c", 1)].values["np_cnp_sent"] == 921604
    assert len(problems) == 2
    assert all("\n" not in p for p in problems)
    assert any("mlx5_0/ports/1/counters/symbol_error" in p for p in problems)
    assert any("mlx5_1/ports/1/rate" in p for p in problems)


def test_host_without_rdma_has_no_tree(tmp_path):
    raw = ibsysfs.read_tree(tmp_path)
    assert raw["present"] is False and raw["devices"] == {}


def test_a_real_h100_tree_reads_ndr_and_roce_ports_with_the_files_values():
    """gpud's H100 fixture (tests/data/sysfs/real_gpud_h100/README.md): CX-7 IB at 4X NDR, BlueField-3
    RoCE at 2X NDR; counters and hw_counters as the files hold them."""
    counters, states, *_ = ibsysfs.parse_tree(ibsysfs.read_tree(os.path.join(DATA, "sysfs", "real_gpud_h100")),
                                              host="h100", timestamp=1.0)
    st = by_node(states)
    assert (st["h100:mlx5_0", 1].lanes, st["h100:mlx5_0", 1].lane_gbps, st["h100:mlx5_0", 1].state) == (4, 100.0, "Active")
    assert (st["h100:mlx5_bond_0", 1].lanes, st["h100:mlx5_bond_0", 1].lane_gbps) == (2, 100.0)
    c = by_node(counters)["h100:mlx5_0", 1]
    assert c.values["port_rcv_errors"] == 14 and c.values["port_xmit_wait"] == 2489603687
    assert c.values["port_rcv_data"] == 230539874932483 and c.values["roce_adp_retrans"] == 3
    # excessive_buffer_overrun_errors is a 4-bit register: 15 is its maximum, so it reads "at least 15".
    assert c.width_bits["excessive_buffer_overrun_errors"] == 4 and c.values["excessive_buffer_overrun_errors"] == 15
    cdef = lookup("excessive_buffer_overrun_errors")
    assert raw_delta(0, 15, cdef, c.width_bits["excessive_buffer_overrun_errors"]) == (15, True, False)
