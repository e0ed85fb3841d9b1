"""The fabricdoc report: JSON v1 (what schedulers read), its loader and atomic writer.

A report carries the verdict, the findings with evidence, the drain list, what
was tested, the health of every probe, the per-pair measurements, and the
fabric's topology so the TUI and ``fabricdoc impact`` can work from the file
alone. The JSON Schema lives in :mod:`fabricdoc.schema`.
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from fabricdoc.errors import FabricdocError
from fabricdoc.model import Evidence, Finding, Node, Observations, PortRef
from fabricdoc.topology import Fabric

SCHEMA_ID = "fabricdoc.report/v1"
_SEV_RANK = {"info": 0, "warning": 1, "error": 2, "critical": 3}


@dataclass
class DrainEntry:
    """A host the scheduler should drain, why, and which findings say so."""

    node: str
    reason: str
    findings: list[str] = field(default_factory=list)


@dataclass
class Report:
    """One sweep's result. ``topology`` is the fabric as plain lists (see :func:`topology_dict`)."""

    fabric: dict[str, Any]
    verdict: str
    findings: list[Finding]
    drain: list[DrainEntry]
    tests: dict[str, Any]
    probes: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[dict[str, Any]] = field(default_factory=list)
    impact: dict[str, Any] | None = None
    topology: dict[str, Any] | None = None
    generated_at: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="seconds"))
    schema: str = SCHEMA_ID

    # -- building -----------------------------------------------------------
    @classmethod
    def build(
        cls,
        fabric: Fabric,
        findings: list[Finding],
        obs: Observations,
        *,
        drain: list[DrainEntry] | None = None,
        duration_s: float | None = None,
        rounds: int | None = None,
        include_topology: bool = True,
        slow_ratio: float = 0.80,
    ) -> Report:
        from fabricdoc.drain import drain_list

        findings = sorted(findings, key=lambda f: (-_SEV_RANK[f.severity], -f.confidence, f.name))
        pairs = obs.pairs
        tests = {
            "pairs_tested": len(pairs),
            "pairs_slow": sum(1 for p in pairs if p.status == "ok" and p.ratio is not None and p.ratio < slow_ratio),
            "pairs_hung": sum(1 for p in pairs if p.status == "hung"),
            "pairs_wrong": sum(1 for p in pairs if p.status == "wrong"),
            "pairs_error": sum(1 for p in pairs if p.status == "error"),
            "rounds": rounds if rounds is not None else len({p.round for p in pairs}),
            "ports_sampled": len(obs.after),
            "interval_s": obs.interval_s,
            "duration_s": duration_s,
        }
        return cls(
            fabric={"name": fabric.name, "source": fabric.source, **fabric.summary()},
            verdict=verdict_of(findings),
            findings=findings,
            drain=drain if drain is not None else drain_list(fabric, findings),
            tests=tests,
            probes=[asdict(p) for p in obs.probes],
            pairs=[_pair_dict(fabric, p) for p in pairs],
            topology=topology_dict(fabric) if include_topology else None,
        )

    # -- JSON ------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "schema": self.schema,
            "generated_at": self.generated_at,
            "fabric": self.fabric,
            "verdict": self.verdict,
            "findings": [_finding_dict(f) for f in self.findings],
            "drain": [asdict(d) for d in self.drain],
            "tests": self.tests,
            "probes": self.probes,
            "pairs": self.pairs,
        }
        if self.impact is not None:
            out["impact"] = self.impact
        if self.topology is not None:
            out["topology"] = self.topology
        return out

    def to_json(self, indent: int | None = 2) -> str:
        return json.dumps(self.to_dict(), indent=indent, ensure_ascii=False, allow_nan=False)

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "report") -> Report:
        from fabricdoc.schema import validate_report

        validate_report(data, source)
        return cls(
            schema=data["schema"],
            generated_at=data["generated_at"],
            fabric=data["fabric"],
            verdict=data["verdict"],
            findings=[_finding_from(f) for f in data["findings"]],
            drain=[DrainEntry(**d) for d in data["drain"]],
            tests=data["tests"],
            probes=data.get("probes", []),
            pairs=data.get("pairs", []),
            impact=data.get("impact"),
            topology=data.get("topology"),
        )

    @classmethod
    def load(cls, path: str | Path) -> Report:
        """Read and validate a saved report; a bad file is a one-line error naming it."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise FabricdocError(f"{path}: cannot read report: {exc.strerror}") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise FabricdocError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from None
        return cls.from_dict(data, str(path))

    def save(self, path: str | Path) -> Path:
        return write_atomic(path, self.to_json() + "\n")

    def fabric_model(self) -> Fabric:
        """Rebuild the :class:`Fabric` from the report's topology section."""
        if not self.topology:
            raise FabricdocError("report has no topology section (written with --no-topology?)")
        return fabric_from_topology(self.topology)


