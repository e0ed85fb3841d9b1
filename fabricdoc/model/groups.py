"""Group collectives as flows: which rank sends to which, and what busbw a set of flow rates gives.

One definition shared by the simulator (what a group test measures), group
planning (what it should measure on today's routes) and localization (how many
flows each test put on every cable direction). Ranks are a group's member
ports in the order given; ``all_reduce`` is NCCL's ring (rank i sends to rank
i+1), ``alltoall`` has every rank send to every other at once, and ``fan:K``
(an alltoall with zero-sized chunks except from the first K ranks to the
others) sends one way only, from K senders to every other rank: a probe that
loads chosen cable directions and nothing flows back.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from fabricdoc.errors import TopologyError
from fabricdoc.model.flows import maxmin
from fabricdoc.model.paths import Channel, channel_ends, directed
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric

GROUP_TESTS = ("all_reduce", "alltoall", "fan:K")


def fan(senders: int) -> str:
    """The name of a one-way test from the first ``senders`` ranks to the rest."""
    return f"fan:{senders}"


def switch_probe_label(switch: str) -> str:
    """The label of isolation's one-way probe of a switch (its load spread over the switch's egresses):
    tomography reads a switch's own failing probe by it (a run again adds ``, again``)."""
    return f"one-way load through {switch}"


def fan_senders(test: str) -> int | None:
    """K of a ``fan:K`` test; None for any other test."""
    if not test.startswith("fan:"):
        return None
    try:
        k = int(test[4:])
    except ValueError:
        raise ValueError(f"bad group test {test!r} (fan:K with K a number)") from None
    if k < 1:
        raise ValueError(f"bad group test {test!r} (fan:K needs K >= 1)")
    return k


def group_edges(members: Sequence[PortRef], test: str) -> list[tuple[PortRef, PortRef]]:
    """(sender, receiver) of every concurrent flow of one group collective."""
    n = len(members)
    if n < 2:
        return []
    if test == "all_reduce":
        return [(members[i], members[(i + 1) % n]) for i in range(n)]
    if test == "alltoall":
        return [(a, b) for a in members for b in members if a != b]
    k = fan_senders(test)
    if k is not None:
        return [(a, b) for a in members[:k] for b in members[k:]]
    raise ValueError(f"unknown group test {test!r} (one of {', '.join(GROUP_TESTS)})")


def group_flows(fabric: Fabric, members: Sequence[PortRef], test: str) -> list[list[Channel]]:
    """Directed channels of every flow of the collective, along ``fabric``'s routes (TopologyError if none)."""
    return [directed(fabric.path(a, b), a) for a, b in group_edges(members, test)]


def routed_flows(fabric: Fabric, members: Sequence[PortRef], test: str) -> list[list[Channel]] | None:
    """:func:`group_flows`, or None where today's routes cannot carry the collective."""
    try:
        return group_flows(fabric, members, test)
    except TopologyError:
        return None


def group_cables(fabric: Fabric, members: Sequence[PortRef], test: str) -> set[LinkKey]:
    """The cables the collective's flows cross on today's routes (none where they cannot be routed)."""
    return {k for hops in routed_flows(fabric, members, test) or () for k, _ in hops}


def channel_load(flows: Sequence[Sequence[Channel]]) -> Counter[Channel]:
    """How many of ``flows`` cross each directed channel at once."""
    return Counter(h for hops in flows for h in hops)


# A cable direction that carried this many flows at once was loaded (a pair round gives it one).
LOADED_FLOWS = 2


def most_flows(fabric: Fabric, rounds: Iterable[Iterable[tuple[Sequence[PortRef], str]]]) -> Counter[Channel]:
    """Per directed channel, the most flows one round of group collectives (``(members, test)`` each)
    put on it at once; a collective without a route loads nothing."""
    most: Counter[Channel] = Counter()
    for groups in rounds:
        load: Counter[Channel] = Counter()
        for members, test in groups:
            try:
                load.update(channel_load(group_flows(fabric, members, test)))
            except TopologyError:
                continue
        for chan, n in load.items():
            most[chan] = max(most[chan], n)
    return most


