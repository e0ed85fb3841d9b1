"""Screens of the fabricdoc TUI: overview, findings, hosts, links, impact what-if, detail, sweep.

Screens only read a :class:`~fabricdoc.report.Report` (through a
:class:`ReportIndex` built once) or, for the sweep screen, call the sweep
function they were handed in a worker thread. Fabric-provided text goes
through :func:`~fabricdoc.tui.widgets.safe` so it is never parsed as markup.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rich.text import Text
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import (
    Footer,
    Header,
    Input,
    Label,
    ProgressBar,
    RichLog,
    TabbedContent,
    TabPane,
    Tree,
)
from textual.worker import get_current_worker

from fabricdoc.errors import FabricdocError
from fabricdoc.model import Finding
from fabricdoc.report import Report

from .widgets import (
    HEALTH_GLYPH,
    SEV_RANK,
    SEV_STYLE,
    HistoryView,
    Panel,
    ReportTable,
    Row,
    evidence_text,
    fmt_gbps,
    fmt_num,
    safe,
    sev_text,
)

LinkId = tuple[tuple[str, int], tuple[str, int]]
LEVEL_NAMES = {2: {2: "spines", 1: "leaves"}, 3: {3: "core", 2: "aggregation", 1: "edge (leaves)"}}


def worst(severities: Any) -> str | None:
    """The most severe of some severities, or None when there are none."""
    best = None
    for s in severities:
        if best is None or SEV_RANK[s] > SEV_RANK[best]:
            best = s
    return best


def link_id(a: tuple[str, int], b: tuple[str, int]) -> LinkId:
    a, b = (str(a[0]), int(a[1])), (str(b[0]), int(b[1]))
    return (a, b) if a <= b else (b, a)


class ReportIndex:
    """Lookups the screens need, built once per report: nodes, links, findings per component."""

    def __init__(self, report: Report) -> None:
        self.report = report
        topo = report.topology or {"nodes": [], "links": []}
        self.has_topology = bool(report.topology)
        self.nodes: dict[str, dict[str, Any]] = {n["id"]: n for n in topo["nodes"]}
        self.by_label: dict[str, list[str]] = defaultdict(list)
        for n in topo["nodes"]:
            self.by_label[n["label"]].append(n["id"])
        self.links: dict[LinkId, dict[str, Any]] = {}
        self.node_links: dict[str, list[LinkId]] = defaultdict(list)
        for lk in topo["links"]:
            lid = link_id(lk["a"], lk["b"])
            self.links[lid] = lk
            self.node_links[lid[0][0]].append(lid)
            self.node_links[lid[1][0]].append(lid)
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
            ids = [n for n in f.node_ids if f.kind == "switch" or self.nodes.get(n, {}).get("kind") != "switch"]
            for nid in ids or f.node_ids:
                self.node_findings[nid].append(f)
        self.host_name = {
            nid: str(n.get("attrs", {}).get("host") or n["label"]) for nid, n in self.nodes.items() if n["kind"] == "host"
        }
        self.drain_reason = {d.node: d.reason for d in report.drain}
        self.hosts = [nid for nid, n in self.nodes.items() if n["kind"] == "host"]
        self.switches = [nid for nid, n in self.nodes.items() if n["kind"] == "switch"]
        self._health: dict[str, str | None] = {}

    def finding_link(self, f: Finding) -> LinkId | None:
        """The cable a link finding names, from its node ids and endpoint ports."""
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
        return f"{self.label(a)}[{pa}] — {self.label(b)}[{pb}]"

    def link_health(self, lid: LinkId) -> str | None:
        lk = self.links.get(lid)
        sev = worst(f.severity for f in self.link_findings.get(lid, ()))
        if lk is not None and lk.get("state") == "down":
            sev = worst([sev or "info", "error"])
        return sev

    def node_health(self, nid: str) -> str | None:
        """Worst severity on a node, its links, or its drain entry (cached: the tables ask per row)."""
        if nid in self._health:
            return self._health[nid]
        sevs = [f.severity for f in self.node_findings.get(nid, ())]
        for lid in self.node_links.get(nid, ()):
            if lid in self.link_findings or self.links[lid].get("state") == "down":
                sevs.append(self.link_health(lid) or "info")
        if self.drain_reason and self.host_name.get(nid) in self.drain_reason:
            sevs.append("error")
        self._health[nid] = out = worst(sevs)
        return out

    def findings_of_node(self, nid: str) -> list[Finding]:
        out = {f.id: f for f in self.node_findings.get(nid, ())}
        for lid in self.node_links.get(nid, ()):
            out.update((f.id, f) for f in self.link_findings.get(lid, []))
        return list(out.values())

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
        text = f"{lk['lanes']}x{fmt_num(lk['lane_gbps'])}"
        if lk.get("max_lanes") and (lk["max_lanes"] != lk["lanes"] or (lk.get("max_lane_gbps") or lk["lane_gbps"]) != lk["lane_gbps"]):
            text += f" (of {lk['max_lanes']}x{fmt_num(lk.get('max_lane_gbps') or lk['lane_gbps'])})"
        return text


def health_text(sev: str | None, label: str) -> Text:
    """A glyph and label coloured by health; the label is untrusted and stays literal."""
    state = sev or "ok"
    out = Text(f"{HEALTH_GLYPH[state]} ", style=SEV_STYLE.get(state, ""), end="")
    out.append(safe(label, "" if state == "ok" else SEV_STYLE[state]))
    return out


# -- rows ------------------------------------------------------------------------

def finding_rows(index: ReportIndex) -> list[Row]:
    rows = []
    for f in index.report.findings:
        rows.append(Row(
            f.id,
            (sev_text(f.severity), safe(f"{f.confidence:.2f}"), safe(f.kind), safe(f.fault), safe(f.name),
             safe(f.id, "dim"), safe(str(len(f.evidence)))),
            f"{f.id} {f.kind} {f.fault} {f.severity} {f.name}".lower(),
            {"severity": (SEV_RANK[f.severity], f.confidence), "confidence": (f.confidence, SEV_RANK[f.severity]),
             "kind": f.kind, "fault": f.fault, "name": f.name, "id": f.id},
        ))
    return rows


def host_rows(index: ReportIndex) -> list[Row]:
    rows = []
    for nid in index.hosts:
        n = index.nodes[nid]
        name = index.host_name[nid]
        sev = index.node_health(nid)
        fs = index.findings_of_node(nid)
        drain = "drain" if name in index.drain_reason else ""
        rows.append(Row(
            nid,
            (health_text(sev, n["label"]), safe(index.place(nid)), safe(str(n["ports"])), sev_text(sev),
             safe(drain, "bold red"), safe(", ".join(f.id for f in fs))),
            f"{n['label']} {name} {nid} {index.place(nid)} {sev or 'ok'} {drain}".lower(),
            {"health": -SEV_RANK.get(sev or "", -1), "name": n["label"]},
        ))
    return rows


def link_rows(index: ReportIndex) -> list[Row]:
    rows = []
    for lid, lk in index.links.items():
        (a, pa), (b, pb) = lid
        sev = index.link_health(lid)
        fs = index.link_findings.get(lid, [])
        rows.append(Row(
            f"{a}\x1f{pa}\x1f{b}\x1f{pb}",
            (health_text(sev, f"{index.label(a)}[{pa}]"), safe(f"{index.label(b)}[{pb}]"), safe(index.speed(lk)),
             safe(lk.get("state", "up"), "red" if lk.get("state") == "down" else ""), sev_text(sev),
             safe(", ".join(f"{f.id} {f.fault}" for f in fs))),
            f"{index.link_name(lid)} {lk.get('state', 'up')} {sev or 'ok'} {' '.join(f.fault for f in fs)}".lower(),
            {"health": -SEV_RANK.get(sev or "", -1)},
        ))
    return rows


def key_to_link(key: str) -> LinkId:
    a, pa, b, pb = key.split("\x1f")
    return link_id((a, int(pa)), (b, int(pb)))


def history_series(index: ReportIndex, nid: str, port: int | None = None) -> dict[str, list[float]]:
    """Counter and bandwidth history for a node (or one port) from what the report carries.

    Series are evidence values given as lists (``history``/``samples``/``series``)
    and the bandwidth of this host's tests by round; empty when there is none.
    """
    out: dict[str, list[float]] = {}
    label = index.label(nid)
    for f in index.findings_of_node(nid):
        for ev in f.evidence:
            d = ev.detail
            if d.get("node") not in (None, label, nid) or (port is not None and d.get("port") not in (None, port)):
                continue
            for key in ("history", "samples", "series"):
                values = d.get(key)
                if isinstance(values, list) and values and all(isinstance(v, int | float) for v in values):
                    name = f"{d.get('node', label)}[{d.get('port', '?')}] {d.get('counter', key)}"
                    out[name] = [float(v) for v in values]
    if index.nodes.get(nid, {}).get("kind") == "host":
        per_round: dict[int, list[float]] = defaultdict(list)
        for p in index.report.pairs:
            ends = (p["src"], p["dst"])
            if any(e[0] == label and (port is None or e[1] == port) for e in ends) and p.get("busbw_gbps") is not None:
                per_round[int(p.get("round", 0))].append(float(p["busbw_gbps"]))
        if len(per_round) > 1 or sum(len(v) for v in per_round.values()) > 1:
            out["bandwidth tests (Gb/s, by round)"] = [v for r in sorted(per_round) for v in per_round[r]]
    return out


def store_series(path: Path | None, index: ReportIndex, nid: str, port: int | None = None,
                 limit: int = 8) -> tuple[dict[str, list[float]], str | None]:
    """Counter rates of a node (or one port) across past sweeps in the history store.

    Returns the series (per second, oldest first; flat-zero series left out)
    and a note when the store could not be read. Never creates the store.
    """
    if path is None or not Path(path).is_file():
        return {}, None
    try:
        from fabricdoc.history import History

        with History(path) as store:
            df = store.counter_rates(node=nid)
    except Exception as exc:  # another module's store: say so, keep the screen
        return {}, f"history store {path}: {exc}"
    if port is not None:
        df = df[df["port"] == port]
    out: dict[str, list[float]] = {}
    label = index.label(nid)
    for (p, counter), g in df.sort_values("t1").groupby(["port", "counter"], sort=True):
        values = [float(v) for v in g["per_second"]]
        if any(values):
            out[f"{label}[{p}] {counter} (per second, {len(values)} sweeps)"] = values
    return dict(list(out.items())[:limit]), None


# -- modal screens -------------------------------------------------------------

HELP = """\
fabricdoc tui — keys

  1-5          overview · findings · hosts · links · impact
  tab          move focus (tab bar, table, filter)
  j / k, ↑ ↓   move in a table or the tree; pgup/pgdn, g/G top/bottom
  enter        open the selected finding, host, link or switch
  escape       back / close the filter
  /            filter the table (every word must match); escape clears
  s / c        findings: sort by severity / confidence (again: reverse)
  d            impact: toggle drain of the selected host in the what-if
  r            impact: reset the what-if to the report's drain list
  e            export the report as JSON
  ?            this help
  q            quit

