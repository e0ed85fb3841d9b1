"""The pipeline: collect -> measure and re-test -> localize -> impact -> report.

``run_sweep`` is what ``fabricdoc sweep`` and the TUI's live sweep call; ``analyze``
is the same pipeline over saved records. Every backend (the simulator,
InfiniBand, RoCE hosts) goes through the one measure-and-re-test loop,
:func:`measure_and_retest`: planned rounds, localization, a targeted re-test
round around the cables bandwidth alone blamed, and localization again.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from fabricdoc.analysis.blame import named_cable, slow_figure
from fabricdoc.analysis.localize import Options, localize
from fabricdoc.analysis.rules import load_rules
from fabricdoc.analysis.suspects import (
    behind_counters,
    no_test_ran,
    retest_suspects,
    unmeasured_cables,
)
from fabricdoc.bandwidth.groups import GroupTest, expected_round, full_load_rounds, screening
from fabricdoc.bandwidth.isolate import isolate
from fabricdoc.bandwidth.journal import Journal, JournalHeader, plan_fingerprint
from fabricdoc.bandwidth.plan import Plan, plan_sweep
from fabricdoc.bandwidth.retest import retest_plan
from fabricdoc.bandwidth.runner import (
    GroupSpec,
    PairRunner,
    ProgressEvent,
    group_rounds,
    run_plan,
)
from fabricdoc.errors import ConfigError, FabricdocError
from fabricdoc.fabric.identity import align
from fabricdoc.impact.records import ImpactSection
from fabricdoc.model.expectation import GroupJudge, TestJudgement, explains
from fabricdoc.model.findings import Finding
from fabricdoc.model.groups import group_cables, group_edges
from fabricdoc.model.paths import FINISHED
from fabricdoc.model.records import GroupResult, LinkKey, Observations, PairResult, PortRef
from fabricdoc.model.severity import Severity
from fabricdoc.model.times import now_iso
from fabricdoc.model.topology import Fabric
from fabricdoc.report.coverage import Planned, cabled_ports, host_ports
from fabricdoc.report.drain_policy import DrainPolicy
from fabricdoc.report.report import Report

# progress(stage, done, total): stage is a short word ("plan", "bandwidth", "counters"...).
Progress = Callable[[str, int, int], None]


@dataclass
class SweepConfig:
    """Everything a sweep needs to know; the CLI fills it from its flags."""

    fabric: str = "demo"
    faults: str | None = None
    seed: int = 0
    interval_s: float = 10.0
    rules: str | None = None
    retest: bool = True
    baseline: str | None = None
    expected: str | None = None  # the fabric as it should be: IB ibnetdiscover output, RoCE fabric file
    save_sample: str | None = None
    journal: str | None = None
    resume: bool = False
    include_topology: bool = True
    job_hosts: list[str] | None = None
    hours: float = 24.0
    checkpoint_minutes: float | None = None
    timeout_s: float = 60.0
    history: str | None = None
    hosts: list[str] | None = None
    launcher: str = "local"
    bandwidth: bool = True
    test_timeout_s: float = 120.0
    size_bytes: int = 1 << 24
    pair_parallel: int = 8  # at most this many pair tests of a round at once (a round's pairs share no cable)
    backend: str = "gloo"
    slow_ratio: float | None = None  # given: slow below this share of what healthy tests reach (else from the noise)
    nccl_tests: str | None = None  # path to sendrecv_perf / all_reduce_perf: run those instead of bwtest
    drain_policy: DrainPolicy | None = None  # None: the default policy (cap only)
    groups: bool = False  # group tests after the pairs: screen groups, adaptive isolation of failing ones
    full_load: bool = False  # a full-load round: every host at once (all_reduce, then alltoall)
    group_test: str = "alltoall"  # the collective of screening groups: alltoall or all_reduce


class Measure(Protocol):
    """A bandwidth backend for the loop: runs one plan, results numbered from ``first_round``,
    each appended to ``into`` as soon as it is known (an interrupted sweep keeps them).
    A backend that can run group tests also has ``group_round(into)``, returning the round
    runner :func:`fabricdoc.bandwidth.isolate.isolate` calls (--groups / --full-load)."""

    bidirectional: bool

    def __call__(self, plan: Plan, first_round: int, into: list[PairResult]) -> list[PairResult]: ...


class SweepInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a sweep: ``report`` holds whatever finished, marked incomplete."""

    def __init__(self, report: Report) -> None:
        super().__init__("sweep interrupted")
        self.report = report


