"""Kubernetes output: a Node Problem Detector custom-plugin status, node taints, and taint removal.

NPD's custom plugin protocol: exit 0 no problem, 1 problem, anything else
unknown, with a short message on stdout that NPD cuts at ``max_output_length``
*bytes* (80 by default), so the verdict, the fault and its stable tag come first.
Taints are what ``kubectl taint`` takes: key, value, effect, one per node to
drain. Removal (``kubectl taint nodes NODE KEY:EFFECT-``) is planned only for
nodes that carry fabricdoc's taint key now and that a fresh report tested and no
longer drains; other keys (an admin's) are never touched. Node names, from the
report or from the cluster, are untrusted: each is checked as a DNS-1123 name
and only ever passed as one argv element, never through a shell.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import TYPE_CHECKING, Any, ClassVar

from fabricdoc.errors import ConfigError, FabricdocError
from fabricdoc.model.text import escape
from fabricdoc.scheduler.freshness import DEFAULT_MAX_AGE_H, staleness
from fabricdoc.scheduler.names import NameMap, tested_nodes

if TYPE_CHECKING:  # the gate and the report load numpy and networkx: only when checking a node
    from fabricdoc.model.findings import Finding
    from fabricdoc.report.report import Report
    from fabricdoc.scheduler.gate import GateResult, Policy

NPD_OK, NPD_PROBLEM, NPD_UNKNOWN = 0, 1, 2
NPD_MAX_OUTPUT = 80  # NPD's default max_output_length, in bytes
DEFAULT_TAINT_KEY = "fabricdoc.io/fabric-fault"
EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
# A Kubernetes node name is a DNS-1123 subdomain: lowercase alphanumerics, '-' and '.'.
_K8S_NODE = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_LABEL_BAD = re.compile(r"[^A-Za-z0-9._-]+")
_TAINT_KEY = re.compile(r"([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?")
_GO_DURATION = re.compile(r"(\d+(\.\d+)?(ns|us|µs|ms|s|m|h))+")
_GO_UNIT_S = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}

# (exit status, or None when killed at its timeout; stdout; stderr) of one argv run without a shell
Runner = Callable[[Sequence[str]], tuple[int | None, str, str]]


class StaleReport(FabricdocError):
    """A report too old, or dated in the future, to act on without a person."""


def refuse_stale(report: Report, max_age_h: float | None = DEFAULT_MAX_AGE_H, now: datetime | None = None) -> None:
    """Raise :class:`StaleReport` (one line) unless the report is fresh enough to taint or untaint by."""
    why = staleness(report.generated_at, max_age_h, now)
    if why:
        raise StaleReport(f"refusing to act on this report: {why}")


def node_name_problem(name: str) -> str | None:
    """None for a valid Kubernetes node name, else one line saying why it is refused."""
    if not isinstance(name, str) or len(name) > 253 or not _K8S_NODE.fullmatch(name):
        return f"refusing node name {escape(str(name))!r}: not a Kubernetes node name (lowercase DNS-1123)"
    return None


def shorten(text: str, limit: int = NPD_MAX_OUTPUT) -> str:
    """One line of at most ``limit`` UTF-8 bytes (NPD cuts bytes), control characters escaped.

    A cut never splits a character and ends in ``...``.
    """
    one = " ".join(escape(text).split())
    if len(one.encode()) <= limit:
        return one
    room = max(limit - 3, 0)
    cut = one.encode()[:room].decode("utf-8", errors="ignore")
    return cut.rstrip() + "..."


def _field(text: str, limit: int) -> str:
    """An untrusted report field for a message: escaped, one word-run, at most ``limit`` characters."""
    one = " ".join(escape(text).split()) or "?"
    return one if len(one) <= limit else one[: limit - 2] + ".."


# -- Node Problem Detector ---------------------------------------------------


def npd_status(
    report: Report,
    node: str,
    policy: Policy | None = None,
    names: NameMap | None = None,
    max_report_age_h: float | None = DEFAULT_MAX_AGE_H,
    now: datetime | None = None,
) -> tuple[int, str]:
    """(exit code, message) for NPD: is this node fit, by the gate policy, per the report?

    A node the report did not test, a report without a topology (it cannot show
    the node was tested), and a report older than ``max_report_age_h`` or dated
    in the future are all *unknown*, not a problem: NPD must not mark a node bad,
    or good, for lack of data. A problem message reads
    ``fabricdoc: FAIL <kind> <fault> <tag> on <node>...``: the fault and its
    stable tag fit in NPD's 80 bytes whatever the node and component names are.
    """
    why = staleness(report.generated_at, max_report_age_h, now)
    if why:
        return NPD_UNKNOWN, f"fabricdoc: UNKNOWN {why}"
    from fabricdoc.scheduler.gate import Policy, evaluate

    pol = replace(policy or Policy(), untested_hosts="pass", max_report_age_h=None)
    res = evaluate(report, [node], pol, names, now)
    who = _field(node, 63)
    if res.untested:
        return NPD_UNKNOWN, f"fabricdoc: UNKNOWN {who} is not in the report's fabric"
    if res.ok and not report.topology:
        return NPD_UNKNOWN, f"fabricdoc: UNKNOWN report has no topology: cannot tell whether {who} was tested"
    if res.ok:
        return NPD_OK, f"fabricdoc: OK fabric healthy for {who} (report {_field(report.generated_at, 32)})"
    worst = _worst_against(report, node, pol, names or NameMap(), res)
    more = f" (+{len(res.reasons) - 1} more)" if len(res.reasons) > 1 else ""
    if worst is None:
        return NPD_PROBLEM, f"fabricdoc: FAIL {res.reasons[0]}{more}"
    head = f"fabricdoc: FAIL {_field(worst.kind, 12)} {_field(worst.fault, 24)} {worst.id}"
    return NPD_PROBLEM, f"{head} on {who}{more}: {_field(worst.name, 120)} ({worst.severity}, {worst.confidence:.2f})"


def _worst_against(report: Report, node: str, policy: Policy, names: NameMap, res: GateResult) -> Finding | None:
    """The most severe finding that fails the node: from its drain entry or above the policy's severity."""
    from fabricdoc.model.severity import worse_than
    from fabricdoc.report.drain import worst_finding

    by_key = {f.key: f for f in report.findings}
    drained = {k for d in report.drain if names.node_name(d.node) == node for k in d.findings}
    failing = [by_key[k] for k in drained if k in by_key]
    return worst_finding(failing + [f for f in res.findings if worse_than(f.severity, policy.max_severity)])