The mouse works: click tabs, tree nodes, column headers (findings: sort)
and rows (a second click on the highlighted row opens it); the wheel scrolls.
"""


class HelpScreen(ModalScreen[None]):
    """The keys, on top of whatever screen asked for it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def compose(self) -> ComposeResult:
        with Vertical(id="help-box"):
            yield Panel(HELP, id="help-text")
            yield Label("escape to close", classes="dim")

    def action_dismiss(self) -> None:  # type: ignore[override]
        self.dismiss(None)


class ExportScreen(ModalScreen[Path | None]):
    """Ask where to write the report, write it atomically, say where it went."""

    BINDINGS = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, report: Report, default_path: str) -> None:
        super().__init__()
        self.report = report
        self.default_path = default_path

    def compose(self) -> ComposeResult:
        with Vertical(id="export-box"):
            yield Label("Export the report as JSON to:")
            yield Input(self.default_path, id="export-path")
            yield Label("enter to save, escape to cancel", classes="dim")

    @on(Input.Submitted, "#export-path")
    def save(self, event: Input.Submitted) -> None:
        path = Path(event.value.strip() or self.default_path).expanduser()
        try:
            self.report.save(path)
        except OSError as exc:
            self.app.notify(f"could not write {path}: {exc.strerror or exc}", severity="error", markup=False)
            return
        self.app.notify(f"report saved to {path}", markup=False)
        self.dismiss(path)

    def action_cancel(self) -> None:
        self.dismiss(None)


