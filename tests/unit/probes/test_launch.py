"""Launchers: argv lists only, hard timeouts that kill the process group, gloo pair tests on loopback."""

from __future__ import annotations

import time

import pytest
from fabricdoc.probes.bandwidth.launch import (
    MpirunLauncher,
    PairSpec,
    Proc,
    RawRun,
    SrunLauncher,
    pair_result,
    run_pair,
    run_procs,
    safe_name,
)

from fabricdoc.errors import ProbeError
from fabricdoc.model.records import PortRef
from tests.helpers.paths import DATA as DATA_ROOT
from tests.helpers.waiting import process_gone

A, B = PortRef("node0001", 1), PortRef("node0002", 1)


def test_hung_processes_are_killed_at_the_timeout_with_their_children(tmp_path):
    marker = tmp_path / "child.pid"
    started = time.monotonic()
    raw = run_procs([Proc(["sh", "-c", f"sleep 60 & echo $! > {marker}; wait"]), Proc(["sleep", "60"])], 1.0)
    assert raw.status == "hung"
    assert time.monotonic() - started < 10
    child = int(marker.read_text())
    if not process_gone(child, 5.0):
        pytest.fail("grandchild survived the kill")


def test_a_program_that_cannot_start_is_an_error_not_a_traceback():
    raw = run_procs([Proc(["/nonexistent/fdbw-binary"])], 5)
    assert raw.status == "error" and "cannot run /nonexistent/fdbw-binary" in raw.errors[0]


def test_srun_and_mpirun_argv_pin_hosts_without_a_shell():
    spec = PairSpec(A, B, port=29555)
    steps = SrunLauncher(ifname=lambda p: "ib0").procs(spec, 120)
    assert [s.argv[0] for s in steps] == ["srun", "srun"]
    assert "--nodelist=node0001" in steps[0].argv and "--nodelist=node0002" in steps[1].argv
    assert steps[1].env["MASTER_ADDR"] == "node0001" and steps[0].env["GLOO_SOCKET_IFNAME"] == "ib0"
    assert steps[1].argv[steps[1].argv.index("--rank") + 1] == "1"
    (mpi,) = MpirunLauncher().procs(spec, 120)
    assert mpi.argv[:5] == ["mpirun", "-np", "2", "--host", "node0001:1,node0002:1"]
    assert "--rank" not in mpi.argv  # ranks come from OMPI_COMM_WORLD_RANK
    (nccl,) = MpirunLauncher(nccl_binary="/opt/nccl-tests/sendrecv_perf").procs(
        PairSpec(A, B, program="nccl-tests", size_bytes=1 << 26), 120
    )
    assert nccl.argv[-12:] == ["/opt/nccl-tests/sendrecv_perf", "-b", "67108864", "-e", "67108864", "-g", "1",
                               "-n", "5", "-w", "1", "-c", "1"][-12:]  # fmt: skip


def test_untrusted_host_names_are_refused():
    with pytest.raises(ProbeError):
        safe_name("--help")
    with pytest.raises(ProbeError):
        safe_name("node1;reboot")
    bad = PairSpec(PortRef("-oProxyCommand=x", 1), B)
    r = run_pair(MpirunLauncher(), bad, 5)
    assert r.status == "error" and "refusing" in r.error







def test_nccl_tests_output_becomes_a_pair_result_with_wrong_kept_apart():

    from fabricdoc.probes.bandwidth.launch import RawRun, pair_result

    from fabricdoc.model.paths import is_bidirectional

    data = DATA_ROOT / "nccl"
    spec = PairSpec(A, B, program="nccl-tests", test="all_reduce", expected_gbps=400.0)
    real = (data / "real" / "all_reduce_2x1_h200_dranet.log").read_text()
    ok = pair_result(spec, RawRun("ok", [0], [real], [""], 12.0))
    assert ok.status == "ok" and ok.busbw_gbps == pytest.approx(255.12) and ok.ratio == pytest.approx(0.6378)
    bad = (data / "slow_link" / "all_reduce_node0007_node0008.log").read_text()
    assert pair_result(spec, RawRun("ok", [0], [bad], [""], 12.0)).status == "wrong"
    cut = (data / "slow_link" / "truncated_killed_mid_run.log").read_text()
    err = pair_result(spec, RawRun("error", [1], [cut], ["mpirun: killed"], 3.0))
    assert err.status == "error" and ":54" in (err.error or "")  # the parse error names the cut line
    assert is_bidirectional("nccl-tests:sendrecv") and is_bidirectional("all_reduce") and not is_bidirectional("sendrecv")


@pytest.mark.parametrize("line", ['[1, 2]', '"ok"', '{"rank": {}, "status": "ok"}', '{"rank": 1, "status": "ok", '
                                  '"busbw_gbps": [3]}', '{"rank": 0, "status": "ok", "wrong": ' + "9" * 5000 + "}",
                                  '{"rank": 0, "status": "ok", "busbw_gbps": 1e999}', '{' * 3000],
                         ids=["list", "string", "rank object", "figure list", "huge wrong", "inf", "nesting"])
def test_a_rank_result_line_that_is_not_a_result_is_that_tests_error_not_a_crash(line):
    from fabricdoc.probes.bandwidth.bwtest import MARKER

    spec = PairSpec(PortRef("a", 1), PortRef("b", 1))
    good = MARKER + '{"rank": 1, "status": "ok", "busbw_gbps": 10.0, "algbw_gbps": 10.0, "wrong": 0}'
    result = pair_result(spec, RawRun("ok", [0, 0], [MARKER + line, good], ["", ""], 1.0))
    assert result.status == "error" and "result line" in result.error and len(result.error) < 300
