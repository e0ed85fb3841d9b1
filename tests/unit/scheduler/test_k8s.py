"""Node Problem Detector plugin contract and node taints."""

from __future__ import annotations

import json
import shlex
import subprocess
import sys
from datetime import datetime, timedelta

import pytest

from fabricdoc.cli.main import main
from fabricdoc.report.drain import DrainEntry
from fabricdoc.scheduler.k8s import (
    NPD_OK,
    NPD_PROBLEM,
    NPD_UNKNOWN,
    label_value,
    npd_status,
    taints,
)
from tests.helpers.reports import make_report


def test_npd_ok_problem_and_unknown():
    rep = make_report(bad_hosts=["node0002"])
    assert npd_status(rep, "node0001")[0] == NPD_OK
    code, msg = npd_status(rep, "node0002")
    assert code == NPD_PROBLEM and msg.startswith("fabricdoc: node0002 is in the drain list")
    assert npd_status(rep, "gpu999") == (NPD_UNKNOWN, "fabricdoc: gpu999 is not in the report's fabric")


def test_npd_stale_report_is_unknown_not_a_problem():
    rep = make_report(bad_hosts=["node0002"])
    later = datetime.fromisoformat(rep.generated_at) + timedelta(hours=3)
    assert npd_status(rep, "node0002", max_report_age_h=1, now=later)[0] == NPD_UNKNOWN


@pytest.mark.parametrize(
    ("host", "code"), [("node0001", 0), ("node0003", 1), ("nosuch", 2)]
)
def test_npd_plugin_process_exits_with_the_contract_code_and_one_short_line(report_file, host, code):
    rep = report_file(bad_hosts=["node0003"])
    cp = subprocess.run(
        [sys.executable, "-m", "fabricdoc", "k8s", "npd", "--report", str(rep), "--node", host],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert cp.returncode == code
    lines = cp.stdout.splitlines()
    assert len(lines) == 1 and len(lines[0]) <= 80 and lines[0].startswith("fabricdoc: ")


def test_npd_unreadable_report_is_unknown_on_stdout(tmp_path, capsys):
    bad = tmp_path / "r.json"
    bad.write_text("{")
    assert main(["k8s", "npd", "--report", str(bad), "--node", "n1"]) == NPD_UNKNOWN
    out = capsys.readouterr().out
    assert out.startswith("fabricdoc: cannot check:") and len(out.strip()) <= 80


def test_taints_one_per_drained_node_with_a_valid_value():
    rep = make_report(bad_hosts=["node0001", "node0004"])
    ts, refused = taints(rep)
    assert refused == []
    assert [t.to_dict() for t in ts] == [
        {"node": "node0001", "key": "fabricdoc.io/fabric-fault", "value": "nic-down", "effect": "NoSchedule"},
        {"node": "node0004", "key": "fabricdoc.io/fabric-fault", "value": "nic-down", "effect": "NoSchedule"},
    ]


def test_taints_refuse_names_kubernetes_would_reject():
    rep = make_report(bad_hosts=["node0001"])
    rep.drain.append(DrainEntry("Node_7;reboot", "nic down", []))
    ts, refused = taints(rep)
    assert [t.node for t in ts] == ["node0001"]
    assert refused and "Node_7;reboot" in refused[0][1]


@pytest.mark.parametrize(("text", "want"), [("nic down", "nic-down"), ("-x" * 50, "x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x-x"), ("$$$", "fault")])
def test_label_values_are_valid(text, want):
    v = label_value(text)
    assert v == want and len(v) <= 63


def test_cli_taints_json_and_kubectl_lines(report_file, capsys):
    rep = report_file(bad_hosts=["node0002"])
    assert main(["k8s", "taints", "--report", str(rep)]) == 1
    assert json.loads(capsys.readouterr().out)[0]["node"] == "node0002"
    assert main(["k8s", "taints", "--report", str(rep), "--format", "kubectl", "--effect", "NoExecute"]) == 1
    line = capsys.readouterr().out.strip()
    assert shlex.split(line) == ["kubectl", "taint", "nodes", "node0002", "fabricdoc.io/fabric-fault=nic-down:NoExecute", "--overwrite"]


def test_npd_config_runs_the_npd_view(capsys):
    assert main(["k8s", "npd-config", "--report", "/shared/latest.json"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    assert cfg["plugin"] == "custom" and cfg["pluginConfig"]["max_output_length"] == 80
    args = cfg["rules"][0]["args"]
    assert args == ["k8s", "npd", "/shared/latest.json"]
    from fabricdoc.cli.main import build_parser

    parsed = build_parser().parse_args(args)  # the printed command is one this fabricdoc accepts
    assert (parsed.command, parsed.view, parsed.report) == ("k8s", "npd", "/shared/latest.json")
