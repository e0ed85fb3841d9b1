"""The view index: what the TUI shows, computed from a Report, without Textual.

:class:`ReportIndex` is built once per report (nodes, links, findings per
component, health); the functions below turn it into table rows, rich
:class:`~rich.text.Text` blocks and sparkline series. Screens and widgets only
place these on screen, so all of this is testable without a terminal, and
importing this module never loads textual.

Every string that came from the fabric (node descriptions, host names, finding
names, evidence labels, probe errors) goes through :func:`safe`: escaped with
:func:`fabricdoc.model.text.escape` and wrapped in a Text, so it is shown as
typed and never parsed as markup (DataTable cells, Tree labels and Static
parse a plain ``str``).
"""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.text import Text

from fabricdoc.errors import FabricdocError
from fabricdoc.model.evidence import (
    CandidatesEvidence,
    CorruptionEvidence,
    CounterEvidence,
    Evidence,
    FlapEvidence,
    GpuEvidence,
    HostEvidence,
    NcclLogEvidence,
    NotDiscoveredEvidence,
    NotRespondingEvidence,
    SlowPairsEvidence,
    StateEvidence,
    SwitchLinksEvidence,
)
from fabricdoc.model.findings import Finding
from fabricdoc.model.memory import gc_paused
from fabricdoc.model.severity import SEVERITIES, Severity, worst
from fabricdoc.model.text import escape, plural
from fabricdoc.report.figures import (
    alternatives,
    busbw_figures,
    remedy_text,
    throughput_text,
)
from fabricdoc.report.render import evidence_line, expectation_lines
from fabricdoc.report.report import Report

if TYPE_CHECKING:
    from fabricdoc.model.topology import Fabric

LinkId = tuple[tuple[str, int], tuple[str, int]]
"""A cable as its two ``(node id, port)`` ends, sorted."""

SEV_STYLE = {"critical": "bold white on red", "error": "bold red", "warning": "yellow", "info": "cyan", "ok": "green"}
HEALTH_GLYPH = {"critical": "✖", "error": "✖", "warning": "▲", "info": "●", "ok": "●"}
VERDICT_STYLE = {"pass": "bold green", "degraded": "bold yellow", "fail": "bold white on red"}
LEVEL_NAMES = {2: {2: "spines", 1: "leaves"}, 3: {3: "core", 2: "aggregation", 1: "edge (leaves)"}}
NEAR_NOMINAL = 0.97  # a busbw this close to nominal is shown green
IMPACT_LOW = 0.8  # a busbw below this share of nominal is shown red (the report's --slow-ratio when given)


# -- text --------------------------------------------------------------------------

def safe(value: object, style: str = "") -> Text:
    """Untrusted text as a Text: control characters escaped, never parsed as markup."""
    return Text("" if value is None else escape(value), style=style, no_wrap=True, end="")


def sev_text(severity: str | None) -> Text:
    """A severity (or ``ok``) as a coloured label."""
    sev = str(severity or "ok")
    return Text(sev, style=SEV_STYLE.get(sev, ""), end="")


def health_rank(severity: Severity | None) -> int:
    """-1 for healthy, else the severity's rank: what tables sort by."""
    return -1 if severity is None else severity.rank


def health_text(severity: str | None, label: str) -> Text:
    """A glyph and label coloured by health; the label is untrusted and stays literal."""
    state = str(severity or "ok")
    out = Text(f"{HEALTH_GLYPH[state]} ", style=SEV_STYLE.get(state, ""), end="")
    out.append(safe(label, "" if state == "ok" else SEV_STYLE[state]))
    return out


def fmt_gbps(value: float | None) -> str:
    return "—" if value is None else f"{value:,.1f} Gb/s"


def fmt_time(ts: float | None) -> str:
    """Epoch seconds as a UTC time with milliseconds (flap times are close together)."""
    if ts is None:
        return "—"
    try:
        return datetime.fromtimestamp(float(ts), UTC).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3] + "Z"
    except (OverflowError, OSError, ValueError):
        return str(ts)


def fmt_num(value: Any) -> str:
    if isinstance(value, bool) or value is None:
        return str(value)
    if isinstance(value, int):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.6g}"
    return str(value)


def port_name(label: str, port: int | None) -> str:
    return f"{label}[{'?' if port is None else port}]"


# -- the index ---------------------------------------------------------------------

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
            nid: str(n.get("attrs", {}).get("host") or n["label"]) for nid, n in self.nodes.items() if n["kind"] == "host"
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
        """The cable a finding names, from its node ids and endpoint ports."""
        if not f.endpoints or len(f.endpoints) != 2:
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


# -- rows --------------------------------------------------------------------------

