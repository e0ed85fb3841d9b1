"""A RoCE sweep whose tests cannot run (namespaces gone) is "could not test": never a hardware fault,
never a drain, and the verdict is incomplete (exit 2)."""

from __future__ import annotations

import json

import pytest

from tests.helpers.cli import run_fabricdoc
from tests.helpers.netns_lab import netns_available

pytestmark = [pytest.mark.netns]


def test_missing_namespaces_make_an_incomplete_report_with_no_finding_and_no_drain(tmp_path):
    why = netns_available(("ip",))
    if why:
        pytest.skip(why)
    hosts = [f"gh{i}" for i in range(1, 4)]
    lines = ["name: ghosts", "nodes:", "  - {id: tor, kind: switch, ports: 3}"]
    lines += [f"  - {{id: {h}, kind: host, ports: 1, attrs: {{netns: fdgone-{h}, ifnames: {{1: eth0}}, "
              f"addresses: {{1: 10.77.0.{i}}}}}}}" for i, h in enumerate(hosts, 1)]
    lines += ["links:"] + [f'  - {{a: "tor[{i}]", b: "{h}[1]", lanes: 1, lane_gbps: 0.1}}' for i, h in enumerate(hosts, 1)]
    (tmp_path / "f.yaml").write_text("\n".join(lines) + "\n")
    r = run_fabricdoc("sweep", "--fabric", "roce", "--expected", str(tmp_path / "f.yaml"), "--launcher", "netns",
                      "--interval", "0.5", "--test-timeout", "30", "--json", "--no-progress", timeout=300)
    assert r.returncode == 2, r.stderr
    report = json.loads(r.stdout)
    assert report["verdict"] == "incomplete"
    assert report["findings"] == [] and report["drain"] == []
    assert report["tests"]["pairs_error"] == report["tests"]["pairs_tested"] > 0
    whys = " ".join(item["why"] for item in report["coverage"]["not_seen"])
    assert "could not run" in whys and "fdgone-" in whys
