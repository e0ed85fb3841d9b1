"""`fabricdoc sweep --fabric roce` on real kernel networking: hosts are network namespaces
joined to a switch namespace by veth pairs (the lab's "one-switch" fabric); one host's cable is
flapped while the sweep's probes watch, and the report must name exactly that cable as flapping."""

import json
import subprocess
import sys
import threading

import pytest

from fabricdoc.model.records import PortRef
from tests.helpers.netns_lab import sh

pytestmark = [pytest.mark.netns, pytest.mark.parametrize("lab", ["one-switch"], indirect=True)]

H2, H3 = PortRef("h2", 1), PortRef("h3", 1)


def sweep(lab, tmp_path, *extra):
    fabric = lab.write_fabric_file(tmp_path / "roce.yaml")
    return subprocess.Popen(
        [sys.executable, "-m", "fabricdoc", "sweep", "--fabric", "roce", "--topology", str(fabric),
         "--launcher", "netns", "--no-bandwidth", "--json", "--quiet", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )


def test_a_flapping_host_cable_is_named_and_healthy_cables_are_not(lab, tmp_path):
    proc = sweep(lab, tmp_path, "--interval", "6")
    stop = threading.Event()
    flaps = 0

    def flapper():
        # Flap until the sweep exits, so the flaps fall inside every probe's watch window
        # however late the probes start; the closing sample may catch the port down.
        nonlocal flaps
        while not stop.is_set() and proc.poll() is None:
            sh("ip", "-n", lab.namespace_of(H2), "link", "set", lab.ifname_of(H2), "down")
            stop.wait(0.3)
            sh("ip", "-n", lab.namespace_of(H2), "link", "set", lab.ifname_of(H2), "up")
            flaps += 1
            stop.wait(0.3)

    t = threading.Thread(target=flapper)
    t.start()
    try:
        out, err = proc.communicate(timeout=120)
    finally:
        stop.set()
        t.join()
    assert proc.returncode == 1, err
    report = json.loads(out)
    assert all(p["status"] == "ok" for p in report["probes"] if p["probe"] == "probe"), report["probes"]
    flapping = [f for f in report["findings"] if f["fault"] == "flapping"]
    seen = [(f["name"], f["fault"]) for f in report["findings"]]
    assert [sorted(map(tuple, f["endpoints"])) for f in flapping] == [[("h2", 1), ("sw", 2)]], seen
    assert not [f for f in report["findings"] if "h1" in f["node_ids"] or "h3" in f["node_ids"]]
    events = [e for e in flapping[0]["evidence"] if e["type"] == "event"]
    assert events and events[0]["flaps"] >= 2
    assert [d["node"] for d in report["drain"]] == ["h2"]


def test_a_host_whose_namespace_is_gone_is_reported_and_the_others_kept(lab, tmp_path):
    sh("ip", "netns", "del", lab.namespace_of(H3))
    proc = sweep(lab, tmp_path, "--interval", "1")
    out, err = proc.communicate(timeout=120)
    report = json.loads(out)
    status = {p["target"]: p["status"] for p in report["probes"] if p["probe"] == "probe"}
    assert status["h1"] == "ok" and status["h2"] == "ok" and status["h3"] == "error"
    # The others were read and are healthy, but h3 was not seen: no PASS, no fault on h3, no drain.
    assert report["verdict"] == "incomplete" and proc.returncode == 2
    assert not report["coverage"]["complete"]
    assert any("h3" in item["what"] for item in report["coverage"]["not_seen"])
    assert report["findings"] == [] and report["drain"] == []


def test_a_host_whose_mtu_differs_is_a_host_config_finding_not_a_cable(lab, tmp_path):
    # A jumbo-frame mismatch is a classic RoCE misconfiguration that looks like a slow fabric.
    sh("ip", "-n", lab.namespace_of(H3), "link", "set", lab.ifname_of(H3), "mtu", "1400")
    proc = sweep(lab, tmp_path, "--interval", "1")
    out, err = proc.communicate(timeout=120)
    report = json.loads(out)
    assert all(p["status"] == "ok" for p in report["probes"] if p["probe"] == "probe"), report["probes"]
    assert [(f["kind"], f["name"], f["fault"]) for f in report["findings"]] == [("host", "h3", "host_config")], err
    (evidence,) = report["findings"][0]["evidence"]
    assert evidence["check"] == "mtu" and "MTU 1400 while 2 of 3 read 1500" in evidence["reason"]
    assert report["verdict"] == "fail" and proc.returncode == 1
    # The probes also ran the real dcb on every veth: no DCB there, so PFC is n/a, not "not seen".
    assert report["coverage"]["not_seen_count"] == 0, report["coverage"]["not_seen"]