@dataclass
class Row:
    """One table row: a stable key, its cells, the lower-case text the filter matches, sort keys."""

    key: str
    cells: tuple[Text, ...]
    search: str
    sort: dict[str, Any]


class Rows(Sequence[Row]):
    """A table's rows, made on demand: the keys up front, each :class:`Row` (its Text cells)
    only when something reads it, so a 200,000-row table costs its keys until it is drawn.

    ``sort`` maps a sort name to a function of the key and ``search`` gives a key's filter
    text, so sorting and filtering need no cells; without them the built Row answers.
    :meth:`subset` shares the built rows (a filtered or sorted view of the same table).
    """

    def __init__(self, keys: Iterable[str], make: Callable[[str], Row], *,
                 sort: dict[str, Callable[[str], Any]] | None = None,
                 search: Callable[[str], str] | None = None) -> None:
        self.keys = list(keys)
        self._make = make
        self._sorts = sort or {}
        self._search = search
        self._built: dict[str, Row] = {}
        self._search_text: dict[str, str] = {}

    @classmethod
    def of(cls, rows: Iterable[Row]) -> Rows:
        """Rows already made (small tables)."""
        rows = list(rows)
        out = cls([r.key for r in rows], lambda key: out._built[key])
        out._built = {r.key: r for r in rows}
        return out

    def __len__(self) -> int:
        return len(self.keys)

    def __getitem__(self, i):  # type: ignore[override]
        if isinstance(i, slice):
            return [self.row(k) for k in self.keys[i]]
        return self.row(self.keys[i])

    def row(self, key: str) -> Row:
        row = self._built.get(key)
        if row is None:
            row = self._built[key] = self._make(key)
        return row

    def search(self, key: str) -> str:
        text = self._search_text.get(key)
        if text is None:
            text = self._search_text[key] = self._search(key) if self._search else self.row(key).search
        return text

    def sort_value(self, key: str, name: str) -> Any:
        fn = self._sorts.get(name)
        return fn(key) if fn is not None else self.row(key).sort.get(name, 0)

    def subset(self, keys: Iterable[str]) -> Rows:
        """These rows in another order or fewer of them, sharing what was built."""
        out = Rows(keys, self._make, sort=self._sorts, search=self._search)
        out._built, out._search_text = self._built, self._search_text
        return out


FINDING_COLUMNS = ("id", "severity", "conf", "kind", "fault", "component", "action", "evidence")  # as the CLI's table
FINDING_SORTS = ("id", "severity", "confidence", "kind", "fault", "name", "action", "evidence")
URGENCY_STYLE = {"now": "bold red", "next maintenance": "yellow", "watch": "cyan"}
URGENCY_ORDER = ("watch", "next maintenance", "now")


def action_of(f: Finding) -> Any:
    """The finding's :class:`~fabricdoc.model.findings.Action` (what to do, who, how soon), or None."""
    return getattr(f, "action", None)


def action_cell(f: Finding) -> Text:
    """The findings table's action cell: how soon, then what to do."""
    action = action_of(f)
    if action is None:
        return Text("—", style="dim", end="")
    out = safe(f"{action.urgency}: ", URGENCY_STYLE.get(str(action.urgency), ""))
    out.append(safe(action.do))
    return out


def action_text(f: Finding) -> Text:
    """A finding's action as the evidence panel and the detail show it: what, who, how soon, why."""
    action = action_of(f)
    out = Text(end="")
    if action is None:
        return out
    out.append("action   ", style="bold")
    out.append(safe(action.do, "bold"))
    out.append("  (")
    out.append(safe(action.who))
    out.append(", ")
    out.append(safe(action.urgency, URGENCY_STYLE.get(str(action.urgency), "")))
    out.append(")")
    if action.why:
        out.append("\n         ")
        out.append(safe(action.why, "dim"))
    out.append("\n")
    return out


def _urgency_rank(f: Finding) -> int:
    action = action_of(f)
    return URGENCY_ORDER.index(action.urgency) if action is not None and action.urgency in URGENCY_ORDER else -1


def finding_rows(index: ReportIndex) -> Rows:
    rows = []
    for f in index.report.findings:
        action = action_of(f)
        rows.append(Row(
            f.id,
            (safe(f.id, "bold"), sev_text(f.severity), safe(f"{f.confidence:.2f}"), safe(f.kind), safe(f.fault),
             safe(f.name), action_cell(f), safe(str(len(f.evidence)))),
            f"{f.id} {f.kind} {f.fault} {f.severity} {f.name} {action.do if action else ''}".lower(),
            {"severity": (f.severity.rank, f.confidence), "confidence": (f.confidence, f.severity.rank),
             "kind": f.kind, "fault": f.fault, "name": f.name, "action": (_urgency_rank(f), f.severity.rank),
             "id": f.id, "evidence": len(f.evidence)},
        ))
    return Rows.of(rows)


