"""nccl-tests logs: the real header/table/avg format, malformed logs, and localization from a log directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from fabricdoc.probes.bandwidth.nccl_tests import parse_nccl_tests

from fabricdoc.analysis.localize import localize
from fabricdoc.errors import ParseError
from fabricdoc.sources.fabrics import load_fabric
from fabricdoc.sources.nccl_logs import observations_from_nccl_logs
from tests.helpers.paths import DATA as DATA_ROOT

DATA = DATA_ROOT / "nccl"
REAL = DATA / "real"
SLOW = DATA / "slow_link"


def _read(name: str) -> str:
    return (REAL / name).read_text()


def test_two_host_h200_log_gives_ranks_rows_and_average():
    run = parse_nccl_tests(_read("all_reduce_2x1_h200_dranet.log"), "dranet.log")
    assert run.test == "all_reduce"
    assert run.hosts == ["nccl-test-dranet-1gpu-1nic-worker-0", "nccl-test-dranet-1gpu-1nic-worker-1"]
    assert [r.device_name for r in run.ranks] == ["NVIDIA H200", "NVIDIA H200"]
    assert run.ranks[0].bus_id == "0000:cc:00" and run.ranks[1].pid == 21
    assert len(run.rows) == 24
    last = run.rows[-1]
    assert last.size_bytes == 8589934592 and last.count == 2147483648 and last.redop == "sum" and last.root == -1
    assert last.out_of_place.busbw_gbs == 31.89 and last.in_place.time_us == 269407
    assert run.avg_busbw_gbs == pytest.approx(15.5188)
    assert run.wrong == 0 and run.out_of_bounds == 0
    assert run.peak_busbw_gbps() == pytest.approx(31.89 * 8)


def test_sixteen_rank_h100_header_maps_ranks_to_hosts_and_devices():
    run = parse_nccl_tests(_read("all_reduce_2x8_h100_a3mega.log"), "a3mega.log")
    assert run.hosts == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert [r.device for r in run.ranks if r.host == "ztan-mig-gq73"] == list(range(8))
    assert run.ranks[15].device_name == "NVIDIA H100 80GB HBM3"
    assert run.avg_busbw_gbs == pytest.approx(70.742)


def test_real_log_cut_mid_row_is_a_parse_error_naming_the_line():
    with pytest.raises(ParseError) as err:
        parse_nccl_tests(_read("sendrecv_2x1_a40_issue214_excerpt.log"), "issue214.log")
    assert err.value.line_no == 15 and "fields" in err.value.reason


def test_na_in_place_wrong_is_unknown_not_zero():
    text = _read("sendrecv_2x1_a40_issue214_excerpt.log").splitlines()
    text = "\n".join(text[:-1]) + "\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.08\n"
    run = parse_nccl_tests(text, "sendrecv_perf.log")
    assert run.test == "sendrecv"
    assert run.rows[0].in_place.wrong is None and run.rows[0].out_of_place.wrong == 0


def test_log_that_stops_before_the_average_is_truncated():
    lines = _read("all_reduce_2x1_h200_dranet.log").splitlines()
    with pytest.raises(ParseError) as err:
        parse_nccl_tests("\n".join(lines[:-3]), "cut.log")
    assert "truncated" in err.value.reason and err.value.line_no == len(lines) - 3


def test_wrong_elements_are_counted_apart_from_bandwidth():
    text = (SLOW / "all_reduce_node0007_node0008.log").read_text()
    run = parse_nccl_tests(text, "wrong.log")
    assert run.wrong == 17
    assert run.peak_busbw_gbps() == pytest.approx(31.89 * 8)


def test_mpirun_tag_output_prefix_and_old_header_without_group():
    body = _read("all_reduce_2x1_h200_dranet.log").split("# nThread", 1)[1]
    tagged = "\n".join("[1,0]<stdout>:" + ln for ln in ("# nThread" + body).splitlines())
    run = parse_nccl_tests(tagged.replace("Group  0 ", ""), "tagged.log")
    assert len(run.ranks) == 2 and run.ranks[0].group is None and len(run.rows) == 24


def test_not_an_nccl_log_is_rejected():
    with pytest.raises(ParseError):
        parse_nccl_tests("hello\nworld\n", "junk.log")


def test_log_directory_localizes_the_slow_cable_and_reports_bad_logs():
    fabric, _ = load_fabric(str(SLOW / "fabric.yaml"))
    obs = observations_from_nccl_logs(fabric, SLOW)
    errors = {Path(p.target).name: p.error for p in obs.probes if p.status == "error"}
    assert set(errors) == {"truncated_killed_mid_run.log", "unknown_host_node0099.log"}
    assert "truncated_killed_mid_run.log:54" in errors["truncated_killed_mid_run.log"]
    assert "node0099" in errors["unknown_host_node0099.log"]
    assert len(obs.pairs) == 28
    wrong = [p for p in obs.pairs if p.status == "wrong"]
    assert [(p.src.node, p.dst.node, p.wrong) for p in wrong] == [("node0007", "node0008", 17)]
    findings = localize(fabric, obs)
    links = [f for f in findings if f.kind == "link"]
    assert links and links[0].name == "leaf02[3] -- spine01[2]"
    assert any(f.fault == "data_corruption" for f in findings)


def test_healthy_log_directory_blames_no_link(tmp_path):
    fabric, _ = load_fabric(str(SLOW / "fabric.yaml"))
    real = _read("all_reduce_2x1_h200_dranet.log")
    hosts = sorted(h.id for h in fabric.hosts())
    for i, a in enumerate(hosts):
        for b in hosts[i + 1 :]:
            text = real.replace("nccl-test-dranet-1gpu-1nic-worker-0", a).replace("nccl-test-dranet-1gpu-1nic-worker-1", b)
            (tmp_path / f"{a}_{b}.log").write_text(text)
    obs = observations_from_nccl_logs(fabric, tmp_path)
    assert len(obs.pairs) == 28 and all(p.ratio == pytest.approx(1.0) for p in obs.pairs)
    assert [f for f in localize(fabric, obs) if f.kind == "link"] == []
