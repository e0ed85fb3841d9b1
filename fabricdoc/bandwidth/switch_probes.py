"""One-way probes that load chosen switches, each through its own hosts, with the switch the bottleneck.

A switch whose buffer collapses (or that throttles) under many flows cuts what
its egress ports forward. A probe shows that only where an egress of the switch
is the probe's bottleneck: flows held back before they reach the switch (many
senders behind one cable into it) pass however little it forwards. So each
probe is a ``fan`` from senders behind some of the switch's ports to as many
receivers behind each of its other ports, senders spread evenly over the cables
into the switch: every egress port then carries all senders' flows to each of
its receivers, as many as the busiest cable in or more, and the load through
the switch is senders times receivers, spread over as many cables as the hosts
allow (the less one cable carries, the less it explains a failing probe as well
as the switch does).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Mapping, Sequence

from fabricdoc.bandwidth.groups import GroupTest
from fabricdoc.errors import TopologyError
from fabricdoc.model.groups import (
    fan,
    group_flows,
    shown_full,
    shown_switches,
    switch_load,
    switch_probe_label,
)
from fabricdoc.model.paths import Channel, channel_ends, directed
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric


class Crossings:
    """The switches and cable directions each host-to-host flow passes through (cached: a probe search
    asks for many)."""

    def __init__(self, fabric: Fabric) -> None:
        self.fabric = fabric
        self.seen: dict[tuple[PortRef, PortRef], tuple[Counter[str], list[Channel]]] = {}
        self.tables: dict[str, tuple[frozenset[PortRef], dict[tuple[PortRef, PortRef], tuple[Channel, Channel]]]] = {}

    def __call__(self, src: PortRef, dst: PortRef) -> tuple[Counter[str], list[Channel]]:
        got = self.seen.get((src, dst))
        if got is None:
            try:
                hops = directed(self.fabric.path(src, dst), src)
                got = (switch_load(self.fabric, [hops]), hops)
            except TopologyError:
                got = (Counter(), [])
            self.seen[(src, dst)] = got
        return got

    def through(self, sw: str, hosts: Sequence[PortRef]) -> dict[tuple[PortRef, PortRef], tuple[Channel, Channel]]:
        """Every ordered pair of ``hosts`` whose route crosses ``sw``: the direction it enters and leaves by
        (kept per switch: the probes of later rounds ask again of fewer hosts)."""
        known = self.tables.get(sw)
        if known is not None and known[0].issuperset(hosts):
            keep = set(hosts)
            return {p: io for p, io in known[1].items() if p[0] in keep and p[1] in keep}
        out = {}
        for s in hosts:
            for r in hosts:
                if s == r:
                    continue
                sws, hops = self(s, r)
                if sws.get(sw):
                    into = next(c for c in hops if channel_ends(c)[1].node == sw)
                    out_of = next(c for c in hops if channel_ends(c)[0].node == sw)
                    out[(s, r)] = (into, out_of)
        self.tables[sw] = (frozenset(hosts), out)
        return out


def switch_probes(fabric: Fabric, hosts: Collection[PortRef], load: Sequence[str], crossed: Crossings, *,
                  floor: Mapping[str, int], want: Mapping[str, int], limit: Mapping[str, int],
                  avoid: Collection[LinkKey] = ()) -> list[GroupTest] | None:
    """One probe per switch of ``load``, on hosts of ``hosts`` no two share, to run in one round: each puts
    more than ``floor[sw]`` flows through its switch (up to ``want[sw]``), with an egress of it the
    probe's bottleneck (:func:`fabricdoc.model.groups.shown_switches`). No probe crosses another switch
    of ``load``, nor a cable of ``avoid`` (one a failing probe already points at: a switch probe through
    it would fail for the cable), nor puts more than ``limit[c]`` flows (all probes together) through a
    switch in ``limit``. None when a switch gets no such probe."""
    taken: set[PortRef] = set()
    loaded: Counter[str] = Counter()
    probes = []
    room = max(2, len(hosts) // max(1, len(load)))  # hosts each probe may use: an even share
    shut = frozenset(avoid)
    for sw in load:
        cap = {c: n - loaded[c] for c, n in limit.items()}
        cap.update({o: 0 for o in load if o != sw})
        made = _probe(fabric, [h for h in sorted(hosts) if h not in taken], sw, crossed,
                      floor[sw], want[sw], cap, room, shut)
        if made is None:
            return None
        probe, through = made
        probes.append(probe)
        taken.update(probe.members)
        loaded.update(through)
    flows = [group_flows(fabric, p.members, p.test) for p in probes]
    shown = shown_full(fabric, flows)
    if any(sw not in shown_switches(f, shown) for sw, f in zip(load, flows, strict=True)):
        return None  # no egress of a switch is its probe's bottleneck: passing would clear nothing
    return probes


def _probe(fabric: Fabric, hosts: list[PortRef], sw: str, crossed: Crossings, floor: int, want: int,
           limit: Mapping[str, int], room: int, avoid: frozenset[LinkKey]) -> tuple[GroupTest, Counter[str]] | None:
    """The fan of at most ``room`` hosts through ``sw`` with the most flows through it (up to ``want``,
    more than ``floor``) and, among those, the fewest on its busiest cable direction, crossing no cable of
    ``avoid``; with the switches it loads."""
    pairs = crossed.through(sw, hosts)
    if avoid:
        pairs = {p: io for p, io in pairs.items() if not any(c[0] in avoid for c in crossed(*p)[1])}
    reach: dict[PortRef, set[PortRef]] = {}  # receiver -> senders whose route to it crosses sw
    port_of: dict[PortRef, Channel] = {}  # receiver -> the egress direction toward it
    for (s, r), (_, out) in pairs.items():
        reach.setdefault(r, set()).add(s)
        port_of[r] = out
    # The receivers behind each egress direction, best-reached first; best-reached directions first.
    behind: dict[Channel, list[PortRef]] = {}
    for r in sorted(reach, key=lambda r: (-len(reach[r]), str(r))):
        behind.setdefault(port_of[r], []).append(r)
    ports = sorted(behind, key=lambda o: (-len(reach[behind[o][0]]), str(behind[o][0])))
    chosen: tuple[tuple[int, float], list[PortRef], list[PortRef], Counter[str]] | None = None
    for m in range(1, len(ports) + 1):
        for j in range(1, max(len(behind[o]) for o in ports[:m]) + 1):
            receivers = [r for o in ports[:m] for r in behind[o][:j]]
            if len(receivers) >= room:
                continue
            made = _senders(fabric, sw, receivers, pairs, crossed, want, limit, room - len(receivers))
            if made is None:
                continue
            senders, through, top = made
            if through[sw] <= floor:
                continue
            key = (min(through[sw], want), -top)
            if chosen is None or key > chosen[0]:
                chosen = (key, senders, receivers, through)
    if chosen is None:
        return None
    _, senders, receivers, through = chosen
    return GroupTest((*senders, *receivers), fan(len(senders)), "switch",
                     switch_probe_label(fabric.label(sw))), through


def _senders(fabric: Fabric, sw: str, receivers: list[PortRef], pairs: Mapping[tuple[PortRef, PortRef], tuple[Channel, Channel]],
             crossed: Crossings, want: int, limit: Mapping[str, int],
             most: int) -> tuple[list[PortRef], Counter[str], float] | None:
    """Senders to ``receivers``, each reaching every one of them through the switch by a cable none of
    their egress directions use, added one per cable into the switch at a time (an even spread keeps the
    egress the bottleneck) until the switch carries ``want`` flows, or one more layer would pass
    ``most`` senders, break a limit or move the bottleneck; with the switch loads and the busiest direction's flows per Gb/s.
    None when not one sender fits."""
    outs = {pairs[(s, r)][1][0] for (s, r) in pairs if r in receivers}  # cables the egresses use
    groups: dict[tuple[Channel, ...], list[PortRef]] = {}
    for s in sorted({s for (s, _) in pairs} - set(receivers)):
        ins = []
        for r in receivers:
            io = pairs.get((s, r))
            if io is None or io[0][0] in outs:
                break
            ins.append(io[0])
        else:
            alone: Counter[str] = Counter()
            for r in receivers:
                alone.update(crossed(s, r)[0])
            if not any(alone[c] > n for c, n in limit.items()):  # its own flows break no limit
                groups.setdefault(tuple(ins), []).append(s)
    sw_egress = {pairs[(s, r)][1] for (s, r) in pairs if r in receivers}
    senders: list[PortRef] = []
    got: Counter[str] = Counter()
    on: Counter[Channel] = Counter()
    top = 0.0
    queues = sorted(groups.values(), key=lambda q: (-len(q), str(q[0])))
    while any(queues):
        layer = [q.pop(0) for q in queues if q]
        if len(senders) + len(layer) > most:
            break
        adds: Counter[str] = Counter()
        hops: Counter[Channel] = Counter()
        for s in layer:
            for r in receivers:
                sws, chans = crossed(s, r)
                adds.update(sws)
                hops.update(chans)
        if any(got[c] + adds[c] > n for c, n in limit.items() if adds[c]):
            break
        new = on + hops
        busiest = max(n / fabric.links[c[0]].capacity_gbps for c, n in new.items())
        egress = max(new[c] / fabric.links[c[0]].capacity_gbps for c in sw_egress)
        if egress < busiest * (1 - 1e-9):
            break
        senders += layer
        got.update(adds)
        on, top = new, busiest
        if got[sw] >= want:
            break
    if not senders:
        return None
    return senders, got, top