FILLED = 0.95  # share of a direction's capacity a round's tests must be shown to use: filled


def shown_full(fabric: Fabric, tests: Sequence[Sequence[Sequence[Channel]]]) -> frozenset[Channel]:
    """The cable directions a round's tests (each its flows), passing, show delivering their full rate on a
    healthy fabric.

    A test reports its slowest flow, so passing shows only that each of its flows got at least that
    flow's max-min fair rate: a direction is shown full when its flows times their tests' slowest rates
    fill it. Only there does a passing test show a direction carries that many flows: a direction the
    round left half empty, or filled with flows faster than their test's slowest (an alltoall held back
    by its uplinks), would pass even at the fraction of its rate a load-only fault leaves it."""
    flows = [hops for test in tests for hops in test]
    if not flows:
        return frozenset()
    rates = maxmin(flows, lambda k: fabric.links[k].capacity_gbps)
    shown: Counter[Channel] = Counter()
    at = 0
    for test in tests:
        slowest = float(min(rates[at:at + len(test)])) if len(test) else 0.0
        for hops in test:
            for chan in hops:
                shown[chan] += slowest
        at += len(test)
    return frozenset(c for c, u in shown.items() if u >= FILLED * fabric.links[c[0]].capacity_gbps)


def filled_flows(fabric: Fabric, rounds: Iterable[Iterable[tuple[Sequence[PortRef], str]]]) -> Counter[Channel]:
    """Per directed channel, the most flows one round of group collectives (``(members, test)`` each) put
    on it while filling it (:func:`shown_full`): where passing shows it carries that many. A collective
    without a route loads nothing (as in :func:`most_flows`)."""
    out: Counter[Channel] = Counter()
    for groups in rounds:
        tests = []
        for members, test in groups:
            try:
                tests.append(group_flows(fabric, members, test))
            except TopologyError:
                continue
        load = channel_load([hops for t in tests for hops in t])
        for chan in shown_full(fabric, tests):
            out[chan] = max(out[chan], load[chan])
    return out


def shown_switches(flows: Iterable[Sequence[Channel]], shown: Collection[Channel]) -> frozenset[str]:
    """The nodes that forward some of ``flows`` on a direction in ``shown`` (:func:`shown_full`).

    A fault that cuts a switch's egress (a buffer that collapses, a throttle) slows a passing test only
    where that egress was its bottleneck: only a switch whose egress the test filled is shown to forward
    the test's load at full rate. A test whose flows were held back before the switch says nothing of it."""
    return frozenset(channel_ends(chan)[0].node for hops in flows for chan in hops[1:] if chan in shown)


def switch_load(fabric: Fabric, flows: Sequence[Sequence[Channel]]) -> Counter[str]:
    """How many of ``flows`` pass through each switch at once (every switch a flow enters after its source)."""
    out: Counter[str] = Counter()
    for hops in flows:
        for chan in hops[1:]:
            node = channel_ends(chan)[0].node
            if fabric.nodes[node].kind == "switch":
                out[node] += 1
    return out


def busbw_from_rates(test: str, n: int, rates: Sequence[float]) -> float:
    """nccl-tests busbw of a collective whose flows ran at ``rates`` (Gb/s).

    A ring all_reduce moves at its slowest hop: busbw = min rate. An alltoall
    finishes with its slowest flow, each rank sending to n-1 peers:
    busbw = algbw (n-1)/n = (n-1) x min rate. A ``fan:K`` is each sender's
    egress: (n-K) x min rate.
    """
    if not len(rates) or n < 2:
        return 0.0
    slowest = float(min(rates))
    if test == "all_reduce":
        return slowest
    k = fan_senders(test)
    return (n - k if k is not None else n - 1) * slowest