# -- detail ----------------------------------------------------------------------

class DetailScreen(Screen[None]):
    """One link, switch or host: its ports, the findings on it with evidence, counter history."""

    BINDINGS = [Binding("escape", "app.pop_screen", "Back")]

    def __init__(self, index: ReportIndex, node: str | None = None, link: LinkId | None = None,
                 finding: Finding | None = None) -> None:
        super().__init__()
        self.index = index
        self.node = node
        self.link = link
        self.finding = finding
        # Titles are set before the Header mounts: a change while it mounts races its query.
        if link is not None:
            self.title = f"link {index.link_name(link)}"
        elif node is not None:
            self.title = f"{index.nodes.get(node, {}).get('kind', 'node')} {index.label(node)}"
        elif finding is not None:
            self.title = f"finding {finding.id} {finding.name}"

    def compose(self) -> ComposeResult:
        ix = self.index
        yield Header(show_clock=False)
        with VerticalScroll(id="detail"):
            yield Panel(self._summary(), id="detail-summary")
            if self.node is not None and self.node in ix.nodes:
                yield Label("Ports", classes="section")
                table = ReportTable(["port", "peer", "speed", "state", "health", "findings"], id="detail-ports")
                yield table
            fs = self._findings()
            yield Label(f"Findings ({len(fs)})", classes="section")
            text = Text(end="")
            for f in fs:
                text.append(f"{f.id} ", style="bold")
                text.append(sev_text(f.severity))
                text.append(f" {f.fault} ({f.confidence:.2f})  ")
                text.append(safe(f.name))
                text.append("\n")
                text.append(evidence_text(f.evidence))
            if not fs:
                text.append("none: this component is healthy in this report\n", style="green")
            yield Panel(text, id="detail-findings")
            yield Label("History (counter rates across sweeps, bandwidth tests by round)", classes="section")
            yield HistoryView(self._history(), id="detail-history")
        yield Footer()

    def on_mount(self) -> None:
        ix = self.index
        if self.node is not None and self.node in ix.nodes:
            rows = []
            for lid in sorted(ix.node_links.get(self.node, ()), key=lambda x: x[0][1] if x[0][0] == self.node else x[1][1]):
                mine, other = (lid[0], lid[1]) if lid[0][0] == self.node else (lid[1], lid[0])
                lk = ix.links[lid]
                sev = ix.link_health(lid)
                fs = ix.link_findings.get(lid, [])
                rows.append(Row(
                    f"{lid[0][0]}\x1f{lid[0][1]}\x1f{lid[1][0]}\x1f{lid[1][1]}",
                    (health_text(sev, str(mine[1])), safe(f"{ix.label(other[0])}[{other[1]}]"), safe(ix.speed(lk)),
                     safe(lk.get("state", "up")), sev_text(sev), safe(", ".join(f"{f.id} {f.fault}" for f in fs))),
                    "", {},
                ))
            table = self.query_one("#detail-ports", ReportTable)
            table.set_rows(rows)
            table.focus()

    @on(ReportTable.RowSelected, "#detail-ports")
    def open_port(self, event: ReportTable.RowSelected) -> None:
        table = self.query_one("#detail-ports", ReportTable)
        key = table.current_key
        if key is not None:
            self.app.push_screen(DetailScreen(self.index, link=key_to_link(key)))

    def _findings(self) -> list[Finding]:
        ix = self.index
        if self.link is not None:
            return list(ix.link_findings.get(self.link, []))
        if self.node is not None:
            return ix.findings_of_node(self.node)
        return [self.finding] if self.finding else []

    def _summary(self) -> Text:
        ix = self.index
        out = Text(end="")
        if self.link is not None:
            lk = ix.links.get(self.link)
            out.append("link  ", style="bold")
            out.append(safe(ix.link_name(self.link)))
            if lk is not None:
                nominal = (lk.get("max_lanes") or lk["lanes"]) * (lk.get("max_lane_gbps") or lk["lane_gbps"])
                out.append(f"\nspeed {ix.speed(lk)} = {fmt_gbps(lk['lanes'] * lk['lane_gbps'])}"
                           f"  nominal {fmt_gbps(nominal)}  state {lk.get('state', 'up')}")
            out.append("\nhealth ")
            out.append(sev_text(ix.link_health(self.link)))
        elif self.node is not None:
            n = ix.nodes.get(self.node, {"kind": "node", "label": self.node, "ports": "?"})
            out.append(f"{n['kind']}  ", style="bold")
            out.append(safe(n["label"]))
            out.append("\nid ")
            out.append(safe(self.node, "dim"))
            if n.get("guid"):
                out.append(safe(f"  guid {n['guid']}", "dim"))
            out.append(f"\nports {n['ports']}  ")
            out.append(safe(ix.place(self.node)))
            out.append("\nhealth ")
            out.append(sev_text(ix.node_health(self.node)))
            reason = ix.drain_reason.get(ix.host_name.get(self.node, ""))
            if reason:
                out.append("\ndrain: ", style="bold red")
                out.append(safe(reason))
        elif self.finding is not None:
            out.append(safe(self.finding.name, "bold"))
        return out

    def _history(self) -> dict[str, list[float]]:
        """Past sweeps from the history store first, then what the report itself carries."""
        ix = self.index
        store = getattr(self.app, "history_path", None)
        ends: list[tuple[str, int | None]] = []
        if self.node is not None:
            ends = [(self.node, None)]
        elif self.link is not None:
            ends = list(self.link)
        out: dict[str, list[float]] = {}
        for nid, port in ends:
            series, note = store_series(store, ix, nid, port)
            out.update(series)
            if note:
                self.notify(note, severity="warning", markup=False)
            out.update(history_series(ix, nid, port))
        return out


