"""The Kubernetes examples in examples/k8s are well-formed objects that run commands this fabricdoc accepts.

No cluster here: the checks are structural (apiVersion/kind/metadata/spec,
references between the objects, NPD's own config rules) plus fabricdoc's
argparse parser on every command line the manifests run. Where kubectl is
installed, ``kubectl kustomize`` renders the kustomization offline too.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from fabricdoc.cli.args import max_report_age
from fabricdoc.cli.main import build_parser, main
from fabricdoc.scheduler.k8s import DEFAULT_TAINT_KEY, go_duration_s

EXAMPLES = Path(__file__).parents[3] / "examples" / "k8s"
FABRICDOC = "/usr/local/bin/fabricdoc"  # where the example images hold fabricdoc
REPORT = "/var/lib/fabricdoc/latest.json"  # where the shared volume holds the report
NPD_CONFIG = EXAMPLES / "npd-fabricdoc-plugin.json"
# What every namespaced object kind needs in spec (or at the top level), to be an object the API accepts.
_SPEC_OF = {"DaemonSet": ("selector", "template"), "CronJob": ("schedule", "jobTemplate"),
            "PersistentVolumeClaim": ("accessModes", "resources")}
_API = {"Namespace": "v1", "ServiceAccount": "v1", "PersistentVolumeClaim": "v1", "ConfigMap": "v1",
        "DaemonSet": "apps/v1", "CronJob": "batch/v1", "ClusterRole": "rbac.authorization.k8s.io/v1",
        "ClusterRoleBinding": "rbac.authorization.k8s.io/v1"}


def _objects() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for path in sorted(EXAMPLES.glob("*.yaml")):
        if path.name == "kustomization.yaml":
            continue
        out += [(path.name, doc) for doc in yaml.safe_load_all(path.read_text()) if doc is not None]
    return out


def _one(kind: str, name: str) -> dict[str, Any]:
    found = [doc for _, doc in _objects() if doc["kind"] == kind and doc["metadata"]["name"] == name]
    assert len(found) == 1, f"{kind}/{name}"
    return found[0]


def _pod(doc: dict[str, Any]) -> dict[str, Any]:
    template = doc["spec"]["jobTemplate"]["spec"]["template"] if doc["kind"] == "CronJob" else doc["spec"]["template"]
    return template["spec"]


def _containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    return pod.get("initContainers", []) + pod["containers"]


def _mount_dir(pod: dict[str, Any], container: dict[str, Any], claim: str) -> str:
    """Where ``container`` mounts the volume backed by PVC ``claim``."""
    volumes = {v["name"]: v for v in pod["volumes"]}
    for m in container.get("volumeMounts", []):
        if volumes[m["name"]].get("persistentVolumeClaim", {}).get("claimName") == claim:
            return m["mountPath"]
    raise AssertionError(f"{container['name']} does not mount {claim}")


def test_every_object_is_a_well_formed_kubernetes_object():
    objs = _objects()
    assert {name for name, _ in objs} == {"shared.yaml", "npd-daemonset.yaml", "sweep-cronjob.yaml", "taints-cronjob.yaml"}
    for name, doc in objs:
        where = f"{name}: {doc.get('kind')}"
        assert doc["apiVersion"] == _API[doc["kind"]], where
        assert doc["metadata"]["name"], where
        cluster_wide = doc["kind"] in ("Namespace", "ClusterRole", "ClusterRoleBinding")
        assert ("namespace" in doc["metadata"]) != cluster_wide, where
        for key in _SPEC_OF.get(doc["kind"], ()):
            assert key in (doc["spec"]), where


def test_workloads_reference_volumes_accounts_and_roles_that_exist():
    objs = [doc for _, doc in _objects()]
    accounts = {d["metadata"]["name"] for d in objs if d["kind"] == "ServiceAccount"}
    claims = {d["metadata"]["name"] for d in objs if d["kind"] == "PersistentVolumeClaim"}
    roles = {d["metadata"]["name"] for d in objs if d["kind"] == "ClusterRole"} | {"system:node-problem-detector"}
    generated = {g["name"] for g in yaml.safe_load((EXAMPLES / "kustomization.yaml").read_text())["configMapGenerator"]}
    for doc in objs:
        if doc["kind"] == "ClusterRoleBinding":
            assert doc["roleRef"]["name"] in roles
            assert all(s["name"] in accounts for s in doc["subjects"])
        if doc["kind"] not in ("DaemonSet", "CronJob"):
            continue
        pod = _pod(doc)
        assert pod.get("serviceAccountName", next(iter(accounts))) in accounts
        volumes = {v["name"]: v for v in pod["volumes"]}
        for v in volumes.values():
            assert v.get("persistentVolumeClaim", {}).get("claimName", next(iter(claims))) in claims
            assert v.get("configMap", {}).get("name", next(iter(generated))) in generated
        for c in _containers(pod):
            assert c["name"] and "REPLACE-ME" in c["image"] and "PLACEHOLDER" in c["image"]  # clearly a placeholder
            assert all(m["name"] in volumes for m in c.get("volumeMounts", []))
        if doc["kind"] == "DaemonSet":
            assert doc["spec"]["selector"]["matchLabels"].items() <= doc["spec"]["template"]["metadata"]["labels"].items()
        else:
            assert pod["restartPolicy"] in ("Never", "OnFailure")


def test_kustomization_lists_every_example():
    kust = yaml.safe_load((EXAMPLES / "kustomization.yaml").read_text())
    assert sorted(kust["resources"]) == sorted(p.name for p in EXAMPLES.glob("*.yaml") if p.name != "kustomization.yaml")
    assert kust["configMapGenerator"] == [{"name": "fabricdoc-npd-config", "files": [NPD_CONFIG.name]}]


@pytest.mark.skipif(shutil.which("kubectl") is None, reason="kubectl not installed")
def test_kubectl_kustomize_renders_the_examples_offline():
    cp = subprocess.run(["kubectl", "kustomize", str(EXAMPLES)], capture_output=True, text=True, timeout=120, check=False)
    assert cp.returncode == 0, cp.stderr
    docs = list(yaml.safe_load_all(cp.stdout))
    cm = next(d for d in docs if d["kind"] == "ConfigMap")
    assert json.loads(cm["data"][NPD_CONFIG.name]) == json.loads(NPD_CONFIG.read_text())
    ds = next(d for d in docs if d["kind"] == "DaemonSet")
    assert ds["spec"]["template"]["spec"]["volumes"][0]["configMap"]["name"] == cm["metadata"]["name"]
    assert {d["metadata"].get("namespace") for d in docs if d["kind"] not in ("Namespace", "ClusterRole",
                                                                             "ClusterRoleBinding")} == {"fabricdoc"}


def test_npd_plugin_config_is_exactly_what_npd_config_prints(capsys):
    assert main(["k8s", "npd-config", REPORT, "--command", FABRICDOC]) == 0
    assert capsys.readouterr().out == NPD_CONFIG.read_text()


def test_npd_plugin_config_passes_npds_own_checks():
    """What NPD's CustomPluginConfig.Validate and ApplyConfiguration require, and fabricdoc's command in it."""
    cfg = json.loads(NPD_CONFIG.read_text())
    assert cfg["plugin"] == "custom" and cfg["source"]
    glob = cfg["pluginConfig"]
    assert go_duration_s(glob["invoke_interval"], "invoke_interval") > 0
    assert glob["max_output_length"] == 80 and glob["concurrency"] >= 1
    conditions = {c["type"] for c in cfg["conditions"]}
    for rule in cfg["rules"]:
        assert go_duration_s(rule["timeout"], "rule") <= go_duration_s(glob["timeout"], "global")
        assert rule["type"] in ("permanent", "temporary")
        assert rule["type"] != "permanent" or rule["condition"] in conditions
        assert rule["path"] == FABRICDOC
        parsed = build_parser().parse_args(rule["args"])
        assert (parsed.command, parsed.view, parsed.report) == ("k8s", "npd", REPORT)


def test_npd_daemonset_runs_the_plugin_config_on_the_shared_report():
    ds = _one("DaemonSet", "fabricdoc-npd")
    pod = _pod(ds)
    [npd] = pod["containers"]
    assert npd["command"][0] == "/node-problem-detector"
    [flag] = [a for a in npd["command"] if a.startswith("--config.custom-plugin-monitor=")]
    config_path = flag.split("=", 1)[1]
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounted = {}
    for m in npd["volumeMounts"]:
        for item in volumes[m["name"]].get("configMap", {}).get("items", []):
            mounted[f"{m['mountPath']}/{item['path']}"] = item["key"]
    assert mounted[config_path] == NPD_CONFIG.name
    report_dir = _mount_dir(pod, npd, "fabricdoc-reports")
    rule = json.loads(NPD_CONFIG.read_text())["rules"][0]
    assert rule["args"][2] == REPORT and REPORT.startswith(report_dir + "/")
    env = {e["name"]: e for e in npd["env"]}
    assert env["NODE_NAME"]["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"  # 'k8s npd' reads $NODE_NAME
    tolerated = {(t.get("effect"), t["operator"]) for t in pod["tolerations"]}
    assert {("NoSchedule", "Exists"), ("NoExecute", "Exists")} <= tolerated  # stays on nodes fabricdoc tainted


def _fabricdoc_runs(doc: dict[str, Any]) -> list[tuple[dict[str, Any], Any]]:
    """Each container of ``doc`` that runs fabricdoc, with its arguments as fabricdoc's parser reads them."""
    pod = _pod(doc)
    out = []
    for c in _containers(pod):
        assert c["command"] == [FABRICDOC]
        out.append((c, build_parser().parse_args(c["args"])))  # SystemExit (a failed test) if fabricdoc refuses them
    return out


