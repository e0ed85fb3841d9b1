"""Node Problem Detector plugin contract, node taints and their removal, and the NPD config."""

from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from fabricdoc.cli.main import build_parser, main
from fabricdoc.errors import ParseError
from fabricdoc.model.findings import Finding
from fabricdoc.report.drain import DrainEntry
from fabricdoc.scheduler.k8s import (
    DEFAULT_TAINT_KEY,
    NPD_OK,
    NPD_PROBLEM,
    NPD_UNKNOWN,
    Untaint,
    label_value,
    npd_status,
    plan_untaint,
    shorten,
    taints,
)
from fabricdoc.scheduler.names import NameMap
from fabricdoc.sources.kubectl import parse_kubectl_nodes
from tests.helpers.reports import make_report

KUBECTL_SAMPLE = Path(__file__).parents[2] / "data" / "kubectl" / "real_kubeadm_v1.22_flannel_3nodes" / "get-nodes.json"
# The report's hosts under their Kubernetes names in the captured cluster.
TO_K8S = NameMap({"node0001": "k8s2", "node0002": "k8s3"})


def _iso(delta: timedelta) -> str:
    return (datetime.now(UTC) + delta).isoformat(timespec="seconds")


def _save(tmp_path: Path, rep, name: str = "r.json") -> Path:
    path = tmp_path / name
    rep.save(path)
    return path


# -- NPD ---------------------------------------------------------------------


def test_npd_ok_problem_and_unknown():
    rep = make_report(bad_hosts=["node0002"])
    code, msg = npd_status(rep, "node0001")
    assert code == NPD_OK and msg.startswith("fabricdoc: OK fabric healthy for node0001")
    code, msg = npd_status(rep, "node0002")
    tag = rep.findings[0].tag
    assert code == NPD_PROBLEM and msg.startswith(f"fabricdoc: FAIL nic down {tag} on node0002")
    assert npd_status(rep, "gpu999") == (NPD_UNKNOWN, "fabricdoc: UNKNOWN gpu999 is not in the report's fabric")


def test_npd_without_a_topology_cannot_say_a_node_is_healthy():
    rep = make_report(bad_hosts=["node0002"])
    rep.topology = None
    assert npd_status(rep, "node0001")[0] == NPD_UNKNOWN
    assert npd_status(rep, "node0002")[0] == NPD_PROBLEM  # the drain list still names it


@pytest.mark.parametrize("age", [timedelta(days=-30), timedelta(hours=-25), timedelta(days=210), timedelta(minutes=10)])
def test_npd_stale_or_future_report_is_unknown_not_a_verdict(age):
    rep = make_report(bad_hosts=["node0002"])
    rep.generated_at = _iso(age)
    for node in ("node0001", "node0002"):
        code, msg = npd_status(rep, node)
        assert code == NPD_UNKNOWN and msg.startswith("fabricdoc: UNKNOWN report is")


def test_npd_max_age_zero_lifts_the_age_limit_but_not_the_future_check():
    rep = make_report(bad_hosts=["node0002"])
    rep.generated_at = _iso(timedelta(days=-30))
    assert npd_status(rep, "node0002", max_report_age_h=0)[0] == NPD_PROBLEM
    assert npd_status(rep, "node0002", max_report_age_h=1000)[0] == NPD_PROBLEM
    rep.generated_at = _iso(timedelta(days=210))
    assert npd_status(rep, "node0002", max_report_age_h=0)[0] == NPD_UNKNOWN


@pytest.mark.parametrize(("host", "code"), [("node0001", 0), ("node0003", 1), ("nosuch", 2)])
def test_npd_plugin_process_exits_with_the_contract_code_and_one_short_line(report_file, host, code):
    rep = report_file(bad_hosts=["node0003"])
    cp = subprocess.run(
        [sys.executable, "-m", "fabricdoc", "k8s", "npd", str(rep), "--node", host],
        capture_output=True, text=True, timeout=60, check=False,
    )
    assert cp.returncode == code
    lines = cp.stdout.splitlines()
    assert len(lines) == 1 and len(lines[0].encode()) <= 80 and lines[0].startswith("fabricdoc: ")


