"""The report index: nodes, links, findings per component and health, built once per Report."""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from fabricdoc.model.findings import Finding
from fabricdoc.model.memory import gc_paused
from fabricdoc.model.severity import Severity, worst
from fabricdoc.report.report import Report
from fabricdoc.scheduler.names import topology_host

from .formatting import fmt_num, health_rank, port_name

if TYPE_CHECKING:
    from fabricdoc.model.topology import Fabric


LinkId = tuple[tuple[str, int], tuple[str, int]]
"""A cable as its two ``(node id, port)`` ends, sorted."""

LEVEL_NAMES = {2: {2: "spines", 1: "leaves"}, 3: {3: "core", 2: "aggregation", 1: "edge (leaves)"}}


def link_id(a: Sequence[Any], b: Sequence[Any]) -> LinkId:
    """The cable between two ``(node id, port)`` ends, in one order whichever end comes first."""
    x, y = (str(a[0]), int(a[1])), (str(b[0]), int(b[1]))
    return (x, y) if x <= y else (y, x)


def link_key(lid: LinkId) -> str:
    """A link as a table row key (:func:`key_to_link` reads it back)."""
    (a, pa), (b, pb) = lid
    return f"{a}\x1f{pa}\x1f{b}\x1f{pb}"


def key_to_link(key: str) -> LinkId:
    a, pa, b, pb = key.split("\x1f")
    return link_id((a, int(pa)), (b, int(pb)))


