"""nccl-tests output: every run of a real log, checked against the figures printed in it.

The logs are under tests/data/nccl/<case>/ (provenance in each README and in
tests/data/nccl/README.md). Where a test edits a real log (a renamed column, a
non-finite figure, a shortened rank list), the edit is said in the test.
"""

from __future__ import annotations

import pytest
from fabricdoc.probes.bandwidth.nccl_tests import parse_nccl_tests, parse_nccl_tests_log
from fabricdoc.probes.bandwidth.nccl_tests_json import parse_nccl_tests_json
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricdoc.errors import ParseError
from tests.helpers.paths import DATA as DATA_ROOT

DATA = DATA_ROOT / "nccl"
REAL = DATA / "real"
SLOW = DATA / "slow_link"
FIVE = DATA / "xxrjun_h100_n10g2_five_appended_2.17.8" / "nccl_N10_G2.log"
N2G8 = DATA / "xxrjun_h100_n2g8_alltoall_sendrecv_2.17.6" / "nccl_N2_G8_cnode2-001_cnode2-002.log"
N2G1_CUT = DATA / "xxrjun_h100_n2g1_sendrecv_truncated" / "nccl_N2_G1_cnode2-002_cnode2-008.log"
N2G1_NET = DATA / "xxrjun_h100_n2g1_alltoall_network_error" / "nccl_N2_G1_cnode2-005_cnode2-016.log"
N2G4_NET = DATA / "xxrjun_h100_n2g4_init_network_error" / "nccl_N2_G4_cnode2-005_cnode2-016.log"
OLD = DATA / "wohlbier_dgx2_v100_2020_old_error_column" / "nccl-tests_dgx2.log"
POLARIS_A2A = DATA / "alcf_polaris_a100_n8_alltoall" / "alltoall_output.dat.1"
POLARIS_2160 = DATA / "alcf_polaris_n540_2160ranks_allreduce" / "all_reduce_output.dat.5"
LAUNCH = DATA / "alcf_polaris_launch_failures"
RCCL = DATA / "rccl_issue_excerpts"
JSON = DATA / "json_from_source" / "alltoall_2x1_h100_v1.json"


def _read(name: str) -> str:
    return (REAL / name).read_text()


def _runs(path, text: str | None = None):
    return parse_nccl_tests_log(path.read_text() if text is None else text, path.name).runs


# -- kept from the first version: the real single-run logs ------------------------------
def test_two_host_h200_log_gives_ranks_rows_and_average():
    [run] = parse_nccl_tests(_read("all_reduce_2x1_h200_dranet.log"), "dranet.log")
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
    assert run.nranks == 2 and run.ranks_problem is None


def test_sixteen_rank_h100_header_maps_ranks_to_hosts_and_devices():
    [run] = parse_nccl_tests(_read("all_reduce_2x8_h100_a3mega.log"), "a3mega.log")
    assert run.hosts == ["ztan-mig-235z", "ztan-mig-gq73"]
    assert [r.device for r in run.ranks if r.host == "ztan-mig-gq73"] == list(range(8))
    assert run.ranks[15].device_name == "NVIDIA H100 80GB HBM3"
    assert run.avg_busbw_gbs == pytest.approx(70.742)
    # 8589934592 B row: algbw 180.71, busbw 338.82 = 180.71 x 2(16-1)/16, so the 16 listed ranks agree.
    assert run.nranks == 16 and run.ranks_problem is None
    assert run.peak_busbw_gbps() == pytest.approx(338.82 * 8)


def test_real_log_cut_mid_row_is_a_parse_error_naming_the_line():
    with pytest.raises(ParseError) as err:
        parse_nccl_tests(_read("sendrecv_2x1_a40_issue214_excerpt.log"), "issue214.log")
    assert err.value.line_no == 15 and "fields" in err.value.reason


def test_na_in_place_wrong_is_unknown_not_zero():
    text = _read("sendrecv_2x1_a40_issue214_excerpt.log").splitlines()
    text = "\n".join(text[:-1]) + "\n# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0.08\n"
    [run] = parse_nccl_tests(text, "sendrecv_perf.log")
    assert run.test == "sendrecv"
    assert run.rows[0].in_place.wrong is None and run.rows[0].out_of_place.wrong == 0


def test_log_that_stops_before_the_average_is_truncated():
    lines = _read("all_reduce_2x1_h200_dranet.log").splitlines()
    with pytest.raises(ParseError) as err:
        parse_nccl_tests("\n".join(lines[:-3]), "cut.log")
    assert "truncated" in err.value.reason and err.value.line_no == len(lines) - 3