HOST_COLUMNS = ("host", "where", "ports", "health", "drain", "findings")


def host_rows(index: ReportIndex) -> Rows:
    """Every host, made as drawn; sorted by ``health`` the worst come first."""
    bad = index.unhealthy_nodes()

    def search(nid: str) -> str:
        n = index.nodes[nid]
        sev = bad.get(nid)
        drain = "drain" if index.is_drained(nid) else ""
        return f"{n['label']} {index.host_name[nid]} {nid} {index.place(nid)} {sev or 'ok'} {drain}".lower()

    def make(nid: str) -> Row:
        n = index.nodes[nid]
        sev = bad.get(nid)
        drain = "drain" if index.is_drained(nid) else ""
        return Row(
            nid,
            (health_text(sev, n["label"]), safe(index.place(nid)), safe(str(n["ports"])), sev_text(sev),
             safe(drain, "bold red"), safe(", ".join(f.id for f in index.findings_of_node(nid)))),
            search(nid),
            {"health": -health_rank(sev), "name": n["label"]},
        )

    return Rows(index.hosts, make, search=search,
                sort={"health": lambda nid: -health_rank(bad.get(nid)), "name": index.label})


LINK_COLUMNS = ("end a", "end b", "speed", "state", "health", "findings")


def link_rows(index: ReportIndex) -> Rows:
    """Every cable, made as drawn; sorted by ``health`` the worst come first."""
    bad = {link_key(lid): -health_rank(sev) for lid, sev in index.unhealthy_links().items()}

    def search(key: str) -> str:
        lid = key_to_link(key)
        fs = index.link_findings.get(lid, [])
        sev = index.link_health(lid) if key in bad else None
        return (f"{index.link_name(lid)} {index.links[lid].get('state', 'up')} {sev or 'ok'} "
                f"{' '.join(f.fault for f in fs)}").lower()

    def make(key: str) -> Row:
        lid = key_to_link(key)
        (a, pa), (b, pb) = lid
        lk = index.links[lid]
        sev = index.link_health(lid) if key in bad else None
        fs = index.link_findings.get(lid, [])
        state = lk.get("state", "up")
        return Row(
            key,
            (health_text(sev, port_name(index.label(a), pa)), safe(port_name(index.label(b), pb)),
             safe(index.speed(lk)), safe(state, "red" if state == "down" else ""), sev_text(sev),
             safe(", ".join(f.label for f in fs))),
            search(key),
            {"health": -health_rank(sev)},
        )

    return Rows(map(link_key, index.links), make, search=search, sort={"health": lambda key: bad.get(key, 1)})


PORT_COLUMNS = ("port", "peer", "speed", "state", "health", "findings")


def port_rows(index: ReportIndex, nid: str) -> Rows:
    """A node's cabled ports (its detail screen), keyed like :func:`link_rows`."""
    rows = []
    for lid, mine, other in index.ports_of(nid):
        lk = index.links[lid]
        sev = index.link_health(lid)
        fs = index.link_findings.get(lid, [])
        rows.append(Row(
            link_key(lid),
            (health_text(sev, str(mine[1])), safe(port_name(index.label(other[0]), other[1])), safe(index.speed(lk)),
             safe(lk.get("state", "up")), sev_text(sev), safe(", ".join(f.label for f in fs))),
            "", {},
        ))
    return Rows.of(rows)


def port_label(index: ReportIndex, lid: LinkId, mine: tuple[str, int], other: tuple[str, int]) -> Text:
    """One port under its node in the fabric tree: ``p5 → spine01[1]  4x100``."""
    label = health_text(index.link_health(lid), f"p{mine[1]} → {port_name(index.label(other[0]), other[1])}")
    label.append(f"  {index.speed(index.links[lid])}", style="dim")
    return label


WHATIF_COLUMNS = ("drain", "host", "where", "health")


def drain_mark(drained: bool) -> Text:
    return Text("[x] drain", style="bold red", end="") if drained else Text("[ ]", style="dim", end="")


def whatif_rows(index: ReportIndex, drained: set[str]) -> Rows:
    """Every host with its what-if drain mark (``drained`` is read as each row is made);
    sorted by ``health`` the drained come first, then the worst."""
    bad = index.unhealthy_nodes()

    def search(nid: str) -> str:
        return f"{index.label(nid)} {index.host_name[nid]} {index.place(nid)} {bad.get(nid) or 'ok'}".lower()

    def health(nid: str) -> tuple[bool, int]:
        return (nid not in drained, -health_rank(bad.get(nid)))

    def make(nid: str) -> Row:
        sev = bad.get(nid)
        return Row(
            nid,
            (drain_mark(nid in drained), health_text(sev, index.label(nid)), safe(index.place(nid)), sev_text(sev)),
            search(nid),
            {"health": health(nid)},
        )

    return Rows(index.hosts, make, search=search, sort={"health": health})


