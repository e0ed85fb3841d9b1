"""Comparing two reports: findings matched by their stable id, drain and figure moves, and the compare command."""

from __future__ import annotations

import dataclasses
import json

from fabricdoc.cli.main import main
from fabricdoc.model.severity import Severity
from fabricdoc.report.compare import compare_reports
from fabricdoc.sweep import SweepConfig, run_sweep
from tests.helpers.reports import make_report, nic_down

HOSTILE = "node\x1b]0;x\x07evil"


def _ids(refs) -> set[str]:
    return {r.id for r in refs}


def _id_of(report, host: str) -> str:
    return next(f.id for f in report.findings if host in f.node_ids)


def test_findings_are_new_cleared_or_persisting_by_their_stable_id():
    old = make_report(bad_hosts=["node0001", "node0002"])
    new = make_report(bad_hosts=["node0002", "node0003"])
    c = compare_reports(old, new)
    assert _ids(c.new_findings) == {_id_of(new, "node0003")}
    assert _ids(c.cleared) == {_id_of(old, "node0001")}
    assert {p.new.id for p in c.persisting} == {_id_of(new, "node0002")} == {p.old.id for p in c.persisting}
    assert c.got_worse


def test_the_drain_list_says_which_hosts_were_added_and_which_removed():
    c = compare_reports(make_report(bad_hosts=["node0001", "node0002"]),
                        make_report(bad_hosts=["node0002", "node0003"]))
    assert c.drain_added == ("node0003",) and c.drain_removed == ("node0001",)


def test_a_persisting_finding_whose_severity_rose_is_worse():
    warned = dataclasses.replace(nic_down("node0001"), severity=Severity.WARNING)
    c = compare_reports(make_report(findings=[warned]), make_report(findings=[nic_down("node0001")]))
    assert not c.new_findings and not c.cleared
    assert [p.change for p in c.persisting] == ["worse"] and c.worse == c.persisting
    assert c.verdict_change == "worse" and c.got_worse


def test_a_new_info_finding_is_listed_but_is_not_news_and_a_new_warning_is():
    note = dataclasses.replace(nic_down("node0003"), severity=Severity.INFO)
    c = compare_reports(make_report(bad_hosts=["node0001"]), make_report(bad_hosts=["node0001"], findings=[note]))
    assert _ids(c.new_findings) == {note.id} and c.new_faults == () and not c.got_worse
    warn = dataclasses.replace(note, severity=Severity.WARNING)
    c = compare_reports(make_report(bad_hosts=["node0001"]), make_report(bad_hosts=["node0001"], findings=[warn]))
    assert _ids(c.new_faults) == {warn.id} and c.got_worse


def test_a_fault_that_only_cleared_is_not_worse():
    c = compare_reports(make_report(bad_hosts=["node0001", "node0002"]), make_report(bad_hosts=["node0002"]))
    assert not c.new_findings and _ids(c.cleared) and not c.got_worse


def test_a_fault_that_cleared_to_a_pass_is_a_better_verdict():
    c = compare_reports(make_report(bad_hosts=["node0001"]), make_report())
    assert c.verdict_change == "better" and not c.got_worse


def test_busbw_deltas_are_new_minus_old_and_missing_figures_have_none():
    old_bw = {"nominal": 400.0, "now": 300.0, "after_drain": None}
    new_bw = {"nominal": 400.0, "now": 250.5, "after_drain": 380.0}
    c = compare_reports(make_report(impact={"allreduce_busbw_gbps": old_bw}),
                        make_report(impact={"allreduce_busbw_gbps": new_bw}))
    by_key = {d.name: d for d in c.busbw_gbps}
    assert by_key["now"].delta == new_bw["now"] - old_bw["now"]
    assert by_key["nominal"].delta == 0
    assert by_key["after_drain"].old is None and by_key["after_drain"].delta is None
    assert "recommended" not in by_key


def test_reports_without_impact_compare_with_no_busbw_rows():
    assert compare_reports(make_report(), make_report(impact=None)).busbw_gbps == ()


