"""Forwarding tables onto a Fabric, so its paths follow the routes the subnet manager programmed."""

from __future__ import annotations

from collections.abc import Iterable

from fabricdoc.errors import TopologyError
from fabricdoc.model.ib import IbRoute
from fabricdoc.model.topology import Fabric


def apply_lfts(fabric: Fabric, routes: Iterable[IbRoute], *, source: str = "routes") -> Fabric:
    """Set every switch's LFT from parsed routes (ibroute, dump_fts); every switch must be in the fabric."""
    tables: dict[str, dict[int, int]] = {}
    for route in routes:
        if route.switch_guid not in fabric.nodes:
            raise TopologyError(f"{source}: switch {route.switch_guid} ({route.description!r}) is not in the fabric")
        ports = fabric.nodes[route.switch_guid].num_ports
        wrong = sorted(lid for lid, port in route.lft.items() if not 0 <= port <= ports)
        if wrong:
            raise TopologyError(f"{source}: switch {route.description!r} forwards LID {wrong[0]} to port "
                                f"{route.lft[wrong[0]]}, which it does not have (it has {ports})")
        tables[route.switch_guid] = dict(route.lft)
    fabric.lfts = tables
    fabric.invalidate()
    return fabric