# -- evidence and findings ---------------------------------------------------------

def evidence_text(index: ReportIndex, evidence: Iterable[Evidence]) -> Text:
    """The evidence behind a finding, one item per line: counters with rates, states, flaps, tests, GPUs."""
    out = Text(end="")
    items = list(evidence)
    if not items:
        out.append("no evidence recorded\n", style="dim")
    for ev in items:
        out.append(f"{ev.kind:<9}", style="bold")
        out.append(_evidence_line(index, ev))
        out.append("\n")
    return out


def _evidence_line(index: ReportIndex, ev: Evidence) -> Text:
    out = Text(end="")
    indent = "\n" + " " * 10
    if isinstance(ev, CounterEvidence):
        out.append(safe(port_name(ev.node, ev.port) + " "))
        out.append(safe(ev.counter, "bold"))
        out.append(f"  Δ {'≥ ' if ev.at_least else ''}{fmt_num(ev.delta)}")
        if ev.per_second is not None:
            out.append(f"  ({fmt_num(ev.per_second)}/s)", style="magenta")
        if ev.interval_s is not None:
            out.append(f"  over {fmt_num(ev.interval_s)} s", style="dim")
        if ev.raw:
            out.append(safe(f"  raw: {', '.join(ev.raw)}", "dim"))
        if ev.at_least:
            out.append("  (at least: the counter saturated)", style="yellow")
        if ev.reset:
            out.append("  (counter was reset)", style="yellow")
    elif isinstance(ev, StateEvidence):
        if ev.node is not None:
            out.append(safe(port_name(ev.node, ev.port)))
        else:
            out.append("as the fabric describes it", style="dim")
        for value in (ev.state, ev.phys_state):
            if value:
                out.append("  ")
                out.append(safe(value, "bold"))
        if ev.lanes is not None:
            out.append(f"  {ev.lanes}x of {ev.supported_lanes if ev.supported_lanes is not None else '?'}x lanes")
        if ev.lane_gbps is not None:
            out.append(f"  lanes at {fmt_gbps(ev.lane_gbps)} of {fmt_gbps(ev.supported_lane_gbps)}")
        if ev.source:
            out.append(safe(f"  ({ev.source})", "dim"))
    elif isinstance(ev, FlapEvidence):
        out.append(f"{ev.flaps} link-down event{'s' if ev.flaps != 1 else ''}")
        if ev.per_minute is not None:
            out.append(f"  ({fmt_num(ev.per_minute)}/min)", style="magenta")
        out.append(f"  first {fmt_time(ev.first)}  last {fmt_time(ev.last)}")
    elif isinstance(ev, SlowPairsEvidence):
        if ev.slow_pairs and all(s.status == "hung" for s in ev.slow_pairs):
            out.append(f"{ev.slow} of {ev.tests} tests or job connections never finished (hung or failed)")
        else:
            out.append(f"{ev.slow} of {ev.tests} tests slow  worst ratio {ev.worst_ratio:.2f}"
                       f"  median {ev.median_ratio:.2f} of the line rate")
        if ev.median_relative is not None:
            healthy = f" (healthy tests reach {ev.healthy_efficiency:.2f})" if ev.healthy_efficiency else ""
            out.append(f"  {ev.median_relative:.2f} of what healthy tests reach{healthy}")
        if ev.suspect_only:
            out.append("  low, not clearly slow: a suspect to re-test", style="yellow")
        if ev.equivalent_suspects > 1:
            out.append(f"  {ev.equivalent_suspects} equally likely suspects", style="yellow")
        for (a, pa), (b, pb) in ev.alternatives:
            out.append(indent + "or ")
            out.append(safe(index.link_name(link_id((a, pa), (b, pb))), "yellow"))
        for p in ev.slow_pairs:
            out.append(indent)
            out.append(safe(f"{port_name(*p.src)} → {port_name(*p.dst)}"))
            # A test listed here ran (status ok) and read low: say "slow", never "ok".
            state = "slow" if p.status == "ok" else p.status
            out.append(f"  {state}  {fmt_gbps(p.busbw_gbps)} of {fmt_gbps(p.expected_gbps)}")
            if p.ratio is not None:
                out.append(f"  ratio {p.ratio:.2f}", style="yellow" if ev.suspect_only else "red")
            if p.relative is not None:
                out.append(f"  {p.relative:.2f} of healthy", style="yellow" if ev.suspect_only else "red")
    elif isinstance(ev, CorruptionEvidence):
        out.append(f"{ev.wrong_pairs} test{'s' if ev.wrong_pairs != 1 else ''} with wrong data")
        for src, dst, wrong in ev.pairs:
            out.append(indent)
            out.append(safe(f"{src} ↔ {dst}"))
            out.append(f"  {fmt_num(wrong)} wrong elements", style="red")
    elif isinstance(ev, SwitchLinksEvidence):
        out.append(f"{ev.links_bad} of {ev.links_total} links with findings, {ev.links_down} down")
    elif isinstance(ev, NotRespondingEvidence | NotDiscoveredEvidence):
        out.append(evidence_line(ev), style="red")  # already escaped, and rich Text reads no markup
    elif isinstance(ev, CandidatesEvidence):
        out.append("could be ", style="yellow")
        for i, cand in enumerate(ev.candidates):
            out.append(" or " if i else "")
            out.append(safe(cand, "yellow"))
        out.append(indent)
        out.append(safe(ev.tell_apart))
        for (a, pa), (b, pb) in ev.tests:
            out.append(indent + "re-test ")
            out.append(safe(f"{port_name(a, pa)} → {port_name(b, pb)}", "cyan"))
    elif isinstance(ev, GpuEvidence):
        out.append(safe(ev.uuid or "GPU (no UUID)"))
        for problem in ev.problems:
            out.append(indent)
            out.append(safe(problem, "red"))
    elif isinstance(ev, HostEvidence):
        out.append(safe(f"{ev.check} {ev.subject}", "yellow"))
        out.append(indent)
        out.append(safe(ev.reason + (f" (x{ev.count})" if ev.count > 1 else ""), "red"))
    elif isinstance(ev, NcclLogEvidence):
        out.append(safe(f"{ev.reason} on {ev.host}", "yellow"))
        out.append(indent)
        out.append(safe(f"{ev.source}:{ev.line_no}: {ev.line[:200]}"))
    return out


