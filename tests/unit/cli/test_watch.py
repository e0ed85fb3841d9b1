"""``fabricdoc watch`` on the simulated demo fabric: sweeps into the history store and -o, a failing sweep
keeps the last good report, an interrupt keeps the last finished one."""

from __future__ import annotations

import pytest

import fabricdoc.sweep as sweep_module
from fabricdoc.cli.main import main
from fabricdoc.cli.watch import watch
from fabricdoc.report.history import History
from fabricdoc.report.report import Report
from fabricdoc.sweep import SweepConfig


@pytest.fixture(autouse=True)
def _no_history_from_the_environment(monkeypatch):
    monkeypatch.delenv("FABRICDOC_HISTORY", raising=False)


def _watch(*argv: str) -> int:
    return main(["watch", "--fabric", "demo", "--every", "0.1", *argv])


def test_each_sweep_goes_to_the_history_and_the_last_report_to_o(tmp_path, capsys):
    out, db = tmp_path / "r.json", tmp_path / "h.sqlite"
    code = _watch("--count", "2", "-o", str(out), "--history", str(db))
    lines = capsys.readouterr().out.splitlines()
    report = Report.load(out)
    with History(db) as store:
        assert store.sweep_count() == 2
    assert code == report.verdict.exit_code
    assert [line.split(" ")[1:3] for line in lines] == [["sweep", "1:"], ["sweep", "2:"]]
    assert lines[0].startswith(report.started_at[:4]) and "+00:00" in lines[0].split(" ")[0]
    assert f"{report.verdict.upper()}, {len(report.findings)} finding" in lines[1]
    assert lines[0].endswith(", ".join(f.label for f in report.findings[:5])) and lines[1].endswith("no change")


@pytest.mark.parametrize("argv", [["--every", "0", "-o", "r.json"], ["--every", "-1", "-o", "r.json"],
                                  ["--every", "nan", "-o", "r.json"], ["--count", "0", "-o", "r.json"],
                                  ["--count", "1"]])
def test_options_that_make_no_watch_are_refused_in_one_line(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    code = main(["watch", "--fabric", "demo", *argv])
    err = capsys.readouterr().err
    assert code == 2 and len(err.splitlines()) == 1 and err.startswith("fabricdoc watch: error: ")
    assert not (tmp_path / "r.json").exists()


def test_a_failing_sweep_writes_nothing_and_the_watch_goes_on(tmp_path, capsys):
    out = tmp_path / "r.json"
    code = main(["watch", "--fabric", str(tmp_path / "nonexistent.yaml"), "--every", "0.1", "--count", "2",
                 "-o", str(out)])
    err = capsys.readouterr().err.splitlines()
    assert code == 2 and not out.exists()
    assert len(err) == 2 and all("nonexistent.yaml" in line for line in err)
    assert "sweep 1: error" in err[0] and "sweep 2: error" in err[1] and "2 sweeps in a row" in err[1]


def test_a_failing_sweep_leaves_the_earlier_good_report_in_place(tmp_path, capsys):
    out = tmp_path / "r.json"
    assert main(["sweep", "--fabric", "demo", "-q", "--no-progress", "-o", str(out)]) in (0, 1)
    before = out.read_bytes()
    code = main(["watch", "--fabric", str(tmp_path / "nonexistent.yaml"), "--every", "0.1", "--count", "2",
                 "-o", str(out)])
    assert code == 2 and out.read_bytes() == before
    assert "nonexistent.yaml" in capsys.readouterr().err


def test_new_and_cleared_findings_are_named_by_id(tmp_path, monkeypatch, capsys):
    real, calls = sweep_module.run_sweep, []

    def one_finding_clears_then_returns(cfg, progress=None):
        report = real(cfg, progress)
        calls.append(report)
        if len(calls) == 2:
            report.findings = report.findings[1:]
        return report

    monkeypatch.setattr(sweep_module, "run_sweep", one_finding_clears_then_returns)
    _watch("--count", "3", "-o", str(tmp_path / "r.json"))
    lines = capsys.readouterr().out.splitlines()
    gone = calls[0].findings[0]
    assert lines[1].endswith(f"; cleared {gone.label}") and lines[2].endswith(f"; new {gone.label}")


def test_an_interrupt_during_a_sweep_keeps_the_last_finished_report(tmp_path, monkeypatch, capsys):
    real, calls = sweep_module.run_sweep, []

    def interrupted_the_second_time(cfg, progress=None):
        calls.append(cfg)
        if len(calls) == 2:
            raise KeyboardInterrupt
        return real(cfg, progress)

    monkeypatch.setattr(sweep_module, "run_sweep", interrupted_the_second_time)
    out, db = tmp_path / "r.json", tmp_path / "h.sqlite"
    code = _watch("-o", str(out), "--history", str(db))
    err = capsys.readouterr().err.splitlines()
    assert code == 130 and len(calls) == 2
    assert Report.load(out).findings
    with History(db) as store:
        assert store.sweep_count() == 1
    assert err == [f"fabricdoc watch: stopped after 1 sweep (sweep 2, in progress, not written); {out} keeps "
                   "sweep 1's report"]


def test_an_interrupt_while_waiting_stops_the_watch_with_the_report_kept(tmp_path, capsys):
    out, waits = tmp_path / "r.json", []

    def interrupted_wait(seconds: float) -> None:
        waits.append(seconds)
        raise KeyboardInterrupt

    cfg = SweepConfig(fabric="demo")
    code = watch(lambda: sweep_module.run_sweep(cfg), str(out), 300.0, None, wait=interrupted_wait)
    assert code == 130 and len(waits) == 1 and 0 < waits[0] <= 300.0
    assert Report.load(out).findings
    assert capsys.readouterr().err.strip().endswith(f"stopped after 1 sweep; {out} keeps sweep 1's report")
