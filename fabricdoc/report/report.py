"""The fabricdoc report: JSON v1 (what schedulers read), its loader and atomic writer.

A report carries the verdict, the findings with evidence, the drain list, what
was tested, the health of every probe, the per-pair measurements, and the
fabric's topology so the TUI and ``fabricdoc impact`` can work from the file
alone. It also records the thresholds it was judged with, so every renderer
judges as the sweep did. The JSON Schema lives in :mod:`fabricdoc.report.schema`;
a report is validated when it is loaded.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from fabricdoc.analysis.actions import attach_actions
from fabricdoc.analysis.runtime import TEST as JOB_CONNECTION
from fabricdoc.errors import FabricdocError
from fabricdoc.impact.records import ImpactSection
from fabricdoc.model.expectation import Judged, TestJudgement, judge_observations
from fabricdoc.model.findings import Finding
from fabricdoc.model.inputs import loads_json, read_text
from fabricdoc.model.memory import gc_paused
from fabricdoc.model.records import LinkKey, Node, Observations, PortRef
from fabricdoc.model.severity import Severity
from fabricdoc.model.text import json_safe
from fabricdoc.model.times import now_iso
from fabricdoc.model.topology import Fabric
from fabricdoc.model.verdict import Verdict
from fabricdoc.report.coverage import Coverage, Planned
from fabricdoc.report.coverage import measure as measure_coverage
from fabricdoc.report.drain import DrainEntry, drain_list
from fabricdoc.report.drain_policy import DrainPolicy, Held, apply_drain_policy
from fabricdoc.report.files import write_atomic
from fabricdoc.report.loads import link_loads
from fabricdoc.report.pairs import (
    PairRow,
    from_pair_columns,
    pair_columns,
    row_columns,
    rows_from_columns,
)

SCHEMA_ID = "fabricdoc.report/v1"
COMPACT_MIN = 4096
"""A topology (nodes + links) or pair list longer than this is written as columns (see :func:`to_columns`)."""


def _producer() -> str:
    from fabricdoc import __version__

    return f"fabricdoc {__version__}"
DEFAULT_THRESHOLDS = {"suspect_fraction": 0.5, "switch_fraction": 0.5}


@dataclass
class Report:
    """One sweep's result. ``topology`` is the fabric as plain lists (see :func:`topology_dict`)."""

    fabric: dict[str, Any]
    verdict: Verdict
    findings: list[Finding]
    drain: list[DrainEntry]
    tests: dict[str, Any]
    probes: list[dict[str, Any]] = field(default_factory=list)
    pairs: list[PairRow] = field(default_factory=list)
    groups: list[dict[str, Any]] = field(default_factory=list)  # group collectives (load tests), when any ran
    impact: ImpactSection | None = None
    topology: dict[str, Any] | None = None
    thresholds: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_THRESHOLDS))
    coverage: dict[str, Any] = field(default_factory=lambda: Coverage().to_dict())
    generated_at: str = field(default_factory=now_iso)
    schema: str = SCHEMA_ID
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)
    producer: str = field(default_factory=_producer)
    started_at: str | None = None
    errors: list[str] = field(default_factory=list)
    drain_held: list[Held] = field(default_factory=list)  # drains a drain policy held back, with why
    drain_policy: dict[str, Any] | None = None  # the policy the drain list went through, when one did
    # What healthy tests of each shape reach here, and what contradicts the topology (model.expectation).
    expectations: dict[str, Any] | None = None
    # The saved column blocks, kept as read when :meth:`load` was told to (``keep_columns``, see there).
    _topology_columns: dict[str, Any] | None = field(default=None, repr=False, compare=False)
    _pairs_columns: dict[str, Any] | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.verdict = Verdict.parse(self.verdict)  # a plain string given (tests, old callers) reads as the type

    @property
    def slow_ratio(self) -> float | None:
        """The given ``--slow-ratio`` (slow below that share of what healthy tests reach), or None when
        slowness was judged from the noise (each pair's ``slow`` says how it was judged)."""
        value = self.thresholds.get("slow_ratio")
        return None if value is None else float(value)

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
        thresholds: dict[str, float] | None = None,
        planned: Planned | None = None,
        interrupted: bool = False,
        judged: TestJudgement | None = None,
    ) -> Report:
        """The report of one sweep. ``planned`` says what the sweep set out to see; the
        verdict is ``pass`` only when all of it was seen (see :func:`verdict_of`) and the
        measurements fit the topology. ``judged`` is every test judged against what healthy
        tests of its shape reach (:func:`fabricdoc.model.expectation.judge_observations`;
        judged here, without history, when None)."""
        limits = {**DEFAULT_THRESHOLDS, **(thresholds or {})}
        if judged is None:
            judged = judge_observations(fabric, obs.pairs, obs.groups, slow_ratio=limits.get("slow_ratio"))
        findings = sorted(attach_actions(findings, fabric), key=lambda f: (-f.severity.rank, -f.confidence, f.name))
        pairs = obs.pairs
        tests = {
            "pairs_tested": len(pairs),
            "pairs_slow": sum(1 for i, p in enumerate(pairs) if p.status == "ok" and judged.pair_slow(i, p)),
            "pairs_hung": sum(1 for p in pairs if p.status == "hung"),
            "pairs_wrong": sum(1 for p in pairs if p.status == "wrong"),
            "pairs_error": sum(1 for p in pairs if p.status == "error"),
            # Pair rounds only: group rounds are counted apart (a sweep's ``rounds`` holds both).
            "rounds": (rounds - len({g.round for g in obs.groups})) if rounds is not None
            else len({p.round for p in pairs}),
            "ports_sampled": len(obs.after),
            "interval_s": obs.interval_s,
            "duration_s": duration_s,
        }
        job = [p for p in pairs if p.test == JOB_CONNECTION]
        if job:  # a job's own connections (NCCL_DEBUG): counted among the pairs, said apart
            tests["connections_seen"] = len(job)
            tests["connections_failed"] = sum(1 for p in job if p.status == "hung")
        if obs.groups:
            tests["groups_tested"] = len(obs.groups)
            tests["group_rounds"] = len({g.round for g in obs.groups})
            tests["groups_failing"] = sum(1 for j, g in enumerate(obs.groups) if judged.group_failed(j, g))
            tests["groups_error"] = sum(1 for g in obs.groups if g.status == "error")
        cov = measure_coverage(fabric, obs, planned or Planned())
        if interrupted:
            cov.add("the sweep", "interrupted (Ctrl-C or SIGTERM) before it finished: this report holds what finished")
        for why in judged.expectations.contradictions:
            cov.add("the measurements", why)
        return cls(
            fabric={"name": fabric.name, "source": fabric.source, **fabric.summary()},
            verdict=verdict_of(findings, cov),
            coverage=cov.to_dict(),
            findings=findings,
            drain=drain if drain is not None else drain_list(fabric, findings),
            tests=tests,
            probes=[asdict(p) for p in obs.probes],
            pairs=[PairRow.of(fabric, p, judged.pairs[i]) for i, p in enumerate(pairs)],
            groups=[_group_dict(fabric, g, judged.groups[j]) for j, g in enumerate(obs.groups)],
            topology=topology_dict(fabric, link_loads(fabric, obs)) if include_topology else None,
            thresholds=limits,
            expectations=judged.expectations.to_dict(),
        )

    # -- JSON ------------------------------------------------------------------
    def to_dict(self, *, pairs: bool = True) -> dict[str, Any]:
        """The report as JSON-able data (``pairs`` False: without the pair list, which the caller writes)."""
        out: dict[str, Any] = {
            "schema": self.schema,
            "run_id": self.run_id,
            "producer": self.producer,
            "started_at": self.started_at,
            "generated_at": self.generated_at,
            "fabric": self.fabric,
            "verdict": self.verdict,
            "thresholds": self.thresholds,
            "coverage": self.coverage,
            "errors": self.errors,
            "findings": [f.to_dict() for f in self.findings],
            "drain": [asdict(d) for d in self.drain],
            "drain_held": [asdict(h) for h in self.drain_held],
            "drain_policy": self.drain_policy,
            "tests": self.tests,
            **({"expectations": self.expectations} if self.expectations is not None else {}),
            "probes": self.probes,
        }
        if pairs:
            out["pairs"] = ([p.as_dict() for p in self.pairs] if self._pairs_columns is None
                            else from_pair_columns(self._pairs_columns))
        if self.groups:
            out["groups"] = self.groups
        if self.impact is not None:
            out["impact"] = self.impact.as_dict()
        topology = self.topology
        if topology is None and self._topology_columns is not None:  # kept as columns: nothing is lost
            topology = from_topology_columns(self._topology_columns)
        if topology is not None:
            out["topology"] = topology
        return out

    def to_document(self) -> dict[str, Any]:
        """What :meth:`save` writes: :meth:`to_dict`, with a large topology or pair list as columns."""
        rows = len(self.pairs) > COMPACT_MIN and self._pairs_columns is None  # columns straight from the rows
        out = self.to_dict(pairs=not rows)
        topo = out.get("topology")
        if topo is not None and len(topo["nodes"]) + len(topo["links"]) > COMPACT_MIN:
            del out["topology"]
            out["topology_columns"] = topology_columns(topo)
        if rows:
            out["pairs_columns"] = row_columns(self.pairs)
        elif len(out["pairs"]) > COMPACT_MIN:
            out["pairs_columns"] = pair_columns(out.pop("pairs"))
        return out

    def to_json(self, indent: int | None = 2) -> str:
        """The report as saved: indented, except the column arrays of a large report, one line each."""
        doc = self.to_document()
        columns = {key: doc.pop(key) for key in ("topology_columns", "pairs_columns") if key in doc}
        text = json.dumps({**doc, **dict.fromkeys(columns, _SPLICE)}, indent=indent, ensure_ascii=False,
                          allow_nan=False)
        for key, value in columns.items():
            compact = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
            text = text.replace(f'"{key}": {json.dumps(_SPLICE)}', f'"{key}": {compact}', 1)
        return json_safe(text)  # host names with U+202E or C1 controls stay escaped in the file too

    @classmethod
    def from_dict(cls, data: dict[str, Any], source: str = "report", *, keep_columns: bool = False) -> Report:
        from fabricdoc.report.validation import validate_report

        validate_report(data, source)
        columns = data.get("topology_columns")
        pair_cols = data.get("pairs_columns")
        keep = columns is not None and keep_columns
        keep_pairs = pair_cols is not None and keep_columns
        return cls(
            schema=data["schema"],
            generated_at=data["generated_at"],
            run_id=str(data.get("run_id") or f"{data['generated_at']}"),
            producer=str(data.get("producer") or "unknown"),
            started_at=data.get("started_at"),
            errors=list(data.get("errors", [])),
            fabric=data["fabric"],
            verdict=Verdict.parse(data["verdict"]),
            thresholds={**DEFAULT_THRESHOLDS, **data.get("thresholds", {})},
            coverage=data.get("coverage") or Coverage().to_dict(),
            findings=[Finding.from_dict(f, source) for f in data["findings"]],
            drain=[DrainEntry(**d) for d in data["drain"]],
            drain_held=[Held(**h) for h in data.get("drain_held", [])],
            drain_policy=data.get("drain_policy"),
            expectations=data.get("expectations"),
            tests=data["tests"],
            probes=data.get("probes", []),
            pairs=[] if keep_pairs else rows_from_columns(pair_cols) if pair_cols is not None
            else [PairRow.from_dict(p) for p in data.get("pairs", [])],
            groups=data.get("groups", []),
            impact=None if data.get("impact") is None else ImpactSection.from_dict(data["impact"]),
            topology=None if keep else from_topology_columns(columns) if columns is not None else data.get("topology"),
            _topology_columns=columns if keep else None,
            _pairs_columns=pair_cols if keep_pairs else None,
        )

    @classmethod
    def load(cls, path: str | Path, *, keep_columns: bool = False) -> Report:
        """Read and validate a saved report; a bad file is a one-line error naming it.

        ``keep_columns``: a topology or pair list saved as columns stays columns (``topology`` None,
        ``pairs`` empty; :meth:`fabric_model` builds from the columns and saving writes them back), for
        a reader that only rebuilds the fabric: expanding 196,608 cables into dicts costs the impact
        model's process a fifth of a second.
        """
        path = Path(path)
        with gc_paused():  # hundreds of thousands of new dicts: each collection pass would walk them all
            return cls.from_dict(loads_json(read_text(path, "report"), str(path)), str(path), keep_columns=keep_columns)

    def test_pool(self) -> dict[str, Any]:
        """The report's tests in the shape of one of the history store's pools (``{"pairs": [...]}``, see
        :meth:`fabricdoc.report.history.History.test_pools`): what an efficiency is learned from."""
        return {"pairs": [p.as_dict() for p in self.pairs]}

    def save(self, path: str | Path) -> Path:
        return write_atomic(path, self.to_json() + "\n")

    def hold_drains(self, policy: DrainPolicy, seen_before: list[set[str]] | None = None) -> None:
        """Pass the drain list through ``policy`` (see :mod:`fabricdoc.report.drain_policy`):
        what it holds back moves to ``drain_held`` with the reason; the policy is recorded."""
        hosts = int(self.fabric.get("hosts") or 0)
        self.drain, held = apply_drain_policy(self.drain, self.findings, policy, hosts, seen_before)
        self.drain_held.extend(held)
        self.drain_policy = {**policy.to_dict(), "cap": policy.cap(hosts)}

    def fabric_model(self) -> Fabric:
        """Rebuild the :class:`Fabric` from the report's topology section."""
        if self.topology is None and self._topology_columns is not None:
            return fabric_from_columns(self._topology_columns)
        if not self.topology:
            raise FabricdocError("report has no topology section (written with --no-topology?)")
        return fabric_from_topology(self.topology)