def finding_text(index: ReportIndex, f: Finding) -> Text:
    """One finding as the findings tab shows it: what, where, how sure, and its evidence."""
    text = Text(end="")
    text.append(f"{f.id}  ", style="bold")
    text.append(sev_text(f.severity))
    text.append(f"  {f.kind} {f.fault}  confidence {f.confidence:.2f}  ")
    text.append(safe(f.name, "bold"))
    if f.endpoints:
        text.append("\nends     ")
        text.append(safe("  ↔  ".join(port_name(label, port) for label, port in f.endpoints)))
    text.append("\nkey      ")
    text.append(safe(f.key, "dim"))  # the same in every sweep: what Slurm reasons and metrics carry
    text.append("\n")
    text.append(action_text(f))
    text.append(evidence_text(index, f.evidence))
    return text


def findings_text(index: ReportIndex, findings: Sequence[Finding]) -> Text:
    """The findings on one component with their evidence (the detail screen)."""
    text = Text(end="")
    for f in findings:
        text.append(f"{f.id} ", style="bold")
        text.append(sev_text(f.severity))
        text.append(f" {f.fault} ({f.confidence:.2f})  ")
        text.append(safe(f.name))
        text.append("\n")
        text.append(action_text(f))
        text.append(evidence_text(index, f.evidence))
    if not findings:
        text.append("none: this component is healthy in this report\n", style="green")
    return text


def detail_title(index: ReportIndex, node: str | None = None, link: LinkId | None = None,
                 finding: Finding | None = None) -> str:
    if link is not None:
        return f"link {escape(index.link_name(link))}"
    if node is not None:
        return f"{index.nodes.get(node, {}).get('kind', 'node')} {escape(index.label(node))}"
    if finding is not None:
        return f"finding {finding.id} {escape(finding.name)}"
    return ""


def link_summary(index: ReportIndex, lid: LinkId) -> Text:
    lk = index.links.get(lid)
    out = Text(end="")
    out.append("link  ", style="bold")
    out.append(safe(index.link_name(lid)))
    if lk is not None:
        nominal = (lk.get("max_lanes") or lk["lanes"]) * (lk.get("max_lane_gbps") or lk["lane_gbps"])
        out.append(f"\nspeed {index.speed(lk)} = {fmt_gbps(lk['lanes'] * lk['lane_gbps'])}"
                   f"  nominal {fmt_gbps(nominal)}  state ")
        out.append(safe(lk.get("state", "up")))
    out.append("\nhealth ")
    out.append(sev_text(index.link_health(lid)))
    return out


def node_summary(index: ReportIndex, nid: str) -> Text:
    n = index.nodes.get(nid, {"kind": "node", "label": nid, "ports": "?"})
    out = Text(end="")
    out.append(f"{n['kind']}  ", style="bold")
    out.append(safe(n["label"]))
    out.append("\nid ")
    out.append(safe(nid, "dim"))
    if n.get("guid"):
        out.append(safe(f"  guid {n['guid']}", "dim"))
    out.append(f"\nports {n['ports']}  ")
    out.append(safe(index.place(nid)))
    out.append("\nhealth ")
    out.append(sev_text(index.node_health(nid)))
    reason = index.drain_reason.get(index.host_name.get(nid, ""))
    if reason:
        out.append("\ndrain: ", style="bold red")
        out.append(safe(reason))
    return out