def go_duration_s(text: str, what: str) -> float:
    """Seconds in a Go duration (``30s``, ``5m``, ``1h30m``) as NPD parses it; ConfigError naming ``what``."""
    if not isinstance(text, str) or not _GO_DURATION.fullmatch(text):
        raise ConfigError(f"{what} {str(text)[:40]!r} is not a Go duration such as 30s, 5m or 1h")
    return sum(float(n) * _GO_UNIT_S[u] for n, _, u in re.findall(r"(\d+(\.\d+)?)(ns|us|µs|ms|s|m|h)", text))


def npd_config(command: str, args: list[str], interval: str = "5m", timeout: str = "1m") -> dict[str, Any]:
    """An NPD custom-plugin-monitor config that runs ``command args`` as a permanent condition.

    ``command`` is the path NPD executes on the node (NPD refuses to start when
    it does not exist there), so it must be absolute. The field names are NPD's
    own (``pkg/custompluginmonitor/types``); the rule's timeout is the global
    one, which NPD requires it not to exceed.
    """
    if not command.startswith("/"):
        raise ConfigError(f"--command {command!r} is not an absolute path: NPD runs it on the node as given")
    if go_duration_s(interval, "--invoke-interval") <= 0 or go_duration_s(timeout, "--plugin-timeout") <= 0:
        raise ConfigError("--invoke-interval and --plugin-timeout must be longer than 0")
    return {
        "plugin": "custom",
        "pluginConfig": {"invoke_interval": interval, "timeout": timeout, "max_output_length": NPD_MAX_OUTPUT,
                         "concurrency": 1},
        "source": "fabricdoc",
        "metricsReporting": True,
        "conditions": [{"type": "FabricdocFabricFault", "reason": "FabricHealthy", "message": "fabric is healthy for this node"}],
        "rules": [
            {
                "type": "permanent",
                "condition": "FabricdocFabricFault",
                "reason": "FabricFault",
                "path": command,
                "args": args,
                "timeout": timeout,
            }
        ],
    }  # fmt: skip


