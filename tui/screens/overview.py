"""The overview tab: the fabric as a tree (switch levels, hosts with findings, ports on demand)
beside the verdict, findings by kind, tests and probe health."""

from __future__ import annotations

from rich.text import Text
from textual import events, on, work
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Tree
from textual.widgets.tree import TreeNode

from fabricdoc.errors import FabricdocError

from ..formatting import health_text, safe
from ..index import switch_level_known
from ..overview_view import overview_text, port_label
from ..widgets.panel import Panel
from .detail import DetailScreen
from .tab import ReportTab

GROUP_EXPAND_MAX = 64  # a group with more members starts collapsed
TREE_HOSTS_MAX = 500  # hosts with findings listed in the tree (all of them: the hosts tab)


class OverviewTab(ReportTab):
    TAB_ID = "overview"
    TITLE = "Overview"
    _levels_note: TreeNode | None = None  # "working out levels" while a worker does

    def compose(self) -> ComposeResult:
        with Horizontal():
            yield Tree(safe(self.index.report.fabric.get("name", "fabric")), id="fabric-tree")
            yield Panel(overview_text(self.index), id="overview-summary")

    def on_mount(self) -> None:
        self._fill_tree()

    def focus_target(self) -> Widget:
        return self.query_one("#fabric-tree", Tree)

    def _fill_tree(self) -> None:
        ix = self.index
        tree = self.query_one("#fabric-tree", Tree)
        tree.root.expand()
        known = switch_level_known(ix)
        if known:
            self._add_switch_groups(ix.switch_levels())
        else:  # levels from the cabling: the report's fabric is rebuilt first (seconds at 65,536 hosts)
            self._levels_note = tree.root.add(Text("switches: working out their levels from the cabling…",
                                                   style="dim"), allow_expand=False)
        unhealthy = ix.unhealthy_nodes()
        bad_hosts = [h for h in ix.hosts if h in unhealthy]
        label = Text(f"hosts  {len(ix.hosts):,}", style="bold", end="")
        if bad_hosts:
            label.append(f"  {len(bad_hosts)} with findings (all: the hosts tab)", style="red")
        self._add_group(tree.root, label, sorted(bad_hosts, key=ix.label)[:TREE_HOSTS_MAX],
                        bool(bad_hosts) and len(bad_hosts) <= GROUP_EXPAND_MAX)
        if not known:
            self.call_after_refresh(self._work_out_levels)  # once the screen is drawn

    @work(thread=True, exclusive=True, group="overview-levels")
    def _work_out_levels(self) -> None:
        try:
            levels = self.index.switch_levels()
        except FabricdocError as exc:  # a topology the fabric model refuses: said in the tree, not fatal
            self.app.call_from_thread(self._levels_failed, str(exc))
            return
        self.app.call_from_thread(self._add_switch_groups, levels)

    def _levels_failed(self, why: str) -> None:
        if self._levels_note is not None:
            self._levels_note.set_label(safe(f"switches: no levels: {why}", "yellow"))

    def _add_switch_groups(self, levels: list[tuple[str, bool, list[str]]]) -> None:
        """The switch levels, top first, above the hosts."""
        ix = self.index
        tree = self.query_one("#fabric-tree", Tree)
        note, self._levels_note = self._levels_note, None
        for at, (name, top, ids) in enumerate(levels):
            bad = sum(1 for nid in ids if ix.node_health(nid))
            label = Text(f"{name}  {len(ids):,} switches", style="bold", end="")
            if bad:
                label.append(f"  {bad} with findings", style="red")
            self._add_group(tree.root, label, ids, top and len(ids) <= GROUP_EXPAND_MAX,
                            before=at if note is not None else None)
        if note is not None:
            note.remove()

    def _add_group(self, parent: TreeNode, label: Text, members: list[str], expand: bool,
                   before: int | None = None) -> None:
        """A group of switches or hosts; its members are added when it is first opened."""
        group = parent.add(label, data=("group", members), before=before, expand=expand)
        if expand:
            self._fill_group(group)

    def _fill_group(self, group: TreeNode) -> None:
        """A group's members, once (a level of 2,048 switches costs a moment to list)."""
        ix = self.index
        _, members = group.data
        group.data = None
        for nid in members:
            group.add(health_text(ix.node_health(nid), ix.label(nid)), data=("node", nid), allow_expand=True)

    @on(Tree.NodeExpanded, "#fabric-tree")
    def expand_node(self, event: Tree.NodeExpanded) -> None:
        """A switch or host shows its ports (and the peer at each) when opened."""
        node = event.node
        if node.data and node.data[0] == "group":
            self._fill_group(node)
            return
        if not node.data or node.data[0] != "node" or node.children:
            return
        for lid, mine, other in self.index.ports_of(node.data[1]):
            node.add_leaf(port_label(self.index, lid, mine, other), data=("link", lid))
        if not node.children:
            node.add_leaf(Text("no cabled ports", style="dim"))

    @on(Tree.NodeSelected, "#fabric-tree")
    def open_port(self, event: Tree.NodeSelected) -> None:
        data = event.node.data
        if data and data[0] == "link":
            self.app.push_screen(DetailScreen(self.index, link=data[1]))

    def on_key(self, event: events.Key) -> None:
        tree = self.query_one("#fabric-tree", Tree)
        if self.screen.focused is not tree:
            return
        if event.key == "enter":
            # Enter on a switch or host opens its detail (space or a click still expands it).
            node = tree.cursor_node
            if node is not None and node.data and node.data[0] == "node":
                event.stop()
                event.prevent_default()
                self.app.push_screen(DetailScreen(self.index, node=node.data[1]))
        elif event.key in ("j", "k"):
            event.stop()
            tree.action_cursor_down() if event.key == "j" else tree.action_cursor_up()