def verdict_of(findings: list[Finding], coverage: Coverage | None = None) -> Verdict:
    """The verdict of DESIGN.md: ``fail`` with any error or critical finding (``degraded``
    with warnings only), else ``incomplete`` when something planned was not seen, else ``pass``."""
    worst = max((f.severity.rank for f in findings), default=-1)
    if worst >= Severity.ERROR.rank:
        return Verdict.FAIL
    if worst >= Severity.WARNING.rank:
        return Verdict.DEGRADED
    if coverage is not None and not coverage.complete:
        return Verdict.INCOMPLETE
    return Verdict.PASS


def _group_dict(fabric: Fabric, g, judged: Judged) -> dict[str, Any]:
    return {
        "members": [[fabric.label(m.node), m.port] for m in g.members],
        "test": g.test,
        "phase": g.phase,
        "label": g.label,
        "status": g.status,
        "busbw_gbps": g.busbw_gbps,
        "expected_gbps": g.expected_gbps,
        "ratio": None if g.ratio is None else round(g.ratio, 4),
        "relative": None if judged.relative is None else round(judged.relative, 4),
        "slow": g.status == "hung" or (g.status == "ok" and judged.slow),
        "round": g.round,
        "error": g.error,
    }


def topology_dict(fabric: Fabric, loads: dict[LinkKey, float] | None = None) -> dict[str, Any]:
    """The fabric as JSON-able lists: nodes (id, label, kind, ports, guid, attrs) and links (with their
    ``load`` during the sweep where counters told it, see :func:`fabricdoc.report.loads.link_loads`)."""
    loads = loads or {}
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
                **({"load": loads[lk.key]} if lk.key in loads else {}),
            }
            for lk in fabric.links.values()
        ],
    }


