"""NCCL runtime signals as evidence: failing connections localize the cable, transports are host_config."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fabricdoc.analysis.localize import localize
from fabricdoc.analysis.runtime import observations_from_nccl_debug
from fabricdoc.cli.main import main
from fabricdoc.model.evidence import NcclLogEvidence
from fabricdoc.report.schema import validate_report
from fabricdoc.sources.fabrics import load_fabric
from fabricdoc.sources.nccl_debug import read_nccl_debug

DATA = Path(__file__).parents[2] / "data" / "nccl-debug"
RING = DATA / "synthetic_demo_node0001_cable_from_snellius" / "job.log"
SNELLIUS = DATA / "real_odissei_snellius_h100_2node_netib_roce_mix" / "all_reduce_mpi.log"
ISSUE1814 = DATA / "real_nccl_issue1814_ibext_no_gdrdma_completion_errors" / "excerpt.log"
ISSUE952 = DATA / "real_nccl_issue952_net_socket_fallback" / "excerpt.log"


@pytest.fixture(scope="module")
def demo():
    return load_fabric("demo")[0]


def test_failed_connections_become_hung_pairs_and_working_ones_pass(demo):
    obs = observations_from_nccl_debug(demo, [read_nccl_debug(RING)])
    hung = {frozenset((p.src.node, p.dst.node)) for p in obs.pairs if p.status == "hung"}
    ok = {frozenset((p.src.node, p.dst.node)) for p in obs.pairs if p.status == "ok"}
    assert hung == {frozenset(("node0001", "node0002")), frozenset(("node0001", "node0004"))}
    assert ok == {frozenset(("node0002", "node0003")), frozenset(("node0003", "node0004"))}
    assert all(p.test == "nccl-debug" for p in obs.pairs)


def test_errors_that_all_involve_one_cable_name_that_cable_with_the_log_lines(demo):
    findings = localize(demo, observations_from_nccl_debug(demo, [read_nccl_debug(RING)]))
    top = findings[0]
    assert top.node_ids and "node0001" in top.node_ids and top.fault == "hung"
    assert {n for f in findings for n in f.node_ids if f.kind in ("link", "nic", "port")} <= {"node0001", "leaf01"}
    lines = top.evidence_of(NcclLogEvidence)
    assert {e.line_no for e in lines} == {41, 46}
    assert all("transport retry counter exceeded" in e.reason for e in lines)
    assert not [f for f in findings if f.fault == "host_config"]  # every connection used GDRDMA


def test_a_job_on_gdrdma_everywhere_has_no_host_config_finding(demo):
    obs = observations_from_nccl_debug(demo, [read_nccl_debug(SNELLIUS)])
    assert obs.transports and all(t.gdr for t in obs.transports)
    assert not [f for f in localize(demo, obs) if f.fault == "host_config"]


def test_socket_fallback_is_a_host_config_error_on_that_host_not_a_cable(demo):
    findings = localize(demo, observations_from_nccl_debug(demo, [read_nccl_debug(ISSUE952)]))
    (f,) = findings
    assert (f.kind, f.fault, f.name, str(f.severity)) == ("host", "host_config", "<cluster_name>", "error")
    (ev,) = f.evidence_of(NcclLogEvidence)
    assert "NET/Socket" in ev.reason and "via NET/Socket/0" in ev.line and ev.line_no == 4


def test_ib_without_gdrdma_is_a_host_config_warning_and_unmapped_errors_are_said(demo):
    obs = observations_from_nccl_debug(demo, [read_nccl_debug(ISSUE1814)])
    assert not [p for p in obs.pairs if p.status == "hung"]  # hosts not in this fabric: not guessed
    assert any(p.status == "warning" and "not mapped to NIC ports" in (p.error or "") for p in obs.probes)
    (f,) = [f for f in localize(demo, obs) if f.fault == "host_config"]
    assert (f.kind, f.name, str(f.severity)) == ("host", "hostname-test", "warning")
    assert "without GPUDirect RDMA" in f.evidence_of(NcclLogEvidence)[0].reason


def test_cli_names_the_cable_in_text_and_a_valid_json_report(capsys):
    rc = main(["analyze", "--fabric", "demo", "--nccl-debug", str(RING)])
    out = capsys.readouterr().out
    assert rc == 1 and "node0001 port 1" in out and "transport retry counter exceeded" in out
    rc = main(["analyze", "--fabric", "demo", "--nccl-debug", str(RING), "--json"])
    report = json.loads(capsys.readouterr().out)
    validate_report(report)
    assert rc == 1 and report["findings"][0]["node_ids"][0] == "node0001"
    assert "nccl_log" in {e["type"] for e in report["findings"][0]["evidence"]}


def test_cli_socket_fallback_is_a_host_config_finding_in_the_json_report(capsys):
    main(["analyze", "--fabric", "demo", "--nccl-debug", str(ISSUE952), "--json"])
    report = json.loads(capsys.readouterr().out)
    validate_report(report)
    assert any(f["fault"] == "host_config" and f["kind"] == "host" for f in report["findings"])


def test_cli_bad_file_is_one_line_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.log"
    bad.write_bytes(b"\xff\xfe")
    assert main(["analyze", "--fabric", "demo", "--nccl-debug", str(bad)]) == 2
    err = capsys.readouterr().err.strip()
    assert "bad.log:1" in err and "\n" not in err and "Traceback" not in err
