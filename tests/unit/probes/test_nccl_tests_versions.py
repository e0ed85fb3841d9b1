"""nccl-tests 2.13 to 2.18 as users publish them: each layout, launcher prefix and interleaved line.

One real log per case under tests/data/nccl/<case>/ (provenance in each README.md and the table in
tests/data/nccl/README.md, which also says what each version prints). Each test reads its log value
by value; where a test edits a real log, the edit is said in the test.
"""

from __future__ import annotations

import re

import pytest
from fabricdoc.probes.bandwidth.nccl_tests import parse_nccl_tests, parse_nccl_tests_log

from tests.helpers.paths import DATA as DATA_ROOT

DATA = DATA_ROOT / "nccl"
EKS_T4 = DATA / "aws_eks_efa_t4_n2g1_allreduce_tag_output_2.13" / "test-nccl-efa_all_reduce_perf.log"
ISSUE290 = DATA / "nccl_tests_issue290_h100_n2g8_srun_label_2.13" / "all_reduce_perf_srun_label.log"
CSCS_2164 = DATA / "cscs_gh200_n2g4_allreduce_2.16.4" / "all_reduce_perf.log"
CSCS_2171 = DATA / "cscs_gh200_n2g4_allreduce_indented_2.17.1" / "all_reduce_perf.log"
SARUS_2182 = DATA / "cscs_sarus_gh200_n2g1_allreduce_2.18.2" / "all_reduce_perf.log"
OLIVIA_2183 = DATA / "nris_olivia_gh200_n2g4_allreduce_2.18.3" / "all_reduce_perf.log"
OLIVIA_WRONG = DATA / "nris_olivia_gh200_n4g4_allreduce_wrong_2.17.9" / "all_reduce_perf.log"
SKYPILOT = DATA / "skypilot_gke_h200_n2g8_allgather_prefixed_2.14-2.16" / "all_gather_perf.log"
PAIR_2178 = (DATA / "xxrjun_h100_n2g1_alltoall_sendrecv_reduced_maxbytes_2.17.8"
             / "nccl_N2_G1_cnode3-002_cnode3-003.log")
AZURE_K80 = DATA / "azureml_k80_n1g4_allreduce_digit_hostname_pre2.13" / "all_reduce_perf.log"


def _figures(run):
    """What a run measured, row by row (for comparing two readings of the same log)."""
    return [(r.size_bytes, r.count, r.dtype, r.redop, r.root, r.out_of_place, r.in_place) for r in run.rows]


# -- 2.13.4 .. 2.14.0: Group, one-byte bus ids, no version line -----------------------------------------
def test_two_host_one_gpu_sweep_under_mpirun_tag_output_reads_all_31_sizes():
    # all_reduce_perf -b 1 -e 1G -f 2 between two EKS nodes with one T4 each; the log never names its
    # binary (the file name does), and NCCL INFO lines of both ranks come before and inside the table.
    [run] = parse_nccl_tests(EKS_T4.read_text(), EKS_T4.name)
    assert run.test == "all_reduce" and run.version is None and run.line_no == 3
    assert (run.nthread, run.ngpus, run.nranks) == (1, 1, 2) and run.ranks_problem is None
    assert run.hosts == ["test-nccl-efa-worker-0", "test-nccl-efa-worker-1"]
    assert [(r.group, r.bus_id, r.device, r.device_name) for r in run.ranks] == [
        (0, "0x35", 0, "Tesla T4"), (0, "0xf5", 0, "Tesla T4")]  # fmt: skip
    assert len(run.rows) == 31 and run.rows[0].line_no == 58  # line 57 is "... NCCL INFO Launch mode Parallel"
    assert [r.size_bytes for r in run.rows[:5]] == [0, 0, 4, 8, 16]
    assert [r.size_bytes for r in run.rows[2:]] == [4 << i for i in range(29)]
    mib = next(r for r in run.rows if r.size_bytes == 1048576)
    assert (mib.out_of_place.time_us, mib.out_of_place.busbw_gbs, mib.in_place.busbw_gbs) == (583.4, 1.80, 1.81)
    assert run.peak.size_bytes == 1073741824 and run.peak.count == 268435456
    assert (run.peak.out_of_place.busbw_gbs, run.peak.in_place.time_us) == (3.11, 344454)
    assert run.avg_busbw_gbs == 1.15327 and run.out_of_bounds == 0 and run.wrong == 0
    assert run.peak_busbw_gbps() == pytest.approx(3.11 * 8)


