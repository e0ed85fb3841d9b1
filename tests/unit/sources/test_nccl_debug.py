"""The NCCL_DEBUG parser on real logs from clusters and issue threads (tests/data/nccl-debug)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fabricdoc.errors import FabricdocError, ParseError
from fabricdoc.sources.nccl_debug import parse_nccl_debug, read_nccl_debug

DATA = Path(__file__).parents[2] / "data" / "nccl-debug"
SNELLIUS = DATA / "real_odissei_snellius_h100_2node_netib_roce_mix" / "all_reduce_mpi.log"
ISSUE1405 = DATA / "real_nccl_issue1405_netib_completion_vendor_err_129" / "excerpt.log"
ISSUE1814 = DATA / "real_nccl_issue1814_ibext_no_gdrdma_completion_errors" / "excerpt.log"
ISSUE952 = DATA / "real_nccl_issue952_net_socket_fallback" / "excerpt.log"
WATCHDOG = DATA / "real_pytorch_watchdog_timeout_excerpts"
POLARIS = DATA / "real_alcf_polaris_torch_interleaved_ofi_cxi" / "n2.p1.dat"


def test_two_node_ib_job_gives_ranks_devices_and_gdrdma_connections():
    log = read_nccl_debug(SNELLIUS)
    assert log.hosts[:2] == ["gcn151", "gcn154"]
    init = {(r.rank, r.host, r.cuda_dev) for r in log.ranks if r.bus_id}
    assert (5, "gcn154", 1) in init and (0, "gcn151", 0) in init and len(init) == 8
    ib = [n for n in log.nets if n.net == "IB"]
    assert ib[0].devices[0] == ("mlx5_0", 1, "RoCE") and ib[0].devices[1] == ("mlx5_2", 1, "IB")
    assert log.addresses["172.18.62.154"][0] == "gcn154"
    net = [c for c in log.connections if c.is_net]
    assert net and all(c.transport == "NET/IB" and c.gdr for c in net)
    first = next(c for c in net if c.at.line_no == 225)
    assert (first.src_rank, first.dst_rank, first.direction, first.net_dev) == (1, 5, "receive", 1)
    assert (first.local_rank, first.peer_rank) == (5, 1)


def test_a_line_spliced_by_another_rank_is_garbled_counted_and_not_guessed():
    log = read_nccl_debug(SNELLIUS)
    assert 334 in log.garbled  # results-table row with a Channel line glued to its end
    assert all(c.at.line_no != 334 for c in log.connections)
    assert log.skipped >= len(log.garbled)


def test_completion_errors_give_status_vendor_error_direction_and_gids():
    log = read_nccl_debug(ISSUE1405)
    assert [e.status for e in log.errors] == [12, 12, 12]
    e = log.errors[0]
    assert (e.host, e.cuda_dev, e.peer_ip, e.vendor_err, e.direction) == ("kp-ddp-worker-0", 4, "10.216.210.236", 129, "Recv")
    assert e.local_gid == "fd00:1148:9000:5000:4:200:3:ff22" and e.remote_gid == "fd00:1148:9000:5000:4:200:3:ff1f"
    assert "transport retry counter exceeded" in e.reason


def test_plugin_transport_without_gdrdma_and_flushed_errors():
    log = read_nccl_debug(ISSUE1814)
    assert {c.transport for c in log.connections} == {"NET/IBext_v8"}
    assert not any(c.gdr for c in log.connections)
    assert [e.status for e in log.errors] == [12, 5, 5]
    assert log.errors[1].vendor_err == 249 and log.errors[0].remote_gid == "::ffff:29.87.4.221"


def test_socket_fallback_and_p2p_connections():
    log = read_nccl_debug(ISSUE952)
    by = {c.transport for c in log.connections}
    assert by == {"NET/Socket", "P2P"}
    sock = [c for c in log.connections if c.transport == "NET/Socket"]
    assert sock[0].host == "<cluster_name>" and sock[0].net_dev == 0 and not sock[0].gdr


@pytest.mark.parametrize("name", ["basicsr_issue737_torch2x.log", "llamafactory_issue7396_line_numbered.log",
                                  "ofa_issue271_torch1x.log"])
def test_watchdog_timeouts_in_three_torch_formats(name):
    log = read_nccl_debug(WATCHDOG / name)
    assert log.watchdogs and all(w.op in ("ALLREDUCE", "BROADCAST") for w in log.watchdogs)
    assert log.watchdogs[0].seq > 0


def test_newer_completion_format_names_the_hca():
    line = ("[2026-03-03 12:11:38] tpgds-aihub0007:185303:186751 [1] transport/net_ib.cc:2453 NCCL WARN NET/IB: "
            "Got completion from peer 10.99.91.63<51161> with status=4 opcode=32614 len=32614 vendor err 81 (Send) "
            "localGid ::ffff:10.99.92.59 remoteGids::ffff:10.99.91.63 hca mlx5_1")
    (e,) = parse_nccl_debug(line, "x").errors
    assert (e.host, e.status, e.vendor_err, e.direction, e.hca) == ("tpgds-aihub0007", 4, 81, "Send", "mlx5_1")


def test_interleaved_ofi_log_reads_without_error():
    log = read_nccl_debug(POLARIS)
    assert log.connections and log.nccl_lines > 50


def test_empty_undecodable_and_foreign_files_are_one_error_naming_the_file(tmp_path):
    empty = tmp_path / "empty.log"
    empty.write_text("")
    with pytest.raises(ParseError, match="empty.log"):
        read_nccl_debug(empty)
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"host:1:1 [0] NCCL INFO ok\nhost:1:1 [0] NCCL INFO \xff\n")
    with pytest.raises(ParseError, match=r"bad.log:2"):
        read_nccl_debug(bad)
    foreign = tmp_path / "foreign.log"
    foreign.write_text("hello\nworld\n")
    with pytest.raises(ParseError, match="no NCCL_DEBUG line"):
        read_nccl_debug(foreign)
    with pytest.raises(FabricdocError, match="no-such"):
        read_nccl_debug(tmp_path / "no-such.log")
