"""Kubernetes output: a Node Problem Detector custom-plugin status and node taints from a report.

NPD's custom plugin protocol: exit 0 no problem, 1 problem, anything else
unknown, with a short message on stdout (NPD cuts it at ``max_output_length``,
80 by default). Taints are what ``kubectl taint`` takes: key, value, effect,
one per node to drain; node names are checked as Kubernetes node names.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from fabricdoc.model.times import age_hours
from fabricdoc.scheduler.names import NameMap

if TYPE_CHECKING:  # the gate and the report load numpy and networkx: only when checking a node
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler.gate import Policy

NPD_OK, NPD_PROBLEM, NPD_UNKNOWN = 0, 1, 2
DEFAULT_TAINT_KEY = "fabricdoc.io/fabric-fault"
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# A Kubernetes node name is a DNS-1123 subdomain: lowercase alphanumerics, '-' and '.'.
_K8S_NODE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_BAD = re.compile(r"[^A-Za-z0-9._-]+")
_TAINT_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")


def shorten(text: str, limit: int = 80) -> str:
    """One line of at most ``limit`` characters, control characters dropped."""
    one = " ".join("".join(c if c.isprintable() else " " for c in text).split())
    return one if len(one) <= limit else one[: max(limit - 3, 0)].rstrip() + "..."


def npd_status(
    report: Report,
    node: str,
    policy: Policy | None = None,
    names: NameMap | None = None,
    max_report_age_h: float | None = None,
    now: datetime | None = None,
) -> tuple[int, str]:
    """(exit code, message) for NPD: is this node fit, by the gate policy, per the report?

    A node the report did not test, or a report older than ``max_report_age_h``,
    is *unknown*, not a problem: NPD should not mark a node bad for lack of data.
    """
    if max_report_age_h is not None:
        age_h = age_hours(report.generated_at, now, "report time")
        if age_h > max_report_age_h:
            return NPD_UNKNOWN, f"fabricdoc: report is {age_h:.1f} h old (limit {max_report_age_h:g} h)"
    from fabricdoc.scheduler.gate import Policy, evaluate

    pol = replace(policy or Policy(), untested_hosts="pass", max_report_age_h=None)
    res = evaluate(report, [node], pol, names)
    if res.untested:
        return NPD_UNKNOWN, f"fabricdoc: {node} is not in the report's fabric"
    if res.ok:
        return NPD_OK, f"fabricdoc: fabric OK for {node} (report {report.generated_at})"
    more = f" (+{len(res.reasons) - 1} more)" if len(res.reasons) > 1 else ""
    return NPD_PROBLEM, f"fabricdoc: {res.reasons[0]}{more}"


@dataclass(frozen=True)
class Taint:
    node: str
    key: str
    value: str
    effect: str

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "key": self.key, "value": self.value, "effect": self.effect}

    def kubectl_argv(self) -> list[str]:
        return ["kubectl", "taint", "nodes", self.node, f"{self.key}={self.value}:{self.effect}", "--overwrite"]


def label_value(text: str) -> str:
    """A valid Kubernetes label/taint value: [A-Za-z0-9._-], at most 63, alphanumeric at both ends."""
    v = _LABEL_BAD.sub("-", text).strip("-._")[:63].rstrip("-._")
    return v or "fault"


def taints(
    report: Report,
    names: NameMap | None = None,
    key: str = DEFAULT_TAINT_KEY,
    effect: str = "NoSchedule",
) -> tuple[list[Taint], list[tuple[str, str]]]:
    """Taints for the report's drain list, and (name, why) for names Kubernetes would not accept."""
    names = names or NameMap()
    if effect not in EFFECTS:
        raise ValueError(f"effect must be one of {', '.join(EFFECTS)}")
    if not _TAINT_KEY.fullmatch(key):
        raise ValueError(f"taint key {key!r} is not a valid Kubernetes key")
    by_key = {f.key: f for f in report.findings}
    out: list[Taint] = []
    refused: list[tuple[str, str]] = []
    for d in report.drain:
        node = names.to_slurm(d.node)
        if len(node) > 253 or not _K8S_NODE.fullmatch(node):
            refused.append((d.node, f"refusing node name {node!r}: not a Kubernetes node name (lowercase DNS-1123)"))
            continue
        found = [by_key[k] for k in d.findings if k in by_key]
        worst = max(found, key=lambda f: (f.severity.rank, f.confidence), default=None)
        value = label_value(f"{worst.kind}-{worst.fault}" if worst else d.reason)
        out.append(Taint(node, key, value, effect))
    return out, refused


def taints_json(ts: list[Taint]) -> str:
    return json.dumps([t.to_dict() for t in ts], indent=2)


def kubectl_lines(ts: list[Taint]) -> list[str]:
    return [shlex.join(t.kubectl_argv()) for t in ts]


def npd_config(fabricdoc_path: str, args: list[str], interval: str = "5m", timeout: str = "1m") -> dict[str, Any]:
    """An NPD custom plugin monitor config that runs ``fabricdoc k8s npd`` as a permanent condition."""
    return {
        "plugin": "custom",
        "pluginConfig": {"invoke_interval": interval, "timeout": timeout, "max_output_length": 80, "concurrency": 1},
        "source": "fabricdoc",
        "metricsReporting": True,
        "conditions": [{"type": "FabricdocFabricFault", "reason": "FabricHealthy", "message": "fabric is healthy for this node"}],
        "rules": [
            {
                "type": "permanent",
                "condition": "FabricdocFabricFault",
                "reason": "FabricFault",
                "path": fabricdoc_path,
                "args": args,
                "timeout": timeout,
            }
        ],
    }