# -- the main screen -------------------------------------------------------------

TABS = ("overview", "findings", "hosts", "links", "impact")


class MainScreen(Screen[None]):
    """The report: tabs for the overview, findings, hosts, links and the impact what-if."""

    BINDINGS = [
        Binding("1", "tab('overview')", "Overview"),
        Binding("2", "tab('findings')", "Findings"),
        Binding("3", "tab('hosts')", "Hosts"),
        Binding("4", "tab('links')", "Links"),
        Binding("5", "tab('impact')", "Impact"),
        Binding("slash", "filter", "Filter"),
        Binding("escape", "clear_filter", "Clear filter", show=False),
        Binding("s", "sort('severity')", "Sort severity"),
        Binding("c", "sort('confidence')", "Sort confidence"),
        Binding("d", "toggle_drain", "Toggle drain"),
        Binding("r", "reset_drain", "Reset what-if"),
    ]

    def __init__(self, index: ReportIndex, impact_factory: Callable[[Report], Any] | None) -> None:
        super().__init__()
        self.index = index
        self.impact_factory = impact_factory
        rep = index.report
        self.title = f"fabricdoc — {rep.fabric.get('name', '')}"
        self.sub_title = f"{rep.verdict.upper()} · {len(rep.findings)} findings · {rep.generated_at}"
        self.loaded: set[str] = set()
        self._filter_timer: Timer | None = None
        self.model: Any = None
        self.live: dict[str, Any] | None = None  # nominal / now / after_drain from the model
        self.model_error: str | None = "loading the impact model…"
        self.what_if_drain: set[str] = {nid for nid, name in index.host_name.items() if name in index.drain_reason}

    def compose(self) -> ComposeResult:
        ix = self.index
        yield Header(show_clock=False)
        with TabbedContent(initial="overview", id="tabs"):
            with TabPane("1 Overview", id="overview"), Horizontal():
                yield Tree(safe(ix.report.fabric.get("name", "fabric")), id="fabric-tree")
                yield Panel(self._overview_text(), id="overview-summary")
            with TabPane("2 Findings", id="findings"), Vertical():
                yield ReportTable(["severity", "conf", "kind", "fault", "component", "id", "ev"], id="findings-table")
                yield VerticalScroll(Panel("", id="evidence"), id="evidence-box")
            with TabPane("3 Hosts", id="hosts"):
                yield ReportTable(["host", "where", "ports", "health", "drain", "findings"], id="hosts-table")
            with TabPane("4 Links", id="links"):
                yield ReportTable(["end a", "end b", "speed", "state", "health", "findings"], id="links-table")
            with TabPane("5 Impact", id="impact"), Vertical():
                yield Panel("", id="impact-summary")
                yield Panel("", id="whatif-result")
                yield ReportTable(["drain", "host", "where", "health"], id="whatif-table")
        yield Input(placeholder="filter: words to match, enter to keep, escape to clear", id="filter")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#filter", Input).display = False
        self._fill_tree()
        self._ensure("findings")
        self.query_one("#fabric-tree", Tree).focus()
        self._render_impact()

    # -- tabs ------------------------------------------------------------------------
    def action_tab(self, tab: str) -> None:
        self.query_one("#tabs", TabbedContent).active = tab

    _TAB_ACTIONS = {"sort": "findings", "toggle_drain": "impact", "reset_drain": "impact"}

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Tab-specific keys show in the footer only on their tab."""
        tab = self._TAB_ACTIONS.get(action)
        if tab is None:
            return True
        try:
            return self.active_tab == tab
        except NoMatches:  # not composed yet
            return False

    @on(TabbedContent.TabActivated)
    def tab_shown(self, event: TabbedContent.TabActivated) -> None:
        tab = event.pane.id or ""
        self._ensure(tab)
        self.refresh_bindings()
        if not self.query_one("#filter", Input).has_focus:
            target = self.active_table() or self.query_one("#fabric-tree", Tree)
            target.focus()

    @property
    def active_tab(self) -> str:
        return self.query_one("#tabs", TabbedContent).active

    def active_table(self) -> ReportTable | None:
        tab = self.active_tab
        if tab == "overview":
            return None
        return self.query_one(f"#{'whatif' if tab == 'impact' else tab}-table", ReportTable)

    def _ensure(self, tab: str) -> None:
        """Fill a tab's table the first time it is shown (the big ones cost a fraction of a second)."""
        if tab in self.loaded or tab == "overview":
            return
        self.loaded.add(tab)
        ix = self.index
        if tab == "findings":
            table = self.query_one("#findings-table", ReportTable)
            table.set_rows(finding_rows(ix))
            self._show_evidence(table.current_key)
        elif tab == "hosts":
            table = self.query_one("#hosts-table", ReportTable)
            table.sort_key = "health"
            table.set_rows(host_rows(ix))
        elif tab == "links":
            table = self.query_one("#links-table", ReportTable)
            table.sort_key = "health"
            table.set_rows(link_rows(ix))
        elif tab == "impact":
            self._fill_whatif()
            # Built on first view, not at start: routing thousands of hosts holds the GIL
            # and would make opening and scrolling the other tabs lag.
            self._load_model()

    # -- overview ----------------------------------------------------------------
    def _overview_text(self) -> Text:
        ix = self.index
        rep = ix.report
        out = Text(end="")
        out.append("verdict  ")
        verdict_style = {"pass": "bold green", "degraded": "bold yellow", "fail": "bold white on red"}
        out.append(rep.verdict.upper(), style=verdict_style.get(rep.verdict, "bold"))
        out.append("\nfabric   ")
        out.append(safe(rep.fabric.get("name")))
        out.append(safe(f"  ({rep.fabric.get('source', '')})", "dim"))
        out.append(f"\n         {rep.fabric.get('hosts', 0):,} hosts · {rep.fabric.get('switches', 0):,} switches"
                   f" · {rep.fabric.get('links', 0):,} links")
        out.append(f"\nmade     {rep.generated_at}\n\n")
        out.append("findings by kind\n", style="bold underline")
        counts = Counter((f.kind, f.severity) for f in rep.findings)
        kinds = sorted({k for k, _ in counts})
        sevs = ["critical", "error", "warning", "info"]
        out.append(f"{'':8}" + "".join(f"{s:>10}" for s in sevs) + "\n", style="dim")
        for k in kinds:
            out.append(f"{k:8}")
            for s in sevs:
                n = counts.get((k, s), 0)
                out.append(f"{n:>10}", style=SEV_STYLE[s] if n else "dim")
            out.append("\n")
        if not kinds:
            out.append("none\n", style="green")
        head = (rep.impact or {}).get("allreduce_busbw_gbps")
        if isinstance(head, dict):
            out.append("\nAllReduce busbw  ", style="bold")
            out.append(f"nominal {fmt_gbps(head.get('nominal'))} · now {fmt_gbps(head.get('now'))}"
                       f" · after drain {fmt_gbps(head.get('after_drain'))}\n")
        bad_links = sum(1 for lid in ix.links if ix.link_health(lid))
        out.append(f"\nlinks with findings {bad_links:,} of {len(ix.links):,}\n")
        out.append(f"hosts to drain      {len(rep.drain):,}\n", style="bold red" if rep.drain else "")
        t = rep.tests
        out.append("\ntests\n", style="bold underline")
        out.append(f"pairs {t.get('pairs_tested', 0):,} tested · {t.get('pairs_slow', 0):,} slow · "
                   f"{t.get('pairs_hung', 0):,} hung · {t.get('pairs_wrong', 0):,} wrong · {t.get('pairs_error', 0):,} error\n")
        out.append(f"ports sampled {t.get('ports_sampled', 0):,} · rounds {t.get('rounds')} · "
                   f"duration {fmt_num(t.get('duration_s'))} s\n")
        status = Counter(p.get("status") for p in rep.probes)
        if status:
            out.append("probes  " + " · ".join(f"{n} {s}" for s, n in sorted(status.items())) + "\n")
            failed = [p for p in rep.probes if p.get("status") != "ok"][:5]
            for p in failed:
                out.append(safe(f"  {p.get('probe')} {p.get('target')}: {p.get('status')} {p.get('error') or ''}\n", "yellow"))
        if not ix.has_topology:
            out.append("\nthis report has no topology section: no tree, hosts or links\n", style="yellow")
        return out

    def _fill_tree(self) -> None:
        ix = self.index
        tree = self.query_one("#fabric-tree", Tree)
        tree.root.expand()
        levels: dict[int, list[str]] = defaultdict(list)
        for nid in ix.switches:
            levels[int(ix.nodes[nid].get("attrs", {}).get("level", 1))].append(nid)
        top = max(levels, default=0)
        names = LEVEL_NAMES.get(top, {})
        for level in sorted(levels, reverse=True):
            ids = levels[level]
            bad = sum(1 for nid in ids if ix.node_health(nid))
            label = Text(f"{names.get(level, f'level {level}')}  {len(ids):,} switches", style="bold", end="")
            if bad:
                label.append(f"  {bad} with findings", style="red")
            group = tree.root.add(label, data=None, expand=level == top and len(ids) <= 64)
            ids = sorted(ids, key=lambda n: (-SEV_RANK.get(ix.node_health(n) or "", -1), ix.label(n)))
            for nid in ids:
                group.add(health_text(ix.node_health(nid), ix.label(nid)), data=("node", nid), allow_expand=True)
        bad_hosts = [h for h in ix.hosts if ix.node_health(h)]
        label = Text(f"hosts  {len(ix.hosts):,}", style="bold", end="")
        if bad_hosts:
            label.append(f"  {len(bad_hosts)} with findings (all: tab 3)", style="red")
        group = tree.root.add(label, data=None, expand=bool(bad_hosts) and len(bad_hosts) <= 64)
        for nid in sorted(bad_hosts, key=ix.label)[:500]:
            group.add(health_text(ix.node_health(nid), ix.label(nid)), data=("node", nid), allow_expand=True)

    @on(Tree.NodeExpanded, "#fabric-tree")
    def expand_node(self, event: Tree.NodeExpanded) -> None:
        """A switch or host shows its ports (and the peer at each) when opened."""
        node = event.node
        if not node.data or node.data[0] != "node" or node.children:
            return
        ix = self.index
        nid = node.data[1]
        for lid in sorted(ix.node_links.get(nid, ()), key=lambda x: x[0][1] if x[0][0] == nid else x[1][1]):
            mine, other = (lid[0], lid[1]) if lid[0][0] == nid else (lid[1], lid[0])
            label = health_text(ix.link_health(lid), f"p{mine[1]} → {ix.label(other[0])}[{other[1]}]")
            label.append(f"  {ix.speed(ix.links[lid])}", style="dim")
            node.add_leaf(label, data=("link", lid))
        if not node.children:
            node.add_leaf(Text("no cabled ports", style="dim"))

    @on(Tree.NodeSelected, "#fabric-tree")
    def open_tree_node(self, event: Tree.NodeSelected) -> None:
        data = event.node.data
        if data and data[0] == "link":
            self.app.push_screen(DetailScreen(self.index, link=data[1]))

    def on_key(self, event: Any) -> None:
        # Tree: enter on a switch or host opens its detail (space/click still expands).
        if event.key == "enter" and self.focused is self.query_one("#fabric-tree", Tree):
            node = self.query_one("#fabric-tree", Tree).cursor_node
            if node is not None and node.data and node.data[0] == "node":
                event.stop()
                event.prevent_default()
                self.app.push_screen(DetailScreen(self.index, node=node.data[1]))
        elif event.key in ("j", "k") and self.focused is self.query_one("#fabric-tree", Tree):
            tree = self.query_one("#fabric-tree", Tree)
            event.stop()
            tree.action_cursor_down() if event.key == "j" else tree.action_cursor_up()

    # -- findings --------------------------------------------------------------------
    @on(ReportTable.RowHighlighted, "#findings-table")
    def finding_highlighted(self, event: ReportTable.RowHighlighted) -> None:
        self._show_evidence(self.query_one("#findings-table", ReportTable).current_key)

    def _show_evidence(self, fid: str | None) -> None:
        panel = self.query_one("#evidence", Panel)
        f = self.index.findings.get(fid or "")
        if f is None:
            panel.update(Text("no findings: the fabric looks healthy" if not self.index.findings else "", style="green"))
            return
        text = Text(end="")
        text.append(f"{f.id}  ", style="bold")
        text.append(sev_text(f.severity))
        text.append(f"  {f.kind} {f.fault}  confidence {f.confidence:.2f}  ")
        text.append(safe(f.name, "bold"))
        if f.endpoints:
            text.append("\nends     ")
            text.append(safe("  ↔  ".join(f"{e[0]}[{e[1]}]" for e in f.endpoints)))
        text.append("\n")
        text.append(evidence_text(f.evidence))
        panel.update(text)

    @on(ReportTable.RowSelected, "#findings-table")
    def open_finding(self, event: ReportTable.RowSelected) -> None:
        f = self.index.findings.get(self.query_one("#findings-table", ReportTable).current_key or "")
        if f is None:
            return
        lid = self.index.finding_link(f)
        if lid is not None:
            self.app.push_screen(DetailScreen(self.index, link=lid))
        elif f.node_ids and f.node_ids[0] in self.index.nodes:
            self.app.push_screen(DetailScreen(self.index, node=f.node_ids[0]))
        else:
            self.app.push_screen(DetailScreen(self.index, finding=f))

    def action_sort(self, key: str) -> None:
        if self.active_tab != "findings":
            return
        table = self.query_one("#findings-table", ReportTable)
        reverse = not table.sort_reverse if table.sort_key == key else True
        table.sort_rows(key, reverse)
        self.notify(f"findings sorted by {key}, {'highest' if reverse else 'lowest'} first", timeout=2)

    @on(ReportTable.HeaderSelected, "#findings-table")
    def header_sort(self, event: ReportTable.HeaderSelected) -> None:
        name = ["severity", "confidence", "kind", "fault", "name", "id", "severity"][event.column_index]
        table = self.query_one("#findings-table", ReportTable)
        table.sort_rows(name, not table.sort_reverse if table.sort_key == name else name in ("severity", "confidence"))

    # -- hosts and links ------------------------------------------------------------
    @on(ReportTable.RowSelected, "#hosts-table")
    def open_host(self, event: ReportTable.RowSelected) -> None:
        key = self.query_one("#hosts-table", ReportTable).current_key
        if key is not None:
            self.app.push_screen(DetailScreen(self.index, node=key))

    @on(ReportTable.RowSelected, "#links-table")
    def open_link(self, event: ReportTable.RowSelected) -> None:
        key = self.query_one("#links-table", ReportTable).current_key
        if key is not None:
            self.app.push_screen(DetailScreen(self.index, link=key_to_link(key)))

    # -- filter ----------------------------------------------------------------------
    def action_filter(self) -> None:
        if self.active_tab == "overview":
            self.action_tab("hosts")
            self._ensure("hosts")
        box = self.query_one("#filter", Input)
        table = self.active_table()
        box.value = table.filter_text if table else ""
        box.display = True
        box.focus()

    @on(Input.Changed, "#filter")
    def filter_changed(self, event: Input.Changed) -> None:
        if self._filter_timer is not None:
            self._filter_timer.stop()
        self._filter_timer = self.set_timer(0.12, self._apply_filter)

    def _apply_filter(self) -> None:
        table = self.active_table()
        if table is not None:
            table.apply_filter(self.query_one("#filter", Input).value)
            table.border_subtitle = f"{len(table.shown):,} of {len(table.all_rows):,}" if table.filter_text else ""

    @on(Input.Submitted, "#filter")
    def filter_done(self, event: Input.Submitted) -> None:
        self._apply_filter()
        box = self.query_one("#filter", Input)
        if not box.value.strip():
            box.display = False
        table = self.active_table()
        if table is not None:
            table.focus()

    def action_clear_filter(self) -> None:
        box = self.query_one("#filter", Input)
        if not box.display:
            return
        box.value = ""
        box.display = False
        table = self.active_table()
        if table is not None:
            table.apply_filter("")
            table.border_subtitle = ""
            table.focus()

    # -- impact and what-if --------------------------------------------------------
    @work(thread=True, exclusive=True, group="impact-model")
    def _load_model(self) -> None:
        model, live, error = None, None, None
        if self.impact_factory is None:
            error = "impact model not available"
        else:
            try:
                model = self.impact_factory(self.index.report)
                if model is None:
                    error = "impact model not available"
                elif hasattr(model, "busbw"):
                    drain = sorted(self.index.drain_reason)
                    live = {"nominal": model.busbw(None, "ring", "nominal"), "now": model.busbw(None, "ring", "now"),
                            "after_drain": model.what_if(drain).get("busbw_gbps")}
            except Exception as exc:  # a broken model must not take the TUI down
                model, error = None, f"impact model not available: {type(exc).__name__}: {exc}"
        self.app.call_from_thread(self._model_ready, model, live, error)

    def _model_ready(self, model: Any, live: dict[str, Any] | None, error: str | None) -> None:
        self.model, self.live, self.model_error = model, live, error
        self._render_impact()
        self._recompute()

    def _render_impact(self) -> None:
        self.query_one("#impact-summary", Panel).update(impact_text(self.index.report, self.live))

    def _fill_whatif(self) -> None:
        ix = self.index
        rows = []
        for nid in ix.hosts:
            sev = ix.node_health(nid)
            rows.append(Row(
                nid,
                (self._mark(nid), health_text(sev, ix.label(nid)), safe(ix.place(nid)), sev_text(sev)),
                f"{ix.label(nid)} {ix.host_name[nid]} {ix.place(nid)} {sev or 'ok'}".lower(),
                {"health": (nid not in self.what_if_drain, -SEV_RANK.get(sev or "", -1))},
            ))
        table = self.query_one("#whatif-table", ReportTable)
        table.sort_key = "health"
        table.set_rows(rows)

    def _mark(self, nid: str) -> Text:
        return Text("[x] drain", style="bold red", end="") if nid in self.what_if_drain else Text("[ ]", style="dim", end="")

    def action_toggle_drain(self) -> None:
        if self.active_tab != "impact":
            return
        table = self.query_one("#whatif-table", ReportTable)
        nid = table.current_key
        if nid is None:
            return
        self.what_if_drain.symmetric_difference_update({nid})
        table.set_cell_text(nid, 0, self._mark(nid))
        self._recompute()

    def action_reset_drain(self) -> None:
        if self.active_tab != "impact":
            return
        ix = self.index
        self.what_if_drain = {nid for nid, name in ix.host_name.items() if name in ix.drain_reason}
        self._fill_whatif()
        self._recompute()

    def _recompute(self) -> None:
        panel = self.query_one("#whatif-result", Panel)
        n = len(self.what_if_drain)
        head = Text(f"what-if: drain {n} host{'s' if n != 1 else ''} (d toggles, r resets)\n", style="bold", end="")
        if self.model is None:
            head.append(self.model_error or "impact model not available", style="yellow")
            panel.update(head)
            return
        self._what_if(sorted(self.index.host_name[h] for h in self.what_if_drain), head)

    @work(thread=True, exclusive=True, group="what-if")
    def _what_if(self, hosts: list[str], head: Text) -> None:
        worker = get_current_worker()
        try:
            result = self.model.what_if(hosts)
        except Exception as exc:  # the model is another module: show its failure, keep running
            result = {"error": f"{type(exc).__name__}: {exc}"}
        if not worker.is_cancelled:
            self.app.call_from_thread(self._show_what_if, head, result)

    def _show_what_if(self, head: Text, result: Any) -> None:
        out = head.copy()
        if not isinstance(result, dict):
            out.append(safe(str(result)))
        elif "error" in result:
            out.append(safe(f"the impact model failed: {result['error']}", "red"))
        else:
            bw = result.get("busbw_gbps")
            live = self.live or {}
            out.append("predicted ring busbw  ")
            out.append(fmt_gbps(bw), style="bold")
            if isinstance(bw, int | float) and live.get("nominal"):
                out.append(f"   {bw / live['nominal']:.0%} of nominal {fmt_gbps(live['nominal'])}")
            if isinstance(bw, int | float) and live.get("now") is not None:
                change = bw - live["now"]
                out.append(f"   {change:+,.1f} Gb/s vs draining nothing", style="green" if change > 0 else "red" if change < 0 else "dim")
            out.append("\n")
            if "hosts" in result:
                out.append(f"hosts kept            {result['hosts']:,} of {len(self.index.hosts):,}\n")
            if "throughput_fraction" in result:
                out.append(f"job throughput        {result['throughput_fraction']:.1%} of the whole job at nominal\n")
            for key, value in result.items():
                if key not in ("busbw_gbps", "hosts", "throughput_fraction", "drain", "vs_nominal", "ring_busbw_gbps"):
                    out.append(safe(f"{key:<22}{_impact_value(key, value)}\n"))
        self.query_one("#whatif-result", Panel).update(out)


