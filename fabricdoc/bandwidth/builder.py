"""The plan builder every planner shares: rounds, their busy link directions and cable coverage."""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Iterator

from fabricdoc.errors import TopologyError
from fabricdoc.fabric.identity import host_index
from fabricdoc.model.paths import Channel, test_channels
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric

Test = tuple[PortRef, PortRef]

_GOLDEN = (math.sqrt(5) - 1) / 2


def shift_offset(r: int, m: int) -> int:
    """Shift of round r: spread over the port ring by the golden ratio, never 0."""
    if m < 2:
        return 1
    k = int(round(m * ((_GOLDEN * (r + 1)) % 1.0))) % m
    return k or 1


class PlanBuilder:
    """Mutable state while a plan is assembled: rounds, their busy directions, coverage."""

    def __init__(self, fabric: Fabric, bidirectional: bool, seed: int) -> None:
        self.f = fabric
        self.bidir = bidirectional
        self.rng = random.Random(seed)
        self.ports = fabric.host_ports()
        # HCA node -> its host: a multi-HCA host is one host, never paired with itself.
        self.host_of = {nid: name for name, ids in host_index(fabric).items() for nid in ids}
        if len(self.ports) < 2:
            raise TopologyError(f"fabric {fabric.name!r} has fewer than two cabled host ports")
        self.index = {p: i for i, p in enumerate(self.ports)}
        self.rounds: list[list[Test]] = []
        self.busy: list[set[Channel]] = []
        self.cover: Counter[LinkKey] = Counter()
        self.sig: dict[LinkKey, list[int]] = defaultdict(list)
        self.tests: list[Test] = []
        self.planned: set[Test] = set()
        self._edges: dict[Test, list[Channel]] = {}
        self.under_switch: dict[str, list[PortRef]] = defaultdict(list)
        for p in self.ports:
            peer = fabric.peer(p)
            if peer is not None:
                self.under_switch[peer.node].append(p)
        self.level = fabric.levels()
        self._below: dict[str, list[PortRef]] = {}

    def below(self, switch: str) -> list[PortRef]:
        """Host ports reachable from ``switch`` by going only down (toward hosts): :meth:`Fabric.ports_below`,
        remembered for this plan."""
        return self.f.ports_below(switch, self._below)

    # -- primitives ---------------------------------------------------------
    def edges(self, test: Test) -> list[Channel] | None:
        got = self._edges.get(test)
        if got is None:
            src, dst = test
            try:
                got = test_channels(self.f, src, dst, self.bidir)
            except TopologyError:
                got = []
            self._edges[test] = got
        return got or None

    def links(self, test: Test) -> set[LinkKey]:
        return {k for k, _ in self.edges(test) or ()}

    def fits(self, r: int, test: Test) -> bool:
        while len(self.rounds) <= r:
            self.rounds.append([])
            self.busy.append(set())
        e = self.edges(test)
        return e is not None and not any(x in self.busy[r] for x in e)

    def gain(self, test: Test, need: int) -> int:
        return sum(1 for k in self.links(test) if self.cover[k] < need)

    def add(self, r: int, test: Test) -> None:
        while len(self.rounds) <= r:
            self.rounds.append([])
            self.busy.append(set())
        self.rounds[r].append(test)
        self.busy[r].update(self.edges(test) or ())
        tid = len(self.tests)
        self.tests.append(test)
        self.planned.add(test)
        for k in self.links(test):
            self.cover[k] += 1
            self.sig[k].append(tid)

    def place(self, test: Test, max_rounds: int | None = None) -> int | None:
        """Put a test in the first round it fits, opening a new round if allowed."""
        for r in range(len(self.rounds)):
            if self.fits(r, test):
                self.add(r, test)
                return r
        if max_rounds is None or len(self.rounds) < max_rounds:
            self.rounds.append([])
            self.busy.append(set())
            r = len(self.rounds) - 1
            self.add(r, test)
            return r
        return None

    def ok_pair(self, src: PortRef, dst: PortRef) -> bool:
        return self.host_of[src.node] != self.host_of[dst.node] and (src, dst) not in self.planned

    # -- searches -----------------------------------------------------------
    def through(self, link: LinkKey, tries: int) -> Iterator[Test]:
        """Candidate tests whose path loads ``link``, found by probing near its ends."""
        # A cable between switches carries traffic of the hosts below its lower end.
        near = self.f.ports_below_cable(link, self._below)
        if not near:
            near = self.ports
        for _ in range(tries):
            a = self.rng.choice(near)
            b = self.rng.choice(self.ports)
            src, dst = (a, b) if self.rng.random() < 0.5 else (b, a)
            if not self.ok_pair(src, dst):
                continue
            if link in self.links((src, dst)):
                yield (src, dst)
