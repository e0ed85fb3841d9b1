"""Running plans: the journal keeps every finished test through Ctrl-C, and resume skips them."""

from __future__ import annotations

import json

import pytest

from fabricdoc.bandwidth import TestSpec as Spec
from fabricdoc.bandwidth import expected_gbps, read_journal, run_plan
from fabricdoc.errors import ParseError
from fabricdoc.generators import fat_tree_2
from fabricdoc.model import PairResult
from fabricdoc.plan import plan_sweep


class Runner:
    """A stand-in for the launcher: records what it ran, optionally Ctrl-C after n tests."""

    def __init__(self, interrupt_after: int | None = None) -> None:
        self.ran: list[Spec] = []
        self.interrupt_after = interrupt_after

    def __call__(self, spec: Spec) -> PairResult:
        if self.interrupt_after is not None and len(self.ran) >= self.interrupt_after:
            raise KeyboardInterrupt
        self.ran.append(spec)
        return PairResult(spec.src, spec.dst, "ok", (spec.expected_gbps or 0) * 0.9,
                          expected_gbps=spec.expected_gbps, round=spec.round)  # fmt: skip


def test_every_test_runs_once_with_its_path_bottleneck_as_expected():
    f = fat_tree_2(3, 2, 2)
    plan = plan_sweep(f)
    runner = Runner()
    events = []
    results = run_plan(f, plan, runner, max_parallel=1, progress=events.append)
    assert sorted((r.round, r.src, r.dst) for r in results) == sorted(plan.tests())
    assert all(r.expected_gbps == 400.0 for r in results)
    assert [e.done for e in events] == list(range(1, plan.test_count + 1))


def test_ctrl_c_keeps_finished_tests_and_resume_runs_only_the_rest(tmp_path):
    f = fat_tree_2(3, 2, 2)
    plan = plan_sweep(f)
    journal = tmp_path / "bw.jsonl"
    first = Runner(interrupt_after=5)
    killed = []
    with pytest.raises(KeyboardInterrupt):
        run_plan(f, plan, first, journal=journal, max_parallel=1, on_interrupt=lambda: killed.append(1))
    assert killed == [1]
    kept = read_journal(journal)
    assert len(kept) == 5
    second = Runner()
    results = run_plan(f, plan, second, journal=journal, resume=True, max_parallel=1)
    assert len(second.ran) == plan.test_count - 5
    assert {(s.round, s.src, s.dst) for s in second.ran}.isdisjoint({(r.round, r.src, r.dst) for _, r in kept})
    assert len(results) == plan.test_count
    assert len(read_journal(journal)) == plan.test_count


def test_line_cut_by_a_kill_is_ignored_and_the_next_run_appends_cleanly(tmp_path):
    f = fat_tree_2(3, 2, 2)
    plan = plan_sweep(f)
    journal = tmp_path / "bw.jsonl"
    run_plan(f, plan, Runner(interrupt_after=None), journal=journal, max_parallel=1)
    lines = journal.read_text().splitlines()
    journal.write_text("\n".join(lines[:4]) + "\n" + lines[4][:30])  # killed mid-write
    assert len(read_journal(journal)) == 3  # header + 3 pairs; the cut line is dropped
    again = Runner()
    run_plan(f, plan, again, journal=journal, resume=True, max_parallel=1)
    assert len(again.ran) == plan.test_count - 3
    assert len(read_journal(journal)) == plan.test_count


def test_garbled_line_in_the_middle_is_a_parse_error(tmp_path):
    journal = tmp_path / "bw.jsonl"
    good = {"kind": "pair", "phase": "sweep", "src": "a[1]", "dst": "b[1]", "status": "ok", "busbw_gbps": 1.0}
    journal.write_text("{not json\n" + json.dumps(good) + "\n")
    with pytest.raises(ParseError) as err:
        read_journal(journal)
    assert err.value.line_no == 1


def test_expected_bandwidth_is_the_slowest_cable_on_the_path():
    f = fat_tree_2(2, 1, 1)
    a, b = f.host_ports()
    f.links[f.path(a, b)[1]].lanes = 1
    assert expected_gbps(f, a, b) == 100.0


class SlowLink(Runner):
    """Stand-in runner for a fabric whose one cable delivers 30%: enough to exercise the re-test wiring."""

    def __init__(self, fabric, bad, **kw) -> None:
        super().__init__(**kw)
        self.fabric, self.bad = fabric, bad

    def __call__(self, spec: Spec) -> PairResult:
        r = super().__call__(spec)
        if self.bad in self.fabric.path(spec.src, spec.dst):
            return PairResult(r.src, r.dst, "ok", r.busbw_gbps * 0.33, expected_gbps=r.expected_gbps, round=r.round)
        return r


def test_sweep_retests_the_suspect_and_a_killed_retest_resumes(tmp_path):
    from fabricdoc.bandwidth import sweep_bandwidth
    from fabricdoc.model import LinkKey, PortRef

    f = fat_tree_2(4, 2, 2)
    bad = LinkKey.of(PortRef("leaf03", 3), PortRef("spine01", 3))
    journal = tmp_path / "bw.jsonl"
    done = sweep_bandwidth(f, SlowLink(f, bad), journal=journal, max_parallel=1)
    assert done.suspects[:1] == [bad]
    assert done.retest is not None and done.retest_results
    assert all(bad in f.path(r.src, r.dst) for r in done.retest_results if done.retest.targets[(r.src, r.dst)] == bad)
    phases = [ph for ph, _ in read_journal(journal)]
    assert phases.count("sweep") == done.plan.test_count and phases.count("retest") == done.retest.test_count
    # Resumed after it finished, it runs nothing twice.
    again = SlowLink(f, bad)
    sweep_bandwidth(f, again, journal=journal, resume=True, max_parallel=1)
    assert again.ran == []