def test_npd_cli_stale_report_is_unknown_and_the_old_flag_still_parses(tmp_path, capsys):
    rep = make_report(bad_hosts=["node0002"])
    rep.generated_at = _iso(timedelta(days=-30))
    path = _save(tmp_path, rep)
    assert main(["k8s", "npd", str(path), "--node", "node0002"]) == NPD_UNKNOWN
    assert capsys.readouterr().out.startswith("fabricdoc: UNKNOWN report is 720.0 h old")
    assert main(["k8s", "npd", str(path), "--node", "node0002", "--max-report-age-h", "0"]) == NPD_PROBLEM
    capsys.readouterr()
    assert main(["k8s", "npd", str(path), "--node", "node0002", "--stale-after-h", "0"]) == NPD_PROBLEM


def test_npd_unreadable_report_is_unknown_on_stdout(tmp_path, capsys):
    bad = tmp_path / "r.json"
    bad.write_text("{")
    assert main(["k8s", "npd", str(bad), "--node", "n1"]) == NPD_UNKNOWN
    out = capsys.readouterr().out
    assert out.startswith("fabricdoc: UNKNOWN cannot check:") and len(out.strip().encode()) <= 80


def _hostile_report():
    evil = Finding(
        id="F001", kind="nic", name="\x1b]0;owned\x07\u202e" + "ü" * 200 + "\nrm -rf /", fault="down",
        severity="critical", confidence=0.99, node_ids=["node0002"],
    )
    return make_report(findings=[evil]), evil


def test_npd_message_keeps_verdict_fault_and_tag_in_80_bytes_whatever_the_names(tmp_path, capsys):
    rep, evil = _hostile_report()
    long_node = "gpu-" + "a" * 240 + ".example"  # a valid 253-character Kubernetes node name
    names = tmp_path / "names.txt"
    names.write_text(f"node0002 {long_node}\n")
    path = _save(tmp_path, rep)
    assert main(["k8s", "npd", str(path), "--node", long_node, "--map", str(names)]) == NPD_PROBLEM
    line = capsys.readouterr().out.rstrip("\n")
    assert "\n" not in line and len(line.encode()) <= 80
    assert line.startswith(f"fabricdoc: FAIL nic down {evil.tag} on gpu-aaa")
    assert line.isprintable() and "\x1b" not in line and "\u202e" not in line


def test_npd_message_escapes_a_hostile_fault_and_still_shows_the_tag():
    evil = Finding(id="F001", kind="nic", name="x", fault="down\x1b[2J" + "Z" * 100, severity="error",
                   confidence=0.9, node_ids=["node0001"])
    code, msg = npd_status(make_report(findings=[evil]), "node0001")
    line = shorten(msg)
    assert code == NPD_PROBLEM and line.isprintable() and "\x1b" not in line
    assert line.startswith("fabricdoc: FAIL nic down\\x1b[2JZ") and evil.tag in line and len(line.encode()) <= 80


@pytest.mark.parametrize(("text", "limit"), [("a\tb\nc\x1b[31m", 80), ("é" * 100, 80), ("é" * 50, 80), ("日本" * 60, 41), ("x" * 79, 80)])
def test_shorten_is_one_printable_line_within_the_byte_limit(text, limit):
    out = shorten(text, limit)
    assert out.isprintable() and len(out.encode()) <= limit
    out.encode().decode("utf-8")  # never a split character
    if len(text.encode()) <= limit and text.isprintable():
        assert out == text


# -- taints ------------------------------------------------------------------


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
    assert main(["k8s", "taints", str(rep)]) == 1
    assert json.loads(capsys.readouterr().out)[0]["node"] == "node0002"
    assert main(["k8s", "taints", str(rep), "--format", "kubectl", "--effect", "NoExecute"]) == 1
    line = capsys.readouterr().out.strip()
    assert shlex.split(line) == ["kubectl", "taint", "nodes", "node0002", "fabricdoc.io/fabric-fault=nic-down:NoExecute", "--overwrite"]


