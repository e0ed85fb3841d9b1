"""Drains counted incrementally against the whole job ring agree with routing the kept hosts' ring from scratch."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fabricdoc.fabric.generators import fat_tree_3, rail_optimized
from fabricdoc.impact.busbw import ImpactModel
from fabricdoc.impact.effects import restated
from fabricdoc.model.findings import Finding
from fabricdoc.model.paths import directed
from fabricdoc.model.records import PortRef
from fabricdoc.model.topology import Fabric
from tests.helpers.evidence import port_down, slow_pairs


def _findings() -> list[Finding]:
    half = Finding("F001", "link", "slow cable", "degraded_bandwidth", "error", 0.9, [slow_pairs(0.5)],
                   [("leaf-su01-r1", 9), ("spine01", 1)], ["leaf-su01-r1", "spine01"])
    down = Finding("F002", "link", "dead cable", "down", "error", 0.9, [port_down("leaf-su02-r2", 10)],
                   [("leaf-su02-r2", 10), ("spine02", 2)], ["leaf-su02-r2", "spine02"])
    return [half, down]


def _model(step: int) -> ImpactModel:
    return ImpactModel(rail_optimized(units=3, hosts_per_unit=8, rails=2, spines=2), _findings(), ring_step=step)


def _hot_ring_hosts(m: ImpactModel, kept: list[str]) -> set[str]:
    """The straightforward way: route every ring edge of ``kept`` on every rail, count flows per
    directed cable, and take both ends of every edge crossing a cable with the least share."""
    n = len(kept)
    rails = min(len(m.host_ports[h]) for h in kept)
    routes = m.routes["now"]
    cap = m.capacity["now"]
    edges = []
    for r in range(rails):
        for i in range(n):
            a, b = kept[i], kept[(i + m.ring_step) % n]
            src, dst = m.host_ports[a][r], m.host_ports[b][r]
            ids = [2 * m.index[key] + d for key, d in directed(routes.path(src, dst), src)]
            edges.append((a, b, ids))
    counts = np.bincount([i for *_, ids in edges for i in ids], minlength=cap.size)
    share = {i: cap[i] / counts[i] for i in np.flatnonzero(counts)}
    low = min(share.values())
    return {h for a, b, ids in edges if any(share[i] <= low * (1 + 1e-9) for i in ids) for h in (a, b)}


@pytest.mark.parametrize("step", [1, -1])
def test_what_if_ring_busbw_equals_the_kept_hosts_ring_routed_from_scratch(step):
    m = _model(step)
    hosts = m.job_hosts
    drains = [[h] for h in hosts] + [list(p) for p in itertools.combinations(hosts[:6], 2)]
    drains += [[hosts[0], hosts[-1]], hosts[1:4], hosts[:-2]]
    for drain in drains:
        kept = [h for h in hosts if h not in drain]
        got = m.what_if(drain)["ring_busbw_gbps"]
        assert got == pytest.approx(m.busbw(kept, "ring", "now"), rel=1e-12), drain
    assert m.what_if(hosts[:-1])["ring_busbw_gbps"] == 0.0  # one host left: no ring


@pytest.mark.parametrize("step", [1, -1])
def test_drain_candidates_are_the_hosts_on_the_bottleneck_of_the_kept_ring(step):
    m = _model(step)
    for already in ([], [m.job_hosts[3]], [m.job_hosts[0], m.job_hosts[-1]]):
        kept = [h for h in m.job_hosts if h not in already]
        tried = m.best_drains(k=10**6, max_hosts=1, candidates_per_step=10**6, only_better=False,
                              keep_drained=already)
        added = {h for w in tried for h in w["drain"] if h not in already}
        assert added == _hot_ring_hosts(m, kept)


def test_restated_routes_as_a_fabric_rebuilt_with_the_same_links_down():
    f = fat_tree_3(4)
    down = {k for k in sorted(f.links) if f.nodes[k.a.node].kind == "switch"}
    down = set(sorted(down)[:3])
    rebuilt = Fabric(name=f.name, nodes=f.nodes)
    for key, lk in f.links.items():
        rebuilt.add_link(key.a, key.b, lanes=lk.lanes, lane_gbps=lk.lane_gbps,
                         state="down" if key in down else "up")
    copy = restated(f, down)
    assert {k: (lk.state, lk.capacity_gbps) for k, lk in copy.links.items()} == \
        {k: (lk.state, lk.capacity_gbps) for k, lk in rebuilt.links.items()}
    assert copy.levels() == rebuilt.levels()
    ports = f.host_ports()
    for src, dst in itertools.permutations(ports, 2):
        assert copy.path(src, dst) == rebuilt.path(src, dst)
    assert all(lk.state == "up" for lk in f.links.values())  # the original is untouched
    assert f.path(ports[0], ports[-1]) == restated(f, None).path(ports[0], ports[-1])
    assert copy.link_at(PortRef(ports[0].node, 1)) is copy.links[f.link_at(ports[0]).key]
