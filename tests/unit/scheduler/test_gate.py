"""Gate policies over reports built from a generated leaf/spine fabric."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from fabricdoc.cli.main import main
from fabricdoc.errors import ConfigError
from fabricdoc.model.findings import Finding
from fabricdoc.scheduler.gate import Policy, StaleReport, evaluate, load_policy, policy_from
from tests.helpers.evidence import slow_pairs, symbol_errors
from tests.helpers.reports import make_report

# fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2): node0001-2 on leaf01, node0003-4 on leaf02.


def uplink_errors(leaf: str = "leaf01", severity: str = "error", confidence: float = 0.9) -> Finding:
    return Finding(
        id="L001",
        kind="link",
        name=f"{leaf}[3]--spine01[{leaf[-1]}]",
        fault="symbol_errors",
        severity=severity,
        confidence=confidence,
        evidence=[symbol_errors(leaf, 3)],
        endpoints=[(leaf, 3), ("spine01", int(leaf[-1]))],
        node_ids=[leaf, "spine01"],
    )


IMPACT = {"allreduce_busbw_gbps": {"nominal": 100.0, "now": 80.0, "after_drain": 95.0}, "job": {}}


def test_healthy_report_passes():
    res = evaluate(make_report(), ["node0001", "node0002"])
    assert res.ok and res.reasons == []


def test_job_host_with_a_dead_nic_fails_and_says_why():
    res = evaluate(make_report(bad_hosts=["node0002"]), ["node0001", "node0002"])
    assert not res.ok
    assert any("node0002 is in the drain list" in r for r in res.reasons)
    tag = res.findings[0].tag
    assert any(f"error finding down {tag}: nic node0002 mlx5_0 down" in r for r in res.reasons)
    assert any(f"node0002 is in the drain list (down {tag})" in r for r in res.reasons)
    assert "F001" not in " ".join(res.reasons)  # F-numbers change from sweep to sweep


def test_bad_host_outside_the_job_does_not_fail_it():
    res = evaluate(make_report(bad_hosts=["node0004"]), ["node0001", "node0002"])
    assert res.ok, res.reasons


def test_link_on_the_jobs_ring_path_fails_and_a_link_off_it_does_not():
    rep = make_report(findings=[uplink_errors("leaf01")])
    # node0001 -> node0003 crosses leaf01's uplink; node0001 -> node0002 stays under leaf01.
    assert not evaluate(rep, ["node0001", "node0003"]).ok
    assert evaluate(rep, ["node0001", "node0002"]).ok
    assert not evaluate(rep, ["node0001", "node0002"], Policy(scope="fabric")).ok


def test_severity_limit_is_exclusive_and_none_fails_on_anything():
    rep = make_report(findings=[uplink_errors(severity="warning")])
    job = ["node0001", "node0003"]
    assert evaluate(rep, job, Policy(max_severity="warning")).ok
    assert not evaluate(rep, job, Policy(max_severity="info")).ok
    assert not evaluate(rep, job, Policy(max_severity="none")).ok


def test_findings_below_min_confidence_or_with_ignored_faults_are_not_counted():
    rep = make_report(findings=[uplink_errors(confidence=0.3)])
    job = ["node0001", "node0003"]
    assert evaluate(rep, job, Policy(min_confidence=0.5)).ok
    assert not evaluate(rep, job, Policy(min_confidence=0.2)).ok
    assert evaluate(make_report(findings=[uplink_errors()]), job, Policy(ignore_faults=("symbol_errors",))).ok


def test_busbw_loss_limit_with_fabric_scope_uses_the_impact_section():
    job = ["node0001", "node0002"]
    assert not evaluate(make_report(impact=IMPACT), job, Policy(max_busbw_loss_pct=10, scope="fabric")).ok
    res = evaluate(make_report(impact=IMPACT), job,
                   Policy(max_busbw_loss_pct=10, busbw_basis="after_drain", scope="fabric"))
    assert res.ok and res.busbw_loss_pct == pytest.approx(5.0) and res.busbw_scope == "fabric"


def halved_uplink(leaf: str = "leaf02") -> Finding:
    return Finding("B001", "link", f"{leaf}[3] -- spine01[{leaf[-1]}]", "degraded_bandwidth", "error", 0.9,
                   [slow_pairs(0.5)], [(leaf, 3), ("spine01", int(leaf[-1]))],
                   [leaf, "spine01"])


def test_busbw_loss_limit_with_job_scope_uses_the_jobs_own_ring():
    # The fabric-wide figure says 20% lost; what counts is whether the job's ring crosses the halved link.
    rep = make_report(findings=[halved_uplink("leaf02")], impact=IMPACT)
    policy = Policy(max_busbw_loss_pct=10, max_severity="critical")
    under_one_leaf = evaluate(rep, ["node0001", "node0002"], policy)
    assert under_one_leaf.ok, under_one_leaf.reasons
    assert under_one_leaf.busbw_loss_pct == pytest.approx(0.0) and under_one_leaf.busbw_scope == "job"
    across = evaluate(rep, ["node0001", "node0003"], policy)
    assert not across.ok and across.busbw_loss_pct == pytest.approx(50.0)
    assert any("busbw loss for the job's 2 hosts 50.0% (now) exceeds 10%" in r for r in across.reasons)


def test_missing_impact_passes_with_a_note_or_fails_when_asked():
    job = ["node0001", "node0002"]
    res = evaluate(make_report(), job, Policy(max_busbw_loss_pct=10, scope="fabric"))
    assert res.ok and any("no impact prediction" in n for n in res.notes)
    res = evaluate(make_report(), job, Policy(max_busbw_loss_pct=10, missing_impact="fail", scope="fabric"))
    assert not res.ok and any("no impact prediction" in r for r in res.reasons)


def test_job_host_the_report_never_tested_fails_unless_allowed():
    res = evaluate(make_report(), ["node0001", "gpu999"])
    assert not res.ok and res.untested == ["gpu999"]
    assert evaluate(make_report(), ["node0001", "gpu999"], Policy(untested_hosts="pass")).ok


def test_a_report_older_than_the_default_24h_or_dated_in_the_future_cannot_be_judged():
    rep = make_report()
    made = datetime.fromisoformat(rep.generated_at)
    with pytest.raises(StaleReport, match=r"report is 30.0 h old \(limit 24 h\)"):
        evaluate(rep, ["node0001"], now=made + timedelta(hours=30))
    with pytest.raises(StaleReport, match="dated 5040.0 h in the future"):
        evaluate(rep, ["node0001"], now=made - timedelta(days=210))  # seven months ahead of this clock
    assert evaluate(rep, ["node0001"], now=made + timedelta(minutes=1)).ok
    assert evaluate(rep, ["node0001"], Policy(max_report_age_h=0), now=made + timedelta(days=30)).ok  # 0: no limit
    assert evaluate(rep, ["node0001"], now=made - timedelta(minutes=4)).ok  # within the clocks' slack


def test_cli_gate_on_a_month_old_report_could_not_check_exit_2_never_pass(tmp_path, capsys):
    rep = make_report()
    rep.generated_at = (datetime.now(UTC) - timedelta(days=31)).isoformat(timespec="seconds")
    path = tmp_path / "old.json"
    rep.save(path)
    assert main(["gate", str(path), "--job-nodelist", "node[0001-0002]"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "h old (limit 24 h)" in err


def test_cli_gate_in_a_node_prolog_judges_its_own_node_and_passes_on_its_own_errors(
        tmp_path, report_file, monkeypatch, capsys):
    for var in ("SLURM_JOB_NODELIST", "SLURM_SCRIPT_CONTEXT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SLURM_JOB_ID", "42")
    rep = report_file(bad_hosts=["node0002"])
    monkeypatch.setenv("SLURMD_NODENAME", "node0001")  # a healthy node: the job's other bad host is not its business
    assert main(["gate", str(rep)]) == 0
    monkeypatch.setenv("SLURMD_NODENAME", "node0002")
    assert main(["gate", str(rep)]) == 1
    capsys.readouterr()
    # fabricdoc's own trouble (no report) must not fail the Prolog: that would drain a healthy node.
    assert main(["gate", str(tmp_path / "missing.json")]) == 0
    assert "could not check, passing (--on-error pass)" in capsys.readouterr().err
    assert main(["gate", str(tmp_path / "missing.json"), "--on-error", "fail"]) == 2


def test_cli_gate_outside_a_node_prolog_fails_on_its_own_errors(tmp_path, monkeypatch, capsys):
    for var in ("SLURMD_NODENAME", "SLURM_JOB_ID", "SLURM_SCRIPT_CONTEXT"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[0001-0002]")
    assert main(["gate", str(tmp_path / "missing.json")]) == 2
    monkeypatch.setenv("SLURM_SCRIPT_CONTEXT", "prolog_slurmctld")
    assert main(["gate", str(tmp_path / "missing.json")]) == 2


def test_node_prolog_is_told_from_slurms_own_environment():
    from fabricdoc.cli.gate import in_node_prolog

    assert in_node_prolog({"SLURM_SCRIPT_CONTEXT": "prolog_slurmd", "SLURMD_NODENAME": "n1"})
    assert not in_node_prolog({"SLURM_SCRIPT_CONTEXT": "prolog_slurmctld", "SLURM_JOB_NODELIST": "n[1-2]"})
    assert in_node_prolog({"SLURMD_NODENAME": "n1", "SLURM_JOB_ID": "7"})  # Slurm before SLURM_SCRIPT_CONTEXT
    assert not in_node_prolog({"SLURM_JOB_ID": "7", "SLURM_JOB_NODELIST": "n1"})  # a job step, a launcher
    assert not in_node_prolog({})


def test_untrusted_finding_names_are_shown_with_control_characters_escaped():
    f = uplink_errors()
    f.name = "leaf01\x1b[2J\x07"
    res = evaluate(make_report(findings=[f]), ["node0001", "node0003"])
    assert not res.ok and all("\x1b" not in r and "\x07" not in r for r in res.reasons)
    assert any("\\x1b[2J" in r for r in res.reasons)


def test_policy_file_with_unknown_key_names_file_and_key(tmp_path):
    p = tmp_path / "gate.toml"
    p.write_text('max_severity = "error"\nmax_busbw_loss = 5\n')
    with pytest.raises(ConfigError, match=r"gate\.toml: unknown key 'max_busbw_loss'"):
        load_policy(p)


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ('max_severity = "fatal"\n', "key 'max_severity' is 'fatal'"),
        ("min_confidence = 1.5\n", "key 'min_confidence' is 1.5"),
        ('max_busbw_loss_pct = "ten"\n', "key 'max_busbw_loss_pct' must be a number"),
        ('ignore_faults = "congestion"\n', "key 'ignore_faults' must be a list"),
        ("max_severity = \n", "not valid TOML"),
    ],
)
def test_bad_policy_values_are_config_errors_naming_the_file(tmp_path, text, needle):
    p = tmp_path / "gate.toml"
    p.write_text(text)
    with pytest.raises(ConfigError, match=needle) as exc:
        load_policy(p)
    assert str(p) in str(exc.value)


def test_flags_override_the_policy_file():
    base = policy_from({"max_severity": "error", "scope": "fabric"}, "f.toml")
    assert policy_from({"max_severity": "info"}, "command line", base) == Policy(max_severity="info", scope="fabric")


def test_cli_gate_reads_a_hosts_file_with_hostlists_and_exits_1_with_reasons(tmp_path, report_file, capsys):
    rep = report_file(bad_hosts=["node0003"])
    hosts = tmp_path / "hosts"
    hosts.write_text("# job 42\nnode[0001-0002]\nnode0003 # the bad one\n")
    assert main(["gate", "--report", str(rep), "--job-hosts", str(hosts)]) == 1
    out = capsys.readouterr().out
    assert out.startswith("fabricdoc gate: FAIL: 3 job hosts")
    assert "fabric verdict fail, 1 of 1 findings on this job" in out.splitlines()[0]
    assert "node0003 is in the drain list" in out
    hosts.write_text("node[0001-0002]\n")
    assert main(["gate", "--report", str(rep), "--job-hosts", str(hosts), "--max-busbw-loss-pct", "5"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "0 of 1 findings on this job; predicted busbw loss 0.0% (the job's ring)" in first


def test_cli_gate_uses_slurm_job_nodelist_in_a_prolog_and_passes(report_file, monkeypatch, capsys):
    rep = report_file(bad_hosts=["node0003"])
    monkeypatch.setenv("SLURM_JOB_NODELIST", "node[0001-0002]")
    assert main(["gate", "--report", str(rep), "--quiet"]) == 0
    assert capsys.readouterr().out == ""


def test_cli_gate_json_with_policy_file_and_missing_impact_note(tmp_path, report_file, capsys):
    rep = report_file()
    pol = tmp_path / "gate.toml"
    pol.write_text("max_busbw_loss_pct = 5.0\n")
    assert main(["gate", "--report", str(rep), "--job-nodelist", "node0001", "--policy", str(pol), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] is True and doc["busbw_loss_pct"] is None
    assert any("no impact prediction" in n for n in doc["notes"])


def test_cli_gate_bad_policy_is_one_line_and_exit_2(tmp_path, report_file, capsys):
    pol = tmp_path / "gate.toml"
    pol.write_text("colour = 'red'\n")
    assert main(["gate", "--report", str(report_file()), "--job-nodelist", "node0001", "--policy", str(pol)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "gate.toml: unknown key 'colour'" in err[0]


def test_cli_gate_maps_slurm_names_to_fabric_names(report_file, capsys):
    rep = report_file(bad_hosts=["node0002"])
    args = ["gate", "--report", str(rep), "--host-rule", "node(\\d+)", "gpu\\1"]
    assert main([*args, "--job-nodelist", "gpu[0001-0002]"]) == 1
    assert main([*args, "--job-nodelist", "gpu[0003-0004]"]) == 0


def test_a_finding_on_any_hca_of_a_multi_rail_job_host_counts():
    from tests.helpers.fabrics import multi_hca_hosts

    fabric = multi_hca_hosts((0, 1, 2, 3), spine=True)
    last_hca = [n.id for n in fabric.hosts() if n.attrs["host"] == "dgxb"][-1]  # not the host's first HCA
    warn = Finding("F001", "nic", f"{fabric.label(last_hca)} port 1", "symbol_errors", "warning", 0.9,
                   endpoints=[(fabric.label(last_hca), 1)], node_ids=[last_hca])
    rep = make_report(findings=[warn], fabric=fabric)
    res = evaluate(rep, ["dgxa", "dgxb"], Policy(max_severity="info"))
    assert not res.ok and [f.key for f in res.findings] == [warn.key]
    assert evaluate(rep, ["dgxa", "dgxb"], Policy(max_severity="warning")).ok
