"""Run a bandwidth plan round by round, journaling every finished test so a sweep can resume.

The journal is JSON lines, one :class:`PairResult` per line, written, flushed
and fsynced as each test finishes: Ctrl-C or a killed sweep keeps every
finished test, and ``resume=True`` skips the tests already there. A last line
cut short by a kill is ignored; any other unreadable line is a ParseError.

Tests of one round run in parallel (at most ``max_parallel``), rounds in
sequence: a round's tests share no cable direction, so running them together
measures each path on its own.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Protocol

from fabricdoc.errors import ParseError
from fabricdoc.model import PairResult, PortRef
from fabricdoc.plan import Plan, tested_links
from fabricdoc.topology import Fabric

JOURNAL_KIND = "fabricdoc-bandwidth-journal"

Progress = Callable[["ProgressEvent"], None]


class PairRunner(Protocol):
    """Runs one planned test (a launcher with its timeout bound in): the seam tests replace."""

    def __call__(self, spec: TestSpec) -> PairResult: ...


@dataclass(frozen=True)
class TestSpec:
    """One planned test as the runner sees it."""

    phase: str  # "sweep" or "retest"
    round: int
    src: PortRef
    dst: PortRef
    expected_gbps: float | None
    slot: int  # index within its round; launchers derive a rendezvous port from it


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


def expected_gbps(fabric: Fabric, src: PortRef, dst: PortRef, bidirectional: bool = False) -> float | None:
    """The path's bottleneck capacity in Gb/s: what a healthy, uncontended test should reach."""
    caps = [fabric.links[k].capacity_gbps for k in tested_links(fabric, src, dst, bidirectional)]
    return min(caps) if caps else None


# -- journal --------------------------------------------------------------------
def _port(text: str) -> PortRef:
    node, _, rest = text.rpartition("[")
    return PortRef(node, int(rest.rstrip("]")))


def result_to_json(phase: str, r: PairResult) -> dict[str, Any]:
    d = asdict(r)
    d["src"], d["dst"] = str(r.src), str(r.dst)
    return {"kind": "pair", "phase": phase, **d}


def result_from_json(d: dict[str, Any]) -> PairResult:
    fields = {k: v for k, v in d.items() if k not in ("kind", "phase")}
    fields["src"], fields["dst"] = _port(d["src"]), _port(d["dst"])
    return PairResult(**fields)


def read_journal(path: str | os.PathLike[str]) -> list[tuple[str, PairResult]]:
    """``(phase, result)`` for every finished test in a journal; a missing file is empty."""
    p = Path(path)
    if not p.exists():
        return []
    lines = p.read_text(errors="replace").splitlines()
    out: list[tuple[str, PairResult]] = []
    for no, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            d = json.loads(line)
            if d.get("kind") == "header":
                continue
            out.append((d["phase"], result_from_json(d)))
        except (json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
            if no == len(lines):
                break  # the sweep was killed while writing this line
            raise ParseError(str(p), no, line, f"bad journal line ({exc})") from None
    return out


class Journal:
    """Append-only JSON-lines file; every line is flushed and fsynced when written."""

    def __init__(self, path: str | os.PathLike[str], fabric_name: str, *, append: bool = True) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        if not append and self.path.exists():
            self.path.unlink()  # a new sweep, not a resumed one: old results are not this run's
        fresh = not self.path.exists() or self.path.stat().st_size == 0
        if not fresh:
            data = self.path.read_bytes()
            if not data.endswith(b"\n"):  # a line cut by a kill: not a finished test, drop it
                with self.path.open("r+b") as f:
                    f.truncate(data.rfind(b"\n") + 1)
        self._f = self.path.open("a", encoding="utf-8")
        if fresh:
            self._write({"kind": "header", "journal": JOURNAL_KIND, "version": 1, "fabric": fabric_name})

    def _write(self, record: dict[str, Any]) -> None:
        with self._lock:
            self._f.write(json.dumps(record, sort_keys=True) + "\n")
            self._f.flush()
            os.fsync(self._f.fileno())

    def append(self, phase: str, result: PairResult) -> None:
        self._write(result_to_json(phase, result))

    def close(self) -> None:
        self._f.close()


# -- running --------------------------------------------------------------------
def run_plan(
    fabric: Fabric,
    plan: Plan,
    runner: PairRunner,
    *,
    journal: str | os.PathLike[str] | None = None,
    resume: bool = False,
    max_parallel: int = 8,
    progress: Progress | None = None,
    on_interrupt: Callable[[], object] | None = None,
) -> list[PairResult]:
    """Run every test of ``plan``; return the results of all its tests, journaled ones included.

    With ``resume`` a test already in the journal (same phase, round, src, dst)
    is not run again. Results are always appended, so a sweep's re-test phase
    lands in the same journal as its rounds. ``on_interrupt`` is called on Ctrl-C before re-raising
    (pass :func:`fabricdoc.probes.launch.kill_running` to stop tests in flight).
    """
    phase = plan.purpose
    done: dict[tuple[str, int, PortRef, PortRef], PairResult] = {}
    if resume and journal is not None:
        for ph, r in read_journal(journal):
            done[(ph, r.round, r.src, r.dst)] = r
    jr = Journal(journal, fabric.name) if journal is not None else None
    total = plan.test_count
    results: list[PairResult] = []
    count = 0
    try:
        for rnd, tests in enumerate(plan.rounds):
            todo: list[TestSpec] = []
            for slot, (src, dst) in enumerate(tests):
                key = (phase, rnd, src, dst)
                if key in done:
                    results.append(done[key])
                    count += 1
                    if progress:
                        progress(ProgressEvent(phase, rnd, len(plan.rounds), count, total, done[key], skipped=True))
                    continue
                exp = expected_gbps(fabric, src, dst, plan.bidirectional)
                todo.append(TestSpec(phase, rnd, src, dst, exp, slot))
            for r in _run_round(runner, todo, max_parallel):
                if jr is not None:
                    jr.append(phase, r)
                results.append(r)
                count += 1
                if progress:
                    progress(ProgressEvent(phase, rnd, len(plan.rounds), count, total, r))
    except KeyboardInterrupt:
        if on_interrupt is not None:
            on_interrupt()
        raise
    finally:
        if jr is not None:
            jr.close()
    return results


def _run_round(runner: PairRunner, specs: list[TestSpec], max_parallel: int) -> Iterable[PairResult]:
    if not specs:
        return
    pool = ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(specs))), thread_name_prefix="fabricdoc-bw")
    try:
        pending: set[Future[PairResult]] = {pool.submit(runner, s) for s in specs}
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