# -- overview ----------------------------------------------------------------------

def overview_text(index: ReportIndex) -> Text:
    """Verdict, fabric size, findings by kind and severity, busbw, drain count, tests and probe health."""
    rep = index.report
    out = Text(end="")
    out.append("verdict  ")
    out.append(rep.verdict.upper(), style=VERDICT_STYLE.get(rep.verdict, "bold"))
    out.append("\nfabric   ")
    out.append(safe(rep.fabric.get("name")))
    out.append(safe(f"  ({rep.fabric.get('source', '')})", "dim"))
    out.append(f"\n         {rep.fabric.get('hosts', 0):,} hosts · {rep.fabric.get('switches', 0):,} switches"
               f" · {rep.fabric.get('links', 0):,} links")
    out.append(f"\nmade     {rep.generated_at}\n\n")
    out.append("findings by kind\n", style="bold underline")
    counts = Counter((f.kind, str(f.severity)) for f in rep.findings)
    kinds = sorted({k for k, _ in counts})
    sevs = list(reversed(SEVERITIES))
    out.append(f"{'':8}" + "".join(f"{s:>10}" for s in sevs) + "\n", style="dim")
    for k in kinds:
        out.append(f"{k:8}")
        for s in sevs:
            n = counts.get((k, s), 0)
            out.append(f"{n:>10}", style=SEV_STYLE[s] if n else "dim")
        out.append("\n")
    if not kinds:
        out.append("none\n", style="green")
    if isinstance((rep.impact or {}).get("allreduce_busbw_gbps"), dict):
        out.append("\nAllReduce busbw  ", style="bold")
        out.append(" · ".join(f"{fig.label} {fmt_gbps(fig.gbps)}" for fig in busbw_figures(rep.impact, len(rep.drain))))
        out.append("\n")
    bad_links = len(index.unhealthy_links())
    out.append(f"\nlinks with findings {bad_links:,} of {index.link_count:,}\n")
    out.append(f"hosts to drain      {len(rep.drain):,}\n", style="bold red" if rep.drain else "")
    t = rep.tests
    out.append("\ntests\n", style="bold underline")
    out.append(f"pairs {t.get('pairs_tested', 0):,} tested · {t.get('pairs_slow', 0):,} slow · "
               f"{t.get('pairs_hung', 0):,} hung · {t.get('pairs_wrong', 0):,} corrupt · "
               f"{t.get('pairs_error', 0):,} could not run\n")
    out.append(f"ports sampled {t.get('ports_sampled', 0):,} · rounds {t.get('rounds')} · "
               f"duration {fmt_num(t.get('duration_s'))} s\n")
    for line in expectation_lines(rep.expectations):  # what "slow" was judged against
        out.append(safe(line, "dim"))
        out.append("\n")
    for why in (rep.expectations or {}).get("contradictions") or []:
        out.append(safe(f"measurements contradict the topology: {why}", "bold yellow"))
        out.append("\n")
    status = Counter(str(p.get("status")) for p in rep.probes)
    if status:
        out.append("probes  " + " · ".join(f"{n} {s}" for s, n in sorted(status.items())) + "\n")
        for p in [p for p in rep.probes if p.get("status") != "ok"][:5]:
            out.append(safe(f"  {p.get('probe')} {p.get('target')}: {p.get('status')} {p.get('error') or ''}", "yellow"))
            out.append("\n")
    if not index.has_topology:
        out.append("\nthis report has no topology section: no tree, hosts or links\n", style="yellow")
    return out


# -- history -----------------------------------------------------------------------

BANDWIDTH_SERIES = "bandwidth tests (Gb/s, by round)"
BYTES_AS_GBPS = 8 / 1e9  # a bytes-per-second rate as Gb/s


class Series(list[float]):
    """A time series: the values oldest first (it is their list), with ``times`` (epoch seconds,
    when each was measured) and ``unit``."""

    def __init__(self, values: Iterable[float] = (), times: Iterable[float] = (), unit: str = "") -> None:
        super().__init__(values)
        self.times = tuple(times)
        self.unit = unit


def time_span(times: Sequence[float]) -> str:
    """The first and last time of a series, the second without the date when it is the same day."""
    if not times:
        return ""
    first, last = fmt_time(times[0]), fmt_time(times[-1])
    if len(times) == 1:
        return first
    if first[:10] == last[:10]:
        last = last[11:]
    return f"{first} → {last}"


