"""Nothing finished is lost: the report is written before side stores, through symlinks, atomically;
Ctrl-C keeps what finished; unexpected errors are one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import contextmanager

import pytest

import fabricdoc.cli.common as common
from fabricdoc.cli.main import main
from fabricdoc.errors import FabricdocError
from fabricdoc.report.files import write_atomic
from fabricdoc.report.history import History
from tests.helpers.reports import make_report


def test_a_history_store_that_cannot_be_written_keeps_the_report(tmp_path, capsys):
    bad = tmp_path / "history"
    bad.mkdir()  # a folder, not a database
    out = tmp_path / "r.json"
    assert main(["sweep", "--fabric", "demo", "--no-progress", "--history", str(bad), "-o", str(out)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("fabricdoc sweep: error: history:")
    rep = json.loads(out.read_text())
    assert rep["findings"] and rep["errors"] and rep["errors"][0].startswith("history:")


def test_output_through_a_symlink_replaces_the_target_and_keeps_the_link(tmp_path):
    target = tmp_path / "reports" / "latest.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "latest.json"
    link.symlink_to(target)
    write_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_output_to_a_special_file_is_refused(capsys):
    assert main(["sweep", "--fabric", "demo", "--no-progress", "-o", "/dev/null"]) == 2
    captured = capsys.readouterr()
    assert "verdict: FAIL" in captured.out  # the summary is still shown
    assert "not a regular file" in captured.err and captured.err.count("\n") == 1
    assert os.path.exists("/dev/null") and not os.path.isfile("/dev/null")


@pytest.fixture
def tiny_fs(tmp_path):
    """A 64 KiB tmpfs (skipped where this process may not mount one)."""
    mnt = tmp_path / "tiny"
    mnt.mkdir()
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True, timeout=30)
    if r.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {r.stderr.decode().strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True, timeout=30)


def test_a_full_disk_is_one_line_and_the_old_report_stays(tiny_fs, capsys):
    out = tiny_fs / "r.json"
    out.write_text('{"old": true}')
    assert main(["sweep", "--fabric", "demo", "--no-progress", "-o", str(out)]) == 2  # the report needs ~100 KiB
    err = capsys.readouterr().err
    assert "No space left on device" in err and err.count("\n") == 1
    assert out.read_text() == '{"old": true}' and [p.name for p in tiny_fs.iterdir()] == ["r.json"]


def test_two_sweeps_of_one_fabric_in_the_same_second_are_both_kept(tmp_path):
    a, b = make_report(), make_report()
    b.generated_at = a.generated_at
    with History(tmp_path / "h.sqlite") as h:
        assert h.append(a) != h.append(b)
        assert len(h.sweeps()) == 2 and h.append(a) == 1


def test_every_sweep_has_its_own_run_id_producer_and_times(tmp_path, capsys):
    runs = []
    for i in range(2):
        out = tmp_path / f"r{i}.json"
        main(["sweep", "--fabric", "demo", "--no-progress", "-o", str(out)])
        runs.append(json.loads(out.read_text()))
    assert runs[0]["run_id"] != runs[1]["run_id"]
    assert all(r["producer"].startswith("fabricdoc ") and r["started_at"] <= r["generated_at"] for r in runs)


def test_ctrl_c_during_the_tests_writes_a_partial_report_marked_incomplete(tmp_path, monkeypatch, capsys):
    @contextmanager
    def interrupting_bar(enabled=True):
        def progress(stage, done, total):
            if stage == "bandwidth" and done >= 20:
                raise KeyboardInterrupt

        yield progress

    monkeypatch.setattr(common, "progress_bar", interrupting_bar)
    out = tmp_path / "partial.json"
    assert main(["sweep", "--fabric", "demo", "-o", str(out)]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "partial report" in err
    rep = json.loads(out.read_text())
    assert 20 <= len(rep["pairs"]) < 69  # what finished, not the whole plan
    assert not rep["coverage"]["complete"]
    assert any(item["what"] == "the sweep" for item in rep["coverage"]["not_seen"])


def test_an_unexpected_error_is_one_line_exit_2_never_the_faults_code(monkeypatch, capsys):
    import fabricdoc.cli.schema as schema_command

    def boom(args):
        raise RuntimeError("a bug\nwith two lines")

    monkeypatch.setattr(schema_command, "run", boom)
    monkeypatch.delenv("FABRICDOC_DEBUG", raising=False)
    from fabricdoc.cli.main import build_parser

    args = build_parser().parse_args(["schema"])
    assert args.func is boom
    assert main(["schema"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "internal error: RuntimeError: a bug\\x0awith two lines" in err


def test_an_undecodable_report_makes_the_gate_say_could_not_run(tmp_path, capsys):
    bad = tmp_path / "r.json"
    bad.write_bytes(b'{"schema": "fabricdoc.report/v1", "x": "\xff\xfe"}')
    assert main(["gate", str(bad), "--job-nodelist", "node[0001-0002]"]) == 2
    assert "not valid UTF-8" in capsys.readouterr().err


def test_a_closed_pipe_is_not_success():
    proc = subprocess.Popen([sys.executable, "-m", "fabricdoc", "schema"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader goes away at once, as `| head -0` does
    assert proc.wait(timeout=60) == 2
    assert b"Traceback" not in proc.stderr.read()


def test_a_closed_pipe_under_impacts_tables_is_not_success_either(tmp_path):
    """impact prints through rich, whose own closed-pipe handling exits 1, the faults-found code."""
    from fabricdoc.sweep import SweepConfig, run_sweep

    path = tmp_path / "report.json"
    run_sweep(SweepConfig(fabric="demo")).save(path)
    proc = subprocess.Popen([sys.executable, "-m", "fabricdoc", "impact", str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    proc.stdout.close()
    assert proc.wait(timeout=120) == 2
    assert b"Traceback" not in proc.stderr.read()


def test_write_atomic_errors_are_fabricdoc_errors(tmp_path):
    (tmp_path / "dir").mkdir()
    with pytest.raises(FabricdocError, match="not a regular file"):
        write_atomic(tmp_path / "dir", "x")


def test_sigterm_stops_the_run_but_a_forked_helper_just_dies_and_the_handler_is_put_back(monkeypatch, capsys):
    """A library's forked helper (pyroute2 in a namespace) inherits the handler; SIGTERM must end it,
    not run this process's clean-up a second time in the child."""
    import signal

    import fabricdoc.cli.schema as schema_command

    seen = {}

    def forks_then_is_terminated(args):
        ready_r, ready_w = os.pipe()
        pid = os.fork()
        if pid == 0:  # the helper: say it is up, then wait to be ended
            os.close(ready_r)
            os.write(ready_w, b"x")
            while True:
                signal.pause()
        os.close(ready_w)
        assert os.read(ready_r, 1) == b"x"
        os.kill(pid, signal.SIGTERM)
        _, status = os.waitpid(pid, 0)
        seen["child"] = status
        os.kill(os.getpid(), signal.SIGTERM)  # now this run itself is asked to stop
        seen["after"] = True  # never reached: the handler raised
        return 0

    monkeypatch.setattr(schema_command, "run", forks_then_is_terminated)
    before = signal.getsignal(signal.SIGTERM)
    assert main(["schema"]) == 130
    assert os.WIFSIGNALED(seen["child"]) and os.WTERMSIG(seen["child"]) == signal.SIGTERM
    assert "after" not in seen
    assert capsys.readouterr().err.count("interrupted") == 1
    assert signal.getsignal(signal.SIGTERM) is before


def test_ctrl_c_while_the_command_is_still_loading_is_one_line_and_130(monkeypatch, capsys):
    import types

    import fabricdoc.__main__ as entry

    class Loading(types.ModuleType):
        def __getattr__(self, name):
            raise KeyboardInterrupt  # Ctrl-C lands while the CLI module is being imported

    monkeypatch.setitem(sys.modules, "fabricdoc.cli.main", Loading("fabricdoc.cli.main"))
    assert entry.run() == 130
    assert capsys.readouterr().err == "fabricdoc: interrupted\n"