def test_taints_cronjob_untaints_then_taints_from_the_shared_report():
    cron = _one("CronJob", "fabricdoc-taints")
    runs = _fabricdoc_runs(cron)
    assert [(c["name"], p.view, p.apply) for c, p in runs] == [("untaint", "untaint", True), ("taint", "taints", True)]
    pod = _pod(cron)
    for c, p in runs:
        assert p.report == REPORT and REPORT.startswith(_mount_dir(pod, c, "fabricdoc-reports") + "/")
        assert p.key == DEFAULT_TAINT_KEY and max_report_age(p) == 24
    role = _one("ClusterRole", "fabricdoc-tainter")
    rules = [r for r in role["rules"] if "nodes" in r["resources"]]
    assert rules and {"get", "list", "patch"} <= set(rules[0]["verbs"])  # get nodes -o json, kubectl taint
    binding = _one("ClusterRoleBinding", "fabricdoc-tainter")
    assert binding["subjects"][0]["name"] == pod["serviceAccountName"]
    failure = cron["spec"]["jobTemplate"]["spec"]["podFailurePolicy"]["rules"][0]
    assert failure["onExitCodes"]["containerName"] == "taint" and failure["onExitCodes"]["values"] == [1]


def test_sweep_cronjob_writes_the_report_the_others_read():
    cron = _one("CronJob", "fabricdoc-sweep")
    [(c, p)] = _fabricdoc_runs(cron)
    assert (p.command, p.fabric, p.output) == ("sweep", "ib", REPORT)
    pod = _pod(cron)
    assert REPORT.startswith(_mount_dir(pod, c, "fabricdoc-reports") + "/")
    assert not next(m for m in c["volumeMounts"] if m["mountPath"] == "/var/lib/fabricdoc").get("readOnly", False)
    assert any(t.get("key") == DEFAULT_TAINT_KEY and t["operator"] == "Exists" for t in pod["tolerations"])


def test_the_taints_cronjob_commands_run_end_to_end(tmp_path, capsys):
    """The CronJob's own argument lists, against a report here and a saved cluster: they do what it says."""
    from tests.helpers.reports import make_report

    report = tmp_path / "latest.json"
    make_report(bad_hosts=["node0002"]).save(report)
    for c, _ in _fabricdoc_runs(_one("CronJob", "fabricdoc-taints")):
        args = [str(report) if a == REPORT else a for a in c["args"] if a != "--apply"]  # print, never apply, here
        if c["name"] == "untaint":
            args += ["--nodes-json", str(Path(__file__).parents[2] / "data" / "kubectl" /
                                         "real_kubeadm_v1.22_flannel_3nodes" / "get-nodes.json")]
        code = main(args)
        out = capsys.readouterr().out
        assert code == (0 if c["name"] == "untaint" else 1)
        if c["name"] == "taint":
            assert out.split() == ["kubectl", "taint", "nodes", "node0002", f"{DEFAULT_TAINT_KEY}=nic-down:NoSchedule",
                                   "--overwrite"]
