"""Honest verdicts: PASS only when everything planned was seen; a test that could not run is never a fault."""

from __future__ import annotations

import json

from fabricdoc.analysis.localize import localize
from fabricdoc.cli.main import main
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.records import HostCheck, Observations, PairResult, PortCounters, PortRef
from fabricdoc.report.coverage import Planned, cabled_ports
from fabricdoc.report.render import summary_text
from fabricdoc.report.report import Report
from fabricdoc.sources.records import records_to_json


def _fabric_file(tmp_path):
    path = tmp_path / "f.yaml"
    path.write_text("name: small\ngenerator: fat_tree_2\nparams: {leaves: 2, spines: 1, hosts_per_leaf: 2}\n")
    return path


def _sample(node: str, t: float, sym: int = 0) -> PortCounters:
    return PortCounters(node, 1, t, {"SymbolErrorCounter": sym, "PortRcvErrors": 0}, source="sysfs")


def _records(tmp_path, name, records) -> str:
    path = tmp_path / name
    path.write_text(records_to_json(records))
    return str(path)


def test_records_from_every_host_sampled_twice_pass(tmp_path, capsys):
    recs = [_sample(f"node000{i}", t) for i in range(1, 5) for t in (0.0, 10.0)]
    code = main(["analyze", "--fabric", str(_fabric_file(tmp_path)), "--records", _records(tmp_path, "r.json", recs)])
    assert code == 0, capsys.readouterr()
    assert "everything planned was seen" in capsys.readouterr().out


def test_a_host_with_no_records_makes_the_verdict_incomplete_not_pass(tmp_path, capsys):
    recs = [_sample(f"node000{i}", t) for i in range(1, 4) for t in (0.0, 10.0)]  # node0004 sent nothing
    out = tmp_path / "rep.json"
    code = main(["analyze", "--fabric", str(_fabric_file(tmp_path)), "--records",
                 _records(tmp_path, "r.json", recs), "-o", str(out)])
    assert code == 2
    text = capsys.readouterr().out
    assert "INCOMPLETE" in text and "host node0004: no records from it" in text
    rep = json.loads(out.read_text())
    assert rep["verdict"] == "incomplete" and rep["coverage"]["hosts"] == {"planned": 4, "seen": 3}


def test_records_sampled_once_cannot_pass(tmp_path, capsys):
    recs = [_sample(f"node000{i}", 0.0) for i in range(1, 5)]  # `fabricdoc probe --json` without --watch
    assert main(["analyze", "--fabric", str(_fabric_file(tmp_path)), "--records",
                 _records(tmp_path, "r.json", recs)]) == 2
    assert "sampled once" in capsys.readouterr().out


def test_records_naming_a_node_not_in_the_fabric_are_not_seen(tmp_path, capsys):
    recs = [_sample(f"node000{i}", t) for i in range(1, 5) for t in (0.0, 10.0)] + [_sample("stranger", 0.0)]
    assert main(["analyze", "--fabric", str(_fabric_file(tmp_path)), "--records",
                 _records(tmp_path, "r.json", recs)]) == 2
    assert "stranger" in capsys.readouterr().out


def test_an_empty_records_file_is_not_a_pass(tmp_path, capsys):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    assert main(["analyze", "--fabric", str(_fabric_file(tmp_path)), "--records", str(empty)]) == 2


def test_an_empty_records_file_beside_full_ones_is_not_seen_and_stops_a_pass(tmp_path, capsys):
    files = [_records(tmp_path, f"r{i}.json", [_sample(f"node000{i}", t) for t in (0.0, 10.0)]) for i in range(1, 5)]
    empty = tmp_path / "node0005.json"
    empty.write_text("")  # a host whose probe wrote nothing
    out = tmp_path / "rep.json"
    code = main(["analyze", "--fabric", str(_fabric_file(tmp_path)), "--records", *files, str(empty), "-o", str(out)])
    assert code == 2
    assert "empty file (0 bytes)" in capsys.readouterr().out
    rep = json.loads(out.read_text())
    assert rep["verdict"] == "incomplete" and rep["coverage"]["not_seen"][0]["what"] == f"records on {empty}"


