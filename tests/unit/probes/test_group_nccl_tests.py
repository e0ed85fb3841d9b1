"""Group tests as nccl-tests binaries through one ``mpirun -np N``: the argv, the sibling binary of the
group's collective, and real published multi-node outputs read into GroupResults.

Not tested here (no GPU, no MPI build of nccl-tests on this machine): a real ``mpirun`` placing the
ranks and real binaries running. The outputs are real logs (tests/data/nccl/README.md); the process
test starts a stub ``mpirun`` that runs a stub binary printing one of them.
"""

from __future__ import annotations

import stat

import pytest
from fabricdoc.probes.bandwidth.launch import (
    GroupLaunchSpec,
    LocalLauncher,
    MpirunLauncher,
    RawRun,
    group_result,
    run_group,
)

from fabricdoc.model.expectation import GroupJudge
from fabricdoc.model.records import PortRef
from tests.helpers.paths import DATA as DATA_ROOT

NCCL = DATA_ROOT / "nccl"
A3MEGA = NCCL / "real" / "all_reduce_2x8_h100_a3mega.log"  # 2 hosts x 8 H100, 16 ranks
POLARIS = NCCL / "alcf_polaris_a100_n8_alltoall" / "alltoall_output.dat.1"  # 8 hosts x 4 A100, 32 ranks


def _ports(n: int, per_host: int = 1) -> tuple[PortRef, ...]:
    return tuple(PortRef(f"node{i // per_host + 1:04d}", i % per_host + 1) for i in range(n))


