"""Fabric graph, generators and routing."""

import pytest

from fabricdoc.errors import TopologyError
from fabricdoc.fabric.generators import fat_tree_2, fat_tree_3, rail_optimized
from fabricdoc.model.flows import shares_channels
from fabricdoc.model.paths import directed
from fabricdoc.model.records import Node, PortRef
from fabricdoc.model.topology import Fabric


def _check_path(fabric, src, dst, path):
    assert path[0] == fabric.link_at(src).key
    assert path[-1] == fabric.link_at(dst).key
    node = src.node
    for key in path:
        assert node in (key.a.node, key.b.node)
        node = key.b.node if key.a.node == node else key.a.node
    assert node == dst.node


@pytest.mark.parametrize(
    ("fabric", "hosts", "switches", "links"),
    [
        (fat_tree_2(4, 2, 4), 16, 6, 16 + 8),
        (fat_tree_3(4), 16, 20, 48),
        (fat_tree_3(8), 128, 80, 384),
        (rail_optimized(2, 4, 8, 4), 8, 4 + 16, 8 * 8 + 16 * 4),
    ],
)
def test_generators_build_the_textbook_shapes(fabric, hosts, switches, links):
    assert fabric.summary() == {"hosts": hosts, "switches": switches, "links": links}
    guids = [n.guid for n in fabric.nodes.values()]
    assert len(set(guids)) == len(guids)


def test_every_route_is_a_connected_walk_from_source_to_destination():
    for fabric in (fat_tree_2(4, 2, 4), fat_tree_3(4), rail_optimized(2, 4, 8, 4)):
        ports = fabric.host_ports()
        for i, src in enumerate(ports):
            for dst in ports[i + 1 :: 3]:
                if src.node != dst.node:
                    _check_path(fabric, src, dst, fabric.path(src, dst))


def test_shift_permutation_is_contention_free_on_a_nonblocking_fat_tree():
    # D-mod-K routing: every host sends to host i+s; no two flows share a directed link.
    fabric = fat_tree_3(8)
    ports = fabric.host_ports()
    n = len(ports)
    for s in (1, 4, 16, 33, 64):
        flows = [directed(fabric.path(ports[i], ports[(i + s) % n]), ports[i]) for i in range(n)]
        assert not shares_channels(flows), s


def test_rail_optimized_same_rail_traffic_stays_on_its_rail():
    fabric = rail_optimized(2, 4, 8, 4)
    src, dst = PortRef("gpu0001", 3), PortRef("gpu0006", 3)
    path = fabric.path(src, dst)
    leaves = {e.node for k in path for e in (k.a, k.b) if e.node.startswith("leaf")}
    assert leaves == {"leaf-su01-r3", "leaf-su02-r3"}
    assert len(path) == 4
    same_unit = fabric.path(PortRef("gpu0001", 5), PortRef("gpu0002", 5))
    assert len(same_unit) == 2


def test_routing_avoids_a_down_link():
    fabric = fat_tree_2(2, 2, 2)
    src, dst = PortRef("node0001", 1), PortRef("node0003", 1)
    first = fabric.path(src, dst)
    uplink = first[1]
    fabric.links[uplink].state = "down"
    fabric.invalidate()
    second = fabric.path(src, dst)
    assert uplink not in second
    _check_path(fabric, src, dst, second)


def test_lft_routes_follow_the_tables_not_the_generator():
    fabric = fat_tree_2(2, 2, 1)  # leaf ports: 1 host, 2 and 3 up to spine01 / spine02
    dst = PortRef("node0002", 1)
    lid = fabric.port_lids[dst]
    fabric.lfts = {"leaf01": {lid: 3}, "spine02": {lid: 2}, "leaf02": {lid: 1}}
    path = fabric.path(PortRef("node0001", 1), dst)
    assert any(e.node == "spine02" for k in path for e in (k.a, k.b))
    fabric.lfts["spine02"] = {}
    fabric.invalidate()
    with pytest.raises(TopologyError, match="no LFT entry"):
        fabric.path(PortRef("node0001", 1), dst)


def test_cabling_errors_name_the_port():
    fabric = Fabric("t")
    fabric.add_node(Node("sw", "switch", "sw", 2))
    fabric.add_node(Node("h", "host", "h", 1))
    with pytest.raises(TopologyError, match="has no port 3"):
        fabric.add_link(PortRef("sw", 3), PortRef("h", 1))
    with pytest.raises(TopologyError, match="unknown node 'x'"):
        fabric.add_link(PortRef("x", 1), PortRef("h", 1))
    fabric.add_link(PortRef("sw", 1), PortRef("h", 1))
    with pytest.raises(TopologyError, match="already cabled"):
        fabric.add_link(PortRef("sw", 2), PortRef("h", 1))


def test_ecmp_paths_list_every_spine():
    fabric = fat_tree_2(2, 4, 4)
    paths = fabric.ecmp_paths(PortRef("node0001", 1), PortRef("node0005", 1))
    assert len(paths) == 4
    assert fabric.path(PortRef("node0001", 1), PortRef("node0005", 1)) in paths


def test_a_down_spine_link_never_strands_a_route():
    # leaf01 -> node0004 (under leaf02) must not climb to spine01 once spine01--leaf02 is down.
    fabric = fat_tree_2(2, 2, 2)
    fabric.links[fabric.link_at(PortRef("spine01", 2)).key].state = "down"
    fabric.invalidate()
    for src in fabric.host_ports("node0001") + fabric.host_ports("node0002"):
        for dst in fabric.host_ports("node0003") + fabric.host_ports("node0004"):
            path = fabric.path(src, dst)
            _check_path(fabric, src, dst, path)
            assert all(fabric.links[k].state == "up" for k in path)