@dataclass
class _Progress:
    """What a sweep has so far, for the partial report of an interrupted one."""

    fabric: Fabric | None = None
    obs: Observations | None = None
    planned: Planned | None = None
    run_id: str | None = None  # a resumed sweep keeps its journal's sweep id


def _noop(stage: str, done: int, total: int) -> None:
    return None


@dataclass
class Measured:
    """What the measure-and-re-test loop gives back."""

    findings: list[Finding]
    rounds: int
    planned_tests: int
    judged: TestJudgement | None = None  # the tests as the last localization judged them
    errors: list[str] = field(default_factory=list)  # what could not be read (a history store), kept going
    group_load: bool = False  # screening group tests ran: coverage says what they did not load
    isolation_left: int = 0  # failing groups isolation had not finished at its round cap
    groups_unexplained: int = 0  # failing group tests no named part explains and no run again cleared


def measure_and_retest(
    fabric: Fabric, obs: Observations, measure: Measure, options: Options, *, retest: bool = True,
    progress: Progress = _noop, groups: bool = False, full_load: bool = False, group_test: str = "alltoall",
    history: str | None = None,
) -> Measured:
    """The one measure -> localize -> re-test -> localize loop.

    Results are appended to ``obs.pairs``. The re-test round probes the cables
    bandwidth tomography blamed and their equally likely twins, over other paths.
    With ``full_load`` every host then runs at once; with ``groups`` topology groups
    are screened and failing ones isolated (:func:`fabricdoc.bandwidth.isolate.isolate`),
    results in ``obs.groups``, and localization runs again over pairs and groups together.
    Every test is judged against what healthy tests of its shape reach here (this sweep's tests, and
    with ``history`` the earlier sweeps' of this fabric where this one has too few).
    """
    errors = history_options(options, history, fabric.name)

    screened: int | None = None  # rounds of the screening plan: what healthy tests reach is learned from them

    def judged_findings() -> tuple[TestJudgement, list[Finding]]:
        judged = options.judge(fabric, obs, screened)  # once per localization: the report and isolation reuse it
        return judged, localize(fabric, obs, options, judged)

    plan = plan_sweep(fabric, bidirectional=measure.bidirectional)
    progress("plan", 1, 1)
    measure(plan, 0, obs.pairs)
    judged, findings = judged_findings()
    rounds, planned = len(plan.rounds), plan.test_count
    screened = rounds
    group_load, isolation_left = False, 0
    suspects = retest_suspects(fabric, findings, obs.pairs) if retest else []
    blamed = set(blamed_figures(fabric, findings))
    if retest:  # cables whose planned tests could not run are tested from other hosts in the same round
        planned_cables = [k for k, n in plan.coverage.items() if n > 0]
        suspects += [k for k in unmeasured_cables(fabric, planned_cables, obs.pairs, blamed)
                     if k not in suspects]
        suspects += [k for k in behind_counters(fabric, findings, obs.pairs, judged.pair_slow) if k not in suspects]
    if suspects:
        # Around the cables already named where a path allows: a test through one shows that one again.
        again = retest_plan(fabric, suspects, bidirectional=measure.bidirectional, skip_hosts=no_test_ran(obs.pairs),
                            avoid=blamed)
        measure(again, rounds, obs.pairs)
        rounds += len(again.rounds)
        planned += again.test_count
        judged, findings = judged_findings()
    if groups or full_load:
        make = getattr(measure, "group_round", None)
        if make is None:
            raise ConfigError("this bandwidth backend cannot run group tests (--groups / --full-load)")
        blamed = blamed_figures(fabric, findings)
        # Hosts behind a cable the pair tests already blamed sit out the group tests: every test holding one
        # would be as slow as that cable explains, and so say nothing of a load-only fault it also loaded.
        ports = [p for p in fabric.host_ports() if (link := fabric.link_at(p)) is None or link.key not in blamed]
        screens = full_load_rounds(ports) if full_load else []
        reference: list[GroupTest] = []
        if groups:
            screen_plan = screening(fabric, ports, group_test)
            screens += screen_plan.rounds
            reference = screen_plan.reference
        total = sum(len(s) for s in screens)
        progress("groups", 0, total)
        judge = GroupJudge(judged.expectations, options.slow_ratio)
        done = isolate(fabric, make(obs.groups), screens, judge=judge, first_round=rounds,
                       expect=group_expectation, chase=groups,
                       explained=blamed,
                       progress=lambda n, known: progress("groups", n, known), reference=reference,
                       carried=_carried_hosts(obs.pairs, judged))
        progress("groups", done.tests, done.tests)
        rounds += done.rounds  # group tests are counted in the report's tests.groups_* (not as planned pairs)
        group_load, isolation_left = groups, done.unfinished
        judged, findings = judged_findings()
        for _ in range(AGAIN_PASSES if groups else 0):
            # A load-only part isolation named explains every failing test through it, and may hide a
            # second one those tests also overloaded: they run again without it (without the hosts below it,
            # and without the receivers of their flows through it).
            again = _without_named(fabric, obs.groups, judged, findings, blamed)
            if not again:
                break
            blamed = blamed_figures(fabric, findings)
            ran = len(obs.groups)  # progress goes on from the group tests already run
            done = isolate(fabric, make(obs.groups), again, judge=judge, first_round=rounds,
                           expect=group_expectation, explained=blamed,
                           progress=lambda n, known, ran=ran: progress("groups", ran + n, ran + known),
                           carried=_carried_hosts(obs.pairs, judged), before=_passing_rounds(obs.groups, judged))
            rounds += done.rounds
            isolation_left += done.unfinished
            judged, findings = judged_findings()
    unexplained = len(unexplained_groups(fabric, obs.groups, judged, findings)) if obs.groups else 0
    return Measured(findings, rounds, planned, judged, errors, group_load, isolation_left, unexplained)