def _binaries(tmp_path, *names: str):
    for name in names:
        path = tmp_path / name
        path.write_text("#!/bin/sh\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return tmp_path


def test_a_group_runs_its_collectives_binary_beside_the_given_one_in_one_mpirun(tmp_path):
    bins = _binaries(tmp_path, "sendrecv_perf", "all_reduce_perf", "alltoall_perf")
    want_tail = ["-b", "67108864", "-e", "67108864", "-g", "1", "-n", "5", "-w", "1", "-c", "1"]
    members = _ports(4)
    for given in (str(bins / "sendrecv_perf"), str(bins)):  # the pair binary, or the directory
        launcher = MpirunLauncher(nccl_binary=given)
        for test, binary in (("all_reduce", "all_reduce_perf"), ("alltoall", "alltoall_perf")):
            spec = GroupLaunchSpec(members, test=test, program="nccl-tests", size_bytes=1 << 26, port=29610)
            (proc,) = launcher.group_procs(spec, 60)
            assert proc.argv == ["mpirun", "-np", "4", "--host", "node0001:1,node0002:1,node0003:1,node0004:1",
                                 "--bind-to", "none", "-x", "MASTER_ADDR=node0001", "-x", "MASTER_PORT=29610",
                                 str(bins / binary), *want_tail]  # fmt: skip


def test_an_mpi_suffixed_build_keeps_its_suffix(tmp_path):
    bins = _binaries(tmp_path, "sendrecv_perf_mpi", "alltoall_perf_mpi")
    launcher = MpirunLauncher(nccl_binary=str(bins / "sendrecv_perf_mpi"))
    (proc,) = launcher.group_procs(GroupLaunchSpec(_ports(3), test="alltoall", program="nccl-tests"), 60)
    assert proc.argv[1:3] == ["-np", "3"] and str(bins / "alltoall_perf_mpi") in proc.argv


def test_a_missing_sibling_binary_is_could_not_test_naming_the_path(tmp_path):
    bins = _binaries(tmp_path, "sendrecv_perf")
    spec = GroupLaunchSpec(_ports(4), test="alltoall", program="nccl-tests", expected_gbps=100.0)
    r = run_group(MpirunLauncher(nccl_binary=str(bins / "sendrecv_perf")), spec, 30)
    assert r.status == "error" and r.busbw_gbps is None
    assert str(bins / "alltoall_perf") in (r.error or "")
    assert not GroupJudge().failed(r)  # no evidence either way


def test_a_bare_binary_name_is_looked_up_on_path(tmp_path, monkeypatch):
    bins = _binaries(tmp_path, "all_reduce_perf")
    monkeypatch.setenv("PATH", str(bins))
    launcher = MpirunLauncher(nccl_binary="sendrecv_perf")
    (proc,) = launcher.group_procs(GroupLaunchSpec(_ports(2), test="all_reduce", program="nccl-tests"), 60)
    assert "all_reduce_perf" in proc.argv  # mpirun finds it on each host's PATH, as it finds sendrecv_perf
    r = run_group(launcher, GroupLaunchSpec(_ports(2), test="alltoall", program="nccl-tests"), 30)
    assert r.status == "error" and "no nccl-tests binary alltoall_perf" in (r.error or "")


def test_fan_probes_have_no_nccl_tests_binary_and_come_back_as_errors(tmp_path):
    bins = _binaries(tmp_path, "sendrecv_perf", "all_reduce_perf", "alltoall_perf")
    spec = GroupLaunchSpec(_ports(4), test="fan:2", program="nccl-tests", expected_gbps=100.0)
    r = run_group(MpirunLauncher(nccl_binary=str(bins)), spec, 30)
    assert r.status == "error" and "fan probes need fabricdoc's torch test" in (r.error or "")
    assert not GroupJudge().failed(r)


def test_only_mpirun_starts_nccl_tests_groups(tmp_path):
    spec = GroupLaunchSpec(_ports(2), test="all_reduce", program="nccl-tests")
    r = run_group(LocalLauncher(), spec, 30)
    assert r.status == "error" and "use mpirun" in (r.error or "")


@pytest.mark.parametrize(
    ("log", "test", "members", "peak_gbs"),
    [(A3MEGA, "all_reduce", _ports(16, per_host=8), 338.82), (POLARIS, "alltoall", _ports(32, per_host=4), 1.51)],
)
def test_real_multi_node_outputs_become_group_results_with_their_peak_busbw(log, test, members, peak_gbs):
    spec = GroupLaunchSpec(members, test=test, program="nccl-tests", expected_gbps=400.0, label="leaf01")
    r = group_result(spec, RawRun("ok", [0], [log.read_text()], [""], 42.0))
    assert r.status == "ok" and r.wrong == 0 and r.error is None
    assert r.busbw_gbps == pytest.approx(peak_gbs * 8)  # GB/s -> Gb/s
    assert r.ratio == pytest.approx(peak_gbs * 8 / 400.0)
    assert (r.members, r.test, r.label, r.duration_s) == (members, test, "leaf01", 42.0)


def test_a_run_over_another_rank_count_than_the_group_is_an_error():
    spec = GroupLaunchSpec(_ports(8), test="all_reduce", program="nccl-tests")
    r = group_result(spec, RawRun("ok", [0], [A3MEGA.read_text()], [""], 1.0))
    assert r.status == "error" and "16 ranks" in (r.error or "") and "8 members" in (r.error or "")


def test_corruption_is_wrong_and_a_run_without_result_rows_is_an_error():
    spec = GroupLaunchSpec(_ports(2), test="all_reduce", program="nccl-tests")
    bad = (NCCL / "slow_link" / "all_reduce_node0007_node0008.log").read_text()
    wrong = group_result(spec, RawRun("ok", [0], [bad], [""], 1.0))
    assert wrong.status == "wrong" and wrong.wrong == 17 and not GroupJudge().failed(wrong)
    cut = (NCCL / "slow_link" / "truncated_killed_mid_run.log").read_text()
    err = group_result(spec, RawRun("error", [1], [cut], ["mpirun: killed"], 3.0))
    assert err.status == "error" and err.busbw_gbps is None and ":54" in (err.error or "")
    header_only = "\n".join(cut.splitlines()[:cut.splitlines().index("# Using devices") + 3])
    err = group_result(spec, RawRun("ok", [0], [header_only], [""], 1.0))
    assert err.status == "error" and "truncated" in (err.error or "")
    hung = group_result(spec, RawRun("hung", [None], [cut], [""], 120.0))
    assert hung.status == "hung" and GroupJudge().failed(hung)


def test_a_group_started_through_a_stub_mpirun_is_read_from_the_binary_output(tmp_path):
    """The whole path with processes: argv -> spawn -> captured output -> GroupResult (stubs, no MPI here)."""
    mpirun = tmp_path / "mpirun"
    mpirun.write_text('#!/bin/sh\nwhile [ $# -gt 0 ]; do case "$1" in */all_reduce_perf) exec "$@";; esac; '
                      "shift; done\nexit 127\n")  # fmt: skip
    bins = tmp_path / "bin"
    bins.mkdir()
    (bins / "all_reduce_perf").write_text(f"#!/bin/sh\ncat {A3MEGA}\n")
    for path in (mpirun, bins / "all_reduce_perf"):
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    launcher = MpirunLauncher(mpirun=str(mpirun), nccl_binary=str(bins))
    spec = GroupLaunchSpec(_ports(16, per_host=8), test="all_reduce", program="nccl-tests", expected_gbps=3000.0)
    r = run_group(launcher, spec, 30)
    assert r.status == "ok" and r.busbw_gbps == pytest.approx(338.82 * 8), r.error
