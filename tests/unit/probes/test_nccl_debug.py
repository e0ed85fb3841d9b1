"""The NCCL_DEBUG parser on real logs from clusters and issue threads (tests/data/nccl-debug)."""

from __future__ import annotations

from pathlib import Path

import pytest
from fabricdoc.probes.nccl.debug import parse_nccl_debug

from fabricdoc.errors import FabricdocError, ParseError
from fabricdoc.sources.nccl_debug import read_nccl_debug

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
    assert first.peer_rank == 1


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


# -- every real shape (issue 27): prefixes, events without a device, old error spellings, fallbacks ------
def _case(name: str) -> Path:
    (path,) = [p for p in (DATA / name).iterdir() if p.name != "README.md"]
    return path


@pytest.mark.parametrize(
    ("case", "host", "what"),
    [
        # mpirun --timestamp-output --tag-output: '2019-06-02T16:13:44.884Z: [1,12]<stdout>:host:pid:tid [0] ...'
        ("real_nccl_issue230_mpirun_timestamp_tag_output_catastrophic", "container-e275-1553839402050-12124-01-000057",
         "nic_events"),
        # a collector's local time and NCCL's own '[2025-11-09 07:39:30]' before the host
        ("real_nccl_issue1905_double_timestamp_qp_fatal_status4_vendor83", "h100-28", "errors"),
        ("real_sichek_issue44_bracket_timestamp_netib_hca_status12",
         "test-ys-512-scaling-test-0104-1504-a7de2925-master-0", "errors"),
        # Kubernetes' RFC 3339 nanosecond time
        ("real_vllm_issue9193_k8s_rfc3339nano_prefix_socket_fallback", "lax-ai-vllm-model-78d9c658c8-qlw8z", "no_ib"),
        ("real_nccl_issue302_bracket_rank_prefix_ib_roce_mix", "crow-ib-new-nccl-256-info-19", "nets"),
        ("real_nccl_issue1713_mpirun_tag_output_roce_2.27", "aiplatform-wlf2-ge78-72", "nets"),
        ("real_awsk8stester_pr464_mpijob_indented_tag_output_socket", "multi-node-nccl-test-worker-0", "connections"),
        # CloudWatch's table: '  | 2024-11-28T07:42:11.527Z | algo-1:17779:17852 [6] NCCL INFO ...'
        ("real_awsofinccl_issue715_cloudwatch_table_prefix_ofi_init", "algo-1", None),
    ],
)
def test_any_prefix_before_nccls_own_host_pid_tid_is_read(case, host, what):
    log = read_nccl_debug(_case(case))
    printed = sum(ln.count(" NCCL INFO ") + ln.count(" NCCL WARN ") for ln in _case(case).read_text().splitlines())
    assert log.nccl_lines + len(log.garbled) == printed, "NCCL's lines behind the prefix are read, not skipped"
    seen = {r.host for r in log.ranks} | {c.host for c in log.connections} | {n.host for n in log.nets}
    seen |= {e.host for e in log.errors} | {e.host for e in log.nic_events} | {h for h, _ in log.no_ib}
    seen |= {w.host for w in log.net_warnings}
    assert host in seen or what is None
    if what is not None:
        assert getattr(log, what), f"no {what} read"
    assert not any(h.startswith(("20", "[", "|")) for h in seen)  # no prefix taken for a host


def test_older_nccls_async_events_without_a_device_are_read():
    # NCCL 2.7-2.8 transport/net_ib.cc:93: 'NET/IB : Got async event : port error', no device named.
    log = read_nccl_debug(_case("real_litllama_issue380_netib_port_error_no_device"))
    assert len(log.nic_events) == 8
    assert all(e.device is None and e.port is None and e.event == "port error" for e in log.nic_events)
    cat = read_nccl_debug(_case("real_nccl_issue230_mpirun_timestamp_tag_output_catastrophic"))
    assert cat.nic_events and all(e.catastrophic and e.device is None for e in cat.nic_events)


def test_queue_pair_fatal_events_name_the_device_and_the_qp():
    log = read_nccl_debug(_case("real_nccl_issue1919_qp_async_fatal_invalid_request"))
    (e,) = log.nic_events
    assert (e.device, e.port, e.qp) == ("mlx5_1", 1, "QP (0x7309dc3bb338)")
    assert e.event == "invalid request local work queue error"
    both = read_nccl_debug(_case("real_nccl_issue1905_double_timestamp_qp_fatal_status4_vendor83"))
    assert [(e.device, e.qp is not None) for e in both.nic_events] == [("mlx5_ib0", True)]
    (err,) = both.errors
    assert (err.status, err.vendor_err, err.direction, err.hca, err.peer_ip) == (4, 83, "Send", "mlx5_ib0",
                                                                                  "172.16.12.34")
    # 'communicator encountered a fatal error (detected in ncclIbTest)' is kept as a network warning
    assert any("fatal error" in w.message for w in both.net_warnings)