_WITHOUT = " without the hosts below "
_AROUND = " without the hosts whose flows cross "
AGAIN_PASSES = 2  # times the failing tests a newly named load-only part explains run again without it


def _without_named(fabric: Fabric, groups: list[GroupResult], judged: TestJudgement, findings: list[Finding],
                   before: Mapping[LinkKey, float | None]) -> list[list[GroupTest]]:
    """The failing screening and full-load tests through cables named since ``before`` (not switches: the
    hosts below a spine are all of them), run again without those cables, two ways: without the host ports
    below them (the rest of the fabric under the same load), and, an alltoall, without the receivers of its
    flows that cross them (the cables beside them, a second uplink of the same leaf, under load still).
    One round of each way, of tests not run that way yet, the largest (alltoall) first, no host in two.
    (fan screens keep their senders first: not re-run.)"""
    named = list(blamed_figures(fabric, [f for f in findings if f.kind != "switch"]))
    new = {k for k in named if k not in before}
    if not new:
        return []
    below = {k: set(fabric.ports_below_cable(k)) for k in named}
    ran = {(g.members, g.test) for g in groups}
    ways: tuple[list[GroupTest], list[GroupTest]] = ([], [])
    for j, g in enumerate(groups):
        if g.phase not in ("screen", "full_load") or g.test not in ("alltoall", "all_reduce") \
                or g.status != "ok" or not judged.group_failed(j, g):
            continue
        crosses = group_cables(fabric, g.members, g.test)
        if not new & crosses:
            continue
        crossed = [k for k in named if k in crosses]  # every named cable it crosses: each may explain it
        cables = ", ".join(f"{fabric.label(k.a.node)}[{k.a.port}] -- {fabric.label(k.b.node)}[{k.b.port}]"
                           for k in crossed)
        out = set().union(*(below[k] for k in crossed))
        variants = [(tuple(p for p in g.members if p not in out), _WITHOUT, ways[0])]
        if g.test == "alltoall":  # a subset of its hosts runs a subset of its flows: none crosses them
            variants.append((_routed_around(fabric, g.members, g.test, set(crossed)), _AROUND, ways[1]))
        for members, how, into in variants:
            if len(members) < 2 or (members, g.test) in ran:
                continue
            ran.add((members, g.test))
            into.append(GroupTest(members, g.test, g.phase, g.label.split(_WITHOUT)[0].split(_AROUND)[0]
                                  + how + cables))
    # A round of each, the largest first and alltoall before a ring of the same hosts (it loads every level
    # hardest; a ring puts one flow on each cable): a second fault is as likely anywhere, and each round
    # more costs every sweep with a load-only fault.
    rounds: list[list[GroupTest]] = []
    for tests in ways:
        round_: list[GroupTest] = []
        used: set[str] = set()  # hosts of the tests taken (as isolation's rounds hold each host once)
        for t in sorted(tests, key=lambda t: (-len(t.members), t.test != "alltoall")):
            if not used & t.nodes:
                used |= t.nodes
                round_.append(t)
        if round_:
            rounds.append(round_)
    return rounds