def test_counters_of_a_port_the_node_does_not_have_are_not_seen(tmp_path, capsys):
    recs = [_sample(f"node000{i}", t) for i in range(1, 5) for t in (0.0, 10.0)]
    recs += [PortCounters("node0001", 5000, t, {"SymbolErrorCounter": sym}, source="sysfs")
             for t, sym in ((0.0, 0), (10.0, 60000))]  # errors on a port node0001 (one port) does not have
    code = main(["analyze", "--fabric", str(_fabric_file(tmp_path)), "--records", _records(tmp_path, "r.json", recs)])
    assert code == 2
    assert "records of node0001[5000]: the fabric's host has ports 1..1" in capsys.readouterr().out


def test_tests_that_could_not_run_are_not_faults_and_drain_no_one():
    fabric = fat_tree_2(2, 1, 2)
    ports = fabric.host_ports()
    pairs = [PairResult(a, b, "error", None, 400.0, error="cannot run ip: no such namespace")
             for a in ports for b in ports if a.node != b.node]
    obs = Observations(pairs=pairs)
    findings = localize(fabric, obs)
    assert findings == []
    report = Report.build(fabric, findings, obs, planned=Planned(tests=len(pairs)))
    assert report.verdict == "incomplete" and report.verdict.exit_code == 2 and report.drain == []
    text = summary_text(report)
    assert f"{len(pairs)} could not run" in text and "no such namespace" in text


def test_a_hung_test_still_counts_against_its_path():
    fabric = fat_tree_2(2, 1, 2)
    a, b = PortRef("node0001", 1), PortRef("node0003", 1)
    hung = [PairResult(a, b, "hung", None, 400.0, error="killed after 120.0s (hung)")]
    (finding,) = localize(fabric, Observations(pairs=hung))
    assert finding.fault == "hung"


def test_faults_found_with_something_unseen_fail_and_list_what_was_not_seen():
    fabric = fat_tree_2(2, 1, 2)
    ports = sorted(cabled_ports(fabric))  # sorted: a set's order changes with the hash seed
    bad = PortRef("leaf01", 1)
    unseen = next(p for p in ports if p != bad)
    before = [PortCounters(e.node, e.port, 0.0, {"SymbolErrorCounter": 0}) for e in ports]
    after = [PortCounters(c.node, c.port, 10.0, {"SymbolErrorCounter": 500 if PortRef(c.node, c.port) == bad else 0})
             for c in before if PortRef(c.node, c.port) != unseen]  # one port's second sample is missing
    obs = Observations(before=before, after=after, interval_s=10.0)
    report = Report.build(fabric, localize(fabric, obs), obs, planned=Planned(ports=cabled_ports(fabric)))
    assert report.verdict == "fail" and report.verdict.exit_code == 1
    assert report.coverage["not_seen_count"] == 1 and "not sampled twice" in report.coverage["not_seen"][0]["why"]


def test_counters_over_a_zero_interval_give_no_rate_and_say_so():
    fabric = fat_tree_2(2, 1, 2)
    before = [PortCounters(e.node, e.port, 5.0, {"SymbolErrorCounter": 0}) for e in cabled_ports(fabric)]
    after = [PortCounters(c.node, c.port, 5.0, {"SymbolErrorCounter": 0}) for c in before]
    obs = Observations(before=before, after=after, interval_s=0.0)
    report = Report.build(fabric, [], obs, planned=Planned(ports=cabled_ports(fabric)))
    assert report.verdict == "incomplete"  # the deltas are known, the rates are not
    assert "0 s apart" in report.coverage["not_seen"][0]["why"]


def test_a_host_check_that_could_not_be_read_makes_a_clean_report_incomplete_and_says_which():
    fabric = fat_tree_2(2, 1, 2)
    unread = HostCheck("node0001", "pcie_acs", "unknown", "mlx5_0 (0000:61:00.0)", "config space not readable")
    obs = Observations(host_checks=[unread])
    report = Report.build(fabric, [], obs)
    assert report.verdict == "incomplete" and report.verdict.exit_code == 2
    (item,) = report.coverage["not_seen"]
    assert item["what"] == "host check pcie_acs on node0001 mlx5_0 (0000:61:00.0)"
    assert "config space not readable" in item["why"]
    assert "config space not readable" in summary_text(report)


def test_a_host_check_with_nothing_to_check_does_not_stop_a_pass():
    fabric = fat_tree_2(2, 1, 2)
    obs = Observations(host_checks=[HostCheck("node0001", "gpudirect", "n/a", "host", "no NVIDIA GPU seen"),
                                    HostCheck("node0001", "mtu", "ok", "eth0", "mtu 9000", {"mtu": 9000})])
    report = Report.build(fabric, [], obs)
    assert report.verdict == "pass" and report.coverage["not_seen_count"] == 0
