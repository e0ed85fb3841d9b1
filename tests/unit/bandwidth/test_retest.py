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


SILENT = "node00006"
BEHIND = LinkKey.of(PortRef("agg-p02-02", 1), PortRef("edge-p02-01", 4))  # only node00005/6 tests cross it


def _first_pass(fabric, silent: str):
    from fabricdoc.bandwidth.plan import plan_sweep

    plan = plan_sweep(fabric)
    pairs = [PairResult(s, d, "error" if silent in (s.node, d.node) else "ok",
                        None if silent in (s.node, d.node) else 90.0, 100.0, round=r) for r, s, d in plan.tests()]
    return plan, pairs


def test_a_cable_whose_planned_tests_all_failed_is_unmeasured_and_its_silent_hosts_cable_is_not():
    from fabricdoc.analysis.suspects import unmeasured_cables
    from fabricdoc.fabric.generators import fat_tree_3

    fabric = fat_tree_3(4)
    plan, pairs = _first_pass(fabric, SILENT)
    planned = [k for k, n in plan.coverage.items() if n > 0]
    assert unmeasured_cables(fabric, planned, pairs) == [BEHIND]
    _, none_failed = _first_pass(fabric, "no such host")
    assert unmeasured_cables(fabric, planned, none_failed) == []


def test_the_retest_round_leaves_out_hosts_whose_tests_never_ran_and_repeats_a_lone_path():
    from fabricdoc.fabric.generators import fat_tree_3

    fabric = fat_tree_3(4)
    plan = retest_plan(fabric, [BEHIND], skip_hosts={SILENT})
    tests = [t for r in plan.rounds for t in r]
    assert tests and all(SILENT not in (s.node, d.node) for s, d in tests)
    through = [t for t in tests if plan.targets[t] == BEHIND]
    assert len(through) == 2 and len(set(through)) == 1  # the one test that crosses it, twice
    assert all(BEHIND in fabric.path(*t) for t in through)


def test_a_slow_cable_only_a_silent_hosts_tests_were_to_cross_is_named_by_the_sweep():
    from fabricdoc.analysis.localize import Options
    from fabricdoc.bandwidth.simulated import SimMeasure
    from fabricdoc.fabric.faults import Fault
    from fabricdoc.fabric.generators import fat_tree_3
    from fabricdoc.model.records import Observations
    from fabricdoc.sources.sim.simulator import Simulator
    from fabricdoc.sweep import measure_and_retest

    for seed in range(3):
        sim = Simulator(fat_tree_3(4), [Fault("silent_hca", port=PortRef(SILENT, 1)),
                                        Fault("slow", port=BEHIND.a, factor=0.5)], seed=seed)
        before, after = sim.counters()
        obs = Observations(before=before, after=after, states=sim.port_states(), interval_s=sim.interval_s)
        found = measure_and_retest(sim.truth, obs, SimMeasure(sim), Options()).findings
        named = {(f.fault, tuple(f.node_ids)) for f in found if f.severity != "info"}
        assert ("degraded_bandwidth", ("agg-p02-02", "edge-p02-01")) in named, (seed, named)


def test_a_cable_whose_tests_all_hung_on_another_named_cable_is_unmeasured():
    from fabricdoc.analysis.suspects import unmeasured_cables

    fabric = fat_tree_2(4, 2, 2)
    src, dst = PortRef("node0001", 1), PortRef("node0005", 1)
    path = fabric.path(src, dst)  # host cable, leaf01 up, spine down to leaf03, host cable
    stuck = next(k for k in path if "leaf01" in (k.a.node, k.b.node) and "node0001" not in (k.a.node, k.b.node))
    beyond = next(k for k in path if "leaf03" in (k.a.node, k.b.node) and "node0005" not in (k.a.node, k.b.node))
    # The one test over the stuck uplink hung there; the hosts' own cables ran tests on their leaves.
    pairs = [PairResult(src, dst, "hung", None, 100.0), _ok("node0001", "node0002"), _ok("node0006", "node0005")]
    assert unmeasured_cables(fabric, path, pairs, blamed={stuck}) == [beyond]
    # Not told which cable stopped it, a hung test is evidence against every cable it crossed.
    assert unmeasured_cables(fabric, path, pairs) == []


def test_the_sweeps_retest_routes_around_the_cables_its_first_pass_named(monkeypatch):
    from fabricdoc import sweep
    from fabricdoc.analysis.localize import Options
    from fabricdoc.bandwidth.simulated import SimMeasure
    from fabricdoc.fabric.faults import Fault
    from fabricdoc.fabric.generators import fat_tree_3
    from fabricdoc.model.records import Observations
    from fabricdoc.sources.sim.simulator import Simulator

    told: list[set] = []
    real = sweep.retest_plan

    def spy(fabric, suspects, **kw):
        told.append(set(kw.get("avoid", ())))
        return real(fabric, suspects, **kw)

    monkeypatch.setattr(sweep, "retest_plan", spy)
    sim = Simulator(fat_tree_3(4), [Fault("hung", port=BEHIND.a), Fault("slow", port=PortRef("edge-p01-01", 1),
                                                                        factor=0.5)], seed=1)
    before, after = sim.counters()
    obs = Observations(before=before, after=after, states=sim.port_states(), interval_s=sim.interval_s)
    sweep.measure_and_retest(sim.truth, obs, SimMeasure(sim), Options())
    assert told and BEHIND in told[0]  # the hung cable named by the first pass: no re-test hangs on it again