@pytest.mark.parametrize(
    ("case", "statuses", "vendor"),
    [
        ("real_nccl_issue928_ib_linklocal_peer_error4_vendor81", {4}, 81),  # 'with error 4, opcode ..., vendor err 81'
        ("real_nccl_issue1737_ibext_error5_vendor249_flushed", {5}, 249),
        ("real_nccl_issue1698_netib_hca_suffix_status12_then_5", {12}, 129),
    ],
)
def test_completion_errors_in_every_spelling(case, statuses, vendor):
    log = read_nccl_debug(_case(case))
    assert log.errors and {e.status for e in log.errors} == statuses
    assert {e.vendor_err for e in log.errors} == {vendor}


def test_ipoib_link_local_peer_is_kept_whole_for_the_port_guid():
    log = read_nccl_debug(_case("real_nccl_issue928_ib_linklocal_peer_error4_vendor81"))
    assert log.errors[0].peer_ip == "fe80::966d:ae03:8b:df78%ib0"


def test_gdr_disabled_and_socket_fallbacks_are_read():
    roce = read_nccl_debug(_case("real_nccl_issue1537_roce_gdr_disabled_for_hca"))
    assert [(h, hca) for h, hca, _ in roce.gdr_disabled] == [("hostname1", "mlx5_0"), ("hostname1", "mlx5_1")]
    plain = read_nccl_debug(_case("real_nccl_issue899_gdr_disabled_no_module_netib_plain"))
    assert plain.gdr_disabled and plain.connections and not any(c.gdr for c in plain.connections if c.is_net)
    aws = read_nccl_debug(_case("real_nccl_issue226_aws_2019_ib_no_device_socket"))
    assert len(aws.no_ib) == 8 and {n.net for n in aws.nets} == {"Socket"}
    single = read_nccl_debug(_case("real_nccltests_issue291_no_libibverbs_socket_single"))
    assert [n for _, n, _ in single.networks] == ["Socket"]


def test_two_ranks_output_run_together_is_garbled_not_a_host():
    # vllm #9193 line 2: '... cudaDev 1 nvmlax-ai-vllm-...:273:273 [3] NCCL INFO cudaDriverVersion 12040'
    log = read_nccl_debug(_case("real_vllm_issue9193_k8s_rfc3339nano_prefix_socket_fallback"))
    assert 2 in log.garbled
    assert log.hosts == ["lax-ai-vllm-model-78d9c658c8-qlw8z"]


def test_a_megabyte_line_is_read_in_linear_time():
    line = "2026-12-05T07:00:00Z " + "a" * 2_000_000 + " host:1:2 [0] NCCL WARN NET/IB : Got async event : port error"
    log = parse_nccl_debug(line + "\n" + ":" * 2_000_000 + "\n", "big")
    assert [e.event for e in log.nic_events] == ["port error"]


@pytest.mark.parametrize(
    "prefix",
    [
        "0: ",  # srun --label
        "12: ",
        "May  2 10:11:12 gpu017 python[3468]: ",  # syslog / journald short form
        "[Thu May  2 10:11:12 2024] ",  # dmesg -T style
        "2024-05-02 10:11:12,345 - INFO - ",  # Python logging
        "2024-05-02T10:11:12.345678901Z stdout F ",  # containerd CRI log
        "2024-05-02T10:11:12+02:00 ",  # RFC 3339 with offset
        "[1,3]<stderr>: ",
        "trainer-7b-worker-3 | ",  # docker compose
    ],
)
def test_launcher_and_collector_prefixes_on_a_real_error_line(prefix):
    # DERIVED: the real issue-1405 completion error, behind the prefixes these tools write (no public
    # NCCL log with exactly these was found; each prefix's form is the tool's documented one).
    line = next(ln for ln in ISSUE1405.read_text().splitlines() if "Got completion" in ln)
    log = parse_nccl_debug(prefix + line, "x")
    (e,) = log.errors
    assert (e.host, e.status, e.vendor_err, e.peer_ip) == ("kp-ddp-worker-0", 12, 129, "10.216.210.236")


def test_a_5000_digit_rank_is_a_garbled_line_and_the_rest_is_read():
    text = SNELLIUS.read_text()
    line = next(i for i, ln in enumerate(text.splitlines()) if "ncclCommInitRank" in ln)
    lines = text.splitlines()
    lines[line] = lines[line].replace(" rank ", " rank " + "9" * 5000 + " ", 1)
    good, bad = parse_nccl_debug(text, "x"), parse_nccl_debug("\n".join(lines), "x")
    assert line + 1 in bad.garbled and len(bad.ranks) == len(good.ranks) - 1
    assert len(bad.connections) == len(good.connections)