def _impact_value(key: str, value: Any) -> str:
    if isinstance(value, float) and ("gbps" in key or "busbw" in key):
        return fmt_gbps(value)
    if isinstance(value, float) and ("fraction" in key or "ratio" in key or "loss" in key):
        return f"{value:.3f}"
    if isinstance(value, list | tuple):
        return ", ".join(map(str, value)) if len(value) <= 8 else f"{len(value)} items"
    if isinstance(value, dict):
        return "  ".join(f"{k}={_impact_value(k, v)}" for k, v in value.items() if v is not None)
    return fmt_num(value)


def impact_text(report: Report, live: dict[str, Any] | None) -> Text:
    """The report's impact section (or the model's live figures): busbw nominal / now / after drain."""
    imp = report.impact or {}
    out = Text(end="")
    head = imp.get("allreduce_busbw_gbps") or live
    alg = imp.get("algorithm", "ring")
    out.append(f"AllReduce bus bandwidth ({alg}", style="bold")
    if "job_hosts" in imp:
        out.append(f", {imp['job_hosts']:,} hosts, {imp.get('rails', '?')} rail(s)", style="bold")
    out.append(")\n", style="bold")
    if not head:
        out.append("the report carries no impact section\n", style="dim")
        return out
    nominal = head.get("nominal")
    for key, name in (("nominal", "nominal"), ("now", "now"), ("after_drain", f"after drain ({len(report.drain)} hosts)")):
        value = head.get(key)
        out.append(f"  {name:<24}")
        out.append(f"{fmt_gbps(value):>14}", style="bold" if key != "nominal" else "")
        if key != "nominal" and isinstance(value, int | float) and nominal:
            ratio = value / nominal
            out.append(f"  {ratio:6.1%} of nominal", style="green" if ratio > 0.97 else "yellow" if ratio > 0.8 else "red")
        out.append("\n")
    for alg_name, fig in (imp.get("by_algorithm") or {}).items():
        if alg_name == alg or not isinstance(fig, dict):
            continue
        out.append(f"  {alg_name}: nominal {fmt_gbps(fig.get('nominal'))} · now {fmt_gbps(fig.get('now'))}"
                   f" · after drain {fmt_gbps(fig.get('after_drain'))}\n", style="dim")
    bottleneck = ((imp.get("by_algorithm") or {}).get(alg) or {}).get("bottleneck_now")
    if isinstance(bottleneck, dict) and bottleneck.get("capacity_gbps") is not None:
        out.append("  bottleneck now: ")
        out.append(safe(bottleneck.get("direction") or bottleneck.get("reason") or "?"))
        out.append(f"  {fmt_gbps(bottleneck.get('capacity_gbps'))} over {bottleneck.get('flows')} flows")
        if bottleneck.get("finding"):
            out.append(safe(f"  ({bottleneck['finding']} {bottleneck.get('reason') or ''})", "dim"))
        out.append("\n")
    alternatives = [w for w in imp.get("what_if") or [] if isinstance(w, dict) and w.get("choice") == "alternative"]
    for w in alternatives[:3]:
        out.append("  alternative: drain ")
        out.append(safe(", ".join(map(str, w.get("drain", []))) or "nothing"))
        out.append(f" → {fmt_gbps(w.get('busbw_gbps'))}, job throughput {w.get('throughput_fraction', 0):.1%}\n")
    job = imp.get("job")
    if isinstance(job, dict):
        parts = [f"{job['n_hosts']:,} hosts" if "n_hosts" in job else "", f"{fmt_num(job['hours'])} h" if "hours" in job else ""]
        facts = [
            f"failure probability {job['failure_probability']:.1%}" if isinstance(job.get("failure_probability"), int | float) else "",
            f"MTBF {job['mtbf_hours']:,.0f} h" if isinstance(job.get("mtbf_hours"), int | float) else "",
            f"checkpoint every {job['recommended_checkpoint_minutes']:,.0f} min"
            if isinstance(job.get("recommended_checkpoint_minutes"), int | float) else "",
            f"expected loss {job['expected_lost_hours']:,.2f} h" if isinstance(job.get("expected_lost_hours"), int | float) else "",
        ]
        out.append(safe(f"  job ({', '.join(p for p in parts if p)}): " + " · ".join(f for f in facts if f), "dim"))
        out.append("\n")
    return out


