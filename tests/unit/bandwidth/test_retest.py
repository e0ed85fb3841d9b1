"""The re-test round around named faults: cables hidden behind a link trained low are re-tested, over
paths that avoid it."""

from __future__ import annotations

from fabricdoc.analysis.suspects import hidden_cables, retest_suspects
from fabricdoc.bandwidth.plan import verify_plan
from fabricdoc.bandwidth.retest import retest_plan
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import LinkKey, PairResult, PortRef
from fabricdoc.model.severity import Severity

UPLINK = LinkKey.of(PortRef("leaf01", 3), PortRef("spine01", 1))
HOST_CABLE = LinkKey.of(PortRef("leaf01", 1), PortRef("node0001", 1))


def _speed_degraded(fabric) -> Finding:
    ends = [(fabric.label(e.node), e.port) for e in (UPLINK.a, UPLINK.b)]
    return Finding("F001", "link", "leaf01[3] -- spine01[1]", "speed_degraded", Severity.ERROR, 0.99, [], ends,
                   [UPLINK.a.node, UPLINK.b.node])


def _ok(src: str, dst: str) -> PairResult:
    return PairResult(PortRef(src, 1), PortRef(dst, 1), "ok", 184.0, 200.0)


def test_cables_whose_every_test_crossed_a_link_trained_low_are_retested():
    fabric = fat_tree_2(4, 2, 2)
    fabric.links[UPLINK].lane_gbps = 50.0
    # node0001's tests all crossed the half-rate uplink; node0002's cable had one without it.
    pairs = [_ok("node0001", "node0003"), _ok("node0007", "node0001"), _ok("node0002", "node0005"),
             _ok("node0008", "node0002"), _ok("node0003", "node0005"), _ok("node0004", "node0006"),
             _ok("node0005", "node0007")]
    hidden = hidden_cables(fabric, [_speed_degraded(fabric)], pairs)
    assert HOST_CABLE in hidden
    assert LinkKey.of(PortRef("leaf01", 2), PortRef("node0002", 1)) not in hidden
    assert UPLINK not in hidden
    assert set(hidden) <= set(retest_suspects(fabric, [_speed_degraded(fabric)], pairs))
    # Without the sweep's tests, the hosts' cables next to the trained-low link (they carry the fewest tests).
    hosts = {LinkKey.of(PortRef("leaf01", p), PortRef(f"node000{p}", 1)) for p in (1, 2)}
    assert set(retest_suspects(fabric, [_speed_degraded(fabric)])) == hosts


def test_the_retest_routes_around_a_link_trained_low():
    fabric = fat_tree_2(4, 2, 2)
    fabric.links[UPLINK].lane_gbps = 50.0
    plan = retest_plan(fabric, [HOST_CABLE], per_suspect=3, controls=2)
    assert verify_plan(fabric, plan) == []
    probes = [t for t, s in plan.targets.items() if s == HOST_CABLE]
    assert len(probes) == 3
    for src, dst in probes:
        path = fabric.path(src, dst)
        assert HOST_CABLE in path and UPLINK not in path


def test_the_retest_routes_around_named_faults_it_is_told_to_avoid():
    fabric = fat_tree_2(4, 2, 2)
    avoid = LinkKey.of(PortRef("leaf01", 4), PortRef("spine02", 1))
    plan = retest_plan(fabric, [HOST_CABLE], per_suspect=2, controls=0, avoid=[avoid])
    probes = [t for t, s in plan.targets.items() if s == HOST_CABLE]
    assert len(probes) == 2
    assert all(avoid not in fabric.path(s, d) for s, d in probes)
