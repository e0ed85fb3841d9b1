"""The brakes on draining: per-sweep cap, confirmation across sweeps from the history, maintenance list,
comment-only mode; what is held back stays in the report with why."""

from __future__ import annotations

import json

import jsonschema
import pytest

from fabricdoc.errors import ConfigError
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import Observations
from fabricdoc.model.severity import Severity
from fabricdoc.report.drain_policy import DrainPolicy, drain_policy_from, load_drain_policy
from fabricdoc.report.history import History
from fabricdoc.report.render import summary_text as summary
from fabricdoc.report.report import Report
from fabricdoc.report.schema import REPORT_SCHEMA
from fabricdoc.sweep import hold_drains
from tests.helpers.reports import nic_down


def _report(bad, severity="error", fabric=None) -> Report:
    fabric = fabric or fat_tree_2(leaves=4, spines=2, hosts_per_leaf=4)  # 16 hosts
    fs = []
    for i, h in enumerate(bad):  # noqa: B007
        f = nic_down(h)
        f.severity = Severity(severity if isinstance(severity, str) else severity[i])
        fs.append(f)
    return Report.build(fabric, fs, Observations())


def test_the_default_cap_is_max_4_or_half_a_percent_of_hosts():
    assert DrainPolicy().cap(16) == 4
    assert DrainPolicy().cap(8192) == 41
    assert DrainPolicy(max_drain=2).cap(8192) == 2


def test_over_the_cap_the_worst_findings_drain_and_the_rest_are_held_with_why():
    sev = ["error"] * 5 + ["critical"]
    rep = _report([f"node00{i:02d}" for i in range(1, 7)], sev)
    rep.hold_drains(DrainPolicy())
    drained = [d.node for d in rep.drain]
    assert len(drained) == 4 and "node0006" in drained  # the critical one first
    assert [h.why for h in rep.drain_held] == ["over this sweep's drain cap of 4 hosts (worst findings drained first)"] * 2
    assert rep.drain_policy["cap"] == 4


def test_hosts_and_ports_in_the_maintenance_list_are_held_not_drained():
    fabric = fat_tree_2(leaves=4, spines=2, hosts_per_leaf=4)
    cable = Finding("F009", "link", "leaf01[3] -- node0003[1]", "symbol_errors", "error", 0.9,
                    endpoints=[("leaf01", 3), ("node0003", 1)], node_ids=["leaf01", "node0003"])
    rep = Report.build(fabric, [nic_down("node0001", "F001"), nic_down("node0002", "F002"), cable], Observations())
    policy = drain_policy_from({"maintenance": ["node[0001-0002]", "leaf01/3"]})
    rep.hold_drains(policy)
    assert [d.node for d in rep.drain] == []
    why = {h.node: h.why for h in rep.drain_held}
    assert why["node0001"] == "node0001 is in the maintenance list"
    assert why["node0003"] == "leaf01/3 is in the maintenance list"  # node0003's cable ends at leaf01 port 3


def test_a_non_critical_finding_drains_only_when_seen_in_k_of_the_last_n_sweeps(tmp_path):
    db = str(tmp_path / "h.sqlite")
    policy = DrainPolicy(confirm_sweeps=2, confirm_window=3)
    first = _report(["node0001"])
    hold_drains(first, policy, db)
    assert first.drain == []
    assert first.drain_held[0].why == ("seen in 1 of the last 3 sweeps, 2 needed (not critical); "
                                       "the history holds 0 earlier sweep(s)")
    with History(db) as h:
        h.append(first)
    second = _report(["node0001", "node0002"])
    hold_drains(second, policy, db)
    assert [d.node for d in second.drain] == ["node0001"]  # seen twice now
    assert [h.node for h in second.drain_held] == ["node0002"]


def test_a_critical_finding_drains_at_once_whatever_the_confirmation():
    rep = _report(["node0001"], "critical")
    rep.hold_drains(DrainPolicy(confirm_sweeps=3, confirm_window=3))
    assert [d.node for d in rep.drain] == ["node0001"]


def test_held_drains_are_in_the_json_the_schema_and_the_summary(tmp_path):
    rep = _report(["node0001"])
    rep.hold_drains(drain_policy_from({"maintenance": ["node0001"], "mode": "comment"}))
    path = tmp_path / "r.json"
    rep.save(path)
    data = json.loads(path.read_text())
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(data)
    assert data["drain"] == [] and data["drain_held"][0]["why"] == "node0001 is in the maintenance list"
    assert data["drain_policy"]["mode"] == "comment"
    back = Report.load(path)
    assert back.drain_held[0].node == "node0001"
    text = summary(back)
    assert "held back by the drain policy (1 host, not drained):" in text and "maintenance list" in text


@pytest.mark.parametrize(("text", "needle"), [
    ("mode = 'quarantine'\n", "key 'mode' is 'quarantine'"),
    ("cap_pct = 200\n", "expected a percentage"),
    ("confirm_sweeps = 3\nconfirm_window = 2\n", "nothing could ever be confirmed"),
    ("max_drains = 3\n", "unknown key 'max_drains'"),
    ("maintenance = 'node1'\n", "must be a list"),
    ("min_cap = -1\n", "whole number >= 0"),
])
def test_bad_drain_policy_files_name_the_file_and_key(tmp_path, text, needle):
    p = tmp_path / "drain.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=needle) as exc:
        load_drain_policy(str(p))
    assert str(p) in str(exc.value)


def test_sweep_cli_takes_a_drain_policy_and_the_report_shows_what_it_held(tmp_path, capsys):
    from fabricdoc.cli.main import main

    policy = tmp_path / "drain.toml"
    policy.write_text("max_drain = 0\n")
    out = tmp_path / "r.json"
    assert main(["sweep", "--fabric", "demo", "--drain-policy", str(policy), "-o", str(out), "--quiet"]) == 1
    rep = Report.load(out)
    assert rep.drain == [] and rep.drain_held and rep.drain_policy["cap"] == 0
    assert all("drain cap of 0" in h.why for h in rep.drain_held)


def test_a_finding_without_a_host_keeps_its_finding_untouched():
    f = Finding("F001", "switch", "spine01", "dead", "critical", 0.9, node_ids=["spine01"])
    rep = _report([])
    rep.findings.append(f)
    rep.hold_drains(DrainPolicy())
    assert rep.findings[-1] is f and rep.drain_held == []
