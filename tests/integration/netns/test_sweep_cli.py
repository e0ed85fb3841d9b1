"""`fabricdoc sweep --fabric roce` as a user runs it, on the namespace leaf/spine lab: host
probes, planned gloo rounds, the targeted re-test, localization, the journal and --resume.

This is the suite's one sweep of the lab with a rate-limited uplink: its journal holds every test
with its phase and ratio, so the planned rounds and the re-test are checked from it as well as
from the report (test_netns_sweep.py runs the healthy lab and the black-holed uplink)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from fabricdoc.bandwidth.journal import read_journal
from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.model.records import LinkKey, PortRef

pytestmark = [pytest.mark.netns, pytest.mark.gloo, pytest.mark.slow,
              pytest.mark.parametrize("lab", ["leaf-spine"], indirect=True)]

BAD = LinkKey.of(PortRef("leaf02", 3), PortRef("spine01", 2))


def sweep(fabric, journal, *extra):
    argv = [sys.executable, "-m", "fabricdoc", "sweep", "--fabric", "roce", "--expected", str(fabric),
            "--launcher", "netns", "--interval", "1", "--slow-ratio", "0.5", "--size", str(1 << 20),
            "--test-timeout", "90", "--journal", str(journal), "--json", "--no-progress", *extra]
    return subprocess.run(argv, capture_output=True, text=True, timeout=600)


def _pairs_seen(out: str):
    """A report's pairs as (src, dst, ratio) for a failure message; the output's tail if it is no report."""
    try:
        return [(p["src"], p["dst"], p.get("ratio")) for p in json.loads(out)["pairs"]]
    except (ValueError, KeyError, TypeError):
        return out[-500:]


def test_roce_sweep_names_the_shaped_uplink_the_retest_confirms_it_and_resume_reruns_nothing(lab, tmp_path):
    lab.degrade(BAD, rate_mbit=10)  # 10% of the 100 Mbit/s cables
    fabric = lab.write_fabric_file(tmp_path / "lab.yaml")
    journal = tmp_path / "bw.jsonl"
    first = sweep(fabric, journal)
    assert first.returncode == 1, (first.stderr, _pairs_seen(first.stdout))
    report = json.loads(first.stdout)
    links = [f for f in report["findings"] if f["kind"] == "link" and f["severity"] != "info"]  # named
    assert [sorted(map(tuple, f["endpoints"])) for f in links] == [[("leaf02", 3), ("spine01", 2)]]
    assert links[0]["fault"] == "degraded_bandwidth"
    pairs = report["pairs"]
    assert pairs and all(p["status"] == "ok" and p["expected_gbps"] and p["busbw_gbps"] for p in pairs)
    assert report["tests"]["rounds"] > 1  # planned rounds plus the targeted re-test

    # The journal: every planned test finished once, then the re-test, each line a report pair.
    header, finished = read_journal(journal)
    assert len(finished) == len(pairs)
    assert {phase for phase, _ in finished} == {"sweep", "retest"}
    planned = sorted((str(s), str(d)) for _, s, d in plan_sweep(lab.fabric).tests())
    assert sorted((str(r.src), str(r.dst)) for phase, r in finished if phase == "sweep") == planned
    # The re-test sent tests through the suspect again (so screening had made it one) and controls
    # around it: those through it are still slow, the controls are not. A control is a test clear of
    # the cable both ways (its TCP acks come back over the reverse path, which the cable slows too).
    retest = [r for phase, r in finished if phase == "retest"]
    path = lab.fabric.path
    through = [r for r in retest if BAD in path(r.src, r.dst)]
    controls = [r for r in retest if BAD not in path(r.src, r.dst) and BAD not in path(r.dst, r.src)]
    ratios = [(str(r.src), str(r.dst), r.ratio) for r in retest]
    assert through and controls, ratios
    assert all(r.ratio is not None and r.ratio < 0.5 for r in through), ratios
    assert all(r.ratio is not None and r.ratio > 0.5 for r in controls), ratios

    again = sweep(fabric, journal, "--resume")
    assert again.returncode == 1, again.stderr
    assert read_journal(journal) == (header, finished)  # every test came from the journal
    resumed = json.loads(again.stdout)
    assert [f["endpoints"] for f in resumed["findings"]
            if f["kind"] == "link" and f["severity"] != "info"] == [links[0]["endpoints"]]