class ReportIndex:
    """Lookups the screens need, built once per report: nodes, links, findings per component.

    The screens share one index, and with it one :class:`Fabric` rebuilt from the report
    (:meth:`fabric`, for routes) and one answer to where each switch sits (:func:`switch_level`).
    """

    def __init__(self, report: Report) -> None:
        self._fabric: Fabric | None = None
        self._fabric_lock = threading.Lock()
        self._switch_level: dict[str, int] | None = None
        with gc_paused():
            self._build(report)

    def fabric(self) -> Fabric:
        """The report's fabric (:meth:`Report.fabric_model`), rebuilt once and shared by every screen
        and thread (the map's routes): about a second on a 65,536-host report, so call it off the event loop."""
        with self._fabric_lock:
            if self._fabric is None:
                self._fabric = self.report.fabric_model()
            return self._fabric

    def _build(self, report: Report) -> None:
        self.report = report
        topo = report.topology or {"nodes": [], "links": []}
        self.has_topology = bool(report.topology)
        self.nodes: dict[str, dict[str, Any]] = {n["id"]: n for n in topo["nodes"]}
        self.by_label: dict[str, list[str]] = defaultdict(list)
        for n in topo["nodes"]:
            self.by_label[n["label"]].append(n["id"])
        self.host_name = {
            nid: topology_host(n) for nid, n in self.nodes.items() if n["kind"] == "host"
        }
        self.by_host_name = {name: nid for nid, name in self.host_name.items()}
        self._topo_links: list[dict[str, Any]] = topo["links"]
        self.link_count = len(topo["links"])
        self._links: dict[LinkId, dict[str, Any]] | None = None  # built on first use: see links
        self._node_links: dict[str, list[LinkId]] | None = None
        self._cables_lock = threading.Lock()
        self.findings: dict[str, Finding] = {f.id: f for f in report.findings}
        self.link_findings: dict[LinkId, list[Finding]] = defaultdict(list)
        self.node_findings: dict[str, list[Finding]] = defaultdict(list)
        for f in report.findings:
            lid = self.finding_link(f)
            if lid is not None:
                self.link_findings[lid].append(f)
            if f.kind == "link" and lid is not None:
                continue
            # A NIC/GPU/host finding belongs to the host even when it names the cable too.
            ids = [self.resolve(n) for n in f.node_ids]
            hosts = [n for n in ids if f.kind == "switch" or self.nodes.get(n, {}).get("kind") != "switch"]
            for nid in hosts or ids:
                self.node_findings[nid].append(f)
        self.drain_reason = {d.node: d.reason for d in report.drain}
        self.hosts = [nid for nid, n in self.nodes.items() if n["kind"] == "host"]
        self.switches = [nid for nid, n in self.nodes.items() if n["kind"] == "switch"]
        self._health: dict[str, Severity | None] | None = None
        # One pass over the cables for what the first screens need without the cable index:
        # the cables shown down, and each node's cables with findings (both in topology order).
        down: dict[LinkId, None] = {}
        finding_links: dict[str, list[LinkId]] = defaultdict(list)
        ends = {end[0] for lid in self.link_findings for end in lid}
        for lk in topo["links"]:
            (na, pa), (nb, pb) = lk["a"], lk["b"]
            is_down = lk.get("state") == "down"
            if is_down or na in ends or nb in ends:
                x, y = (na, pa), (nb, pb)
                lid = (x, y) if x <= y else (y, x)
                if is_down:
                    down[lid] = None
                if lid in self.link_findings:
                    finding_links[na].append(lid)
                    finding_links[nb].append(lid)
        self._down = down
        self._finding_links = finding_links

    @property
    def links(self) -> dict[LinkId, dict[str, Any]]:
        """Every cable's topology entry by its :data:`LinkId`; indexed on first use (the links tab,
        the map), not when the report opens: ~200,000 cables in a 65,536-host report."""
        links = self._links
        if links is None:
            with self._cables_lock, gc_paused():  # the map's worker and the event loop may both ask
                links = self._links
                if links is None:
                    links = {}
                    for lk in self._topo_links:  # link_id inlined
                        (na, pa), (nb, pb) = lk["a"], lk["b"]
                        x, y = (na, pa), (nb, pb)
                        links[(x, y) if x <= y else (y, x)] = lk
                    self._links = links
        return links

    @property
    def node_links(self) -> dict[str, list[LinkId]]:
        """Each node's cables (:attr:`links`' keys, in topology order), indexed on first use."""
        node_links = self._node_links
        if node_links is None:
            links = self.links
            with self._cables_lock, gc_paused():
                node_links = self._node_links
                if node_links is None:
                    node_links = defaultdict(list)
                    for lid in links:
                        node_links[lid[0][0]].append(lid)
                        node_links[lid[1][0]].append(lid)
                    self._node_links = node_links
        return node_links

    def resolve(self, name: str) -> str:
        """A node id for what a finding names: an id, else a host name (GPU findings), else a unique label."""
        if name in self.nodes:
            return name
        if name in self.by_host_name:
            return self.by_host_name[name]
        ids = self.by_label.get(name, [])
        return ids[0] if len(ids) == 1 else name

    def finding_link(self, f: Finding) -> LinkId | None:
        """The cable a finding names, from its node ids and endpoint ports (a slow pair's ends are two
        hosts' ports, not a cable: none)."""
        if f.kind == "pair" or not f.endpoints or len(f.endpoints) != 2:
            return None
        ends = []
        for i, (label, port) in enumerate(f.endpoints):
            nid = f.node_ids[i] if len(f.node_ids) == 2 else None
            if nid is None or nid not in self.nodes:
                ids = self.by_label.get(str(label), [])
                nid = ids[0] if ids else str(label)
            ends.append((nid, int(port)))
        return link_id(ends[0], ends[1])

    def label(self, nid: str) -> str:
        node = self.nodes.get(nid)
        return node["label"] if node else nid

    def link_name(self, lid: LinkId) -> str:
        (a, pa), (b, pb) = lid
        return f"{port_name(self.label(a), pa)} — {port_name(self.label(b), pb)}"

    def is_drained(self, nid: str) -> bool:
        return self.host_name.get(nid) in self.drain_reason

    def drained_hosts(self) -> set[str]:
        """The node ids of the hosts on the report's drain list."""
        return {self.by_host_name[name] for name in self.drain_reason if name in self.by_host_name}

    def link_health(self, lid: LinkId) -> Severity | None:
        """Worst severity of the findings on a cable; a cable the topology shows down is an error."""
        sevs: list[str] = [f.severity for f in self.link_findings.get(lid, ())]
        if lid in self._down:
            sevs.append(Severity.ERROR)
        return worst(sevs)

    def node_health(self, nid: str) -> Severity | None:
        """Worst severity on a node, its links, or its drain entry."""
        return self.unhealthy_nodes().get(nid)

    def unhealthy_nodes(self) -> dict[str, Severity]:
        """Every node with a finding, a cable with one (or down), or a drain entry, and its worst
        severity; computed once from those few, not from every node."""
        if self._health is None:
            sevs: dict[str, list[str]] = defaultdict(list)
            for nid, fs in self.node_findings.items():
                sevs[nid].extend(f.severity for f in fs)
            for lid in {*self.link_findings, *self._down}:
                health = self.link_health(lid)
                if health is not None:
                    sevs[lid[0][0]].append(health)
                    sevs[lid[1][0]].append(health)
            for nid in self.drained_hosts():
                sevs[nid].append(Severity.ERROR)
            self._health = {nid: sev for nid, ss in sevs.items() if (sev := worst(ss)) is not None}
        return self._health

    def unhealthy_links(self) -> dict[LinkId, Severity]:
        """Every cable with a finding or down, and its worst severity."""
        out = {}
        for lid in {*self.link_findings, *self._down}:
            health = self.link_health(lid)
            if health is not None:
                out[lid] = health
        return out

    def findings_of_node(self, nid: str) -> list[Finding]:
        out = {f.id: f for f in self.node_findings.get(nid, ())}
        for lid in self._finding_links.get(nid, ()):  # its cables with findings, in the order it has them
            out.update((f.id, f) for f in self.link_findings[lid])
        return list(out.values())

    def ports_of(self, nid: str) -> list[tuple[LinkId, tuple[str, int], tuple[str, int]]]:
        """A node's cabled ports in port order: ``(link, this end, the far end)``."""
        out = []
        for lid in self.node_links.get(nid, ()):
            mine, other = (lid[0], lid[1]) if lid[0][0] == nid else (lid[1], lid[0])
            out.append((lid, mine, other))
        return sorted(out, key=lambda x: x[1][1])

    def place(self, nid: str) -> str:
        """Where a node sits: its leaf, pod, unit or rail (generator attrs)."""
        attrs = self.nodes.get(nid, {}).get("attrs", {})
        parts = []
        if "leaf" in attrs:
            parts.append(self.label(str(attrs["leaf"])))
        for key in ("pod", "unit", "rail"):
            if key in attrs:
                parts.append(f"{key} {int(attrs[key]) + 1}" if isinstance(attrs[key], int) else f"{key} {attrs[key]}")
        if "level" in attrs:
            parts.append(f"level {attrs['level']}")
        return ", ".join(parts)

    def speed(self, lk: dict[str, Any]) -> str:
        """Trained width x lane rate, and what both ends support when it trained lower."""
        text = f"{lk['lanes']}x{fmt_num(lk['lane_gbps'])} Gb/s"
        max_lane = lk.get("max_lane_gbps") or lk["lane_gbps"]
        if lk.get("max_lanes") and (lk["max_lanes"] != lk["lanes"] or max_lane != lk["lane_gbps"]):
            text += f" (of {lk['max_lanes']}x{fmt_num(max_lane)} Gb/s)"
        return text

    def switch_levels(self) -> list[tuple[str, bool, list[str]]]:
        """The switches by level (:func:`switch_level`), top first: ``(level name, is the top level,
        ids worst first)``."""
        levels: dict[int, list[str]] = defaultdict(list)
        for nid, level in switch_level(self).items():
            levels[level].append(nid)
        top = max(levels, default=0)
        names = LEVEL_NAMES.get(top, {})
        return [
            (names.get(level, f"level {level}"), level == top,
             sorted(levels[level], key=lambda n: (-health_rank(self.node_health(n)), self.label(n))))
            for level in sorted(levels, reverse=True)
        ]