def _routed_around(fabric: Fabric, members: tuple[PortRef, ...], test: str, cables: set[LinkKey]
                   ) -> tuple[PortRef, ...]:
    """``members`` without the receivers of the flows of ``test`` whose routes cross one of ``cables``."""
    out = {b for a, b in group_edges(members, test) if cables.intersection(fabric.path(a, b))}
    return tuple(p for p in members if p not in out)


def _passing_rounds(groups: list[GroupResult], judged: TestJudgement) -> list[list[tuple[GroupTest, GroupResult]]]:
    """Each round's group tests that passed, as isolation's ``before``."""
    rounds: dict[int, list[tuple[GroupTest, GroupResult]]] = {}
    for j, g in enumerate(groups):
        if g.status == "ok" and not judged.group_failed(j, g):
            rounds.setdefault(g.round, []).append((GroupTest(g.members, g.test, g.phase, g.label), g))
    return [rounds[r] for r in sorted(rounds)]


def _carried_hosts(pairs: list[PairResult], judged: TestJudgement) -> set[PortRef]:
    """Host ports with a finished pair test and no slow one: they carry a pair's load at full rate."""
    seen: set[PortRef] = set()
    slow: set[PortRef] = set()
    for i, p in enumerate(pairs):
        if p.status in FINISHED:
            seen.update((p.src, p.dst))
            if judged.pair_slow(i, p):
                slow.update((p.src, p.dst))
    return seen - slow


def unexplained_groups(fabric: Fabric, groups: list[GroupResult], judged: TestJudgement,
                       findings: list[Finding]) -> list[GroupResult]:
    """The failing group tests that no named part explains (none of their flows crosses a cable or switch
    named at warning or worse that explains how slow they were, see :func:`blamed_figures`) and that did not
    pass when the same hosts ran it again: the fabric was slower under that load than it should be and
    isolation could not say why, so the sweep cannot pass."""
    named = blamed_figures(fabric, findings)
    out = []
    for j, g in enumerate(groups):
        if not judged.group_failed(j, g):
            continue
        cleared = any(h.members == g.members and h.test == g.test and h.round > g.round
                      and not judged.group_failed(k, h) for k, h in enumerate(groups))
        if cleared:
            continue
        crossed = group_cables(fabric, g.members, g.test)
        slow_ratio = judged.expectations.slow_ratio
        if not any(explains(named[k], judged.groups[j], slow_ratio) for k in crossed if k in named):
            out.append(g)
    return out


def blamed_figures(fabric: Fabric, findings: list[Finding]) -> dict[LinkKey, float | None]:
    """The cables the findings so far name (a switch's: all its cables), each with how slow it is where only
    slow pair tests blame it (:func:`~fabricdoc.analysis.blame.slow_figure`), else None (down, hung,
    erroring, a switch's: no figure says how far it slows a group). A slow pair no cable explained
    (``kind == "pair"``) names no cable: groups crossing its hosts are chased."""
    out: dict[LinkKey, float | None] = {}
    figures: dict[LinkKey, list[float | None]] = {}
    for f in findings:
        if f.kind == "pair" or f.severity == Severity.INFO:  # a suspect to re-test names nothing yet
            continue
        if f.kind == "switch":
            out.update(dict.fromkeys(lk.key for nid in f.node_ids if nid in fabric.nodes
                                     for lk in fabric.node_links(nid)))
        elif (key := named_cable(fabric, f)) is not None:
            figures.setdefault(key, []).append(slow_figure(f.evidence))
    for key, got in figures.items():  # two findings on one cable: a figure only where each has one
        out[key] = None if None in got else min(got)  # type: ignore[type-var]
    return out


