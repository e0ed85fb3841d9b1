"""Slurm and Kubernetes are two back ends of one :class:`Scheduler` protocol, and the CLI reaches
them only through it: a new scheduler is one module plus one line in ``BACK_ENDS``."""

from __future__ import annotations

import ast
import inspect
import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabricdoc.cli.main import main
from fabricdoc.errors import ConfigError
from fabricdoc.scheduler import k8s, slurm
from fabricdoc.scheduler.names import NameMap
from fabricdoc.scheduler.protocol import BACK_ENDS, Scheduler, back_end, back_end_class
from fabricdoc.scheduler.slurm import NodeNow
from tests.helpers.reports import make_report

KUBECTL_SAMPLE = Path(__file__).parents[2] / "data" / "kubectl" / "real_kubeadm_v1.22_flannel_3nodes" / "get-nodes.json"
TAINT = {"key": k8s.DEFAULT_TAINT_KEY, "value": "nic-down", "effect": "NoSchedule"}
PROTOCOL_METHODS = ("node_name", "name_problem", "tested_nodes", "ours", "plan_drain", "plan_undrain", "apply")


@pytest.mark.parametrize("kind", sorted(BACK_ENDS))
def test_every_back_end_implements_the_scheduler_protocol(kind):
    cls = back_end_class(kind)
    assert isinstance(cls(), Scheduler) and cls.kind == kind
    for name in PROTOCOL_METHODS:  # isinstance checks names only: the parameters must match too
        want = list(inspect.signature(getattr(Scheduler, name)).parameters)
        assert list(inspect.signature(getattr(cls, name)).parameters) == want, f"{kind}.{name}"


def test_something_short_of_the_protocol_is_not_a_scheduler():
    @dataclass
    class Half:
        names: NameMap
        kind = "half"

        def node_name(self, host: str) -> str:
            return host

    assert not isinstance(Half(NameMap()), Scheduler)


def test_an_unknown_back_end_is_a_config_error_naming_the_known_ones():
    with pytest.raises(ConfigError, match="no scheduler back end 'pbs' .*k8s, slurm"):
        back_end("pbs")


def test_neither_back_end_imports_the_other():
    for mod, other in ((slurm, "fabricdoc.scheduler.k8s"), (k8s, "fabricdoc.scheduler.slurm")):
        tree = ast.parse(Path(mod.__file__).read_text())
        imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        for n in ast.walk(tree):
            if isinstance(n, ast.ImportFrom):
                imported |= {n.module} | {f"{n.module}.{a.name}" for a in n.names}
        assert other not in imported, f"{mod.__name__} imports {other}: move the shared part to scheduler/names.py"


def test_both_back_ends_name_nodes_and_read_the_tested_hosts_the_same_way():
    names = NameMap({"node0001": "gpu-a"})
    rep = make_report()
    s, k = back_end("slurm", names=names), back_end("k8s", names=names)
    assert s.node_name("node0001") == k.node_name("node0001") == "gpu-a"
    assert s.tested_nodes(rep) == k.tested_nodes(rep) and s.tested_nodes(rep)["gpu-a"] == "node0001"
    assert s.name_problem("gpu-a") is None and k.name_problem("gpu-a") is None
    assert "refusing node name" in s.name_problem("a;b") and "refusing node name" in k.name_problem("Gpu_A")


def test_the_slurm_back_end_plans_what_the_slurm_functions_plan():
    rep = make_report(bad_hosts=["node0002"])
    now = {"node0001": NodeNow("drained", "fd:down 3fa2c1 nic down"), "node0002": NodeNow("idle"),
           "node0003": NodeNow("drained", "RMA ticket 4711")}
    be = back_end("slurm", scontrol="/opt/scontrol")
    assert be.plan_drain(rep, now) == slurm.plan_drain(rep, scontrol="/opt/scontrol", now=now)
    assert be.ours(now) == ["node0001"]  # the admin's drain of node0003 is not ours
    assert be.plan_undrain(rep, now) == slurm.plan_resume(rep, ["node0001"], scontrol="/opt/scontrol", now=now)
    assert [a.node for a in be.plan_undrain(rep, now)[0]] == ["node0001"]