def _level_attributes(index: ReportIndex) -> dict[str, int] | None:
    """The switches' ``level`` attributes when every switch has an integer one, else None."""
    out = {}
    for nid in index.switches:
        level = index.nodes[nid].get("attrs", {}).get("level")
        if not isinstance(level, int):
            return None
        out[nid] = level
    return out


def switch_level(index: ReportIndex) -> dict[str, int]:
    """Each switch's level, the one rule of the TUI (the overview's tree and the map's grids):
    the ``level`` attribute where every switch has one (the generators write it), else
    :func:`~fabricdoc.model.topology.hop_levels`, the rule of ``Fabric.levels``, over the report's
    cabling (hop distance from the hosts, leaf = 1; a switch no host reaches is 1 there too).
    Worked out once per index."""
    cached = index._switch_level
    if cached is None:
        cached = _level_attributes(index)
        if cached is None:  # the fabric model's rule over the report's cabling (no Fabric rebuilt)
            from fabricdoc.model.topology import hop_levels  # networkx, numpy: loaded when needed

            levels = hop_levels({nid: n["kind"] for nid, n in index.nodes.items()},
                                ((lk["a"][0], lk["b"][0]) for lk in index._topo_links))
            cached = {nid: levels.get(nid, 1) for nid in index.switches}
        index._switch_level = cached
    return cached


def switch_level_known(index: ReportIndex) -> bool:
    """Whether :func:`switch_level` answers at once: levels given or worked out already (walking the
    cabling of a large report takes most of a second)."""
    return index._switch_level is not None or _level_attributes(index) is not None