@pytest.mark.parametrize("view", ["taints", "untaint"])
@pytest.mark.parametrize(("age", "why"), [(timedelta(days=-30), "720.0 h old"), (timedelta(days=210), "in the future")])
def test_stale_report_changes_no_taint(tmp_path, fake_kubectl, capsys, view, age, why):
    rep = make_report(bad_hosts=["node0002"])
    rep.generated_at = _iso(age)
    path = _save(tmp_path, rep)
    kubectl, log = fake_kubectl(_cluster_with_fabricdoc_taints())
    assert main(["k8s", view, str(path), "--apply", "--kubectl", kubectl, "--map", str(_k8s_map(tmp_path))]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and why in err
    assert not log.exists()  # kubectl never ran


# -- reading the cluster -------------------------------------------------------


def test_parse_the_real_kubectl_get_nodes_document():
    nodes = parse_kubectl_nodes(KUBECTL_SAMPLE.read_text())
    assert nodes == {
        "k8s1": [{"key": "node-role.kubernetes.io/master", "value": "", "effect": "NoSchedule"}],
        "k8s2": [],
        "k8s3": [],
    }


@pytest.mark.parametrize(("text", "where"), [("{\n  \"items\": [\n", ":3"), ('{"kind": "Node"}', "no 'items'"),
                                             ('{"items": [{"kind": "Pod", "metadata": {"name": "p"}}]}', "items[0]"),
                                             ('{"items": [{"metadata": {"name": "n"}, "spec": {"taints": "x"}}]}', "spec.taints")])
def test_kubectl_output_that_is_not_a_node_list_is_a_parse_error(text, where):
    with pytest.raises(ParseError, match=None) as exc:
        parse_kubectl_nodes(text, "kubectl get nodes -o json")
    assert where in str(exc.value)


def _cluster_with_fabricdoc_taints(extra: dict[str, list[dict[str, str]]] | None = None) -> str:
    """The captured cluster with fabricdoc's taint on every node, as `kubectl taint` leaves it, and an admin's on k8s2."""
    doc = json.loads(KUBECTL_SAMPLE.read_text())
    for item in doc["items"]:
        spec = item["spec"]
        spec.setdefault("taints", []).append({"effect": "NoSchedule", "key": DEFAULT_TAINT_KEY, "value": "nic-down"})
        if item["metadata"]["name"] == "k8s2":
            spec["taints"].append({"effect": "NoExecute", "key": "dedicated", "timeAdded": "2022-04-01T02:29:11Z",
                                   "value": "gpu"})
    for name, ts in (extra or {}).items():
        doc["items"].append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": {"taints": ts}})
    return json.dumps(doc, indent=4)


def _k8s_map(tmp_path: Path) -> Path:
    path = tmp_path / "k8s-names.txt"
    path.write_text("".join(f"{a} {b}\n" for a, b in TO_K8S.names.items()))
    return path


def test_untaint_only_tested_cleared_nodes_and_only_fabricdocs_key():
    rep = make_report(bad_hosts=["node0002"])  # node0001 (k8s2) clean, node0002 (k8s3) drained
    nodes = parse_kubectl_nodes(_cluster_with_fabricdoc_taints())
    actions, kept = plan_untaint(rep, nodes, TO_K8S)
    assert actions == [Untaint("k8s2", DEFAULT_TAINT_KEY, "NoSchedule", "nic-down")]
    assert actions[0].kubectl_argv() == ["kubectl", "taint", "nodes", "k8s2", "fabricdoc.io/fabric-fault:NoSchedule-"]
    why = {k.node: k.why for k in kept}
    assert why["k8s1"].startswith("not in the report's fabric") and why["k8s3"].startswith("still drained")
    assert not any(k.refused for k in kept)


def test_untaint_nothing_when_the_report_cannot_show_what_it_tested():
    rep = make_report()
    rep.topology = None
    actions, kept = plan_untaint(rep, parse_kubectl_nodes(_cluster_with_fabricdoc_taints()), TO_K8S)
    assert actions == [] and {k.node for k in kept} == {"k8s1", "k8s2", "k8s3"}


def test_untaint_refuses_a_cluster_node_name_that_is_not_dns1123():
    nodes = parse_kubectl_nodes(_cluster_with_fabricdoc_taints(
        {"k8s2;reboot": [{"key": DEFAULT_TAINT_KEY, "value": "x", "effect": "NoSchedule"}]}))
    actions, kept = plan_untaint(make_report(), nodes, NameMap({"node0001": "k8s2;reboot"}))
    assert actions == []
    assert [k.node for k in kept if k.refused] == ["k8s2;reboot"]


# -- the commands against a stand-in kubectl ----------------------------------


@pytest.fixture
def fake_kubectl(tmp_path):
    """An executable that answers 'get nodes -o json' with a document and logs every argv it gets (one JSON list a line)."""

    def make(document: str, *, fail: str | None = None, hang: bool = False) -> tuple[str, Path]:
        doc = tmp_path / "nodes.json"
        doc.write_text(document)
        log = tmp_path / "kubectl.log"
        exe = tmp_path / "kubectl"
        exe.write_text(
            f"#!{sys.executable}\n"
            "import json, sys, time\n"
            f"open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')\n"
            f"if {hang!r}: time.sleep(60)\n"
            f"if {fail!r}: sys.stderr.write({fail!r} + '\\n'); sys.exit(1)\n"
            "if sys.argv[1:] == ['get', 'nodes', '-o', 'json']:\n"
            f"    sys.stdout.write(open({str(doc)!r}).read())\n"
            "else:\n"
            "    print('node/' + sys.argv[4] + ' untainted')\n"
        )
        exe.chmod(exe.stat().st_mode | stat.S_IXUSR)
        return str(exe), log

    return make


def _calls(log: Path) -> list[list[str]]:
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def test_cli_untaint_prints_the_plan_and_changes_nothing(tmp_path, fake_kubectl, capsys):
    path = _save(tmp_path, make_report(bad_hosts=["node0002"]))
    kubectl, log = fake_kubectl(_cluster_with_fabricdoc_taints())
    assert main(["k8s", "untaint", str(path), "--kubectl", kubectl, "--map", str(_k8s_map(tmp_path))]) == 0
    out, err = capsys.readouterr()
    assert [shlex.split(line) for line in out.splitlines()] == [
        [kubectl, "taint", "nodes", "k8s2", "fabricdoc.io/fabric-fault:NoSchedule-"]]
    assert "kept k8s1: not in the report's fabric" in err and "kept k8s3: still drained" in err
    assert _calls(log) == [["get", "nodes", "-o", "json"]]


def test_cli_untaint_apply_runs_exactly_the_removal(tmp_path, fake_kubectl, capsys):
    path = _save(tmp_path, make_report(bad_hosts=["node0002"]))
    kubectl, log = fake_kubectl(_cluster_with_fabricdoc_taints())
    assert main(["k8s", "untaint", str(path), "--apply", "--kubectl", kubectl, "--map", str(_k8s_map(tmp_path)),
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert _calls(log) == [["get", "nodes", "-o", "json"],
                           ["taint", "nodes", "k8s2", "fabricdoc.io/fabric-fault:NoSchedule-"]]
    assert [(r["node"], r["applied"]) for r in doc["actions"]] == [("k8s2", True)]
    assert {k["node"] for k in doc["kept"]} == {"k8s1", "k8s3"}


def test_cli_untaint_refused_name_is_never_run(tmp_path, fake_kubectl, capsys):
    path = _save(tmp_path, make_report())
    kubectl, log = fake_kubectl(_cluster_with_fabricdoc_taints(
        {"k8s2;reboot": [{"key": DEFAULT_TAINT_KEY, "value": "x", "effect": "NoSchedule"}]}))
    names = tmp_path / "n.txt"
    names.write_text("node0001 k8s2;reboot\n")
    assert main(["k8s", "untaint", str(path), "--apply", "--kubectl", kubectl, "--map", str(names)]) == 2
    assert "refused: refusing node name 'k8s2;reboot'" in capsys.readouterr().err
    assert all("k8s2;reboot" not in call for call in _calls(log))


def test_cli_untaint_kubectl_failure_is_one_line(tmp_path, fake_kubectl, capsys):
    path = _save(tmp_path, make_report())
    kubectl, _ = fake_kubectl("", fail="error: You must be logged in to the server (Unauthorized)")
    assert main(["k8s", "untaint", str(path), "--kubectl", kubectl]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == ["fabricdoc k8s: error: kubectl get nodes failed: "
                                "error: You must be logged in to the server (Unauthorized)"]


def test_cli_untaint_kubectl_that_hangs_is_killed_at_the_timeout(tmp_path, fake_kubectl, capsys):
    path = _save(tmp_path, make_report())
    kubectl, _ = fake_kubectl("", hang=True)
    start = time.monotonic()
    assert main(["k8s", "untaint", str(path), "--kubectl", kubectl, "--timeout", "0.5"]) == 2
    assert time.monotonic() - start < 30
    assert "timed out after 0.5s" in capsys.readouterr().err


def test_cli_untaint_missing_kubectl_and_saved_nodes_with_apply_are_one_line(tmp_path, capsys):
    path = _save(tmp_path, make_report())
    assert main(["k8s", "untaint", str(path), "--kubectl", str(tmp_path / "nope")]) == 2
    assert "not found" in capsys.readouterr().err
    assert main(["k8s", "untaint", str(path), "--apply", "--nodes-json", str(KUBECTL_SAMPLE)]) == 2
    assert "--nodes-json is for printing a plan" in capsys.readouterr().err


def test_cli_untaint_from_the_saved_real_document_has_nothing_to_remove(tmp_path, capsys):
    path = _save(tmp_path, make_report())
    assert main(["k8s", "untaint", str(path), "--nodes-json", str(KUBECTL_SAMPLE)]) == 0
    assert capsys.readouterr() == ("", "")  # no node carries fabricdoc's key; the master taint is not ours


def test_cli_taints_apply_skips_nodes_the_cluster_lacks_or_already_tainted(tmp_path, fake_kubectl, capsys):
    rep = make_report(bad_hosts=["node0001", "node0002", "node0003"])
    names = tmp_path / "n.txt"
    names.write_text("node0001 k8s2\nnode0002 k8s3\nnode0003 gone\n")
    doc = json.loads(KUBECTL_SAMPLE.read_text())
    doc["items"][2]["spec"]["taints"] = [{"effect": "NoSchedule", "key": DEFAULT_TAINT_KEY, "value": "nic-down"}]
    kubectl, log = fake_kubectl(json.dumps(doc))
    assert main(["k8s", "taints", str(_save(tmp_path, rep)), "--apply", "--kubectl", kubectl, "--map", str(names),
                 "--format", "kubectl"]) == 1
    out, err = capsys.readouterr()
    assert _calls(log) == [["get", "nodes", "-o", "json"],
                           ["taint", "nodes", "k8s2", "fabricdoc.io/fabric-fault=nic-down:NoSchedule", "--overwrite"]]
    assert out.strip().endswith("# ok") and "kept gone: not a node of this cluster" in err
    assert "kept k8s3: already tainted" in err


# -- npd-config ---------------------------------------------------------------


def test_npd_config_runs_the_npd_view_with_the_given_command(capsys):
    assert main(["k8s", "npd-config", "/shared/latest.json", "--command", "/usr/local/bin/fabricdoc"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    assert cfg["plugin"] == "custom" and cfg["pluginConfig"]["max_output_length"] == 80
    rule = cfg["rules"][0]
    assert rule["path"] == "/usr/local/bin/fabricdoc"
    assert rule["args"] == ["k8s", "npd", "/shared/latest.json", "--max-report-age-h", "24"]
    parsed = build_parser().parse_args(rule["args"])  # the printed command is one this fabricdoc accepts
    assert (parsed.command, parsed.view, parsed.report, parsed.max_report_age_h) == ("k8s", "npd", "/shared/latest.json", 24)


def test_npd_config_passes_on_names_age_and_policy(capsys):
    assert main(["k8s", "npd-config", "/r.json", "--command", "/opt/fd/bin/fabricdoc", "--max-report-age-h", "6",
                 "--map", "/etc/fabricdoc/names.yaml", "--host-rule", "(\\S+) mlx5_\\d+", "\\1",
                 "--max-severity", "error", "--plugin-timeout", "90s", "--invoke-interval", "2m"]) == 0
    cfg = json.loads(capsys.readouterr().out)
    parsed = build_parser().parse_args(cfg["rules"][0]["args"])
    assert (parsed.max_report_age_h, parsed.map, parsed.host_rule, parsed.max_severity) == (
        6.0, "/etc/fabricdoc/names.yaml", [["(\\S+) mlx5_\\d+", "\\1"]], "error")
    assert cfg["pluginConfig"]["timeout"] == cfg["rules"][0]["timeout"] == "90s"
    assert cfg["pluginConfig"]["invoke_interval"] == "2m"


def test_npd_config_uses_fabricdoc_found_on_path_never_this_python(tmp_path, monkeypatch, capsys):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "fabricdoc"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(bindir))
    assert main(["k8s", "npd-config", "/r.json"]) == 0
    path = json.loads(capsys.readouterr().out)["rules"][0]["path"]
    assert path == str(exe) and path != sys.executable and not path.startswith(sys.prefix + os.sep)


def test_npd_config_refuses_the_fabricdoc_of_this_virtualenv_unless_command_is_given(tmp_path, monkeypatch, capsys):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    exe = venv / "bin" / "fabricdoc"
    exe.write_text("#!/bin/sh\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(venv / "bin"))
    monkeypatch.setattr(sys, "prefix", str(venv))
    monkeypatch.setattr(sys, "base_prefix", "/usr")
    assert main(["k8s", "npd-config", "/r.json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1
    assert "inside this virtual environment" in err and "--command" in err
    assert main(["k8s", "npd-config", "/r.json", "--command", str(exe)]) == 0
    assert json.loads(capsys.readouterr().out)["rules"][0]["path"] == str(exe)


def test_npd_config_without_fabricdoc_on_path_or_command_says_so(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert main(["k8s", "npd-config", "/r.json"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.splitlines()) == 1 and "fabricdoc is not on PATH" in err and "--command" in err


@pytest.mark.parametrize(("extra", "why"), [(["--command", "bin/fabricdoc"], "not an absolute path"),
                                            (["--command", "/x/fabricdoc", "--plugin-timeout", "1 minute"], "Go duration"),
                                            (["--command", "/x/fabricdoc", "--max-report-age-h", "-1"], "--max-report-age-h")])
def test_npd_config_bad_input_is_one_line(capsys, extra, why):
    assert main(["k8s", "npd-config", "/r.json", *extra]) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and why in err


def test_npd_config_relative_report_is_refused(capsys):
    assert main(["k8s", "npd-config", "latest.json", "--command", "/x/fabricdoc"]) == 2
    assert "not an absolute path" in capsys.readouterr().err


@pytest.mark.parametrize("view", ["npd", "taints", "untaint", "npd-config"])
def test_every_k8s_view_explains_its_options_and_exit_codes(view, capsys):
    with pytest.raises(SystemExit) as done:
        build_parser().parse_args(["k8s", view, "--help"])
    text = capsys.readouterr().out
    assert done.value.code == 0
    assert ("exit codes:" in text or "exits 0" in text) and "--max-report-age-h H (default 24; 0: no age limit)" in text