def group_expectation(fabric: Fabric, tests: list[GroupTest]) -> list[float | None]:
    """What each group of a round should reach on today's routes: a full-load all_reduce over every host
    (one port each) is the job's ring, so the impact model's busbw; the rest the flow model's max-min share."""
    out = expected_round(fabric, tests)
    for i, t in enumerate(tests):
        if (t.phase == "full_load" and t.test == "all_reduce" and len(tests) == 1
                and len(t.nodes) == len(t.members) and out[i] is not None):
            from fabricdoc.impact.busbw import ImpactModel

            out[i] = ImpactModel(fabric, job_hosts=sorted(t.nodes)).busbw()
    return out


def _options(cfg: SweepConfig) -> Options:
    options = Options(slow_ratio=cfg.slow_ratio)
    if cfg.rules:
        options.rules = load_rules(cfg.rules)
    return options


def history_options(options: Options, history: str | None, fabric_name: str) -> list[str]:
    """Give ``options`` the earlier sweeps' test figures of ``fabric_name`` from the history store (what
    healthy tests reach where this sweep has too few of its own); returns errors reading it (the sweep
    goes on without them)."""
    if not history:
        return []
    from fabricdoc.model.expectation import history_samples
    from fabricdoc.report.history import History

    try:
        with History(history) as store:
            options.history = tuple(history_samples(store.test_pools(fabric_name)))
    except FabricdocError as exc:
        return [f"history (expected test figures): {exc}"]
    return []


def run_sweep(cfg: SweepConfig, progress: Progress | None = None) -> Report:
    """Run one sweep as configured and return its report (not yet written anywhere).

    Ctrl-C (or SIGTERM, which the CLI turns into one) stops every test in flight and
    raises :class:`SweepInterrupted` with a report of whatever finished, marked
    incomplete. A history store that cannot be written leaves the report intact and
    says so in ``report.errors``.
    """
    progress = progress or _noop
    started = time.monotonic()
    started_at = now_iso()
    runs_tests = cfg.fabric == "roce" or (cfg.fabric == "ib" and cfg.launcher in ("srun", "mpirun"))
    if (cfg.journal or cfg.resume) and not (runs_tests and cfg.bandwidth):
        raise ConfigError("--journal/--resume keep bandwidth tests that take real time: they apply to "
                          "--fabric roce, or --fabric ib with --launcher srun|mpirun")
    if cfg.resume and not cfg.journal:
        raise ConfigError("--resume needs --journal FILE (the journal of the sweep to continue)")
    options = _options(cfg)
    state = _Progress()
    try:
        if cfg.fabric == "ib" or cfg.fabric.startswith("ibsim:"):
            fabric, obs, found, planned = _infiniband(cfg, progress, options, state)
        elif cfg.fabric == "roce":
            fabric, obs, found, planned = _roce(cfg, progress, options, state)
        else:
            fabric, obs, found, planned = _simulated(cfg, progress, options, state)
    except KeyboardInterrupt:
        raise SweepInterrupted(_partial(cfg, state, options, started, started_at)) from None
    findings = found.findings
    progress("impact", 0, 1)
    report = Report.build(
        fabric, findings, obs, duration_s=round(time.monotonic() - started, 3), rounds=found.rounds,
        include_topology=cfg.include_topology, thresholds=options.thresholds(), planned=planned,
        judged=found.judged or options.judge(fabric, obs),
    )
    report.started_at = started_at
    if state.run_id:
        report.run_id = state.run_id
    hold_drains(report, cfg.drain_policy, cfg.history)
    rates: dict[str, Any] = {}
    pools: list[dict[str, Any]] = [report.test_pool()]
    if cfg.history:
        from fabricdoc.impact.jobcost import observed_rates
        from fabricdoc.report.history import History

        # Stored first, so the failure rate the job cost uses includes this sweep.
        try:
            with History(cfg.history) as store:
                store.append(report, obs.before + obs.after, obs.events)
                rates = observed_rates(store.host_failure_rate(report.fabric.get("name")))
                pools = store.test_pools(str(report.fabric.get("name", "")))  # this sweep's tests included
        except FabricdocError as exc:
            report.errors.append(f"history: {exc}")
    _history_errors(report, found.errors)
    report.impact = _impact(fabric, findings, report, cfg, rates, pools)
    progress("impact", 1, 1)
    return report


