"""Running plans: the journal keeps every finished test through Ctrl-C, resume skips them,
a fresh sweep starts a fresh journal, and a journal of another plan is refused."""

from __future__ import annotations

import json

import pytest

from fabricdoc.analysis.localize import Options
from fabricdoc.bandwidth.journal import Journal, JournalHeader, plan_fingerprint, read_journal
from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.bandwidth.runner import TestSpec as Spec
from fabricdoc.bandwidth.runner import run_plan
from fabricdoc.errors import ConfigError, ParseError
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.paths import expected_gbps
from fabricdoc.model.records import LinkKey, Observations, PairResult, PortRef
from fabricdoc.sweep import LauncherMeasure, SweepConfig, measure_and_retest


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


def _journal(path, fabric, plan) -> Journal:
    return Journal.start(path, JournalHeader(fabric.name, plan_fingerprint(plan), "run-1"))


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
    path = tmp_path / "bw.jsonl"
    journal = _journal(path, f, plan)
    with pytest.raises(KeyboardInterrupt):
        run_plan(f, plan, Runner(interrupt_after=5), journal=journal, max_parallel=1)
    journal.close()
    header, kept = read_journal(path)
    assert header == JournalHeader(f.name, plan_fingerprint(plan), "run-1") and len(kept) == 5
    resumed = Journal.resume(path, f.name, plan_fingerprint(plan))
    second = Runner()
    results = run_plan(f, plan, second, journal=resumed, max_parallel=1)
    resumed.close()
    assert len(second.ran) == plan.test_count - 5
    assert {(s.round, s.src, s.dst) for s in second.ran}.isdisjoint({(r.round, r.src, r.dst) for _, r in kept})
    assert len(results) == plan.test_count
    assert len(read_journal(path)[1]) == plan.test_count


def test_line_cut_by_a_kill_is_ignored_and_the_resumed_run_appends_cleanly(tmp_path):
    f = fat_tree_2(3, 2, 2)
    plan = plan_sweep(f)
    path = tmp_path / "bw.jsonl"
    journal = _journal(path, f, plan)
    run_plan(f, plan, Runner(), journal=journal, max_parallel=1)
    journal.close()
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:4]) + "\n" + lines[4][:30])  # header + 3 tests, then killed mid-write
    assert len(read_journal(path)[1]) == 3
    again = Runner()
    resumed = Journal.resume(path, f.name, plan_fingerprint(plan))
    run_plan(f, plan, again, journal=resumed, max_parallel=1)
    resumed.close()
    assert len(again.ran) == plan.test_count - 3
    assert len(read_journal(path)[1]) == plan.test_count


def test_garbled_line_in_the_middle_is_a_parse_error(tmp_path):
    path = tmp_path / "bw.jsonl"
    good = {"kind": "pair", "phase": "sweep", "src": "a[1]", "dst": "b[1]", "status": "ok", "busbw_gbps": 1.0}
    path.write_text("{not json\n" + json.dumps(good) + "\n")
    with pytest.raises(ParseError) as err:
        read_journal(path)
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


def _sweep(f, runner, journal, resume=False):
    cfg = SweepConfig(fabric="roce", launcher="local", journal=str(journal), resume=resume)
    measure = LauncherMeasure(f, cfg, lambda *a: None, runner=runner)
    obs = Observations()
    try:
        found = measure_and_retest(f, obs, measure, Options())
    finally:
        measure.close()
    assert found.planned_tests == len(obs.pairs)
    return found.findings, found.rounds, obs


def test_the_sweep_loop_retests_the_suspect_and_a_finished_journal_resumes_to_nothing(tmp_path):
    f = fat_tree_2(4, 2, 2)
    bad = LinkKey.of(PortRef("leaf03", 3), PortRef("spine01", 3))
    journal = tmp_path / "bw.jsonl"
    findings, rounds, obs = _sweep(f, SlowLink(f, bad), journal)
    assert [sorted(x.endpoints) for x in findings] == [sorted([("leaf03", 3), ("spine01", 3)])]
    phases = [ph for ph, _ in read_journal(journal)[1]]
    assert phases.count("retest") > 0 and len(phases) == len(obs.pairs)
    assert max(p.round for p in obs.pairs) == rounds - 1
    again = SlowLink(f, bad)
    findings2, _, obs2 = _sweep(f, again, journal, resume=True)
    assert again.ran == [] and len(obs2.pairs) == len(obs.pairs)
    assert [x.name for x in findings2] == [x.name for x in findings]


def test_a_fresh_sweep_starts_a_fresh_journal_instead_of_reusing_an_old_one(tmp_path):
    f = fat_tree_2(3, 2, 2)
    journal = tmp_path / "bw.jsonl"
    _sweep(f, Runner(), journal)
    first_id = read_journal(journal)[0].sweep_id
    fresh = Runner()
    _, _, obs = _sweep(f, fresh, journal)
    header, results = read_journal(journal)
    assert len(fresh.ran) == len(obs.pairs) == len(results)  # every test ran again, none came from the old run
    assert header.sweep_id != first_id


def test_resuming_a_journal_of_another_plan_is_refused_with_one_line(tmp_path):
    journal = tmp_path / "bw.jsonl"
    _sweep(fat_tree_2(3, 2, 2), Runner(), journal)
    other = Runner()
    with pytest.raises(ConfigError, match="journal of another sweep") as err:
        _sweep(fat_tree_2(4, 2, 2), other, journal, resume=True)
    assert "\n" not in str(err.value) and other.ran == []


def test_resume_without_a_journal_file_is_refused(tmp_path):
    with pytest.raises(ConfigError, match="no journal to resume"):
        _sweep(fat_tree_2(3, 2, 2), Runner(), tmp_path / "missing.jsonl", resume=True)


def test_pair_parallel_caps_how_many_pair_tests_of_a_round_run_at_once(monkeypatch):
    import fabricdoc.bandwidth.runner as runner_module

    f = fat_tree_2(4, 2, 2)
    caps: list[int] = []
    real = runner_module._run_round

    def spy(runner, todo, max_parallel):
        caps.append(max_parallel)
        return real(runner, todo, max_parallel)

    monkeypatch.setattr(runner_module, "_run_round", spy)
    for given, want in ((None, 8), (1, 1)):
        caps.clear()
        cfg = SweepConfig(fabric="roce", launcher="local") if given is None else \
            SweepConfig(fabric="roce", launcher="local", pair_parallel=given)
        measure = LauncherMeasure(f, cfg, lambda *a: None, runner=Runner())
        measure(plan_sweep(f), 0, [])
        assert caps and set(caps) == {want}


def test_the_sweep_flag_pair_parallel_reaches_the_config_and_refuses_zero(capsys):
    import argparse

    from fabricdoc.cli import sweep as sweep_cli

    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers()
    sweep_cli.register(sub)
    args = parser.parse_args(["sweep", "--pair-parallel", "1"])
    assert sweep_cli.config_from_args(args).pair_parallel == 1
    assert sweep_cli.config_from_args(parser.parse_args(["sweep"])).pair_parallel == 8
    with pytest.raises(SystemExit) as stop:
        parser.parse_args(["sweep", "--pair-parallel", "0"])
    assert stop.value.code == 2 and "--pair-parallel" in capsys.readouterr().err
