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


def _broken_copy(tmp_path, bad: dict[str, bytes]):
    """The real mlx5 host's sysfs tree with some files replaced by ``bad`` bytes."""
    import shutil

    root = tmp_path / "host"
    shutil.copytree(SYSFS, root)
    for rel, data in bad.items():
        (root / rel).write_bytes(data)
    return root


def test_bad_sysfs_files_are_listed_and_every_good_port_is_kept(tmp_path, capsys):
    import json

    ports = "sys/class/infiniband/mlx5_0/ports/1"
    root = _broken_copy(tmp_path, {
        f"{ports}/counters/symbol_error": b"\xff\xfe\n",  # not UTF-8
        f"{ports}/counters/port_rcv_errors": b"9" * 5000 + b"\n",  # 5,000 digits
        f"{ports}/rate": b"200 Gb/sec (4000000000X HDR)\n",  # an absurd lane count
        f"{ports}/state": b"4" * 5000 + b": ACTIVE\n",
    })
    rc = main(["probe", "--sysfs-root", str(root), "--no-gpu", "--no-ethtool", "--json"])
    out, err = capsys.readouterr()
    doc = json.loads(out)
    assert rc == 0 and "Traceback" not in err and "internal error" not in err
    counters = [r for r in doc["records"] if r["type"] == "PortCounters" and r["source"] == "sysfs"]
    assert len({(r["node"], r["port"]) for r in counters}) == 3  # all three HCAs' ports kept
    bad = next(r for r in counters if r["values"].get("symbol_error", 0) is None)
    assert bad["values"]["port_rcv_errors"] is None and bad["values"]["link_downed"] is not None
    problems = " ".join(r.get("error") or "" for r in doc["records"] if r["type"] == "ProbeRun")
    for what in ("symbol_error", "port_rcv_errors", "rate", "state", "not valid UTF-8", "lanes"):
        assert what in problems, what