def test_the_kubernetes_back_end_plans_what_the_k8s_functions_plan():
    rep = make_report(bad_hosts=["node0002"])
    now = {"node0001": [TAINT], "node0002": [TAINT], "node0003": [{**TAINT, "key": "admin/hold"}]}
    be = back_end("k8s")
    assert be.plan_drain(rep)[0] == k8s.taints(rep)[0]
    todo, kept = be.plan_drain(rep, now)
    assert todo == [] and [k.why for k in kept] == ["already tainted fabricdoc.io/fabric-fault=nic-down:NoSchedule"]
    assert be.ours(now) == ["node0001", "node0002"]  # node0003's taint is an admin's
    assert be.plan_undrain(rep, now) == k8s.plan_untaint(rep, now)
    assert be.plan_undrain(rep, now, candidates=["node0002"]) == ([], be.plan_undrain(rep, now)[1][-1:])


# -- the CLI reaches the back ends through the protocol ------------------------------------------

CALLS: list[tuple[str, str]] = []


@dataclass(frozen=True)
class RecordingSlurm(slurm.Slurm):
    def plan_drain(self, report, now=None):
        CALLS.append(("slurm", "plan_drain"))
        return super().plan_drain(report, now)

    def plan_undrain(self, report, now, candidates=None):
        CALLS.append(("slurm", "plan_undrain"))
        return super().plan_undrain(report, now, candidates)


@dataclass(frozen=True)
class RecordingKubernetes(k8s.Kubernetes):
    def plan_drain(self, report, now=None):
        CALLS.append(("k8s", "plan_drain"))
        return super().plan_drain(report, now)

    def plan_undrain(self, report, now, candidates=None):
        CALLS.append(("k8s", "plan_undrain"))
        return super().plan_undrain(report, now, candidates)


@pytest.fixture
def recording(monkeypatch):
    CALLS.clear()
    monkeypatch.setitem(BACK_ENDS, "slurm", f"{__name__}:RecordingSlurm")
    monkeypatch.setitem(BACK_ENDS, "k8s", f"{__name__}:RecordingKubernetes")
    return CALLS


def test_cli_drain_plans_through_the_slurm_back_end(tmp_path, recording, capsys):
    path = make_report(bad_hosts=["node0002"]).save(tmp_path / "r.json")
    assert main(["drain", str(path), "--sinfo", str(tmp_path / "no-sinfo"), "--scontrol", "scontrol"]) == 1
    assert recording == [("slurm", "plan_drain")]
    assert capsys.readouterr().out.startswith("scontrol update nodename=node0002 state=drain reason=")


def test_cli_resume_plans_through_the_slurm_back_end(tmp_path, recording, monkeypatch, capsys):
    import fabricdoc.cli.slurmargs as slurmargs

    now = {"node0001": NodeNow("drained", "fd:down 3fa2c1 nic down"), "node0002": NodeNow("drained", "admin")}
    monkeypatch.setattr(slurmargs, "slurm_now", lambda *a, **kw: (None, now))
    path = make_report().save(tmp_path / "r.json")
    assert main(["resume", str(path)]) == 0
    assert recording == [("slurm", "plan_undrain")]
    out, err = capsys.readouterr()
    assert out == "scontrol update nodename=node0001 state=resume\n" and err == ""  # node0002 is an admin's


def test_cli_k8s_taints_and_untaint_plan_through_the_kubernetes_back_end(tmp_path, recording, capsys):
    path = make_report(bad_hosts=["node0001"]).save(tmp_path / "r.json")
    assert main(["k8s", "taints", str(path)]) == 1
    assert [t["node"] for t in json.loads(capsys.readouterr().out)] == ["node0001"]
    assert main(["k8s", "untaint", str(path), "--nodes-json", str(KUBECTL_SAMPLE)]) == 0
    assert recording == [("k8s", "plan_drain"), ("k8s", "plan_undrain")]
