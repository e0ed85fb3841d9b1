"""The overview tab: the fabric as a tree (switch levels, hosts with findings, ports on demand)
beside the verdict, findings by kind, tests and probe health."""

from __future__ import annotations

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.containers import Horizontal
from textual.widget import Widget
from textual.widgets import Tree

from ..view import health_text, overview_text, port_label, safe
from ..widgets.panel import Panel
from .detail import DetailScreen
from .tab import ReportTab

GROUP_EXPAND_MAX = 64  # a group with more members starts collapsed
TREE_HOSTS_MAX = 500  # hosts with findings listed in the tree (all of them: the hosts tab)


class OverviewTab(ReportTab):
    TAB_ID = "overview"
    TITLE = "Overview"

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
        for name, top, ids in ix.switch_levels():
            bad = sum(1 for nid in ids if ix.node_health(nid))
            label = Text(f"{name}  {len(ids):,} switches", style="bold", end="")
            if bad:
                label.append(f"  {bad} with findings", style="red")
            group = tree.root.add(label, data=None, expand=top and len(ids) <= GROUP_EXPAND_MAX)
            for nid in ids:
                group.add(health_text(ix.node_health(nid), ix.label(nid)), data=("node", nid), allow_expand=True)
        bad_hosts = [h for h in ix.hosts if ix.node_health(h)]
        label = Text(f"hosts  {len(ix.hosts):,}", style="bold", end="")
        if bad_hosts:
            label.append(f"  {len(bad_hosts)} with findings (all: the hosts tab)", style="red")
        group = tree.root.add(label, data=None, expand=bool(bad_hosts) and len(bad_hosts) <= GROUP_EXPAND_MAX)
        for nid in sorted(bad_hosts, key=ix.label)[:TREE_HOSTS_MAX]:
            group.add(health_text(ix.node_health(nid), ix.label(nid)), data=("node", nid), allow_expand=True)

    @on(Tree.NodeExpanded, "#fabric-tree")
    def expand_node(self, event: Tree.NodeExpanded) -> None:
        """A switch or host shows its ports (and the peer at each) when opened."""
        node = event.node
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