def _partial(cfg: SweepConfig, state: _Progress, options: Options, started: float, started_at: str) -> Report:
    """The report of an interrupted sweep: what finished, localized, and marked incomplete."""
    from fabricdoc.sources.processes import stop_all

    stop_all()
    fabric = state.fabric or Fabric(name=cfg.fabric, source="interrupted")
    obs = state.obs or Observations()
    findings = localize(fabric, obs, options) if state.fabric is not None else []
    report = Report.build(fabric, findings, obs, duration_s=round(time.monotonic() - started, 3),
                          include_topology=cfg.include_topology, thresholds=options.thresholds(),
                          planned=state.planned, interrupted=True)
    hold_drains(report, cfg.drain_policy, None)
    report.started_at = started_at
    if state.run_id:
        report.run_id = state.run_id
    return report


def _impact(fabric: Fabric, findings: list[Finding], report: Report, cfg: SweepConfig,
            rates: dict[str, Any], pools: list[dict[str, Any]]) -> ImpactSection:
    """The impact section; the efficiency is learned from the healthy tests of ``pools`` (this sweep's
    and, with a history store, its earlier sweeps of this fabric)."""
    from fabricdoc.impact.calibration import learned_efficiency
    from fabricdoc.impact.section import impact_section

    what = "this sweep" if len(pools) <= 1 else f"this sweep and {len(pools) - 1} earlier in the history store"
    return impact_section(
        fabric, findings, [d.node for d in report.drain], job_hosts=cfg.job_hosts, hours=cfg.hours,
        checkpoint_minutes=cfg.checkpoint_minutes, failure_rates=rates,
        efficiency=learned_efficiency(pools, what),
    )


# -- the simulator ----------------------------------------------------------------


def _simulated(cfg: SweepConfig, progress: Progress, options: Options, state: _Progress):
    from fabricdoc.bandwidth.simulated import SimMeasure
    from fabricdoc.fabric.fabricfile import faults_from_yaml
    from fabricdoc.sources.fabrics import load_fabric_file
    from fabricdoc.sources.sim.simulator import Simulator

    progress("load", 0, 1)
    loaded = load_fabric_file(cfg.fabric)
    fabric, faults = loaded.fabric, loaded.faults
    if cfg.faults:
        faults = faults_from_yaml(cfg.faults, fabric)
    if not fabric.hosts():
        raise ConfigError(f"{cfg.fabric}: the fabric has no hosts to test")
    progress("load", 1, 1)
    sim = Simulator(fabric, faults, seed=cfg.seed, interval_s=cfg.interval_s, realism=loaded.realism)
    observed = sim.truth  # what discovery shows: trained widths, down links
    before, after = sim.counters()
    progress("counters", 1, 1)
    obs = Observations(before=before, after=after, states=sim.port_states(), events=sim.events(),
                       interval_s=cfg.interval_s)

    planned = Planned(ports=cabled_ports(observed))
    state.fabric, state.obs, state.planned = observed, obs, planned
    if not cfg.bandwidth:
        return observed, obs, Measured(localize(observed, obs, options), 0, 0), planned
    found = measure_and_retest(observed, obs, SimMeasure(sim, _bandwidth_progress(progress)), options,
                               retest=cfg.retest, progress=progress, history=cfg.history,
                               **_group_options(cfg))
    planned.tests = found.planned_tests
    planned.group_load, planned.isolation_left = found.group_load, found.isolation_left
    planned.groups_unexplained = found.groups_unexplained
    return observed, obs, found, planned


def _group_options(cfg: SweepConfig) -> dict[str, Any]:
    return {"groups": cfg.groups, "full_load": cfg.full_load, "group_test": cfg.group_test}


def _bandwidth_progress(progress: Progress) -> Callable[[ProgressEvent], None]:
    def report(ev: ProgressEvent) -> None:
        progress("retest" if ev.phase == "retest" else "bandwidth", ev.done, ev.total)

    return report


# -- real hosts -----------------------------------------------------------------------


