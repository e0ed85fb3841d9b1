"""`fabricdoc probe` and the host bundle: JSON a launcher can gather, and failures kept to one line."""

from __future__ import annotations

import os
import subprocess
import sys

from fabricdoc.cli.main import main
from tests.helpers.paths import DATA

SYSFS = os.path.join(DATA, "sysfs", "mlx5_host")


def test_missing_namespace_exits_2_with_one_line():
    proc = subprocess.run([sys.executable, "-m", "fabricdoc", "probe", "--netns", "fdh-absent",
                           "--no-sysfs", "--no-gpu"], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0
    assert "network namespace 'fdh-absent' does not exist" in proc.stderr


def test_bad_port_argument_is_one_line_exit_2(capsys):
    assert main(["probe", "--port", "eth0", "--no-gpu", "--no-sysfs"]) == 2
    assert "expected IFNAME=NUMBER" in capsys.readouterr().err


def test_one_sample_says_it_gives_no_rates(capsys):
    assert main(["probe", "--sysfs-root", SYSFS, "--no-gpu", "--no-ethtool"]) == 0
    out = capsys.readouterr().out
    assert "counters sampled once: no rates" in out