def test_test_counts_and_coverage_moves_are_reported():
    old, new = make_report(), make_report()
    old.tests["pairs_slow"], new.tests["pairs_slow"] = 2, 5
    new.coverage = {**new.coverage, "complete": False, "not_seen_count": 1,
                    "not_seen": [{"what": "host node0004", "why": "no records from it"}]}
    new.verdict = "incomplete"
    c = compare_reports(old, new)
    assert {d.name: d.delta for d in c.tests}["pairs_slow"] == 3
    assert {d.name: d.delta for d in c.coverage}["not_seen_count"] == 1
    assert c.complete == (True, False) and c.not_seen_added == ("host node0004",)
    assert c.verdict_change == "worse" and c.got_worse


def test_other_fabric_or_an_older_new_report_is_compared_and_noted():
    old, new = make_report(), make_report()
    new.fabric = {**new.fabric, "name": "other-fabric"}
    old.generated_at, new.generated_at = "2025-06-02T10:00:00+00:00", "2025-06-01T10:00:00+00:00"
    notes = " ".join(compare_reports(old, new).notes)
    assert "different fabrics" in notes and "older" in notes
    assert compare_reports(old, old).notes == ()


def test_the_same_faults_in_two_demo_sweeps_keep_their_ids_and_persist():
    old, new = run_sweep(SweepConfig(fabric="demo")), run_sweep(SweepConfig(fabric="demo", seed=3))
    c = compare_reports(old, new)
    # A suspect one sweep's noise gave (``info``) may come or go; no blamed part does.
    assert all(f.severity == "info" for f in (*c.new_findings, *c.cleared)) and not c.got_worse
    assert {p.new.id for p in c.persisting} >= {f.id for f in new.findings if f.severity != "info"}
    assert {d.name for d in c.busbw_gbps} >= {"nominal", "now"}


def test_compare_exits_1_when_a_new_finding_appears(report_file, capsys):
    old = report_file("old.json", bad_hosts=["node0001", "node0002"])
    new = report_file("new.json", bad_hosts=["node0002", "node0003"])
    assert main(["compare", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    new_id = nic_down("node0003").tag
    section = out.split("new findings (1)")[1].split("cleared (1)")[0]
    assert new_id in section and "node0003" in section
    assert "persisting (1)" in out and "Gb/s" in out


def test_identical_reports_exit_0_with_nothing_new_or_cleared(report_file, capsys):
    path = report_file(bad_hosts=["node0001"])
    assert main(["compare", str(path), str(path)]) == 0
    out = capsys.readouterr().out
    assert "new findings (0)" in out and "cleared (0)" in out and "persisting (1)" in out


def test_quiet_prints_only_the_header_line(report_file, capsys):
    path = report_file(bad_hosts=["node0001"])
    assert main(["compare", "-q", str(path), str(path)]) == 0
    assert len(capsys.readouterr().out.splitlines()) == 1


def test_a_hostile_label_is_escaped_in_the_text(report_file, capsys):
    old = report_file("old.json")
    new = report_file("new.json", findings=[nic_down(HOSTILE)])
    assert main(["compare", str(old), str(new)]) == 1
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out
    assert "\\x1b]0;x\\x07" in out


def test_a_truncated_report_exits_2_with_one_stderr_line(report_file, tmp_path, capsys):
    good = report_file()
    bad = tmp_path / "truncated.json"
    bad.write_text(good.read_text()[:200])
    assert main(["compare", str(good), str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1
    assert "truncated.json" in captured.err


def test_json_output_parses_and_carries_the_ids(report_file, capsys):
    old = report_file("old.json", bad_hosts=["node0001"])
    new = report_file("new.json", bad_hosts=["node0003"])
    assert main(["compare", "--json", str(old), str(new)]) == 1
    doc = json.loads(capsys.readouterr().out)
    assert [f["id"] for f in doc["findings"]["new"]] == [nic_down("node0003").tag]
    assert [f["id"] for f in doc["findings"]["cleared"]] == [nic_down("node0001").tag]
    assert doc["got_worse"] is True and doc["drain"] == {"added": ["node0003"], "removed": ["node0001"]}