def test_wrong_elements_are_counted_apart_from_bandwidth():
    [run] = parse_nccl_tests((SLOW / "all_reduce_node0007_node0008.log").read_text(), "wrong.log")
    assert run.wrong == 17 and run.corrupted
    assert run.peak_busbw_gbps() == pytest.approx(31.89 * 8)


def test_mpirun_tag_output_prefix_and_old_header_without_group():
    body = _read("all_reduce_2x1_h200_dranet.log").split("# nThread", 1)[1]
    tagged = "\n".join("[1,0]<stdout>:" + ln for ln in ("# nThread" + body).splitlines())
    [run] = parse_nccl_tests(tagged.replace("Group  0 ", ""), "tagged.log")
    assert len(run.ranks) == 2 and run.ranks[0].group is None and len(run.rows) == 24


def test_not_an_nccl_log_is_rejected():
    with pytest.raises(ParseError):
        parse_nccl_tests("hello\nworld\n", "junk.log")


# -- several tests appended in one file ---------------------------------------------------
def test_five_appended_tests_are_five_runs_each_with_its_own_name_ranks_and_peak():
    runs = _runs(FIVE)
    assert [r.test for r in runs] == ["all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv"]
    assert [r.line_no for r in runs] == [1, 48, 95, 142, 189]  # each '# nccl-tests version 2.17.8' line
    assert {r.version for r in runs} == {"2.17.8"}
    assert all(r.complete and r.ranks_problem is None for r in runs)
    assert [r.nranks for r in runs] == [20] * 5 and [len(r.rows) for r in runs] == [10] * 5
    assert runs[0].hosts == [f"cnode3-{n:03d}" for n in range(2, 12)]
    assert [r.avg_busbw_gbs for r in runs] == [94.3888, 93.6001, 92.747, 45.9521, 25.1383]
    # the out-of-place busbw of each run's largest size, in Gb/s (GB/s x 8)
    assert [r.peak.size_bytes for r in runs] == [17179869184, 17179869120, 17179869120, 17179869120, 17179869184]
    assert [r.peak_busbw_gbps() for r in runs] == pytest.approx([97.85 * 8, 97.31 * 8, 97.83 * 8, 47.83 * 8, 25.19 * 8])
    assert [r.wrong for r in runs] == [0] * 5 and [r.out_of_bounds for r in runs] == [0] * 5
    assert runs[3].rows[0].redop == "none" and runs[3].rows[0].in_place.wrong is None
    assert runs[0].rows[0].in_place.wrong == 0


def test_pairwise_log_of_two_tests_keeps_each_tests_rank_lines_and_figures():
    alltoall, sendrecv = _runs(N2G8)
    assert (alltoall.test, sendrecv.test) == ("alltoall", "sendrecv")
    assert alltoall.nranks == sendrecv.nranks == 16
    assert alltoall.hosts == sendrecv.hosts == ["cnode2-001", "cnode2-002"]
    assert alltoall.ranks[0].pid == 338393 and sendrecv.ranks[0].pid == 338830  # not mixed across runs
    assert alltoall.peak_busbw_gbps() == pytest.approx(23.62 * 8) and sendrecv.peak_busbw_gbps() == pytest.approx(15.14 * 8)
    assert alltoall.avg_busbw_gbs == 23.4963 and sendrecv.avg_busbw_gbs == 15.1193


def test_a_run_cut_after_its_header_is_refused_and_the_complete_one_before_it_kept():
    alltoall, sendrecv = _runs(N2G1_CUT)
    assert alltoall.complete and alltoall.peak_busbw_gbps() == pytest.approx(13.45 * 8) and alltoall.avg_busbw_gbs == 13.3923
    assert sendrecv.test == "sendrecv" and sendrecv.problem.line_no == 37 and "truncated" in sendrecv.problem.reason
    with pytest.raises(ParseError) as err:  # the strict form refuses the whole log
        parse_nccl_tests(N2G1_CUT.read_text(), N2G1_CUT.name)
    assert err.value.line_no == 37


def test_test_nccl_failure_refuses_the_run_at_the_failure_line():
    [run] = _runs(N2G1_NET)
    assert run.problem.line_no == 12 and "alltoall run failed" in run.problem.reason
    assert "remote process exited or there was a network error" in run.problem.line
    first, second = _runs(N2G4_NET)
    assert (first.test, first.problem.line_no) == ("alltoall", 14)
    assert (second.test, second.problem.line_no) == ("sendrecv", 31)
    assert first.nranks == second.nranks == 8 and first.hosts == ["cnode2-005", "cnode2-016"]