def _symbol_errors(fabric, key: LinkKey, severity: Severity = Severity.ERROR) -> Finding:
    from fabricdoc.model.evidence import CounterEvidence

    ends = [(fabric.label(e.node), e.port) for e in (key.a, key.b)]
    ev = CounterEvidence(key.a.node, key.a.port, "symbol_errors", 56.0, 5.6, 10.0)
    return Finding("F002", "link", "uplink", "symbol_errors", severity, 0.95, [ev], ends, [key.a.node, key.b.node])


def test_host_cables_whose_slow_tests_a_counter_named_cable_took_are_retested():
    from fabricdoc.analysis.suspects import behind_counters

    fabric = fat_tree_2(4, 2, 2)
    # Slow over the erroring uplink: node0001 twice, node0002 twice, node0005 once (a third of routes cross it).
    over = [_ok("node0001", "node0003"), _ok("node0001", "node0005"), _ok("node0002", "node0003"),
            _ok("node0002", "node0007")]
    assert all(UPLINK in fabric.path(p.src, p.dst) for p in over)
    pairs = [*over, _ok("node0002", "node0004")]  # node0002 also ran one test clear of it, fine
    assert UPLINK not in fabric.path(pairs[-1].src, pairs[-1].dst)
    slow = set(range(4))
    behind = behind_counters(fabric, [_symbol_errors(fabric, UPLINK)], pairs, lambda i, p: i in slow)
    # node0001's cable: two slow tests, all through the uplink; node0003's: two, all through it too.
    node3 = LinkKey.of(PortRef("leaf02", 1), PortRef("node0003", 1))
    assert set(behind) == {HOST_CABLE, node3}
    # node0002 had a test clear of the uplink (its cable seen on its own); node0005, node0007 one slow each.
    # Nothing slow, a suspect only (info), or a cable named from bandwidth alone: nothing behind it.
    assert behind_counters(fabric, [_symbol_errors(fabric, UPLINK)], pairs, lambda i, p: False) == []
    assert behind_counters(fabric, [_symbol_errors(fabric, UPLINK, Severity.INFO)], pairs,
                           lambda i, p: i in slow) == []
    assert behind_counters(fabric, [_speed_degraded(fabric)], pairs, lambda i, p: i in slow) == []


def test_a_slow_host_cable_behind_a_flapping_uplink_is_named_by_the_sweep():
    """A benchmark case (seed 33): a flapping spine cable took the slow tests of node0013's half-rate cable."""
    from fabricdoc.analysis.localize import Options
    from fabricdoc.bandwidth.simulated import SimMeasure
    from fabricdoc.fabric.faults import Fault
    from fabricdoc.model.records import Observations
    from fabricdoc.sources.sim.simulator import Simulator
    from fabricdoc.sweep import measure_and_retest

    faults = [Fault("degraded", port=PortRef("leaf03", 4), lanes=2), Fault("congested", port=PortRef("spine01", 3)),
              Fault("flapping", port=PortRef("spine01", 4)), Fault("slow", port=PortRef("leaf04", 1), factor=0.5)]
    found = 0
    for seed in range(4):
        sim = Simulator(fat_tree_2(4, 2, 4), faults, seed=seed)
        before, after = sim.counters()
        obs = Observations(before=before, after=after, states=sim.port_states(), events=sim.events(),
                           interval_s=sim.interval_s)
        named = measure_and_retest(sim.truth, obs, SimMeasure(sim), Options()).findings
        found += any(f.severity != "info" and f.fault == "degraded_bandwidth" and "node0013" in f.node_ids
                     for f in named)
    assert found >= 3, found


class _NoisyScreening:
    """The simulator's tests, with every screening test of one host read ``factor`` slow: a neighbour's
    burst on that host while the screening ran, gone by the re-test round."""

    bidirectional = False

    def __init__(self, sim, host: str, factor: float) -> None:
        from fabricdoc.bandwidth.simulated import SimMeasure

        self.inner, self.host, self.factor = SimMeasure(sim), host, factor

    def __call__(self, plan, first_round: int, into: list[PairResult]) -> list[PairResult]:
        from dataclasses import replace

        start = len(into)
        self.inner(plan, first_round, into)
        if first_round == 0:
            for i in range(start, len(into)):
                p = into[i]
                if p.status == "ok" and self.host in (p.src.node, p.dst.node):
                    into[i] = replace(p, busbw_gbps=p.busbw_gbps * self.factor)
        return into


def test_a_host_cable_slow_only_in_the_screening_is_not_named_when_its_retests_pass():
    """Named from bandwidth alone, a cable must be slow again when re-tested: a host whose screening tests
    all read slow and whose re-tests pass was slowed by something that passed, and stays a suspect."""
    from fabricdoc.analysis.localize import Options
    from fabricdoc.bandwidth.simulated import SimMeasure
    from fabricdoc.fabric.faults import Fault
    from fabricdoc.model.records import Observations
    from fabricdoc.sources.sim.simulator import Simulator
    from fabricdoc.sweep import measure_and_retest

    def named(measure, sim) -> set[frozenset[str]]:
        before, after = sim.counters()
        obs = Observations(before=before, after=after, states=sim.port_states(), interval_s=sim.interval_s)
        found = measure_and_retest(sim.truth, obs, measure, Options()).findings
        return {frozenset(f.node_ids) for f in found if f.severity != "info" and f.fault == "degraded_bandwidth"}

    cable = frozenset({"leaf01", "node0001"})
    for seed in range(4):
        sim = Simulator(fat_tree_2(3, 1, 2), [], seed=seed)
        assert cable not in named(_NoisyScreening(sim, "node0001", 0.72), sim), seed
        # The same screening figures from a cable that stays slow: named.
        sim = Simulator(fat_tree_2(3, 1, 2), [Fault("slow", port=PortRef("leaf01", 1), factor=0.72)], seed=seed)
        assert cable in named(SimMeasure(sim), sim), seed
