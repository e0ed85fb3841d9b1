"""IbRunner: no shell, a timeout per call that kills the process group, one-line errors naming the tool."""

from __future__ import annotations

import stat
import time
from pathlib import Path

import pytest
from fabricdoc.probes.ib.runner import IbRunner

from fabricdoc.errors import ProbeError
from tests.helpers.waiting import process_gone


def stand_in(dir_: Path, name: str, body: str) -> Path:
    """A shell script standing in for a tool (hung, failing): not the real tool, named as one."""
    path = dir_ / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_a_tool_missing_from_path_is_unsupported_and_named(tmp_path):
    runner = IbRunner(env={"PATH": str(tmp_path)})
    with pytest.raises(ProbeError) as exc:
        runner.ibnetdiscover()
    assert exc.value.status == "unsupported"
    assert str(exc.value).startswith("ibnetdiscover:")
    assert "\n" not in str(exc.value)


def test_a_hung_tool_is_killed_with_its_children_at_the_timeout(tmp_path):
    pidfile = tmp_path / "child.pid"
    stand_in(tmp_path, "iblinkinfo", f"sleep 60 & echo $! > {pidfile}\nwait")
    runner = IbRunner(env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, timeout_s=0.5)
    start = time.monotonic()
    with pytest.raises(ProbeError) as exc:
        runner.iblinkinfo()
    assert time.monotonic() - start < 5
    assert exc.value.status == "timeout"
    assert str(exc.value).startswith("iblinkinfo: timed out after 0.5s")
    child = int(pidfile.read_text())
    if not process_gone(child, 5.0):
        pytest.fail("the hung tool's child survived the timeout")


def test_a_failing_tool_reports_its_last_error_line(tmp_path):
    stand_in(tmp_path, "ibroute", "echo 'ibwarn: noise' >&2; echo 'ibroute: iberror: failed: bad lid' >&2; exit 255")
    runner = IbRunner(env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    with pytest.raises(ProbeError, match=r"^ibroute: exit status 255: ibroute: iberror: failed: bad lid$") as exc:
        runner.ibroute(3)
    assert exc.value.status == "error"


def test_arguments_go_to_the_tool_verbatim_without_a_shell(tmp_path):
    out = tmp_path / "argv"
    stand_in(tmp_path, "ibtracert", f'for a in "$@"; do echo "$a"; done > {out}')
    runner = IbRunner(env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    runner.run("ibtracert", "4; touch pwned", "$(id)")
    assert out.read_text().splitlines() == ["4; touch pwned", "$(id)"]
    assert not (tmp_path / "pwned").exists()


def test_ibqueryerrors_exit_1_means_errors_found_not_failure(tmp_path):
    stand_in(tmp_path, "ibqueryerrors", "echo '## Summary: 1 nodes checked, 1 bad nodes found'; exit 1")
    runner = IbRunner(env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert runner.ibqueryerrors().returncode == 1


def test_the_ibsim_preload_is_set_and_runs_in_a_scratch_dir(tmp_path):
    from tests.helpers.ib import have_ibsim

    if not have_ibsim():
        pytest.skip("ibsim-utils not installed")
    runner = IbRunner(ibsim_socket="fdib-test-sock")
    try:
        assert runner.env["IBSIM_SOCKNAME"] == "fdib-test-sock"
        assert runner.env["LD_PRELOAD"].endswith("libumad2sim.so")
        assert runner.cwd and Path(runner.cwd).is_dir()
        assert runner.describe() == "ibsim:fdib-test-sock"
    finally:
        runner.close()
    assert not Path(runner.cwd).exists()


def test_a_tool_that_fails_once_is_retried_and_a_timeout_is_not(tmp_path):
    marker = tmp_path / "ran-once"
    stand_in(tmp_path, "ibnetdiscover", f'if [ -e {marker} ]; then echo ok; else touch {marker}; exit 1; fi')
    runner = IbRunner(env={"PATH": f"{tmp_path}:/usr/bin:/bin"})
    assert runner.ibnetdiscover().stdout == "ok\n"
    count = tmp_path / "count"
    stand_in(tmp_path, "iblinkinfo", f"echo x >> {count}; sleep 30")
    with pytest.raises(ProbeError):
        IbRunner(env={"PATH": f"{tmp_path}:/usr/bin:/bin"}, timeout_s=0.3).iblinkinfo()
    assert count.read_text() == "x\n"