# -- columns: the compact layout of a large report -----------------------------------
#
# A 65,536-host fabric has ~200,000 links: as one JSON object each they are most
# of a 70 MB file and most of its parse time. A large report keeps the same data
# as one array per field instead (``topology_columns``, ``pairs_columns``); old
# readers, which know only ``topology`` and ``pairs``, see a report without them.

_SPLICE = "\x00fabricdoc columns\x00"  # placeholder to_json swaps for a one-line column block
_LINK_FIELDS = ("lanes", "lane_gbps", "max_lanes", "max_lane_gbps", "state")


def topology_columns(topo: dict[str, Any]) -> dict[str, Any]:
    """:func:`topology_dict`'s lists as columns. Links name their ends by node index (``a``, ``b``)
    and port (``a_port``, ``b_port``); ``attrs`` is one column per attribute, null where a node has none."""
    nodes, links = topo["nodes"], topo["links"]
    where = {n["id"]: i for i, n in enumerate(nodes)}
    attr_keys = sorted({k for n in nodes for k in n.get("attrs", {})})
    cols: dict[str, Any] = {
        "nodes": {
            "id": [n["id"] for n in nodes], "label": [n["label"] for n in nodes], "kind": [n["kind"] for n in nodes],
            "ports": [n["ports"] for n in nodes], "guid": [n.get("guid") for n in nodes],
            "attrs": {k: [n.get("attrs", {}).get(k) for n in nodes] for k in attr_keys},
        },
        "links": {
            "a": [where[lk["a"][0]] for lk in links], "a_port": [lk["a"][1] for lk in links],
            "b": [where[lk["b"][0]] for lk in links], "b_port": [lk["b"][1] for lk in links],
            **{f: [lk.get(f, "up" if f == "state" else None) for lk in links] for f in _LINK_FIELDS},
            **({"load": [lk.get("load") for lk in links]} if any("load" in lk for lk in links) else {}),
        },
    }  # fmt: skip
    return cols


