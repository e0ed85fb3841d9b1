"""The busbw model's route cache: each flow's directed links in a routing state.

A flow is one (source port, destination port) of the model's ports, keyed
``src port id * len(ports) + dst port id``; its route is a tuple of directed link
ids (``2 * link index + direction``, :attr:`ImpactModel.unroutable` for no route).
Flows are routed all at once on the fabric's up/down rule
(:mod:`fabricdoc.model.updown_arrays`) and one by one where a state routes by
forwarding tables or that rule leaves a pair to ``Fabric.path``.
"""

from __future__ import annotations

import numpy as np

from fabricdoc.errors import TopologyError
from fabricdoc.model.paths import directed
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric
from fabricdoc.model.updown_arrays import NO_CABLE, ROUTED, Cabling, UpDownArrays


class FlowRoutes:
    """Routing of :class:`fabricdoc.impact.busbw.ImpactModel`'s flows, cached per state; the model
    sets up the attributes below."""

    fabric: Fabric
    keys: list[LinkKey]
    index: dict[LinkKey, int]
    ports: list[PortRef]
    unroutable: int
    routes: dict[str, Fabric]
    _flows: dict[str, dict[int, tuple[int, ...]]]
    _cabling: Cabling | None
    _arrays: dict[str, UpDownArrays | None]
    _fabric_routing: UpDownArrays | None
    _port_arrays: tuple[np.ndarray, np.ndarray] | None

    def _flow_ids(self, state: str, src: np.ndarray, dst: np.ndarray) -> list[tuple[int, ...]]:
        """Directed link ids of each (src port id, dst port id) flow, from the route cache."""
        cache = self._flows[state]
        keys = (src.astype(np.int64) * len(self.ports) + dst).tolist()
        out = list(map(cache.get, keys))  # tuples: ``None in out`` never compares arrays
        if None in out:
            missing = list(dict.fromkeys(keys[i] for i, got in enumerate(out) if got is None))
            self._route_many(state, missing)
            out = list(map(cache.__getitem__, keys))
        return out  # type: ignore[return-value]

    def _route_many(self, state: str, flow_keys: list[int]) -> None:
        """Route the flows ``src port id * len(ports) + dst port id`` into the state's cache: all at
        once on the fabric's up/down rule (:mod:`fabricdoc.model.updown_arrays`), one by one where
        the state routes by forwarding tables or that rule leaves a pair to ``Fabric.path``."""
        cache = self._flows[state]
        ports = self.ports
        n = len(ports)
        arrays = self._arrays_of(state)
        if arrays is None:
            for key in flow_keys:
                cache[key] = self._route(state, ports[key // n], ports[key % n])
            return
        if self._port_arrays is None:
            assert self._cabling is not None  # built with the arrays
            self._port_arrays = self._cabling.port_arrays(ports)
        nodes, nums = self._port_arrays
        keys = np.asarray(flow_keys, dtype=np.int64)
        src, dst = keys // n, keys % n
        routes, status = arrays.routes_of(nodes[src], nums[src], nodes[dst], nums[dst])
        if (status == ROUTED).all():
            cache.update(zip(flow_keys, routes, strict=True))  # type: ignore[arg-type]
            return
        for key, got, st in zip(flow_keys, routes, status.tolist(), strict=True):
            if st == ROUTED:
                cache[key] = got  # type: ignore[assignment]
            elif st == NO_CABLE:  # Fabric.path and its ECMP stand-in both refuse such a pair
                cache[key] = (self.unroutable,)
            else:
                cache[key] = self._route(state, ports[key // n], ports[key % n])

    def fabric_path(self, src: PortRef, dst: PortRef) -> tuple[LinkKey, ...]:
        """``fabric.path(src, dst)`` (the fabric's own routes, not a state's), from routing arrays where
        the fabric routes up/down: the per-switch tables ``Fabric.path`` builds cost seconds on a large fabric."""
        if not self.fabric.lfts:
            same = [s for s, routes in self.routes.items() if routes is self.fabric]
            if same:
                arrays = self._arrays_of(same[0])
            else:
                if self._fabric_routing is None:
                    self._fabric_routing = self._routing_arrays(self.fabric)
                arrays = self._fabric_routing
            got, status = arrays.routes([src], [dst])  # type: ignore[union-attr]
            if status[0] == ROUTED:
                return tuple(self.keys[c // 2] for c in got[0])  # type: ignore[union-attr]
        return self.fabric.path(src, dst)  # raises, or routes what the arrays leave to it

    def _arrays_of(self, state: str) -> UpDownArrays | None:
        """The state's up/down routing as arrays (built once per state); None where it routes by LFTs."""
        if state not in self._arrays:
            routes = self.routes[state]
            self._arrays[state] = None if routes.lfts else self._routing_arrays(routes)
        return self._arrays[state]

    def _routing_arrays(self, routes: Fabric) -> UpDownArrays:
        """Up/down routing arrays of ``routes`` (this fabric's cabling with its own links down)."""
        if self._cabling is None:
            self._cabling = Cabling(self.fabric, self.index)
        return UpDownArrays(self._cabling, [k for k, lk in routes.links.items() if lk.state == "down"])

    def _route(self, state: str, src: PortRef, dst: PortRef) -> tuple[int, ...]:
        routes = self.routes[state]
        try:
            path = routes.path(src, dst)
        except TopologyError:
            # The up/down routing may pick an up port with no way down to the destination
            # once a link is gone; any valid shortest path stands in for the rerouted one.
            try:
                alternatives = routes.ecmp_paths(src, dst, limit=1)
            except TopologyError:
                alternatives = []
            if not alternatives:
                return (self.unroutable,)
            path = alternatives[0]
        index = self.index
        return tuple([2 * index[key] + d for key, d in directed(path, src)])