def verdict_of(findings: list[Finding]) -> str:
    """``fail`` with any error or critical finding, ``degraded`` with warnings, else ``pass``."""
    worst = max((_SEV_RANK[f.severity] for f in findings), default=-1)
    if worst >= _SEV_RANK["error"]:
        return "fail"
    if worst >= _SEV_RANK["warning"]:
        return "degraded"
    return "pass"


def write_atomic(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` via a temp file in the same folder and a rename.

    The file gets the mode a plain ``open`` would give it (the umask's), or keeps the
    mode of the file it replaces: a report is read by other users and by the scheduler.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        mode = path.stat().st_mode & 0o7777
    except FileNotFoundError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def _umask() -> int:
    current = os.umask(0o022)
    os.umask(current)
    return current


def _pair_dict(fabric: Fabric, p) -> dict[str, Any]:
    return {
        "src": [fabric.label(p.src.node), p.src.port],
        "dst": [fabric.label(p.dst.node), p.dst.port],
        "status": p.status,
        "busbw_gbps": p.busbw_gbps,
        "expected_gbps": p.expected_gbps,
        "ratio": None if p.ratio is None else round(p.ratio, 4),
        "round": p.round,
        "test": p.test,
        "wrong": p.wrong,
        "error": p.error,
    }


def _finding_dict(f: Finding) -> dict[str, Any]:
    return {
        "id": f.id,
        "kind": f.kind,
        "name": f.name,
        "endpoints": [list(e) for e in f.endpoints] if f.endpoints else None,
        "node_ids": f.node_ids,
        "fault": f.fault,
        "severity": f.severity,
        "confidence": round(f.confidence, 3),
        "evidence": [{"type": e.type, **e.detail} for e in f.evidence],
    }


def _finding_from(d: dict[str, Any]) -> Finding:
    return Finding(
        id=d["id"],
        kind=d["kind"],
        name=d["name"],
        fault=d["fault"],
        severity=d["severity"],
        confidence=d["confidence"],
        evidence=[Evidence(e["type"], {k: v for k, v in e.items() if k != "type"}) for e in d["evidence"]],
        endpoints=[tuple(e) for e in d["endpoints"]] if d.get("endpoints") else None,
        node_ids=d.get("node_ids", []),
    )


def topology_dict(fabric: Fabric) -> dict[str, Any]:
    """The fabric as JSON-able lists: nodes (id, label, kind, ports, guid, attrs) and links."""
    return {
        "nodes": [
            {
                "id": n.id,
                "label": n.label,
                "kind": n.kind,
                "ports": n.num_ports,
                "guid": n.guid,
                "attrs": {k: v for k, v in n.attrs.items() if isinstance(v, str | int | float | bool)},
            }
            for n in fabric.nodes.values()
        ],
        "links": [
            {
                "a": [lk.key.a.node, lk.key.a.port],
                "b": [lk.key.b.node, lk.key.b.port],
                "lanes": lk.lanes,
                "lane_gbps": lk.lane_gbps,
                "max_lanes": lk.max_lanes,
                "max_lane_gbps": lk.max_lane_gbps,
                "state": lk.state,
            }
            for lk in fabric.links.values()
        ],
    }


def fabric_from_topology(topo: dict[str, Any], name: str = "report") -> Fabric:
    """Inverse of :func:`topology_dict`."""
    fabric = Fabric(name=name, source="report")
    for n in topo["nodes"]:
        fabric.add_node(
            Node(id=n["id"], kind=n["kind"], label=n["label"], num_ports=n["ports"], guid=n.get("guid"), attrs=dict(n.get("attrs", {})))
        )
    for lk in topo["links"]:
        fabric.add_link(
            PortRef(lk["a"][0], lk["a"][1]),
            PortRef(lk["b"][0], lk["b"][1]),
            lanes=lk["lanes"],
            lane_gbps=lk["lane_gbps"],
            max_lanes=lk.get("max_lanes"),
            max_lane_gbps=lk.get("max_lane_gbps"),
            state=lk.get("state", "up"),
        )
    return fabric
