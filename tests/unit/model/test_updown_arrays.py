"""Routes of many pairs at once (numpy) are exactly ``Fabric.path``'s, pair by pair; levels likewise."""

import random

import networkx as nx
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricdoc.errors import TopologyError
from fabricdoc.fabric.generators import fat_tree_2, fat_tree_3, rail_optimized
from fabricdoc.impact.effects import restated
from fabricdoc.model.paths import directed
from fabricdoc.model.topology import Fabric, hop_levels
from fabricdoc.model.updown_arrays import ASK, NO_CABLE, ROUTED, Cabling, UpDownArrays

SHAPES = {
    "fat-tree-2": lambda: fat_tree_2(4, 2, 4),
    "fat-tree-2, two cables per leaf and spine": lambda: fat_tree_2(4, 3, 4, links_per_spine=2),
    "fat-tree-3": lambda: fat_tree_3(4),
    "rail-optimized": lambda: rail_optimized(2, 4, 8, 4),
}


def _shuffled(fabric: Fabric, seed: int) -> Fabric:
    """The same cabling with nodes and cables added in another order: a route must not depend on it
    (a destination's index is its place among the hosts sorted by id, not by insertion)."""
    rng = random.Random(seed)
    out = Fabric(name=fabric.name)
    for node in rng.sample(list(fabric.nodes.values()), len(fabric.nodes)):
        out.add_node(node)
    for lk in rng.sample(list(fabric.links.values()), len(fabric.links)):
        a, b = (lk.key.a, lk.key.b) if rng.random() < 0.5 else (lk.key.b, lk.key.a)
        out.add_link(a, b, lanes=lk.lanes, lane_gbps=lk.lane_gbps, state=lk.state)
    return out


def _channels(fabric: Fabric, src, dst) -> tuple[int, ...] | None:
    """``Fabric.path`` as channel ids (None where it refuses the pair)."""
    index = {k: i for i, k in enumerate(fabric.links)}
    try:
        return tuple(2 * index[k] + d for k, d in directed(fabric.path(src, dst), src))
    except TopologyError:
        return None


@settings(max_examples=40, deadline=None)
@given(shape=st.sampled_from(sorted(SHAPES)), seed=st.integers(0, 2**16), down_share=st.sampled_from([0.0, 0.05, 0.3]))
def test_every_pair_routed_on_arrays_is_routed_as_fabric_path_routes_it(shape, seed, down_share):
    fabric = _shuffled(SHAPES[shape](), seed)
    rng = random.Random(seed)
    down = {k for k in fabric.links if rng.random() < down_share}
    ports = fabric.host_ports()
    pairs = [(rng.choice(ports), rng.choice(ports)) for _ in range(150)] + [(ports[0], ports[0])]
    routes, status = UpDownArrays(Cabling(fabric), down).routes([p for p, _ in pairs], [q for _, q in pairs])
    reference = restated(fabric, down)  # exactly those links down, the rest up
    for (src, dst), got, st_ in zip(pairs, routes, status.tolist(), strict=True):
        want = _channels(reference, src, dst)
        if st_ == ROUTED:
            assert got == want, (src, dst)
        elif st_ == NO_CABLE:
            assert want is None
        else:
            assert st_ == ASK and got is None  # left to Fabric.path, which routes or refuses it itself
    if not down:  # a whole fabric: nothing is left to Fabric.path
        assert set(status.tolist()) == {ROUTED}


def test_a_host_whose_cable_is_down_has_no_route_either_way():
    fabric = fat_tree_3(4)
    src, dst = fabric.host_ports()[0], fabric.host_ports()[5]
    dead = fabric.link_at(dst).key
    routes, status = UpDownArrays(Cabling(fabric), {dead}).routes([src, dst], [dst, src])
    assert status.tolist() == [NO_CABLE, NO_CABLE] and routes == [None, None]
    alive, status = UpDownArrays(Cabling(fabric), set()).routes([src], [dst])
    assert status.tolist() == [ROUTED] and alive[0] == _channels(fabric, src, dst)


def _levels_by_networkx(kinds, cables):
    """The level rule as it was written with networkx: hops from a virtual source joined to every host."""
    g = nx.Graph()
    g.add_nodes_from(kinds)
    g.add_edges_from(cables)
    source = object()
    g.add_node(source)
    g.add_edges_from((source, n) for n, kind in kinds.items() if kind == "host")
    levels = {n: d - 1 for n, d in nx.single_source_shortest_path_length(g, source).items() if n is not source}
    for n, kind in kinds.items():
        if kind == "switch":
            levels.setdefault(n, 1)
    return levels


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_hop_levels_on_arrays_are_the_breadth_first_levels(data):
    n = data.draw(st.integers(1, 25))
    kinds = {f"n{i}": data.draw(st.sampled_from(["host", "switch", "switch"])) for i in range(n)}
    names = [*kinds, "stray"]  # a cable may name a node the kinds do not list
    cables = data.draw(st.lists(st.tuples(st.sampled_from(names), st.sampled_from(names)), max_size=40))
    assert hop_levels(kinds, cables) == _levels_by_networkx(kinds, cables)
