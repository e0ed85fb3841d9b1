"""Signals during a real RoCE sweep on the namespace lab: Ctrl-C keeps what finished and exits 130;
neither Ctrl-C nor a SIGKILL of fabricdoc leaves a test process running."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from fabricdoc.model.records import LinkKey, PortRef
from tests.helpers.waiting import wait_for

pytestmark = [pytest.mark.netns, pytest.mark.gloo, pytest.mark.slow,
              pytest.mark.parametrize("lab", ["leaf-spine"], indirect=True)]

BAD = LinkKey.of(PortRef("leaf02", 3), PortRef("spine01", 2))


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (children, grandchildren...), from /proc."""
    parent: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
                parent[int(entry.name)] = int(fields[1])
            except (OSError, IndexError, ValueError):
                continue
    out, frontier = set(), {pid}
    while frontier:
        frontier = {p for p, pp in parent.items() if pp in frontier} - out
        out |= frontier
    return out


def _alive(pids: set[int]) -> set[int]:
    live = set()
    for p in pids:
        try:
            state = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            live.add(p)
    return live


def _start(lab, tmp_path) -> tuple[subprocess.Popen[str], Path, Path]:
    lab.degrade(BAD, loss_pct=100)  # tests through it hang until killed
    fabric = lab.write_fabric_file(tmp_path / "lab.yaml")
    journal, out = tmp_path / "bw.jsonl", tmp_path / "partial.json"
    argv = [sys.executable, "-m", "fabricdoc", "sweep", "--fabric", "roce", "--expected", str(fabric),
            "--launcher", "netns", "--interval", "1", "--slow-ratio", "0.5", "--size", str(1 << 20),
            "--test-timeout", "300", "--journal", str(journal), "-o", str(out), "--no-progress"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    return proc, journal, out


def _cmdline(pid: int) -> bytes:
    """A process's command line; empty once it has exited (it may between listing and reading)."""
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def _tests_in_flight(proc, journal: Path) -> set[int]:
    """Wait until a test has finished (a journal line) while others run; return the running tests."""
    wait_for(lambda: journal.exists() and len(journal.read_text().splitlines()) >= 2, 240, "a finished test")
    return wait_for(lambda: {p for p in _descendants(proc.pid) if b"bwtest" in _cmdline(p)}, 60, "tests in flight")


def test_ctrl_c_mid_sweep_exits_130_writes_the_partial_report_and_ends_every_test(lab, tmp_path):
    proc, journal, out = _start(lab, tmp_path)
    try:
        running = _tests_in_flight(proc, journal)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=90)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err
    assert "interrupted" in err and "partial report" in err
    report = json.loads(out.read_text())
    assert report["pairs"] and not report["coverage"]["complete"]
    assert wait_for(lambda: not _alive(running), 15, "the tests in flight to be killed") is True


def test_a_sigkill_of_fabricdoc_leaves_no_test_process_behind(lab, tmp_path):
    proc, journal, _out = _start(lab, tmp_path)
    try:
        running = _tests_in_flight(proc, journal)
        proc.kill()  # no handler runs: the kernel's parent-death signal must end the tests
        proc.wait(timeout=30)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    assert wait_for(lambda: not _alive(running), 15, "the orphaned tests to die") is True