# -- older layouts ---------------------------------------------------------------------------
def test_old_error_column_layout_reads_each_tests_own_column_set():
    runs = _runs(OLD)
    assert [r.test for r in runs] == ["all_gather", "all_reduce", "broadcast", "reduce", "reduce_scatter"]
    assert all(r.complete and r.nranks == 12 and r.hosts == ["seville"] for r in runs)
    assert runs[0].ranks[0].group is None and runs[0].nthread == 1 and runs[0].ngpus == 12
    gather, allreduce, bcast, reduce, _ = runs
    assert (gather.rows[0].redop, gather.rows[0].root) == (None, None)
    assert (allreduce.peak.redop, allreduce.peak.root) == ("sum", None)
    assert (bcast.peak.redop, bcast.peak.root) == (None, 0)
    assert (reduce.peak.redop, reduce.peak.root) == ("sum", 0)
    # 'error' is the max relative error: 2e-07 of float rounding is not corruption ...
    assert allreduce.peak.out_of_place.error == 2e-07 and allreduce.peak.out_of_place.wrong is None
    assert allreduce.wrong == 0 and not allreduce.corrupted and allreduce.peak_busbw_gbps() == pytest.approx(123.56 * 8)
    # ... 1e+00 is, and the old layout counts it only in '# Out of bounds values : 4 FAILED'
    assert gather.peak.out_of_place.error == 1.0 and not gather.wrong_column
    assert gather.out_of_bounds == 4 and gather.wrong == 4 and gather.corrupted


def test_pre_2022_blank_redop_column_is_read_under_the_redop_header_only():
    # nccl-tests before commit d313d20 (2022-09) printed opName "" for tests without a reduction:
    # the real 2.17.6 alltoall rows with their "none" blanked, as those versions printed them.
    text = N2G8.read_text().replace("    none", "        ")
    alltoall, _ = _runs(N2G8, text)
    assert alltoall.complete and alltoall.peak.redop is None and alltoall.peak.root == -1
    assert alltoall.peak_busbw_gbps() == pytest.approx(23.62 * 8)
    # a row missing a figure elsewhere is not taken for a blank redop
    cut = text.replace("682007   25.19   23.62", "682007   25.19       ")
    assert "fields" in _runs(N2G8, cut)[0].problem.reason


def test_renamed_or_unknown_column_is_refused_at_the_header_not_a_key_error():
    text = _read("all_reduce_2x1_h200_dranet.log")
    header = next(i for i, ln in enumerate(text.splitlines(), 1) if "busbw" in ln)
    [run] = parse_nccl_tests_log(text.replace("busbw", "busBw"), "renamed.log").runs
    assert run.problem.line_no == header and "'busBw'" in run.problem.reason
    [run] = parse_nccl_tests_log(text.replace("#wrong", "nwrong"), "renamed.log").runs
    assert run.problem.line_no == header and "'nwrong'" in run.problem.reason


def test_cputime_and_timestamp_columns_of_current_nccl_tests_are_read():
    # src/util.cu writeResultHeader: -C 1 names the time column "cputime"; -S 1 adds "timestamp"
    # and "%Y-%m-%d %H:%M:%S" after each row (a value with a space in it).
    lines = _read("all_reduce_2x1_h200_dranet.log").splitlines()
    out = []
    for ln in lines:
        if "busbw" in ln:
            ln = ln.replace(" time", "cputime").rstrip() + "  timestamp"
        elif ln.lstrip()[:1].isdigit():
            ln += "  2026-07-09 12:00:00"
        out.append(ln)
    [run] = parse_nccl_tests("\n".join(out), "cputime.log")
    assert len(run.rows) == 24 and run.peak.out_of_place.time_us == 269368 and run.peak_busbw_gbps() == pytest.approx(255.12)


# -- figures that cannot be true ------------------------------------------------------------
@pytest.mark.parametrize("bad", ["nan", "-nan", "inf", "-31.89"])
def test_non_finite_or_negative_figure_is_refused_naming_file_and_line(bad):
    lines = _read("all_reduce_2x1_h200_dranet.log").splitlines()
    no = next(i for i, ln in enumerate(lines) if ln.lstrip().startswith("8589934592"))
    lines[no] = lines[no].replace("31.89", bad.rjust(5), 1)
    [run] = parse_nccl_tests_log("\n".join(lines), "bad.log").runs
    assert run.problem.source == "bad.log" and run.problem.line_no == no + 1
    assert "not a finite, non-negative figure" in run.problem.reason


