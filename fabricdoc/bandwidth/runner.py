"""Run a bandwidth plan round by round through a pair runner, journaling every finished test.

Tests of one round run in parallel (at most ``max_parallel``), rounds in
sequence: a round's tests share no cable direction, so running them together
measures each path on its own. The runner is a seam: the simulator, the
launchers (srun, mpirun, netns, local) and tests each provide one.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any, Protocol

from fabricdoc.bandwidth.journal import Journal
from fabricdoc.bandwidth.plan import Plan
from fabricdoc.model.paths import expected_gbps
from fabricdoc.model.records import GroupResult, PairResult, PortRef
from fabricdoc.model.topology import Fabric


@dataclass(frozen=True)
class TestSpec:
    """One planned test as the runner sees it."""

    __test__ = False  # not a pytest class

    phase: str  # "sweep" or "retest"
    round: int
    src: PortRef
    dst: PortRef
    expected_gbps: float | None
    slot: int  # index within its round; launchers derive a rendezvous port from it


class PairRunner(Protocol):
    """Runs one planned test (a launcher with its timeout bound in): the seam tests replace."""

    def __call__(self, spec: TestSpec) -> PairResult: ...


class RoundRunner(Protocol):
    """Runs a whole round at once (the simulator shares capacity between a round's tests)."""

    def __call__(self, specs: list[TestSpec]) -> list[PairResult]: ...


@dataclass(frozen=True)
class ProgressEvent:
    """Reported after every finished (or skipped) test."""

    phase: str
    round: int
    rounds: int
    done: int
    total: int
    result: PairResult | None
    skipped: bool = False


Progress = Callable[[ProgressEvent], None]


def run_plan(
    fabric: Fabric,
    plan: Plan,
    runner: PairRunner | None = None,
    *,
    round_runner: RoundRunner | None = None,
    journal: Journal | None = None,
    first_round: int = 0,
    max_parallel: int = 8,
    progress: Progress | None = None,
    into: list[PairResult] | None = None,
) -> list[PairResult]:
    """Run every test of ``plan``; return the results of all its tests, journaled ones included.

    ``into`` gets every result the moment it is known, so an interrupted run keeps
    what finished (the journal keeps it on disk).

    Give ``runner`` (one test at a time, a round's tests in parallel) or
    ``round_runner`` (a round at once). Results are numbered from ``first_round``,
    so a re-test follows the sweep's rounds. A test already in ``journal.done``
    (same phase, round, src, dst: a resumed sweep) is not run again.
    """
    if (runner is None) == (round_runner is None):
        raise ValueError("run_plan needs exactly one of runner and round_runner")
    phase = plan.purpose
    done = journal.done if journal is not None else {}
    total = plan.test_count
    results: list[PairResult] = []
    count = 0
    for rnd, tests in enumerate(plan.rounds):
        number = first_round + rnd
        todo: list[TestSpec] = []
        for slot, (src, dst) in enumerate(tests):
            key = (phase, number, src, dst)
            if key in done:
                results.append(done[key])
                if into is not None:
                    into.append(done[key])
                count += 1
                if progress:
                    progress(ProgressEvent(phase, rnd, len(plan.rounds), count, total, done[key], skipped=True))
                continue
            exp = expected_gbps(fabric, src, dst, plan.bidirectional)
            todo.append(TestSpec(phase, number, src, dst, exp, slot))
        if round_runner is not None:
            finished: Iterable[PairResult] = round_runner(todo) if todo else []
        else:
            finished = _run_round(runner, todo, max_parallel)  # type: ignore[arg-type]
        for r in finished:
            if r.round != number:
                r = dataclasses.replace(r, round=number)
            if journal is not None:
                journal.append(phase, r)
            results.append(r)
            if into is not None:
                into.append(r)
            count += 1
            if progress:
                progress(ProgressEvent(phase, rnd, len(plan.rounds), count, total, r))
    return results


def _run_round(runner: Any, specs: list[Any], max_parallel: int) -> Iterable[Any]:
    if not specs:
        return
    pool = ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(specs))), thread_name_prefix="fabricdoc-bw")
    try:
        pending: set[Future[Any]] = {pool.submit(runner, s) for s in specs}
        while pending:
            finished, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            failed = [f for f in finished if f.exception() is not None]
            for fut in finished:
                if fut.exception() is None:
                    yield fut.result()  # journal every finished test before raising
            if failed:
                raise failed[0].exception()  # type: ignore[misc]
    finally:
        pool.shutdown(wait=False, cancel_futures=True)


@dataclass(frozen=True)
class GroupSpec:
    """One planned group test as a runner sees it (``slot``: its index in the round, for a rendezvous port)."""

    __test__ = False

    round: int
    members: tuple[PortRef, ...]
    test: str
    phase: str
    label: str
    expected_gbps: float | None
    slot: int


class GroupTestRunner(Protocol):
    """Runs one group collective (a launcher with its timeout bound in)."""

    def __call__(self, spec: GroupSpec) -> GroupResult: ...


class GroupRoundRunner(Protocol):
    """Runs a whole round of group tests at once (the simulator)."""

    def __call__(self, specs: list[GroupSpec]) -> list[GroupResult]: ...


def group_rounds(
    runner: GroupTestRunner | None = None,
    *,
    round_runner: GroupRoundRunner | None = None,
    journal: Journal | None = None,
    into: list[GroupResult] | None = None,
    max_parallel: int = 8,
) -> Callable[[int, list[Any], list[float | None]], list[GroupResult]]:
    """The ``runner`` :func:`fabricdoc.bandwidth.isolate.isolate` calls: one round of group tests, journaled.

    A test already in ``journal.done_groups`` (same round, collective and members: a resumed
    sweep replaying the same isolation) is not run again; the journal gets every result the
    moment it is known, ``into`` each round's results when the round ends.
    """
    if (runner is None) == (round_runner is None):
        raise ValueError("group_rounds needs exactly one of runner and round_runner")
    done = journal.done_groups if journal is not None else {}

    def run(number: int, tests: list[Any], expected: list[float | None]) -> list[GroupResult]:
        results: dict[int, GroupResult] = {}
        todo: list[GroupSpec] = []
        for slot, (t, exp) in enumerate(zip(tests, expected, strict=True)):
            old = done.get((number, t.test, tuple(t.members)))
            if old is not None:
                results[slot] = old
            else:
                todo.append(GroupSpec(number, tuple(t.members), t.test, t.phase, t.label, exp, slot))
        if round_runner is not None:
            fresh: Iterable[GroupResult] = round_runner(todo) if todo else []
        else:
            fresh = _run_round(runner, todo, max_parallel)  # type: ignore[arg-type]
        by_members = {(s.test, s.members): s for s in todo}
        for g in fresh:
            spec = by_members[(g.test, tuple(g.members))]
            g = dataclasses.replace(g, round=number, phase=spec.phase, label=spec.label)
            if journal is not None:
                journal.append_group(g)
            results[spec.slot] = g
        ordered = [results[i] for i in range(len(tests))]
        if into is not None:
            into.extend(ordered)
        return ordered

    return run
