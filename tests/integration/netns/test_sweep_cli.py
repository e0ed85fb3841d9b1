"""`fabricdoc sweep --fabric roce` as a user runs it, on the namespace leaf/spine lab: host
probes, planned gloo rounds, the targeted re-test, localization, the journal and --resume."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fabricdoc.bandwidth.journal import read_journal
from fabricdoc.model.records import LinkKey, PortRef

pytestmark = [pytest.mark.netns, pytest.mark.gloo, pytest.mark.slow,
              pytest.mark.parametrize("lab", ["leaf-spine"], indirect=True)]

BAD = LinkKey.of(PortRef("leaf02", 3), PortRef("spine01", 2))


def sweep(fabric, journal, *extra):
    argv = [sys.executable, "-m", "fabricdoc", "sweep", "--fabric", "roce", "--expected", str(fabric),
            "--launcher", "netns", "--interval", "1", "--slow-ratio", "0.5", "--size", str(1 << 20),
            "--test-timeout", "90", "--journal", str(journal), "--json", "--no-progress", *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)


def test_roce_sweep_names_the_shaped_uplink_and_resume_reruns_nothing(lab, tmp_path):
    lab.degrade(BAD, rate_mbit=10)
    fabric = lab.write_fabric_file(tmp_path / "lab.yaml")
    journal = tmp_path / "bw.jsonl"
    first = sweep(fabric, journal)
    assert first.returncode == 1, first.stderr
    report = json.loads(first.stdout)
    links = [f for f in report["findings"] if f["kind"] == "link" and f["severity"] != "info"]  # named
    assert [sorted(map(tuple, f["endpoints"])) for f in links] == [[("leaf02", 3), ("spine01", 2)]]
    assert links[0]["fault"] == "degraded_bandwidth"
    pairs = report["pairs"]
    assert pairs and all(p["status"] == "ok" and p["expected_gbps"] and p["busbw_gbps"] for p in pairs)
    assert report["tests"]["rounds"] > 1  # planned rounds plus the targeted re-test
    header, finished = read_journal(journal)
    assert len(finished) == len(pairs)
    assert {phase for phase, _ in finished} == {"sweep", "retest"}

    again = sweep(fabric, journal, "--resume")
    assert again.returncode == 1, again.stderr
    assert read_journal(journal) == (header, finished)  # every test came from the journal
    resumed = json.loads(again.stdout)
    assert [f["endpoints"] for f in resumed["findings"]
            if f["kind"] == "link" and f["severity"] != "info"] == [links[0]["endpoints"]]