# -- taints ------------------------------------------------------------------


@dataclass(frozen=True)
class Taint:
    """A taint fabricdoc puts on a node to drain: the node, key, value and effect."""

    node: str
    key: str
    value: str
    effect: str

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "key": self.key, "value": self.value, "effect": self.effect}

    def kubectl_argv(self, kubectl: str = "kubectl") -> list[str]:
        return [kubectl, "taint", "nodes", self.node, f"{self.key}={self.value}:{self.effect}", "--overwrite"]


@dataclass(frozen=True)
class Untaint:
    """One fabricdoc taint to remove from a node the fresh report cleared."""

    node: str
    key: str
    effect: str
    value: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"node": self.node, "key": self.key, "value": self.value, "effect": self.effect}

    def kubectl_argv(self, kubectl: str = "kubectl") -> list[str]:
        return [kubectl, "taint", "nodes", self.node, f"{self.key}:{self.effect}-"]


@dataclass(frozen=True)
class Kept:
    """A node left as it is, and why; ``refused`` marks bad input (a name Kubernetes would reject)."""

    node: str
    why: str
    refused: bool = False


def check_taint_key(key: str) -> str:
    """``key`` when Kubernetes accepts it as a taint key, else ConfigError."""
    if not _TAINT_KEY.fullmatch(key) or len(key) > 253 + 1 + 63:
        raise ConfigError(f"taint key {key!r} is not a valid Kubernetes key")
    return key


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
        raise ConfigError(f"effect must be one of {', '.join(EFFECTS)}")
    check_taint_key(key)
    by_key = {f.key: f for f in report.findings}
    out: list[Taint] = []
    refused: list[tuple[str, str]] = []
    for d in report.drain:
        node = names.node_name(d.node)
        why = node_name_problem(node)
        if why:
            refused.append((d.node, why))
            continue
        found = [by_key[k] for k in d.findings if k in by_key]
        worst = max(found, key=lambda f: (f.severity.rank, f.confidence), default=None)
        value = label_value(f"{worst.kind}-{worst.fault}" if worst else d.reason)
        out.append(Taint(node, key, value, effect))
    return out, refused


def kubectl_lines(ts: Iterable[Taint | Untaint], kubectl: str = "kubectl") -> list[str]:
    return [shlex.join(t.kubectl_argv(kubectl)) for t in ts]


def plan_untaint(
    report: Report,
    nodes: Mapping[str, list[dict[str, str]]],
    names: NameMap | None = None,
    key: str = DEFAULT_TAINT_KEY,
) -> tuple[list[Untaint], list[Kept]]:
    """Removals of taint ``key`` from nodes that carry it now, that the report tested and no longer drains.

    ``nodes`` is :func:`parse_kubectl_nodes` of the cluster now. Nodes without
    the key are not looked at; a tainted node the report did not test (or a
    report with no topology) keeps its taint and is listed in the second value
    with why, as is one still drained. Taints with other keys are never planned.
    """
    names = names or NameMap()
    check_taint_key(key)
    still = {names.node_name(d.node): d for d in report.drain}
    tested = tested_nodes(report, names)
    actions: list[Untaint] = []
    kept: list[Kept] = []
    for node in sorted(nodes):
        ours = [t for t in nodes[node] if t["key"] == key]
        if not ours:
            continue
        why = node_name_problem(node)
        if why:
            kept.append(Kept(node, why, refused=True))
        elif node in still:
            kept.append(Kept(node, f"still drained by the report: {escape(still[node].reason)}"))
        elif tested is None:
            kept.append(Kept(node, "the report has no topology, so it cannot show this node was tested: taint kept"))
        elif node not in tested:
            kept.append(Kept(node, "not in the report's fabric (not tested): taint kept"))
        else:
            effects = sorted({(t["effect"], t["value"]) for t in ours})
            actions.extend(Untaint(node, key, effect, value) for effect, value in effects)
    return actions, kept