def test_srun_label_prefix_is_removed_and_the_16_ranks_agree_with_the_bus_factor():
    text = ISSUE290.read_text()
    [run] = parse_nccl_tests(text, ISSUE290.name)
    assert run.test == "all_reduce" and run.version is None and run.nranks == 16
    assert run.hosts == ["node005", "node007"] and run.ranks_problem is None  # busbw 155.57 = 82.97 x 30/16
    assert run.ranks[8].pid == 541703 and run.ranks[8].device == 0 and run.ranks[15].bus_id == "0xc1"
    assert len(run.rows) == 11 and [r.size_bytes for r in run.rows] == [8388608 << i for i in range(11)]
    # validation: 0, so neither half checked its data: unknown, not zero wrong elements
    assert all(h.wrong is None for r in run.rows for h in (r.out_of_place, r.in_place))
    assert run.wrong == 0 and not run.corrupted
    assert (run.peak.out_of_place.busbw_gbs, run.peak.in_place.busbw_gbs) == (155.57, 155.56)
    assert run.rows[3].out_of_place.busbw_gbs == 137.01 and run.avg_busbw_gbs == 142.735
    # the label removed by hand gives the same run: the label moves no column
    bare = "\n".join(re.sub(r"^ 0:(?: |$)", "", ln) for ln in text.splitlines())
    [same] = parse_nccl_tests(bare, ISSUE290.name)
    assert _figures(same) == _figures(run) and same.ranks == run.ranks


# -- 2.14.1 .. 2.16.6: four-part bus ids, still no start or version line ------------------------------------
def test_2_16_4_log_takes_its_test_from_the_command_line_before_it():
    [run] = parse_nccl_tests(CSCS_2164.read_text(), "santis.out")  # a name that says nothing
    assert run.test == "all_reduce" and run.version is None and run.line_no == 2
    assert run.nranks == 8 and run.hosts == ["nid005098", "nid005099"] and run.ranks_problem is None
    assert {r.bus_id for r in run.ranks} == {"0009:01:00", "0019:01:00", "0029:01:00", "0039:01:00"}
    assert run.ranks[4].pid == 283806 and run.ranks[4].device_name == "NVIDIA GH200 120GB"
    assert len(run.rows) == 25 and run.rows[0].size_bytes == 8 and run.rows[0].count == 2
    assert run.peak.size_bytes == 134217728 and run.peak.out_of_place.algbw_gbs == 75.67
    assert run.peak_busbw_gbps() == pytest.approx(132.43 * 8) and run.avg_busbw_gbs == 20.7448