def test_non_finite_average_is_refused():
    text = _read("all_reduce_2x1_h200_dranet.log").replace("Avg bus bandwidth    : 15.5188", "Avg bus bandwidth    : nan")
    [run] = parse_nccl_tests_log(text, "avg.log").runs
    assert run.problem.line_no == len(text.splitlines()) and "Avg bus bandwidth" in run.problem.reason


# -- what the ranks are ------------------------------------------------------------------------
def test_trimmed_rank_list_states_2160_ranks_but_names_no_hosts():
    [run] = _runs(POLARIS_2160)
    assert run.complete and len(run.ranks) == 24 and run.nranks == 2160
    assert run.peak_busbw_gbps() == pytest.approx(29.11 * 8) and run.avg_busbw_gbs == 5.53587
    assert run.ranks_problem.line_no == 16 and "ranks 12..2147 are missing" in run.ranks_problem.reason


def test_rank_list_shortened_at_the_end_is_caught_by_the_all_reduce_bus_factor():
    # the real 16-rank a3-mega log with its last four rank lines removed: ranks 0..11 look whole,
    # but busbw 338.82 = algbw 180.71 x 2(16-1)/16, not x 2(12-1)/12
    lines = [ln for ln in _read("all_reduce_2x8_h100_a3mega.log").splitlines()
             if not any(f"Rank {r} " in ln for r in (12, 13, 14, 15))]  # fmt: skip
    [run] = parse_nccl_tests("\n".join(lines), "all_reduce_short.log")
    assert run.nranks == 12 and run.ranks_problem.line_no == run.peak.line_no
    assert "imply about 16" in run.ranks_problem.reason


def test_rank_line_missing_in_the_middle_or_cut_short_names_no_hosts():
    lines = _read("all_reduce_2x8_h100_a3mega.log").splitlines()
    gone = [ln for ln in lines if "Rank  5 " not in ln]
    [run] = parse_nccl_tests("\n".join(gone), "gap.log")
    assert "ranks 5..5 are missing" in run.ranks_problem.reason
    # nccl-tests cuts a process's device block past 2048 characters and ends it with "..."
    last = next(i for i, ln in enumerate(lines) if "Rank 15 " in ln)
    lines[last] = lines[last][:40] + "..."
    [run] = parse_nccl_tests("\n".join(lines), "cut.log")
    assert run.ranks_problem.line_no == last + 1 and "cut short" in run.ranks_problem.reason


def test_polaris_alltoall_with_zero_byte_rows_and_no_version_line():
    [run] = _runs(POLARIS_A2A)
    assert run.complete and run.version is None and run.test == "alltoall"
    assert run.nranks == 32 and len(run.hosts) == 8 and run.ranks[31].host == "x3207c0s31b0n0"
    assert [r.size_bytes for r in run.rows[:5]] == [0] * 5 and run.rows[0].count == 0
    assert run.peak.size_bytes == 1073741824 and run.peak_busbw_gbps() == pytest.approx(1.51 * 8)
    assert run.avg_busbw_gbs == 0.598089


def test_launch_failure_outputs_are_not_nccl_logs():
    for name, first in (("pmi_port_failure.dat", "Couldn't allocate a port for PMI"),
                        ("cxi_alloc_failure.dat", "CXI alloc failed on cxi0")):  # fmt: skip
        with pytest.raises(ParseError) as err:
            parse_nccl_tests_log((LAUNCH / name).read_text(), name)
        assert err.value.line_no == 1 and first in err.value.line and "not an nccl-tests log" in err.value.reason
    with pytest.raises(ParseError) as err:
        parse_nccl_tests_log("", "empty.log")
    assert err.value.line_no == 0 and "empty" in err.value.reason


def test_rccl_fragments_are_refused_where_they_stop():
    [header] = _runs(RCCL / "hpc-ai-envs_pr21_mi250x_2node_header.log")
    assert header.ranks[0].bus_id == "0000:c1:00.0" and header.ranks[0].group is None
    assert header.problem.line_no == 14 and "before its results table" in header.problem.reason
    assert "lists 2 ranks, nThread x nGpus is 8" in header.ranks_problem.reason  # the fragment kept 10 of 16 lines
    [single] = _runs(RCCL / "hpc-ai-envs_pr30_mi300x_single_node.log")
    assert single.hosts == ["g100n126"] and single.rows[0].out_of_place.busbw_gbs == 161.14
    assert single.problem.line_no == 17 and "truncated" in single.problem.reason
    tail, nxt = _runs(RCCL / "rccl_pr2075_gfx1151_sendrecv_tail.log")
    assert tail.test == "sendrecv" and tail.avg_busbw_gbs == 2.63449 and "start is missing" in tail.problem.reason
    assert nxt.test == "alltoallv" and nxt.problem.line_no == 18
    [ainic] = _runs(RCCL / "rccl_pr2078_ainic_all_reduce_tail.log")
    assert ainic.test == "all_reduce" and ainic.avg_busbw_gbs == 142.652 and ainic.problem is not None


