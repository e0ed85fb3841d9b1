"""A finding: the component fabricdoc blames, the fault, how sure it is, and the evidence."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any, Literal

from fabricdoc.model.evidence import Evidence, evidence_from_dict
from fabricdoc.model.severity import Severity

FindingKind = Literal["link", "switch", "host", "nic", "gpu", "port", "pair"]  # pair: a slow test nothing explains
ACTION_WHO = ("data center", "network", "host admin", "nobody")
ACTION_URGENCY = ("now", "next maintenance", "watch")


@dataclass(frozen=True)
class Action:
    """What to do about a finding, who does it and how soon (``who`` in ACTION_WHO, ``urgency`` in ACTION_URGENCY)."""

    do: str
    who: str
    urgency: str
    why: str = ""

    def to_dict(self) -> dict[str, str]:
        return {"do": self.do, "who": self.who, "urgency": self.urgency, "why": self.why}

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Action:
        return cls(str(d["do"]), str(d["who"]), str(d["urgency"]), str(d.get("why") or ""))


@dataclass
class Finding:
    """A component fabricdoc blames, with how sure it is and why.

    ``name`` is what a person reads (labels); ``node_ids`` and ``endpoints``
    identify the component the way the fabric does (node ids, and for a cable
    its two ``(label, port)`` ends). :attr:`key` names the same fault on the
    same part in every sweep; ``id`` is its short form, six hex digits of the
    key's sha256 (more where two findings of one report share six,
    :func:`assign_ids`), the one name every output shows: the text report,
    the JSON, the TUI, drain and gate reasons, metrics and the history.
    """

    id: str
    kind: FindingKind
    name: str
    fault: str
    severity: Severity
    confidence: float
    evidence: list[Evidence] = field(default_factory=list)
    endpoints: list[tuple[str, int]] | None = None
    node_ids: list[str] = field(default_factory=list)
    component: str = ""  # the part's stable identity; derived from node ids and ports when empty
    action: Action | None = None  # what to do about it (fabricdoc.analysis.actions)

    def __post_init__(self) -> None:
        self.severity = Severity(self.severity)
        if not self.component:
            self.component = component_of(self.kind, self.node_ids, self.endpoints, self.name)
        if not ID_PATTERN.match(self.id):  # an id is always the stable one; none given, or a report's old F001
            self.id = self.tag

    @property
    def key(self) -> str:
        """``kind:component:fault``, the same in every sweep: node ids (GUIDs on InfiniBand) and ports,
        never labels, which a rename changes, or report order, which the next sweep changes."""
        return f"{self.kind}:{self.component}:{self.fault}"

    @property
    def tag(self) -> str:
        """Six hex digits of the key's hash: short enough for a Slurm reason column, stable like the key."""
        return short_hash(self.key)

    @property
    def label(self) -> str:
        """``<id> <fault>`` (``3fa2c1 symbol_errors``): how every output names the finding in a line."""
        return f"{self.id} {self.fault}"

    def evidence_of(self, cls: type) -> list[Any]:
        """The evidence items of one kind (``finding.evidence_of(SlowPairsEvidence)``)."""
        return [e for e in self.evidence if isinstance(e, cls)]

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "key": self.key,
            "kind": self.kind,
            "name": self.name,
            "endpoints": [list(e) for e in self.endpoints] if self.endpoints else None,
            "node_ids": list(self.node_ids),
            "fault": self.fault,
            "severity": str(self.severity),
            "confidence": round(self.confidence, 3),
            "evidence": [e.to_dict() for e in self.evidence],
            "action": self.action.to_dict() if self.action else None,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any], source: str = "report") -> Finding:
        return cls(
            id=str(d.get("id") or ""), kind=d["kind"], name=d["name"], fault=d["fault"], severity=Severity(d["severity"]),
            confidence=float(d["confidence"]),
            evidence=[evidence_from_dict(e, source) for e in d["evidence"]],
            endpoints=[(str(e[0]), int(e[1])) for e in d["endpoints"]] if d.get("endpoints") else None,
            node_ids=list(d.get("node_ids", [])),
            component=_component_of_key(d.get("key"), d["kind"], d["fault"]),
            action=Action.from_dict(d["action"]) if d.get("action") else None,
        )  # fmt: skip


def short_hash(text: str, digits: int = 6) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:digits]


ID_PATTERN = re.compile(r"^[0-9a-f]{6,64}$")


def assign_ids(findings: list[Finding]) -> None:
    """Give each finding its stable id: six hex digits of its key's sha256, or as many more as it
    takes to tell apart findings of this report that share them (the same set of keys gives the
    same ids in every sweep; a lone finding keeps its six)."""
    digits = dict.fromkeys((f.key for f in findings), 6)
    while True:
        seen: dict[str, list[str]] = {}
        for key, n in digits.items():
            seen.setdefault(short_hash(key, n), []).append(key)
        clash = [keys for keys in seen.values() if len(keys) > 1]
        if not clash:
            break
        for keys in clash:
            for key in keys:
                digits[key] += 2
    for f in findings:
        f.id = short_hash(f.key, digits[f.key])


def component_of(kind: str, node_ids: list[str], endpoints: list[tuple[str, int]] | None, name: str) -> str:
    """A part's identity from fabric ids: a cable by its two ``id/port`` ends sorted, a port by its
    ``id/port``, a node by its id(s); the name only when the finding carries no ids."""
    if endpoints and len(node_ids) == len(endpoints):
        ends = [f"{nid}/{int(port)}" for nid, (_, port) in zip(node_ids, endpoints, strict=True)]
        return ends[0] if kind == "port" else "~".join(sorted(ends))  # a port: its own end, listed first
    if endpoints and kind == "port" and node_ids:
        return f"{node_ids[0]}/{int(endpoints[0][1])}"
    return ",".join(sorted(node_ids)) or name


def _component_of_key(key: Any, kind: str, fault: str) -> str:
    """The component part of a saved key (``kind:component:fault``); empty (derive it) when absent."""
    if not isinstance(key, str):
        return ""
    head, tail = f"{kind}:", f":{fault}"
    return key[len(head) : -len(tail)] if key.startswith(head) and key.endswith(tail) else ""