def history_series(index: ReportIndex, nid: str, port: int | None = None) -> dict[str, list[float]]:
    """The busbw of a host's (or one port's) bandwidth tests in this report, round by round.

    Empty for a switch, or when the host has fewer than two measured tests.
    """
    if index.nodes.get(nid, {}).get("kind") != "host":
        return {}
    label = index.label(nid)
    per_round: dict[int, list[float]] = defaultdict(list)
    for p in index.report.pairs:
        ends = (p["src"], p["dst"])
        if p.get("busbw_gbps") is not None and any(e[0] == label and (port is None or e[1] == port) for e in ends):
            per_round[int(p.get("round", 0))].append(float(p["busbw_gbps"]))
    values = [v for r in sorted(per_round) for v in per_round[r]]
    return {BANDWIDTH_SERIES: values} if len(values) > 1 else {}


def store_series(path: Path | None, index: ReportIndex, nid: str, port: int | None = None,
                 limit: int = 8) -> tuple[dict[str, list[float]], str | None]:
    """Counter rates of a node (or one port) across past sweeps in the history store.

    Returns :class:`Series` with the time each rate's interval ended (per second, data
    counters as Gb/s; oldest first; flat-zero series left out; the counters the findings
    name first, then the bandwidth; at most ``limit``) and a note when the store could not
    be read. Never creates the store.
    """
    if path is None or not Path(path).is_file():
        return {}, None
    try:
        from fabricdoc.report.history import History  # pandas: loaded only when a store is there

        with History(path, create=False) as store:
            df = store.counter_rates(node=nid)
    except (FabricdocError, sqlite3.Error, OSError) as exc:
        return {}, f"history store {escape(path)}: {escape(exc)}"
    if port is not None:
        df = df[df["port"] == port]
    out: dict[str, list[float]] = {}
    label = index.label(nid)
    named = {ev.counter for f in index.findings_of_node(nid) for ev in f.evidence if isinstance(ev, CounterEvidence)}

    def first(item: tuple[tuple[Any, str], Any]) -> tuple[int, Any, str]:
        """The counters the findings name first, then the bandwidth, then the rest by name."""
        (p, counter), _ = item
        return (0 if counter in named else 1 if str(counter).endswith("_bytes") else 2, p, str(counter))

    groups = sorted(df.sort_values("t1").groupby(["port", "counter"], sort=True), key=first)
    for (p, counter), g in groups:
        values = [float(v) for v in g["per_second"]]
        if not any(values):
            continue
        times = [float(t) for t in g["t1"]]  # each rate is over the interval that ends at its sweep
        if str(counter).endswith("_bytes"):  # data moved: the port's bandwidth
            out[f"{port_name(label, int(p))} {counter} as Gb/s ({len(values)} intervals)"] = Series(
                [v * BYTES_AS_GBPS for v in values], times, "Gb/s")
        else:
            out[f"{port_name(label, int(p))} {counter} (per second, {len(values)} intervals)"] = Series(
                values, times, "per second")
    return dict(list(out.items())[:limit]), None


# -- impact ------------------------------------------------------------------------

def _fraction_style(ratio: float, slow_ratio: float | None) -> str:
    low = IMPACT_LOW if slow_ratio is None else slow_ratio
    return "green" if ratio >= NEAR_NOMINAL else "yellow" if ratio >= low else "red"


