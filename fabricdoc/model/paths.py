"""Directed paths: which cables a test loads, in which direction, and what it should reach.

A *channel* is one cable in one direction (``0``: from ``key.a`` to ``key.b``,
``1``: the other way); links are full duplex, so two flows only contend when
they share a channel. A one-way test loads its forward path; a bidirectional
one (a two-rank all_reduce, every two-rank nccl-tests run) also the reverse.
"""

from __future__ import annotations

from collections.abc import Iterable
from collections.abc import Set as AbstractSet

from fabricdoc.errors import TopologyError
from fabricdoc.model.records import LinkKey, PairResult, PortRef
from fabricdoc.model.topology import Fabric

Channel = tuple[LinkKey, int]

# all_reduce loads both directions; a job's NCCL connection (test "nccl-debug") is reliable: its data
# crosses one direction's path and its acknowledgements the other's, so it fails when either path
# does and, having carried traffic, clears both.
BIDIRECTIONAL_TESTS = frozenset({"all_reduce", "nccl-debug"})


def is_bidirectional(test: str) -> bool:
    """Whether a PairResult's test loads both directions: torch all_reduce, and every
    two-rank nccl-tests run (``nccl-tests:*``: sendrecv_perf sends each rank to the other)."""
    return test in BIDIRECTIONAL_TESTS or test.startswith("nccl-tests:")


def channel_ends(chan: Channel) -> tuple[PortRef, PortRef]:
    """The port a channel leaves from and the port it arrives at."""
    key, d = chan
    return (key.a, key.b) if d == 0 else (key.b, key.a)


def channel_name(fabric: Fabric, chan: Channel) -> str:
    """A channel as reports and probe labels write it: ``leaf01[5] -> spine01[1]``."""
    src, dst = channel_ends(chan)
    return f"{fabric.label(src.node)}[{src.port}] -> {fabric.label(dst.node)}[{dst.port}]"


def directed(path: Iterable[LinkKey], start: str | PortRef) -> list[Channel]:
    """The channels a packet leaving node ``start`` uses along ``path`` (the one path walk)."""
    here = start.node if isinstance(start, PortRef) else start
    out: list[Channel] = []
    for key in path:
        if key.a.node == here:
            out.append((key, 0))
            here = key.b.node
        else:
            out.append((key, 1))
            here = key.a.node
    return out


def tested_links(fabric: Fabric, src: PortRef, dst: PortRef, bidirectional: bool = False) -> tuple[LinkKey, ...]:
    """Cables one test loads: its forward path, plus the reverse path when bidirectional."""
    fwd = fabric.path(src, dst)
    if not bidirectional:
        return fwd
    seen = dict.fromkeys(fwd)
    for key in fabric.path(dst, src):
        seen.setdefault(key)
    return tuple(seen)


FINISHED = ("ok", "hung")  # a test that ran to a figure, or started and never finished: evidence either way


def pair_links(fabric: Fabric, pair: PairResult) -> tuple[LinkKey, ...] | None:
    """The cables a pair test loads (:func:`tested_links` for its kind); None when the fabric has no route."""
    try:
        return tested_links(fabric, pair.src, pair.dst, is_bidirectional(pair.test))
    except TopologyError:
        return None


def finished_crossed(fabric: Fabric, pairs: Iterable[PairResult],
                     stopped_by: AbstractSet[LinkKey] = frozenset()) -> set[LinkKey]:
    """The cables the finished tests of ``pairs`` loaded (both directions' paths of a bidirectional test);
    a test the fabric has no route for crosses nothing. A test that hung on a cable of ``stopped_by``
    (one already named) measured that cable alone: the others on its path count as not crossed."""
    crossed: set[LinkKey] = set()
    for p in pairs:
        path = pair_links(fabric, p) if p.status in FINISHED else None
        if path is None:
            continue
        stopped = stopped_by.intersection(path) if p.status == "hung" else set()
        crossed.update(stopped or path)
    return crossed


def test_flows(fabric: Fabric, src: PortRef, dst: PortRef, bidirectional: bool = False) -> list[list[Channel]]:
    """The flows of a pair test, each as the directed channels it crosses: ``src`` to ``dst``, and back
    when ``bidirectional`` (TopologyError when the fabric has no route)."""
    flows = [directed(fabric.path(src, dst), src)]
    if bidirectional:
        flows.append(directed(fabric.path(dst, src), dst))
    return flows


def test_channels(fabric: Fabric, src: PortRef, dst: PortRef, bidirectional: bool = False) -> list[Channel]:
    """The channels a test occupies; two tests in a planned round must not share one."""
    return [c for flow in test_flows(fabric, src, dst, bidirectional) for c in flow]


def expected_gbps(fabric: Fabric, src: PortRef, dst: PortRef, bidirectional: bool = False) -> float | None:
    """The one expected-bandwidth function: a test's bottleneck capacity (Gb/s) on today's routes.

    What a healthy test alone on its path reaches at line rate; None when the
    pair has no route. Protocol efficiency is applied by whoever compares.
    """
    caps = [fabric.links[k].capacity_gbps for k in tested_links(fabric, src, dst, bidirectional)]
    return min(caps) if caps else None