def test_two_prefixes_skypilot_outside_tag_output_are_both_removed():
    text = SKYPILOT.read_text()
    [run] = parse_nccl_tests(text, SKYPILOT.name)
    assert run.test == "all_gather" and run.line_no == 3  # lines 1-2: SkyPilot's own head/worker lines
    assert run.nranks == 16 and run.hosts == ["nc-d87e1263-head", "nc-d87e1263-worker1"]
    assert run.ranks_problem is None and run.ranks[8].bus_id == "0000:8f:00"
    assert len(run.rows) == 24 and run.rows[0].size_bytes == 1024 and run.rows[0].count == 16
    assert {r.redop for r in run.rows} == {"none"}
    # all_gather: busbw = algbw x (16-1)/16
    assert (run.peak.out_of_place.algbw_gbs, run.peak.out_of_place.busbw_gbs) == (347.44, 325.72)
    assert run.peak.in_place.busbw_gbs == 332.58 and run.avg_busbw_gbs == 122.073
    bare = "\n".join(ln.split("<stdout>:", 1)[1] for ln in text.splitlines()[2:])
    [same] = parse_nccl_tests(bare, SKYPILOT.name)
    assert _figures(same) == _figures(run)
    # a parenthesis that is not a launcher's (no "rank=") stays, so the line is not a row
    lines = text.splitlines()
    lines.insert(30, "(note) " + lines[30].split("<stdout>:", 1)[1])
    [noted] = parse_nccl_tests("\n".join(lines), SKYPILOT.name)
    assert _figures(noted) == _figures(run)


# -- 2.16.7 .. 2.17.3: start and concluded lines ---------------------------------------------------------
def test_2_17_1_log_indented_by_the_docs_reads_as_the_same_run_unindented():
    text = CSCS_2171.read_text()
    [run] = parse_nccl_tests(text, "docs.md")
    assert run.test == "all_reduce" and run.version is None and run.line_no == 2  # "# Collective test starting"
    assert run.nranks == 8 and run.hosts == ["nid005471", "nid005487"] and run.ranks_problem is None
    assert len(run.rows) == 25 and run.rows[16].size_bytes == 524288
    assert (run.rows[16].out_of_place.busbw_gbs, run.rows[16].in_place.busbw_gbs) == (5.39, 2.62)
    assert run.peak_busbw_gbps() == pytest.approx(122.57 * 8) and run.avg_busbw_gbs == 19.7866
    [same] = parse_nccl_tests("\n".join(ln.removeprefix("    ") for ln in text.splitlines()), "docs.md")
    assert _figures(same) == _figures(run)


# -- 2.17.4+: the version line ---------------------------------------------------------------------------
def test_2_17_9_corrupted_transfers_are_counted_though_the_excerpt_stops_at_its_last_row():
    [run] = parse_nccl_tests_log(OLIVIA_WRONG.read_text(), OLIVIA_WRONG.name).runs
    assert run.version == "2.17.9" and run.test == "all_reduce" and run.nranks == 16
    assert run.hosts == ["gpu-1-43", "gpu-1-47", "gpu-1-49", "gpu-1-51"] and run.ranks_problem is None
    assert len(run.rows) == 28 and {r.dtype for r in run.rows} == {"int8"}
    eight_mib = next(r for r in run.rows if r.size_bytes == 8388608)
    assert (eight_mib.out_of_place.wrong, eight_mib.in_place.wrong) == (763876, 530181)
    assert eight_mib.out_of_place.busbw_gbs == 1.62  # slow as well as wrong
    assert run.rows[-2].in_place.wrong == 0 and run.peak.out_of_place.wrong == 0
    assert run.wrong == 3935945 and run.corrupted
    # the page shows no footer: the run is refused as truncated, at its last row
    assert run.problem.line_no == 53 and "Avg bus bandwidth" in run.problem.reason
    assert run.avg_busbw_gbs is None


def test_two_host_pair_of_2_17_8_with_reduced_max_bytes_gives_both_runs():
    alltoall, sendrecv = parse_nccl_tests(PAIR_2178.read_text(), PAIR_2178.name)
    assert (alltoall.test, sendrecv.test) == ("alltoall", "sendrecv")
    assert alltoall.version == sendrecv.version == "2.17.8"
    assert alltoall.hosts == sendrecv.hosts == ["cnode3-002", "cnode3-003"]
    assert sendrecv.ranks[1].pid == 948885 and alltoall.ranks[1].pid == 947529
    # "# Reducing maxBytes to 26549638485 due to memory limitation": 32 GiB was asked, 16 GiB is the last row
    assert [r.size_bytes for r in sendrecv.rows] == [4294967296, 8589934592, 17179869184]
    assert sendrecv.peak.out_of_place.algbw_gbs == sendrecv.peak.out_of_place.busbw_gbs == 43.78
    assert sendrecv.peak.in_place.wrong is None and sendrecv.avg_busbw_gbs == 43.7587
    assert alltoall.peak.out_of_place.busbw_gbs == 38.84 and alltoall.avg_busbw_gbs == 41.2951


