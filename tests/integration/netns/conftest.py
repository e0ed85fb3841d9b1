"""The namespace lab fixture of the netns tests; the lab itself is tests/helpers/netns_lab.py.

``lab`` is empty (``fdh-<test>-*`` namespaces the test or ``two_hosts`` adds) unless the
test asks for a fabric by name with ``@pytest.mark.parametrize("lab", [NAME], indirect=True)``;
then it is that fabric, built (``fdbw-<node>`` namespaces, shaped veths, routes).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.records import Node, PortRef
from fabricdoc.model.topology import Fabric
from tests.helpers.netns_lab import LAB_TOOLS, NetnsLab, netns_available


def _one_switch(hosts: int = 3) -> Fabric:
    """Hosts ``h1``..``hN`` on one switch ``sw`` (``sw[i]`` -- ``h<i>[1]``), 10 Gbit/s cables."""
    fabric = Fabric(name="roce-lab")
    fabric.add_node(Node("sw", "switch", "sw", hosts))
    for i in range(1, hosts + 1):
        fabric.add_node(Node(f"h{i}", "host", f"h{i}", 1))
        fabric.add_link(PortRef("sw", i), PortRef(f"h{i}", 1), lanes=1, lane_gbps=10.0)
    return fabric


FABRICS: dict[str, Callable[[], Fabric]] = {
    # 3 leaves, 2 spines, 2 hosts per leaf; 100 Mbit/s cables, shaped with tbf.
    "leaf-spine": lambda: fat_tree_2(3, 2, 2, lanes=1, lane_gbps=0.1),
    "one-switch": _one_switch,
}


@pytest.fixture
def lab(request: pytest.FixtureRequest) -> Iterator[NetnsLab]:
    """A namespace lab for one test, deleted by name after it (skipped where namespaces can't be made).

    Tests marked ``gloo`` also need torch; a test parametrized with a name from ``FABRICS`` gets
    that fabric built, any other an empty lab to add namespaces to."""
    name = getattr(request, "param", None)
    if request.node.get_closest_marker("gloo"):
        pytest.importorskip("torch")
    why = netns_available(LAB_TOOLS if name else ("ip",))
    if why:
        pytest.skip(why)
    if name is None:
        short = "".join(ch for ch in request.node.name.replace("test_", "") if ch.isalnum())[:6]
        built = NetnsLab(prefix=f"fdh-{short}")
    else:
        built = NetnsLab(FABRICS[name]()).build()
    try:
        yield built
    finally:
        built.teardown()


@pytest.fixture
def two_hosts(lab: NetnsLab) -> tuple[NetnsLab, str, str]:
    """Two namespaces ``a`` and ``b`` joined by veth ``fdha0`` <-> ``fdhb0`` (10.79.0.1/.2)."""
    a, b = lab.netns("a"), lab.netns("b")
    lab.veth(a, "fdha0", b, "fdhb0", "10.79.0.1/24", "10.79.0.2/24")
    return lab, a, b