# -- loading and sweeping --------------------------------------------------------------

class LoadingScreen(Screen[None]):
    """Shown while a report file is read and validated in a worker."""

    def __init__(self, what: str) -> None:
        super().__init__()
        self.what = what

    def compose(self) -> ComposeResult:
        # No Header: a report that loads before the Header's first title update would be
        # switched away under it, and Textual's update then finds no title widget.
        yield Label(safe(f"loading {self.what} …"), id="loading")
        yield Footer()


class SweepCancelled(FabricdocError):
    """Raised inside the sweep's progress callback when the user quits mid-sweep."""


class SweepScreen(Screen[None]):
    """A live sweep: stage, a progress bar and a log, then the report's screens."""

    BINDINGS = [Binding("q", "app.quit", "Quit (stops the sweep)")]

    def __init__(self, sweep: Callable[[Callable[[str, int, int], None]], Report]) -> None:
        super().__init__()
        self.title = "fabricdoc — sweep"
        self.sweep = sweep
        self.stage = ""

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False)
        with Vertical(id="sweep"):
            yield Label("starting the sweep …", id="sweep-stage")
            yield ProgressBar(total=None, show_eta=False, id="sweep-progress")
            yield RichLog(id="sweep-log", markup=False, highlight=False, wrap=True)
        yield Footer()

    def on_mount(self) -> None:
        self.run_sweep()

    @work(thread=True, exclusive=True, group="sweep")
    def run_sweep(self) -> None:
        worker = get_current_worker()

        def progress(stage: str, done: int, total: int) -> None:
            if worker.is_cancelled:
                raise SweepCancelled("sweep stopped from the TUI")
            self.app.call_from_thread(self._progress, str(stage), int(done), int(total))

        try:
            report = self.sweep(progress)
        except SweepCancelled:
            return
        except FabricdocError as exc:
            self.app.call_from_thread(self._failed, str(exc))
            return
        except Exception as exc:  # a bug in the sweep: show it, keep the TUI usable
            self.app.call_from_thread(self._failed, f"{type(exc).__name__}: {exc}")
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self._done, report)

    def _progress(self, stage: str, done: int, total: int) -> None:
        bar = self.query_one("#sweep-progress", ProgressBar)
        if stage != self.stage:
            if self.stage:
                self.query_one("#sweep-log", RichLog).write(Text(f"✓ {self.stage}", style="green"))
            self.stage = stage
        bar.update(total=total or None, progress=done)
        self.query_one("#sweep-stage", Label).update(safe(f"{stage}: {done:,} of {total:,}" if total else stage))

    def _failed(self, message: str) -> None:
        self.app.error = f"sweep failed: {message}"  # type: ignore[attr-defined]  # quitting now exits 2
        self.query_one("#sweep-stage", Label).update(Text("sweep failed", style="bold red"))
        self.query_one("#sweep-log", RichLog).write(Text(message, style="red"))
        self.app.notify(message, title="sweep failed", severity="error", markup=False, timeout=10)

    def _done(self, report: Report) -> None:
        if self.stage:
            self.query_one("#sweep-log", RichLog).write(Text(f"✓ {self.stage}", style="green"))
        self.app.show_report(report)  # type: ignore[attr-defined]