def impact_text(report: Report, live: dict[str, float] | None) -> Text:
    """The report's impact section (or the model's live figures): busbw nominal / now / after drain.

    A figure below 0.8 of nominal (the report's --slow-ratio when it was given) is red.
    """
    imp = report.impact or {}
    out = Text(end="")
    head = imp.get("allreduce_busbw_gbps") or live
    alg = imp.get("algorithm", "ring")
    out.append(f"AllReduce bus bandwidth ({alg}", style="bold")
    if "job_hosts" in imp:
        rails = imp.get("rails")
        out.append(f", {imp['job_hosts']:,} hosts, " + (plural(rails, "rail") if isinstance(rails, int) else "? rails"),
                   style="bold")
    out.append(")\n", style="bold")
    if not head:
        out.append("the report carries no impact section\n", style="dim")
        return out
    figures = busbw_figures(imp if imp.get("allreduce_busbw_gbps") else {"allreduce_busbw_gbps": live},
                            len(report.drain))
    for fig in figures:
        out.append(f"  {fig.label:<24}")
        out.append(f"{fmt_gbps(fig.gbps):>14}", style="bold" if fig.key != "nominal" else "")
        if fig.key != "nominal" and fig.of_nominal is not None:
            out.append(f"  {fig.of_nominal:6.1%} of nominal", style=_fraction_style(fig.of_nominal, report.slow_ratio))
        out.append("\n")
    rec = imp.get("recommendation")
    if isinstance(rec, dict) and rec:
        out.append("  recommended remedy: ")
        out.append(safe(remedy_text(rec)))
        out.append(f"\n    {rec.get('hosts', '?')} hosts, {throughput_text(rec.get('throughput_fraction'))}\n", style="dim")
    for alg_name, fig in (imp.get("by_algorithm") or {}).items():
        if alg_name == alg or not isinstance(fig, dict) or "nominal" not in fig:
            continue
        shown = busbw_figures({"allreduce_busbw_gbps": fig}, len(report.drain))
        out.append(f"  {alg_name}: " + " · ".join(f"{f.label} {fmt_gbps(f.gbps)}" for f in shown) + "\n", style="dim")
    bottleneck = ((imp.get("by_algorithm") or {}).get(alg) or {}).get("bottleneck_now")
    if isinstance(bottleneck, dict) and bottleneck.get("capacity_gbps") is not None:
        out.append("  bottleneck now: ")
        out.append(safe(bottleneck.get("direction") or bottleneck.get("reason") or "?"))
        flows = bottleneck.get("flows")
        out.append(f"  {fmt_gbps(bottleneck.get('capacity_gbps'))} over "
                   + (plural(flows, "flow") if isinstance(flows, int) else "? flows"))
        if bottleneck.get("finding"):
            out.append(safe(f"  ({bottleneck['finding']} {bottleneck.get('reason') or ''})", "dim"))
        out.append("\n")
    for w in alternatives(imp)[:3]:
        out.append("  alternative: ")
        out.append(safe(remedy_text(w)))
        out.append(f" → {fmt_gbps(w.get('busbw_gbps'))}, {w.get('hosts', '?')} hosts, "
                   f"{throughput_text(w.get('throughput_fraction'), basis=False)}\n")
    job = imp.get("job")
    if isinstance(job, dict):
        out.append(_job_line(job))
    return out


def _job_line(job: dict[str, Any]) -> Text:
    def num(key: str) -> float | None:
        value = job.get(key)
        return value if isinstance(value, int | float) else None

    parts = [f"{job['n_hosts']:,} hosts" if "n_hosts" in job else "", f"{fmt_num(job['hours'])} h" if "hours" in job else ""]
    facts = []
    if (p := num("failure_probability")) is not None:
        facts.append(f"failure probability {p:.1%}")
    if (m := num("mtbf_hours")) is not None:
        facts.append(f"MTBF {m:,.0f} h")
    if (c := num("recommended_checkpoint_minutes")) is not None:
        facts.append(f"checkpoint every {c:,.0f} min")
    if (lost := num("expected_lost_hours")) is not None:
        facts.append(f"expected loss {lost:,.2f} h")
    out = safe(f"  job ({', '.join(p for p in parts if p)}): " + " · ".join(facts), "dim")
    out.append("\n")
    return out


def whatif_head(drained: int, isolated: int = 0) -> Text:
    out = Text(f"what-if: drain {drained} host{'s' if drained != 1 else ''}", style="bold", end="")
    if isolated:
        out.append(f", take {isolated} link{'s' if isolated != 1 else ''} out of service", style="bold")
    out.append(" (d toggles, i: the links with findings, r resets)\n", style="bold")
    return out


def whatif_text(index: ReportIndex, drained: int, result: dict[str, Any], live: dict[str, float] | None,
                isolated: int = 0) -> Text:
    """An :meth:`ImpactModel.what_if` result: predicted ring busbw against nominal and draining nothing."""
    out = whatif_head(drained, isolated)
    if "error" in result:
        out.append(safe(f"the impact model failed: {result['error']}", "red"))
        return out
    bw = result.get("busbw_gbps")
    live = live or {}
    out.append("predicted ring busbw  ")
    out.append(fmt_gbps(bw), style="bold")
    if isinstance(bw, int | float) and live.get("nominal"):
        out.append(f"   {bw / live['nominal']:.0%} of nominal {fmt_gbps(live['nominal'])}")
    if isinstance(bw, int | float) and live.get("now") is not None:
        change = bw - live["now"]
        out.append(f"   {change:+,.1f} Gb/s vs draining nothing",
                   style="green" if change > 0 else "red" if change < 0 else "dim")
    out.append("\n")
    if "hosts" in result:
        out.append(f"hosts kept            {result['hosts']:,} of {len(index.hosts):,}\n")
    if "throughput_fraction" in result:
        out.append(f"{throughput_text(result['throughput_fraction'])}\n")
    for (a, pa), (b, pb) in result.get("isolate") or []:
        out.append("out of service        ")
        out.append(safe(f"{port_name(str(a), pa)} — {port_name(str(b), pb)}", "yellow"))
        out.append("  (routes recomputed around it)\n", style="dim")
    return out