class LauncherMeasure:
    """Planned rounds on real hosts through a launcher, journaled (resumable).

    ``runner`` replaces the launcher's pair runner and ``group_runner`` its group runner (the seams
    tests use). ``cfg.nccl_tests`` names an nccl-tests binary or its directory (a directory runs its
    ``sendrecv_perf`` for the pairs); group tests run ``all_reduce_perf`` / ``alltoall_perf`` from there.
    """

    def __init__(self, fabric: Fabric, cfg: SweepConfig, progress: Progress, runner: PairRunner | None = None,
                 group_runner: Callable[[GroupSpec], GroupResult] | None = None) -> None:
        from fabricdoc.sources.launchers import launcher_runner, nccl_pair_binary, pair_launcher

        fields: dict[str, Any] = {"size_bytes": cfg.size_bytes, "backend": cfg.backend}
        self.nccl_binary = cfg.nccl_tests
        if cfg.nccl_tests:
            if cfg.launcher != "mpirun":
                raise ConfigError("--nccl-tests runs the binaries through MPI (pairs and --groups / --full-load): "
                                  "use --launcher mpirun")
            if cfg.groups and cfg.group_test == "fan":  # refused before the pair rounds, not after them
                raise ConfigError("--group-test fan needs fabricdoc's torch test: nccl-tests has no one-way fan "
                                  "binary (use --group-test alltoall or all_reduce with --nccl-tests)")
            self.nccl_binary = nccl_pair_binary(cfg.nccl_tests)
            fields["program"] = "nccl-tests"
            fields["test"] = f"nccl-tests:{Path(self.nccl_binary).name}"  # localization reads both directions
        self.fabric = fabric
        self.runner = runner or launcher_runner(pair_launcher(fabric, cfg.launcher, self.nccl_binary),
                                                timeout_s=cfg.test_timeout_s, **fields)
        # A two-rank nccl-tests run loads both directions of every cable on its path.
        self.bidirectional = bool(cfg.nccl_tests)
        self.cfg = cfg
        self.group_runner = group_runner
        self.progress = progress
        self.journal: Journal | None = None
        self.run_id: str | None = None

    def __call__(self, plan: Plan, first_round: int, into: list[PairResult]) -> list[PairResult]:
        if self.cfg.journal and self.journal is None:
            # The journal belongs to the sweep plan (the first plan this sweep runs).
            fingerprint = plan_fingerprint(plan)
            if self.cfg.resume:
                self.journal = Journal.resume(self.cfg.journal, self.fabric.name, fingerprint)
            else:
                self.journal = Journal.start(self.cfg.journal,
                                             JournalHeader(self.fabric.name, fingerprint, uuid.uuid4().hex))
            self.run_id = self.journal.header.sweep_id
        return run_plan(self.fabric, plan, self.runner, journal=self.journal, first_round=first_round,
                        max_parallel=self.cfg.pair_parallel, progress=_bandwidth_progress(self.progress), into=into)

    def group_round(self, into: list[GroupResult]):
        """Group tests through the launcher (every rank of a group at once), journaled like the pairs.
        With --nccl-tests (mpirun only) each group runs ``all_reduce_perf`` / ``alltoall_perf`` beside the
        given binary; a missing one, and isolation's one-way fan probes, come back as ``error`` (no evidence)."""
        from fabricdoc.sources.group_launch import group_runner

        run = self.group_runner or group_runner(self.fabric, self.cfg.launcher, timeout_s=self.cfg.test_timeout_s,
                                                size_bytes=self.cfg.size_bytes, backend=self.cfg.backend,
                                                nccl_tests=self.nccl_binary)
        return group_rounds(run, journal=self.journal, into=into)

    def close(self) -> None:
        if self.journal is not None:
            self.journal.close()


def _measure(fabric: Fabric, obs: Observations, cfg: SweepConfig, progress: Progress, options: Options,
             planned: Planned, state: _Progress) -> Measured:
    state.fabric, state.obs, state.planned = fabric, obs, planned
    if not cfg.bandwidth:
        return Measured(localize(fabric, obs, options), 0, 0)
    measure = LauncherMeasure(fabric, cfg, progress)
    try:
        found = measure_and_retest(fabric, obs, measure, options, retest=cfg.retest, progress=progress,
                                   history=cfg.history, **_group_options(cfg))
    finally:
        measure.close()
        state.run_id = measure.run_id
    planned.tests = found.planned_tests
    planned.group_load, planned.isolation_left = found.group_load, found.isolation_left
    planned.groups_unexplained = found.groups_unexplained
    return found