def plan_taint_apply(ts: list[Taint], nodes: Mapping[str, list[dict[str, str]]]) -> tuple[list[Taint], list[Kept]]:
    """The taints to run against the cluster now: not for nodes it does not have, nor ones already carrying it."""
    todo: list[Taint] = []
    kept: list[Kept] = []
    for t in ts:
        if t.node not in nodes:
            kept.append(Kept(t.node, "not a node of this cluster (kubectl get nodes): left alone"))
        elif {"key": t.key, "value": t.value, "effect": t.effect} in nodes[t.node]:
            kept.append(Kept(t.node, f"already tainted {t.key}={t.value}:{t.effect}"))
        else:
            todo.append(t)
    return todo, kept


@dataclass(frozen=True)
class Applied:
    """What one kubectl call did: the argv, its exit status (None: timed out) and its output on one line."""

    argv: tuple[str, ...]
    returncode: int | None
    output: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


def apply(actions: Iterable[Taint | Untaint], run: Runner, kubectl: str = "kubectl") -> list[Applied]:
    """Run each action's kubectl argv with ``run`` (no shell, a timeout); one failure does not stop the rest."""
    done = []
    for act in actions:
        argv = tuple(act.kubectl_argv(kubectl))
        code, out, err = run(argv)
        text = "timed out" if code is None else " ".join(f"{out} {err}".split())
        done.append(Applied(argv, code, text))
    return done


# -- the back end ------------------------------------------------------------


@dataclass(frozen=True)
class Kubernetes:
    """Kubernetes as a :class:`~fabricdoc.scheduler.protocol.Scheduler`: ``kubectl taint`` with
    fabricdoc's own key, and its removal; taints with other keys are never touched."""

    names: NameMap = field(default_factory=NameMap)
    key: str = DEFAULT_TAINT_KEY
    effect: str = "NoSchedule"
    kubectl: str = "kubectl"
    kind: ClassVar[str] = "k8s"

    def node_name(self, host: str) -> str:
        """The Kubernetes node name for a fabric host name (not yet checked)."""
        return self.names.node_name(host)

    def name_problem(self, node: str) -> str | None:
        """None for a DNS-1123 node name, else why it is refused (:func:`node_name_problem`)."""
        return node_name_problem(node)

    def tested_nodes(self, report: Report) -> dict[str, str] | None:
        """Node name -> fabric host of each host the report tested (None: no topology)."""
        return tested_nodes(report, self.names)

    def ours(self, now: Mapping[str, list[dict[str, str]]]) -> list[str]:
        """The nodes carrying fabricdoc's taint key now."""
        return sorted(n for n, ts in now.items() if any(t["key"] == self.key for t in ts))

    def plan_drain(self, report: Report, now: Mapping[str, list[dict[str, str]]] | None = None
                   ) -> tuple[list[Taint], list[Kept]]:
        """:func:`taints` for the drain list (refused names kept); with ``now``, only those
        :func:`plan_taint_apply` leaves to run."""
        ts, refused = taints(report, self.names, self.key, self.effect)
        kept = [Kept(name, why, refused=True) for name, why in refused]
        if now is None:
            return ts, kept
        todo, left = plan_taint_apply(ts, now)
        return todo, kept + left

    def plan_undrain(self, report: Report, now: Mapping[str, list[dict[str, str]]],
                     candidates: Iterable[str] | None = None) -> tuple[list[Untaint], list[Kept]]:
        """:func:`plan_untaint` of the nodes in ``now`` (only ``candidates`` among them, when given)."""
        if candidates is not None:
            wanted = set(candidates)
            now = {n: ts for n, ts in now.items() if n in wanted}
        return plan_untaint(report, now, self.names, self.key)

    def apply(self, actions: Sequence[Taint | Untaint], run: Runner) -> list[Applied]:
        """Run each kubectl argv with ``run`` (:func:`apply`)."""
        return apply(actions, run, self.kubectl)