def test_2_18_2_one_gpu_per_host_with_unalign_in_the_parameters():
    [run] = parse_nccl_tests(SARUS_2182.read_text(), SARUS_2182.name)
    assert run.version == "2.18.2" and run.test == "all_reduce" and run.line_no == 2
    assert (run.nthread, run.ngpus, run.nranks) == (1, 1, 2)
    assert run.hosts == ["nid007106", "nid007109"] and [r.pid for r in run.ranks] == [15784, 24926]
    assert [r.size_bytes for r in run.rows] == [1048576 << i for i in range(8)]
    assert run.peak.out_of_place.algbw_gbs == run.peak.out_of_place.busbw_gbs == 22.86  # 2 ranks: factor 1
    assert run.rows[0].out_of_place.time_us == 339.61 and run.avg_busbw_gbs == 14.9966


def test_2_18_3_int8_sweep_on_two_hosts_of_four():
    [run] = parse_nccl_tests(OLIVIA_2183.read_text(), OLIVIA_2183.name)
    assert run.version == "2.18.3" and run.nranks == 8 and run.hosts == ["gpu-1-1", "gpu-1-2"]
    assert [r.pid for r in run.ranks[:4]] == [221423, 221421, 221424, 221422] and run.ranks_problem is None
    assert len(run.rows) == 28 and [r.size_bytes for r in run.rows] == [1 << i for i in range(28)]
    assert all(r.count == r.size_bytes and r.dtype == "int8" for r in run.rows)
    assert (run.peak.out_of_place.busbw_gbs, run.peak.in_place.busbw_gbs) == (101.70, 107.63)
    assert run.avg_busbw_gbs == 17.8617 and run.wrong == 0


# -- lines that interleave with the table ----------------------------------------------------------------
def test_nccl_debug_line_of_a_host_named_with_a_leading_digit_is_not_a_row():
    # Azure ML names the node "2e3f9af7...": its "NCCL INFO Launch mode Parallel" line, between the column
    # header and the first row, was read as a row and refused the run (pre-2.13 "error" layout, one host).
    [run] = parse_nccl_tests(AZURE_K80.read_text(), AZURE_K80.name)
    assert run.hosts == ["2e3f9af7241040529530e810ce60fe5d000002"] and run.nranks == 4
    assert len(run.rows) == 7 and run.rows[0].line_no == 13 and run.rows[0].size_bytes == 33554432
    assert not run.wrong_column and run.peak.out_of_place.error == 2e-07 and not run.corrupted
    assert run.peak_busbw_gbps() == pytest.approx(2.56 * 8) and run.avg_busbw_gbs == 2.54225


def test_failure_line_of_a_host_named_with_a_leading_digit_fails_the_run_there():
    # The real T4 log with the failure lines of xxrjun_h100_n2g1_alltoall_network_error put after its
    # 1 MiB row, the host renamed to a container id that starts with a digit: the run fails at that line,
    # it is not taken for a malformed row.
    lines = EKS_T4.read_text().splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.split(":", 1)[1].lstrip().startswith("1048576 "))
    lines.insert(at + 1, "[1,0]<stdout>:4c217144f0b1: Test NCCL failure all_reduce.cu:58 "
                         "'remote process exited or there was a network error / '")  # fmt: skip
    [run] = parse_nccl_tests_log("\n".join(lines), EKS_T4.name).runs
    assert run.problem.line_no == at + 2 and "all_reduce run failed" in run.problem.reason