def _infiniband(cfg: SweepConfig, progress: Progress, options: Options, state: _Progress):
    from fabricdoc.sources import infiniband as ib

    netfile = cfg.fabric[len("ibsim:"):] if cfg.fabric.startswith("ibsim:") else None
    if netfile is not None and not Path(netfile).is_file():
        raise ConfigError(f"{netfile}: no such ibsim net file")
    baseline = ib.load_sample(cfg.baseline) if cfg.baseline else None
    with ib.session(netfile, timeout_s=cfg.timeout_s) as (runner, health):
        # The expected fabric (--expected, else what is there now) with OpenSM's live LFTs.
        fabric = ib.expected_fabric(runner, health, cfg.expected, progress=progress)
        ib.check_routes(runner, fabric, health)  # paths follow the LFTs: see that the switches agree
        obs = ib.collect(runner, fabric, health, interval_s=cfg.interval_s, baseline=baseline, progress=progress)
    if cfg.save_sample:
        from fabricdoc.report.files import write_atomic

        write_atomic(cfg.save_sample, ib.sample_text(obs))
    planned = Planned(ports=cabled_ports(fabric))
    state.fabric, state.obs, state.planned = fabric, obs, planned
    if cfg.launcher in ("srun", "mpirun") and cfg.bandwidth:
        # A real cluster: bandwidth rounds between the HCAs' hosts through Slurm or MPI.
        return fabric, obs, _measure(fabric, obs, cfg, progress, options, planned, state), planned
    return fabric, obs, Measured(localize(fabric, obs, options), 0, 0), planned


def _roce(cfg: SweepConfig, progress: Progress, options: Options, state: _Progress):
    from fabricdoc.sources import roce
    from fabricdoc.sources.fabrics import load_fabric

    if not cfg.expected:
        raise ConfigError("--fabric roce needs --expected FILE: the fabric file naming hosts, ports and interfaces")
    fabric, _ = load_fabric(cfg.expected)
    hosts = set(cfg.hosts) if cfg.hosts else {n.id for n in fabric.hosts()}
    obs = roce.collect(fabric, cfg.hosts, launcher=cfg.launcher, interval_s=cfg.interval_s,
                       timeout_s=cfg.timeout_s + cfg.interval_s, progress=progress)
    obs = align(fabric, obs)
    planned = Planned(hosts=hosts, ports=host_ports(fabric, hosts))
    return fabric, obs, _measure(fabric, obs, cfg, progress, options, planned, state), planned


# -- saved records ----------------------------------------------------------------------


def hold_drains(report: Report, policy: DrainPolicy | None, history: str | None) -> None:
    """Pass the report's drain list through the drain policy (the default one when None); the
    earlier sweeps it confirms against come from ``history``. A history that cannot be read
    is a report error, and nothing unconfirmed drains."""
    policy = policy or DrainPolicy()
    seen: list[set[str]] | None = None
    if history and policy.confirm_window > 1:
        from fabricdoc.report.history import History

        try:
            with History(history) as store:
                seen = store.recent_keys(str(report.fabric.get("name")), policy.confirm_window - 1)
        except FabricdocError as exc:
            report.errors.append(f"history (drain confirmation): {exc}")
    report.hold_drains(policy, seen)


def analyze(fabric: Fabric, obs: Observations, options: Options | None = None,
            include_topology: bool = True, planned: Planned | None = None,
            drain_policy: DrainPolicy | None = None, history: str | None = None) -> Report:
    """The pipeline over saved observations: align them with the fabric, localize, build the report.

    ``planned`` says what the records should cover (every host's records, say); what
    they do not cover makes the verdict ``incomplete``, never ``pass``. Every test is judged against
    what healthy tests of its shape reach in these records (and, with ``history``, in earlier sweeps
    of this fabric where these have too few).
    """
    obs = align(fabric, obs)
    options = options or Options()
    errors = history_options(options, history, fabric.name)
    judged = options.judge(fabric, obs)
    findings = localize(fabric, obs, options, judged)
    report = Report.build(fabric, findings, obs, include_topology=include_topology,
                          thresholds=options.thresholds(), planned=planned, judged=judged)
    hold_drains(report, drain_policy, history)
    _history_errors(report, errors)
    return report


def _history_errors(report: Report, errors: list[str]) -> None:
    """Add the errors reading the history for expectations, unless a later use of the same store already
    said it could not be used (one line per broken store)."""
    if not any(e.startswith("history") for e in report.errors):
        report.errors.extend(errors)