def from_topology_columns(cols: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`topology_columns` (the columns were checked by the schema)."""
    n, lk = cols["nodes"], cols["links"]
    attrs = n.get("attrs", {})
    keys = list(attrs)
    ids = n["id"]
    nodes = []
    for i, values in enumerate(zip(*(attrs[k] for k in keys), strict=True) if keys else ([()] * len(ids))):
        nodes.append({"id": ids[i], "label": n["label"][i], "kind": n["kind"][i], "ports": n["ports"][i],
                      "guid": n["guid"][i] if "guid" in n else None,
                      "attrs": {k: v for k, v in zip(keys, values, strict=True) if v is not None}})
    links = [
        {"a": [ids[a], pa], "b": [ids[b], pb], "lanes": lanes, "lane_gbps": rate, "max_lanes": max_lanes,
         "max_lane_gbps": max_rate, "state": state}
        for a, pa, b, pb, lanes, rate, max_lanes, max_rate, state in zip(
            lk["a"], lk["a_port"], lk["b"], lk["b_port"], *(lk[f] for f in _LINK_FIELDS), strict=True)
    ]
    for link, load in zip(links, lk.get("load") or (), strict=False):
        if load is not None:
            link["load"] = load
    return {"nodes": nodes, "links": links}


@gc_paused()  # it only allocates: 196,608 links at 65,536 hosts, no garbage for a collection pass to find
def fabric_from_columns(cols: dict[str, Any], name: str = "report") -> Fabric:
    """:func:`fabric_from_topology` of :func:`topology_columns`, without the lists of dicts between."""
    n, lk = cols["nodes"], cols["links"]
    fabric = Fabric(name=name, source="report")
    attrs = n.get("attrs", {})
    keys = list(attrs)
    ids = n["id"]
    guids = n["guid"] if "guid" in n else [None] * len(ids)
    rows = zip(*(attrs[k] for k in keys), strict=True) if keys else [()] * len(ids)
    for nid, kind, label, ports, guid, values in zip(ids, n["kind"], n["label"], n["ports"], guids, rows, strict=True):
        fabric.add_node(Node(id=nid, kind=kind, label=label, num_ports=ports, guid=guid,
                             attrs={k: v for k, v in zip(keys, values, strict=True) if v is not None}))
    fabric.add_links(
        (
            (PortRef(ids[a], pa), PortRef(ids[b], pb), lanes, rate, max_lanes, max_rate, state)
            for a, pa, b, pb, lanes, rate, max_lanes, max_rate, state in zip(
                lk["a"], lk["a_port"], lk["b"], lk["b_port"], *(lk[f] for f in _LINK_FIELDS), strict=True)
        ),
        checked=_cabling_sound(n["ports"], lk),  # else each cable is checked, and the first bad one named
    )
    return fabric


def _cabling_sound(num_ports: list[int], links: dict[str, Any]) -> bool:
    """Whether every column cable passes :meth:`Fabric.add_link`'s checks, in bulk: both ends are
    nodes, ports within their node's count, no port cabled twice, no cable looping onto its own port."""
    import numpy as np

    try:
        ports = np.asarray(num_ports, dtype=np.int64)
        a, b = np.asarray(links["a"], dtype=np.int64), np.asarray(links["b"], dtype=np.int64)
        pa, pb = np.asarray(links["a_port"], dtype=np.int64), np.asarray(links["b_port"], dtype=np.int64)
    except (TypeError, ValueError, OverflowError):
        return False
    n = ports.size
    if a.size == 0:
        return True
    if min(a.min(), b.min()) < 0 or max(a.max(), b.max()) >= n or min(pa.min(), pb.min()) < 1:
        return False
    if (pa > ports[a]).any() or (pb > ports[b]).any():
        return False
    span = int(max(pa.max(), pb.max())) + 1
    ends = np.sort(np.concatenate([a * span + pa, b * span + pb]))
    return not (ends[1:] == ends[:-1]).any()  # a loop onto its own port is a port used twice


@gc_paused()  # it only allocates: 196,608 links at 65,536 hosts, no garbage for a collection pass to find
def fabric_from_topology(topo: dict[str, Any], name: str = "report") -> Fabric:
    """Inverse of :func:`topology_dict`."""
    fabric = Fabric(name=name, source="report")
    for n in topo["nodes"]:
        fabric.add_node(
            Node(id=n["id"], kind=n["kind"], label=n["label"], num_ports=n["ports"], guid=n.get("guid"), attrs=dict(n.get("attrs", {})))
        )
    fabric.add_links(
        (PortRef(lk["a"][0], lk["a"][1]), PortRef(lk["b"][0], lk["b"][1]), lk["lanes"], lk["lane_gbps"],
         lk.get("max_lanes"), lk.get("max_lane_gbps"), lk.get("state", "up"))
        for lk in topo["links"]
    )
    return fabric
