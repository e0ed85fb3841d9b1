"""Drain entries carry the tag the Slurm reason leads with, and distinct faults never share a short name."""

from __future__ import annotations

import json

import pytest

from fabricdoc.model.evidence import GpuEvidence
from fabricdoc.model.faults import registry
from fabricdoc.model.findings import Finding
from fabricdoc.report.drain import finding_label, short_fault
from fabricdoc.report.drain_policy import DrainPolicy
from fabricdoc.report.report import Report
from fabricdoc.report.validation import validate_report
from fabricdoc.scheduler.slurm import SINFO_REASON_WIDTH, fault_tag, plan_drain
from tests.helpers.reports import make_report

KNOWN = list(registry().rows)


def gpu_fault(host: str, fault: str, severity: str = "error") -> Finding:
    return Finding("", "gpu", f"{host} GPU 0", fault, severity, 0.9, [GpuEvidence("GPU-1", (fault,))], None,
                   [host], component=f"{host}/gpu0")


def test_every_fault_gets_its_own_short_name_within_the_reason_column():
    unknown = ["a_rule_fault_one", "a_rule_fault_two"]  # user rules may name faults sharing a long prefix
    shorts = [short_fault(f) for f in KNOWN + unknown]
    assert len(set(shorts)) == len(shorts)
    assert all(len(fault_tag(f, "3fa2c1")) <= SINFO_REASON_WIDTH for f in KNOWN + unknown)


def test_two_faults_sharing_a_prefix_give_different_slurm_reasons():
    rep = make_report(findings=[gpu_fault("node0001", "pcie_errors"), gpu_fault("node0002", "pcie_degraded")])
    actions, _ = plan_drain(rep)
    heads = {a.fabric_name: a.reason[:SINFO_REASON_WIDTH] for a in actions}
    assert heads["node0001"].startswith("fd:pcie_err ") and heads["node0002"].startswith("fd:pcie_slow ")
    # with the tags cut off, the fault names still differ
    assert heads["node0001"].rsplit(" ", 1)[0] != heads["node0002"].rsplit(" ", 1)[0]


def test_each_drain_entry_carries_the_tag_its_slurm_reason_leads_with():
    rep = make_report(bad_hosts=["node0001", "node0003"],
                      findings=[gpu_fault("node0003", "gpu_error", "critical")])
    actions, _ = plan_drain(rep)
    data = json.loads(rep.to_json())
    validate_report(data)
    by_node = {d["node"]: d for d in data["drain"]}
    by_key = {f.key: f for f in rep.findings}
    for act in actions:
        entry = by_node[act.fabric_name]
        assert entry["tag"] and act.reason.split()[1] == entry["tag"]
        assert entry["tags"] == [by_key[k].tag for k in entry["findings"]]
    worst = next(f for f in rep.findings if f.node_ids == ["node0003"] and f.kind == "gpu")
    assert by_node["node0003"]["tag"] == worst.tag == Report.from_dict(data).drain[1].tag
    assert finding_label(worst) == f"gpu_err {worst.tag}"


def test_held_back_drains_keep_their_tags_and_the_schema_checks_them():
    rep = make_report(bad_hosts=["node0002"])
    rep.hold_drains(DrainPolicy(confirm_sweeps=2, confirm_window=2))
    data = json.loads(rep.to_json())
    validate_report(data)
    (held,) = data["drain_held"]
    assert held["tag"] == rep.findings[0].tag and held["tags"] == [rep.findings[0].tag]
    held["tag"] = "F001"
    with pytest.raises(Exception, match="tag|F001"):
        validate_report(data)


def test_the_text_summary_shows_each_drained_hosts_tag_as_the_slurm_reason_does():
    from fabricdoc.report.render import summary_text

    rep = make_report(findings=[gpu_fault("node0001", "gpu_error")])
    (entry,) = rep.drain
    (action,) = plan_drain(rep)[0]
    assert entry.tag and entry.tag in action.reason
    text = summary_text(rep)
    assert f"  node0001: {entry.tag} " in text
    assert any(ln.startswith(f"{entry.tag} ") for ln in text.splitlines())  # the findings table shows the same id
