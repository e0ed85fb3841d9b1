"""NCCL RAS on the fabric: the host of a lost or out-of-step rank is placed and joined with what else was found."""

from __future__ import annotations

import json

from fabricdoc.cli.main import main
from fabricdoc.model.records import PortCounters
from fabricdoc.report.validation import validate_report
from fabricdoc.sources.records import records_to_json
from tests.helpers.paths import DATA

A10G = DATA / "nccl-ras" / "real_ray_a10g_mismatch_2.28.9_json" / "ncclras.json"
DEAD = DATA / "nccl-ras" / "real_nccl_example08_dead_nocomm_2.30.7" / "ncclras.txt"
JOB = DATA / "nccl-debug" / "synthetic_demo_node0001_cable_from_snellius" / "job.log"
ADDRESSES = {"gpu1": "10.0.69.85", "gpu2": "10.0.109.86", "gpu3": "10.0.120.166", "gpu4": "10.0.92.51"}


def _fabric(tmp_path):
    """The four A10G hosts of the Ray capture on one switch, each declaring the address NCCL printed."""
    nodes = ["  - {id: sw, kind: switch, ports: 4}"]
    links = []
    for i, (h, ip) in enumerate(ADDRESSES.items(), 1):
        nodes.append(f"  - {{id: {h}, kind: host, ports: 1, attrs: {{addresses: {{1: {ip}}}}}}}")
        links.append(f'  - {{a: "sw[{i}]", b: "{h}[1]", lanes: 4, lane_gbps: 25}}')
    path = tmp_path / "a10g.yaml"
    path.write_text("name: a10g\nnodes:\n" + "\n".join(nodes) + "\nlinks:\n" + "\n".join(links) + "\n")
    return str(path)


def _json(capsys, argv):
    rc = main([*argv, "--json"])
    report = json.loads(capsys.readouterr().out)
    validate_report(report)
    return rc, report


def test_the_out_of_step_rank_is_placed_on_its_host_by_address_as_a_warning_that_drains_nothing(tmp_path, capsys):
    rc, report = _json(capsys, ["analyze", "--fabric", _fabric(tmp_path), "--nccl-ras", str(A10G)])
    (f,) = report["findings"]
    assert (f["kind"], f["name"], f["fault"], f["severity"]) == ("host", "gpu2", "nccl_out_of_step", "warning")
    (ev,) = f["evidence"]
    assert ev["type"] == "nccl_log" and "AllReduce up to operation 100 while 3 ranks reached 101" in ev["reason"]
    assert '"host":"10.0.109.86"' in ev["line"]
    assert report["drain"] == [] and rc == 1


def test_ras_lines_join_the_cable_finding_of_the_same_host_instead_of_a_second_finding(tmp_path, capsys):
    fabric = _fabric(tmp_path)
    recs = []
    for t, sym in ((0.0, 0), (10.0, 5000)):
        recs += [PortCounters(h, 1, t, {"SymbolErrorCounter": sym if h == "gpu2" else 0, "PortRcvErrors": 0},
                              source="sysfs") for h in ADDRESSES]
    records = tmp_path / "r.json"
    records.write_text(records_to_json(recs))
    rc, report = _json(capsys, ["analyze", "--fabric", fabric, "--records", str(records), "--nccl-ras", str(A10G)])
    assert [f["fault"] for f in report["findings"]] == ["symbol_errors"]
    reasons = [e.get("reason", "") for e in report["findings"][0]["evidence"]]
    assert any(r.startswith("NCCL RAS: rank 1") for r in reasons)


def test_a_host_known_only_by_its_address_in_the_jobs_nccl_debug_output_is_placed(tmp_path, capsys):
    ras = tmp_path / "ras.txt"  # ncclras's DEAD section, naming the address node0002 bootstrapped on
    ras.write_text("Errors\n======\n\nDEAD\n  1 job process is considered dead (unreachable via the RAS network)\n"
                   "  Process 1793998 on node 172.18.62.152 managing GPU 0\n\nWarnings\n========\n")
    rc, report = _json(capsys, ["analyze", "--fabric", "demo", "--nccl-debug", str(JOB), "--nccl-ras", str(ras)])
    lost = [f for f in report["findings"] if f["fault"] == "nccl_rank_lost"]
    assert [(f["name"], f["node_ids"]) for f in lost] == [("node0002", ["node0002"])]


def test_a_host_not_on_the_fabric_is_reported_under_nccls_name_with_a_probe_warning(capsys):
    rc, report = _json(capsys, ["analyze", "--fabric", "demo", "--nccl-ras", str(DEAD)])
    (f,) = report["findings"]
    assert (f["name"], f["fault"], f["node_ids"]) == ("node1", "nccl_rank_lost", ["node1"])
    warnings = [p for p in report["probes"] if p["probe"] == "nccl-ras" and p["status"] == "warning"]
    assert warnings and "not on the fabric" in warnings[0]["error"]


def test_a_file_that_is_not_a_ras_report_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "ras.txt"
    bad.write_text("Traceback (most recent call last):\n")
    assert main(["analyze", "--fabric", "demo", "--nccl-ras", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "ras.txt:1" in err and "\n" not in err