def launcher_runner(launcher: Any, *, timeout_s: float = 120.0, base_port: int = 29500, **spec_fields: Any) -> PairRunner:
    """A :class:`PairRunner` over a :mod:`fabricdoc.probes.launch` launcher.

    ``spec_fields`` go to :class:`fabricdoc.probes.launch.PairSpec` (test,
    backend, size_bytes, iters, program...). Each test of a round gets its own
    rendezvous port, ``base_port + slot``.
    """
    from fabricdoc.probes.launch import PairSpec, run_pair

    def run(spec: TestSpec) -> PairResult:
        pair = PairSpec(
            src=spec.src, dst=spec.dst, round=spec.round, expected_gbps=spec.expected_gbps,
            port=base_port + spec.slot, **spec_fields,
        )  # fmt: skip
        return run_pair(launcher, pair, timeout_s)

    return run


# -- the bandwidth part of a sweep --------------------------------------------------
@dataclass
class BandwidthSweep:
    """What the planned rounds and the targeted re-test measured."""

    plan: Plan
    results: list[PairResult]
    suspects: list[Any]  # LinkKeys the first pass blamed
    retest: Plan | None
    retest_results: list[PairResult]

    @property
    def pairs(self) -> list[PairResult]:
        """Every result, sweep then re-test: what ``Observations.pairs`` should hold."""
        return [*self.results, *self.retest_results]


def suspects_from_findings(fabric: Fabric, findings: Iterable[Any]) -> list[Any]:
    """Cables named by link (and host-cable "nic") findings, in order: what the re-test probes."""
    from fabricdoc.model import LinkKey

    out: list[LinkKey] = []
    for f in findings:
        if getattr(f, "kind", None) not in ("link", "nic") or not f.endpoints or len(f.endpoints) != 2:
            continue
        key = LinkKey.of(PortRef(*f.endpoints[0]), PortRef(*f.endpoints[1]))
        if key in fabric.links and key not in out:
            out.append(key)
    return out


def sweep_bandwidth(
    fabric: Fabric,
    runner: PairRunner,
    *,
    journal: str | os.PathLike[str] | None = None,
    resume: bool = False,
    bidirectional: bool = False,
    retest: bool = True,
    max_parallel: int = 8,
    progress: Progress | None = None,
    on_interrupt: Callable[[], object] | None = None,
    localize_options: Any = None,
    seed: int = 0,
) -> BandwidthSweep:
    """Plan, run the rounds, localize from them, then re-test around the suspects.

    Pass ``bidirectional=True`` when the runner runs nccl-tests or all_reduce
    (both directions loaded). The journal holds both phases; ``resume`` skips
    finished tests of either.
    """
    from fabricdoc.localize import localize
    from fabricdoc.model import Observations
    from fabricdoc.plan import plan_sweep, retest_plan

    plan = plan_sweep(fabric, bidirectional=bidirectional, seed=seed)
    kw: dict[str, Any] = dict(journal=journal, resume=resume, max_parallel=max_parallel,
                              progress=progress, on_interrupt=on_interrupt)  # fmt: skip
    results = run_plan(fabric, plan, runner, **kw)
    suspects: list[Any] = []
    second: Plan | None = None
    again: list[PairResult] = []
    if retest:
        args = (fabric, Observations(pairs=results))
        findings = localize(*args, localize_options) if localize_options is not None else localize(*args)
        suspects = suspects_from_findings(fabric, findings)
        if suspects:
            second = retest_plan(fabric, suspects, bidirectional=bidirectional, seed=seed + 1)
            kw["resume"] = True  # append to this run's journal; skip re-tests a killed run finished
            again = run_plan(fabric, second, runner, **kw)
    return BandwidthSweep(plan, results, suspects, second, again)
