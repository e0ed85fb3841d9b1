"""A directory of nccl-tests logs: per-run, per-rail pair results, refusals that name file and line, localization.

Real logs come from tests/data/nccl/<case>/ (provenance in tests/data/nccl/README.md);
where a test puts a real log on a fabric's hosts it only replaces the host names.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from fabricdoc.analysis.localize import Options, localize
from fabricdoc.errors import ConfigError
from fabricdoc.fabric.generators import fat_tree_2, rail_optimized
from fabricdoc.model.paths import expected_gbps
from fabricdoc.model.records import PortRef
from fabricdoc.model.topology import Fabric
from fabricdoc.report.coverage import Planned, measure
from fabricdoc.report.render import summary_text
from fabricdoc.report.report import Report
from fabricdoc.sources.fabrics import load_fabric
from fabricdoc.sources.nccl_logs import hca_index, observations_from_nccl_logs
from tests.helpers.fabrics import multi_hca_hosts
from tests.helpers.paths import DATA as DATA_ROOT

DATA = DATA_ROOT / "nccl"
REAL = DATA / "real"
SLOW = DATA / "slow_link"
DRANET = ("nccl-test-dranet-1gpu-1nic-worker-0", "nccl-test-dranet-1gpu-1nic-worker-1")
A3MEGA = ("ztan-mig-235z", "ztan-mig-gq73")
N2G1_CUT = DATA / "xxrjun_h100_n2g1_sendrecv_truncated" / "nccl_N2_G1_cnode2-002_cnode2-008.log"
N2G8 = DATA / "xxrjun_h100_n2g8_alltoall_sendrecv_2.17.6" / "nccl_N2_G8_cnode2-001_cnode2-002.log"
FIVE = DATA / "xxrjun_h100_n10g2_five_appended_2.17.8" / "nccl_N10_G2.log"
POLARIS_2160 = DATA / "alcf_polaris_n540_2160ranks_allreduce" / "all_reduce_output.dat.5"
JSON = DATA / "json_from_source" / "alltoall_2x1_h100_v1.json"
DGX_HCAS = (3, 0, 10, 1, 8, 11, 2, 9)  # the compute HCAs of a DGX H100 (mlx5_4..7 are storage), out of order


def _read(name: str) -> str:
    return (REAL / name).read_text()


def _on_hosts(text: str, old: tuple[str, ...], new: tuple[str, ...]) -> str:
    for o, n in zip(old, new, strict=True):
        text = text.replace(o, n)
    return text


def _errors(obs) -> dict[str, str]:
    return {Path(p.target).name: p.error for p in obs.probes if p.status == "error"}


def _two_dgx(hcas=DGX_HCAS, identified=True) -> Fabric:
    return multi_hca_hosts(hcas, identified=identified)


# -- the derived slow-link set (kept from the first version; the fabric is now 12x EDR) --------------
def test_log_directory_localizes_the_slow_cable_and_reports_bad_logs():
    fabric, _ = load_fabric(str(SLOW / "fabric.yaml"))
    obs = observations_from_nccl_logs(fabric, SLOW)
    errors = _errors(obs)
    assert set(errors) == {"truncated_killed_mid_run.log", "unknown_host_node0099.log"}
    assert "truncated_killed_mid_run.log:54" in errors["truncated_killed_mid_run.log"]
    assert "unknown_host_node0099.log:35" in errors["unknown_host_node0099.log"]
    assert "node0099" in errors["unknown_host_node0099.log"]
    assert len(obs.pairs) == 28
    wrong = [p for p in obs.pairs if p.status == "wrong"]
    assert [(p.src.node, p.dst.node, p.wrong) for p in wrong] == [("node0007", "node0008", 17)]
    row = next(i for i, ln in enumerate((SLOW / "all_reduce_node0007_node0008.log").read_text().splitlines(), 1)
               if ln.lstrip().startswith("268435456"))  # fmt: skip
    assert f"all_reduce_node0007_node0008.log:{row}: all_reduce run: data check failed (17 wrong elements)" in wrong[0].error
    # expected is the line rate of the tested path (300 Gb/s), never a median of other logs
    assert {p.expected_gbps for p in obs.pairs} == {300.0}
    assert sorted({round(p.ratio, 3) for p in obs.pairs}) == [0.298, 0.85]  # 89.28 and 255.12 Gb/s
    findings = localize(fabric, obs)
    links = [f for f in findings if f.kind == "link"]
    assert links and links[0].name == "leaf02[3] -- spine01[2]"
    assert any(f.fault == "data_corruption" for f in findings)


def test_healthy_log_directory_blames_no_link(tmp_path):
    fabric, _ = load_fabric(str(SLOW / "fabric.yaml"))
    hosts = sorted(h.id for h in fabric.hosts())
    for i, a in enumerate(hosts):
        for b in hosts[i + 1 :]:
            (tmp_path / f"{a}_{b}.log").write_text(_on_hosts(_read("all_reduce_2x1_h200_dranet.log"), DRANET, (a, b)))
    obs = observations_from_nccl_logs(fabric, tmp_path)
    assert len(obs.pairs) == 28 and all(p.ratio == pytest.approx(255.12 / 300) for p in obs.pairs)
    assert [f for f in localize(fabric, obs) if f.kind == "link"] == []


def test_four_logs_all_equally_slow_are_too_few_to_learn_from_and_read_slow(tmp_path):
    # Four tests are too few to learn what a healthy test reaches: they are judged against the stated
    # prior (88% of the line rate), and 64% of it is slow.
    fabric = fat_tree_2(leaves=4, spines=2, hosts_per_leaf=2)  # 4X NDR, 400 Gb/s
    real = _read("all_reduce_2x1_h200_dranet.log")
    for a, b in (("node0001", "node0003"), ("node0002", "node0005"), ("node0004", "node0007"), ("node0006", "node0008")):
        (tmp_path / f"{a}_{b}.log").write_text(_on_hosts(real, DRANET, (a, b)))
    obs = observations_from_nccl_logs(fabric, tmp_path)
    assert len(obs.pairs) == 4
    judged = Options().judge(fabric, obs)
    for p, j in zip(obs.pairs, judged.pairs, strict=True):
        assert p.expected_gbps == expected_gbps(fabric, p.src, p.dst, True) == 400.0
        assert p.ratio == pytest.approx(255.12 / 400) and j.slow and j.baseline.source == "prior"
    assert any("too few to learn from" in n for n in judged.expectations.notes)
    assert [f for f in localize(fabric, obs) if f.kind == "link"]


# -- the directory itself -----------------------------------------------------------------------------
def test_missing_directory_a_file_or_a_directory_without_logs_is_a_config_error(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    with pytest.raises(ConfigError, match="no such directory"):
        observations_from_nccl_logs(fabric, tmp_path / "nope")
    (tmp_path / "one.log").write_text(_read("all_reduce_2x1_h200_dranet.log"))
    with pytest.raises(ConfigError, match="not a directory"):
        observations_from_nccl_logs(fabric, tmp_path / "one.log")
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "README.md").write_text("not a log\n")
    with pytest.raises(ConfigError, match="no nccl-tests logs"):
        observations_from_nccl_logs(fabric, empty)


def test_empty_undecodable_and_truncated_logs_among_good_ones_make_coverage_incomplete(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    real = _read("all_reduce_2x1_h200_dranet.log")
    (tmp_path / "good.log").write_text(_on_hosts(real, DRANET, ("node0001", "node0003")))
    (tmp_path / "empty.log").write_bytes(b"")
    (tmp_path / "latin1.log").write_bytes(_on_hosts(real, DRANET, ("node0002", "node0004")).encode().replace(b"H200", b"H\xe900"))
    (tmp_path / "cut.log").write_text("\n".join(_on_hosts(real, DRANET, ("node0001", "node0004")).splitlines()[:-3]))
    obs = observations_from_nccl_logs(fabric, tmp_path)
    errors = _errors(obs)
    assert set(errors) == {"empty.log", "latin1.log", "cut.log"}
    assert "empty.log" in errors["empty.log"] and "0 bytes" in errors["empty.log"]
    first_h200 = next(i for i, ln in enumerate(real.splitlines(), 1) if "H200" in ln)
    assert f"latin1.log:{first_h200}" in errors["latin1.log"] and "not valid UTF-8" in errors["latin1.log"]
    assert f"cut.log:{len(real.splitlines()) - 3}" in errors["cut.log"] and "truncated" in errors["cut.log"]
    assert [(p.src.node, p.dst.node) for p in obs.pairs] == [("node0001", "node0003")]
    coverage = measure(fabric, obs, Planned())
    assert not coverage.complete and coverage.not_seen_count == 3


def test_logs_that_hold_no_pair_test_leave_the_directory_not_seen(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    hosts = [f"cnode3-{n:03d}" for n in range(2, 12)]
    (tmp_path / "five.log").write_text(_on_hosts(FIVE.read_text(), tuple(hosts), tuple(f"h{i}" for i in range(10))))
    obs = observations_from_nccl_logs(fabric, tmp_path)
    skipped = [p.error for p in obs.probes if p.status == "skipped"]
    assert len(skipped) == 5 and all("spans 10 hosts" in s for s in skipped)
    assert [p.target for p in obs.probes if p.status == "error"] == [str(tmp_path)]
    assert not obs.pairs and not measure(fabric, obs, Planned()).complete


# -- several tests in one log --------------------------------------------------------------------------
def test_appended_runs_each_give_their_own_result_and_a_cut_run_is_refused_alone(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    text = _on_hosts(N2G1_CUT.read_text(), ("cnode2-002", "cnode2-008"), ("node0001", "node0003"))
    (tmp_path / N2G1_CUT.name).write_text(text)
    obs = observations_from_nccl_logs(fabric, tmp_path)
    [pair] = obs.pairs  # the alltoall run: one pair at its own peak, not merged with the sendrecv run
    assert (pair.src, pair.dst) == (PortRef("node0001", 1), PortRef("node0003", 1))
    assert pair.test == "nccl-tests:alltoall" and pair.busbw_gbps == pytest.approx(13.45 * 8) and pair.size_bytes == 17179869184
    assert [p.status for p in obs.probes] == ["ok", "error"]
    assert f"{N2G1_CUT.name}:37" in obs.probes[1].error and "sendrecv run ends" in obs.probes[1].error


def test_json_log_gives_the_pair_its_devices_name(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    text = _on_hosts(JSON.read_text(), ("cnode2-002", "cnode2-008"), ("node0002", "node0004"))
    (tmp_path / "alltoall.json").write_text(text)
    [pair] = observations_from_nccl_logs(fabric, tmp_path).pairs
    assert (pair.src.node, pair.dst.node, pair.test) == ("node0002", "node0004", "nccl-tests:alltoall")
    assert pair.busbw_gbps == pytest.approx(13.45 * 8)


def test_trimmed_rank_list_is_refused_not_turned_into_guessed_pairs(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    (tmp_path / POLARIS_2160.name).write_text(POLARIS_2160.read_text())
    obs = observations_from_nccl_logs(fabric, tmp_path)
    assert not obs.pairs
    [err] = [p.error for p in obs.probes if p.status == "error"]
    assert f"{POLARIS_2160.name}:16" in err and "24 of 2160 ranks" in err


# -- multi-rail hosts -------------------------------------------------------------------------------------
def test_hca_device_index_comes_from_the_hca_word_of_the_name():
    assert [hca_index(n) for n in ("dgx01 mlx5_10", "h4-1-gpu HCA-7", "ubuntu mlx5_bond_0", "dgx01", "MT4129 ConnectX7")] == \
        [10, 7, 0, None, None]


@pytest.mark.parametrize("identified", [True, False], ids=["rails-from-identity", "rails-from-names"])
def test_eight_gpus_per_host_map_onto_hca_rails_sorted_by_device_index(tmp_path, identified):
    fabric = _two_dgx(identified=identified)
    (tmp_path / "all_reduce_2x8.log").write_text(_on_hosts(_read("all_reduce_2x8_h100_a3mega.log"), A3MEGA, ("dgxa", "dgxb")))
    obs = observations_from_nccl_logs(fabric, tmp_path)
    assert [p.status for p in obs.probes] == ["ok"]
    rails = [(fabric.label(p.src.node), fabric.label(p.dst.node)) for p in obs.pairs]
    assert rails == [(f"dgxa mlx5_{i}", f"dgxb mlx5_{i}") for i in sorted(DGX_HCAS)]  # GPU d -> d-th HCA by index
    # one pair per rail carrying the run's 2710.56 Gb/s busbw / 8 rails, judged against the rail's 400 Gb/s
    assert all(p.busbw_gbps == pytest.approx(338.82) and p.expected_gbps == 400.0 for p in obs.pairs)
    assert len({p.round for p in obs.pairs}) == 1 and all(p.test == "nccl-tests:all_reduce" for p in obs.pairs)


def test_eight_gpus_per_host_on_one_multi_port_node_use_ports_in_order(tmp_path):
    fabric = rail_optimized(units=1, hosts_per_unit=2, rails=8, spines=2)
    (tmp_path / "all_reduce_2x8.log").write_text(_on_hosts(_read("all_reduce_2x8_h100_a3mega.log"), A3MEGA, ("gpu0001", "gpu0002")))
    obs = observations_from_nccl_logs(fabric, tmp_path)
    assert [(p.src, p.dst) for p in obs.pairs] == [(PortRef("gpu0001", d + 1), PortRef("gpu0002", d + 1)) for d in range(8)]


def test_a_gpu_without_a_rail_or_hcas_without_an_index_are_refused_naming_line_and_host(tmp_path):
    log = _on_hosts(_read("all_reduce_2x8_h100_a3mega.log"), A3MEGA, ("dgxa", "dgxb"))
    (tmp_path / "all_reduce_2x8.log").write_text(log)
    obs = observations_from_nccl_logs(_two_dgx(hcas=(0, 1, 2, 3)), tmp_path)
    [err] = _errors(obs).values()
    line = next(i for i, ln in enumerate(log.splitlines(), 1) if "Rank  4 " in ln)
    assert f"all_reduce_2x8.log:{line}: rank 4 on host 'dgxa' uses GPU 4, but the host has 4 rails" in err
    fabric = _two_dgx(identified=False)
    for n in fabric.hosts():
        n.label = n.attrs["host"] + " ConnectX7"
    [err] = _errors(observations_from_nccl_logs(fabric, tmp_path)).values()
    assert "host 'dgxa' has 8 HCAs with no rail and no distinct device index" in err
    # every process sees its own GPU as device 0 (CUDA_VISIBLE_DEVICES per rank): the ordinal picks no rail
    (tmp_path / "all_reduce_2x8.log").write_text(re.sub(r"device\s+\d+ \[", "device  0 [", log))
    [err] = _errors(observations_from_nccl_logs(_two_dgx(), tmp_path)).values()
    assert "ranks 0 and 1 on host 'dgxa' both report GPU 0" in err


def test_non_ring_tests_with_several_gpus_per_host_are_skipped_not_split_per_rail(tmp_path):
    (tmp_path / N2G8.name).write_text(_on_hosts(N2G8.read_text(), ("cnode2-001", "cnode2-002"), ("dgxa", "dgxb")))
    obs = observations_from_nccl_logs(_two_dgx(), tmp_path)
    skipped = [p.error for p in obs.probes if p.status == "skipped"]
    assert len(skipped) == 2 and "alltoall traffic crosses rails" in skipped[0] and "sendrecv traffic" in skipped[1]
    assert not obs.pairs


# -- logs that do not name their test -----------------------------------------------------------------
def _unnamed(text: str) -> str:
    """The log with the lines that name its test removed (the command line, 'Collective test ...')."""
    return "\n".join(ln for ln in text.splitlines() if "_perf" not in ln) + "\n"


def test_an_unnamed_eight_gpu_log_whose_busbw_is_all_reduce_s_factor_is_read_as_all_reduce(tmp_path):
    log = _unnamed(_on_hosts(_read("all_reduce_2x8_h100_a3mega.log"), A3MEGA, ("dgxa", "dgxb")))
    (tmp_path / "dgxa_dgxb.log").write_text(log)
    obs = observations_from_nccl_logs(_two_dgx(), tmp_path)
    assert [p.status for p in obs.probes] == ["ok"]
    # the real peak row: busbw 338.82 GB/s = algbw 180.70 x 2(16-1)/16 (rounded as printed)
    assert len(obs.pairs) == 8 and {p.test for p in obs.pairs} == {"nccl-tests:all_reduce"}
    assert all(p.busbw_gbps == pytest.approx(338.82) for p in obs.pairs)


def test_an_unnamed_eight_gpu_log_of_another_test_is_skipped_as_not_naming_its_test(tmp_path):
    text = _unnamed(_on_hosts(N2G8.read_text(), ("cnode2-001", "cnode2-002"), ("dgxa", "dgxb")))
    (tmp_path / "dgxa_dgxb.log").write_text(text)
    obs = observations_from_nccl_logs(_two_dgx(), tmp_path)
    assert not obs.pairs and [p.status for p in obs.probes] == ["skipped", "skipped", "error"]
    alltoall, sendrecv = (p.error for p in obs.probes[:2])
    assert "dgxa_dgxb.log:1: the run does not name its test" in alltoall
    # the peak rows: alltoall 23.62 / 25.19 GB/s (its factor is (n-1)/n), sendrecv 15.14 / 15.14
    assert f"busbw/algbw = {23.62 / 25.19:.3f} is not all_reduce's 2(n-1)/n = 1.875 for its 16 ranks" in alltoall
    assert "busbw/algbw = 1.000 is not all_reduce's 2(n-1)/n = 1.875" in sendrecv
    assert "traffic crosses rails" not in alltoall + sendrecv


def test_an_unnamed_one_gpu_pair_log_is_used_and_keeps_the_name_unknown(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    text = _unnamed(_on_hosts(_read("all_reduce_2x1_h200_dranet.log"), DRANET, ("node0001", "node0003")))
    (tmp_path / "node0001_node0003.log").write_text(text)
    [pair] = observations_from_nccl_logs(fabric, tmp_path).pairs
    # 2 ranks: 2(n-1)/n = 1 is also sendrecv's, broadcast's and reduce's factor, so no name is guessed;
    # with one GPU per host the busbw is the one rail's figure whatever the test
    assert pair.test == "nccl-tests:unknown" and pair.busbw_gbps == pytest.approx(31.89 * 8)


def test_skipped_logs_are_listed_with_why_in_the_text_summary(tmp_path):
    text = _unnamed(_on_hosts(N2G8.read_text(), ("cnode2-001", "cnode2-002"), ("dgxa", "dgxb")))
    (tmp_path / "dgxa_dgxb.log").write_text(text)
    fabric = _two_dgx()
    obs = observations_from_nccl_logs(fabric, tmp_path)
    summary = summary_text(Report.build(fabric, localize(fabric, obs), obs))
    lines = summary.splitlines()
    head = lines.index("not used (2 skipped):")
    listed = lines[head + 1 : head + 3]
    assert all(ln.startswith(f"  nccl-tests on {tmp_path / 'dgxa_dgxb.log'}: ") for ln in listed)
    assert all("does not name its test" in ln for ln in listed)


def test_every_size_a_run_printed_is_kept_for_judging_size_by_size(tmp_path):
    # The real dranet log: all_reduce_perf -b 1K -e 8G -f 2, 24 sizes; each size's busbw (the mean of
    # out-of-place and in-place) is kept in Gb/s, so each is judged against what healthy runs reach there.
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    (tmp_path / "run.log").write_text(_on_hosts(_read("all_reduce_2x1_h200_dranet.log"), DRANET, ("node0001", "node0003")))
    (p,) = observations_from_nccl_logs(fabric, tmp_path).pairs
    assert len(p.sizes) == 24 and [s for s, _ in p.sizes] == [1024 << k for k in range(24)]
    assert dict(p.sizes)[1 << 30] == pytest.approx((31.71 + 31.68) / 2 * 8)
    assert dict(p.sizes)[1024] == pytest.approx(0.03 * 8)
    from fabricdoc.sources.records import record_from_dict, record_to_dict

    assert record_from_dict(record_to_dict(p)) == p  # the sizes travel in saved records too


# -- runs that failed: named per pair, and the corruption they printed first still counts --------------
N2G4_INIT = DATA / "xxrjun_h100_n2g4_init_network_error" / "nccl_N2_G4_cnode2-005_cnode2-016.log"


def test_an_init_failure_is_a_test_that_could_not_run_named_per_pair_never_a_fault(tmp_path):
    # The real log: two appended runs (alltoall, sendrecv), 4 GPUs per host, each stopped by
    # 'Test NCCL failure common.cu:1279 ... network error' before any row.
    fabric = multi_hca_hosts((0, 1, 2, 3), hosts=("cnode2-005", "cnode2-016"))
    (tmp_path / N2G4_INIT.name).write_text(N2G4_INIT.read_text())
    obs = observations_from_nccl_logs(fabric, tmp_path)
    assert [p.status for p in obs.probes] == ["error", "error"]
    assert len(obs.pairs) == 8 and {p.status for p in obs.pairs} == {"error"}
    assert {(fabric.label(p.src.node), fabric.label(p.dst.node)) for p in obs.pairs} == {
        (f"cnode2-005 mlx5_{i}", f"cnode2-016 mlx5_{i}") for i in range(4)}
    first = obs.pairs[0]
    assert f"{N2G4_INIT.name}:14: alltoall run failed, so it could not test this pair" in first.error
    assert "Test NCCL failure common.cu:1279" in first.error
    assert first.busbw_gbps is None
    report = Report.build(fabric, localize(fabric, obs), obs)
    assert report.verdict == "incomplete" and not report.findings  # not a hardware fault


def _corrupted_then_failed(text: str) -> str:
    """DERIVED from the real dranet log: the 1 GiB row's out-of-place '#wrong' set to 96, the footer's
    out-of-bounds count to 4 FAILED, and the run ended by nccl-tests' own TESTCHECK line (its real
    wording, from the xxrjun log) in place of the average, as a run that aborts after its data check."""
    lines = text.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("1073741824 "))
    cells = lines[row].split()
    cells[8] = "96"
    lines[row] = "  ".join(cells)
    out = [ln for ln in lines[: row + 1]]
    out += ["# Out of bounds values : 4 FAILED", " .. node0003 pid 21: Test failure common.cu:1100",
            " .. node0001 pid 23: Test failure common.cu:1100"]
    return "\n".join(out) + "\n"


def test_corruption_followed_by_test_failure_lines_is_data_corruption_on_that_pair(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    text = _corrupted_then_failed(_on_hosts(_read("all_reduce_2x1_h200_dranet.log"), DRANET, ("node0001", "node0003")))
    (tmp_path / "run.log").write_text(text)
    obs = observations_from_nccl_logs(fabric, tmp_path)
    (pair,) = obs.pairs
    assert pair.status == "wrong" and pair.wrong == 96
    row = next(i for i, ln in enumerate(text.splitlines(), 1) if ln.lstrip().startswith("1073741824 "))
    assert f"run.log:{row}: all_reduce run: data check failed (96 wrong elements)" in pair.error
    assert pair.busbw_gbps is None  # the run stopped early: its figures are not used, its corruption is
    report = Report.build(fabric, localize(fabric, obs), obs)
    assert report.verdict == "fail"
    assert [f.fault for f in report.findings] == ["data_corruption"]


def test_a_cut_run_whose_rows_already_show_corruption_still_counts_it(tmp_path):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    text = _corrupted_then_failed(_on_hosts(_read("all_reduce_2x1_h200_dranet.log"), DRANET, ("node0001", "node0003")))
    cut = "\n".join(text.splitlines()[:-3]) + "\n"  # the footer and failure lines gone: a cut log
    (tmp_path / "run.log").write_text(cut)
    (pair,) = observations_from_nccl_logs(fabric, tmp_path).pairs
    assert pair.status == "wrong" and pair.wrong == 96
    # A cut run without corruption gives no pair at all (its figures are not trusted).
    (tmp_path / "run.log").write_text("\n".join(cut.splitlines()[:-1]) + "\n")
    assert observations_from_nccl_logs(fabric, tmp_path).pairs == []


@pytest.mark.parametrize(("old", "new"), [("Rank  1 ", "Rank {} "), ("Group  0", "Group {}"), ("nThread 1", "nThread {}"),
                                          ("  1073741824 ", "  {} ")])
def test_a_5000_digit_rank_group_thread_or_size_is_that_logs_error_and_the_others_are_kept(tmp_path, old, new):
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    real = _on_hosts(_read("all_reduce_2x1_h200_dranet.log"), DRANET, ("node0001", "node0003"))
    (tmp_path / "good.log").write_text(real)
    bad = real.replace(old, new.format("9" * 5000), 1)
    assert bad != real
    (tmp_path / "bad.log").write_text(bad)
    obs = observations_from_nccl_logs(fabric, tmp_path)
    errors = _errors(obs)
    line = next(i for i, ln in enumerate(bad.splitlines(), 1) if "9" * 5000 in ln)
    assert set(errors) == {"bad.log"} and f"bad.log:{line}: a number longer than any field" in errors["bad.log"]
    assert len(errors["bad.log"]) < 600  # the line is shown cut, not 5,000 digits
    assert [(p.src.node, p.dst.node, p.status) for p in obs.pairs] == [("node0001", "node0003", "ok")]


def test_logs_far_slower_than_the_fabric_given_are_said_not_to_fit_it(tmp_path):
    # The real xxrjun H100 run reaches 13.45 GB/s (108 Gb/s) alltoall between two hosts; given as the
    # logs of a 400 Gb/s fabric (another cluster's logs, host names matching by accident) it is 27% of
    # the line rate, where a healthy fabric reaches 78% or more: the report says the logs do not fit.
    fabric = fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    text = _on_hosts(N2G1_CUT.read_text(), ("cnode2-002", "cnode2-008"), ("node0001", "node0003"))
    cut = "\n".join(text.splitlines()[:37]) + "\n"  # its complete first run (the alltoall)
    for i, hosts in enumerate((("node0001", "node0003"), ("node0002", "node0004"), ("node0001", "node0004"))):
        (tmp_path / f"run{i}.log").write_text(cut.replace("node0001", "X").replace("node0003", "Y")
                                              .replace("X", hosts[0]).replace("Y", hosts[1]))
    obs = observations_from_nccl_logs(fabric, tmp_path)
    report = Report.build(fabric, localize(fabric, obs), obs)
    assert report.verdict == "incomplete"
    why = " ".join(n["why"] for n in report.coverage["not_seen"])
    assert "these logs do not fit the fabric given" in why