# -- the -J JSON file (built from nccl-tests' src/util.cu; see tests/data/nccl/README.md) ---------
def test_json_output_gives_the_same_run_as_the_text_it_was_derived_from():
    [run] = parse_nccl_tests_log(JSON.read_text(), JSON.name).runs
    text_run = _runs(N2G1_CUT)[0]
    assert run.test == "alltoall" and run.complete and run.ranks_problem is None
    assert (run.nthread, run.ngpus, run.processes, run.nranks) == (1, 1, 2, 2)
    assert run.hosts == ["cnode2-002", "cnode2-008"] and [r.device for r in run.ranks] == [0, 0]
    assert [(r.size_bytes, r.count, r.redop, r.root, r.out_of_place, r.in_place) for r in run.rows] == \
        [(r.size_bytes, r.count, r.redop, r.root, r.out_of_place, r.in_place) for r in text_run.rows]
    assert run.avg_busbw_gbs == 13.3923 and run.out_of_bounds == 0
    assert run.peak_busbw_gbps() == pytest.approx(13.45 * 8)


def test_json_version_3_spelling_is_read_too():
    text = JSON.read_text().replace('"version":1', '"version":3')
    text = text.replace('"average_bus_bandwidith":{"bandwidith"', '"average_bus_bandwidth":{"bandwidth"')
    [run] = parse_nccl_tests_json(text, "v3.json").runs
    assert run.avg_busbw_gbs == 13.3923


def test_json_non_finite_figure_or_stopped_run_is_refused():
    text = JSON.read_text()
    # jsonDouble writes NaN as the string "nan"; printf's "inf" is not JSON at all
    nan = text.replace('"bus_bw":13.450000,"nwrong":0.000000}', '"bus_bw":"nan","nwrong":0.000000}', 1)
    [run] = parse_nccl_tests_json(nan, "nan.json").runs
    assert run.problem.line_no == 1 and "out_of_place.bus_bw is 'nan'" in run.problem.reason
    with pytest.raises(ParseError):
        parse_nccl_tests_json(text.replace('"bus_bw":13.450000', '"bus_bw":inf', 1), "inf.json")
    stopped = text[: text.index(',"results"')] + ',"errors":["remote process exited or there was a network error"]}'
    [run] = parse_nccl_tests_json(stopped, "stopped.json").runs
    assert "no results" in run.problem.reason and "network error" in run.problem.reason
    with pytest.raises(ParseError):  # a file cut while it was written
        parse_nccl_tests_json(text[:500], "cut.json")


# -- any mix of real lines: a result or a ParseError, never another exception ----------------------
_PREFIXED = (DATA / "nccl_tests_issue290_h100_n2g8_srun_label_2.13" / "all_reduce_perf_srun_label.log",
             DATA / "skypilot_gke_h200_n2g8_allgather_prefixed_2.14-2.16" / "all_gather_perf.log",
             DATA / "aws_eks_efa_t4_n2g1_allreduce_tag_output_2.13" / "test-nccl-efa_all_reduce_perf.log",
             DATA / "azureml_k80_n1g4_allreduce_digit_hostname_pre2.13" / "all_reduce_perf.log")  # fmt: skip
_REAL_LINES = [ln for path in (FIVE, OLD, N2G1_CUT, N2G4_NET, RCCL / "rccl_pr2075_gfx1151_sendrecv_tail.log",
                                *_PREFIXED)
               for ln in path.read_text().splitlines()]  # fmt: skip


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.sampled_from(_REAL_LINES), st.text(max_size=80)), max_size=60))
def test_any_mix_of_real_lines_parses_or_is_refused_with_a_parse_error(lines):
    try:
        log = parse_nccl_tests_log("\n".join(lines), "mix.log")
    except ParseError as exc:
        assert exc.source == "mix.log"
        return
    for run in log.runs:
        assert run.problem is not None or (run.rows and run.avg_busbw_gbs is not None)
        for row in run.rows:
            assert row.out_of_place.busbw_gbs >= 0 and row.size_bytes >= 0
