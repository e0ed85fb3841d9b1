"""``fabricdoc impact``: table, --json, --write, --job-hosts, one-line errors."""

from __future__ import annotations

import json

import pytest

from fabricdoc.cli.main import main
from fabricdoc.fabric.generators import rail_optimized
from fabricdoc.model.findings import Finding
from fabricdoc.model.records import Observations
from fabricdoc.report.report import Report
from tests.helpers.evidence import slow_pairs
from tests.helpers.reports import store


@pytest.fixture
def report_path(tmp_path):
    f = rail_optimized(units=2, hosts_per_unit=4, rails=2, spines=2)
    finding = Finding("F001", "link", "leaf-su01-r1[5] -- spine01[1]", "degraded_bandwidth", "error", 0.9,
                      [slow_pairs(0.5)], [("leaf-su01-r1", 5), ("spine01", 1)],
                      ["leaf-su01-r1", "spine01"])
    path = tmp_path / "report.json"
    Report.build(f, [finding], Observations()).save(path)
    return path


def test_json_output_has_busbw_nominal_now_after_drain_and_job_cost(report_path, capsys):
    assert main(["impact", str(report_path), "--json", "--hours", "24", "--checkpoint-minutes", "5",
                 "--host-mtbf-hours", "192"]) == 1  # the report has a fault: its verdict's code
    out = json.loads(capsys.readouterr().out)
    assert out["allreduce_busbw_gbps"] == {"nominal": 800.0, "now": 400.0, "after_drain": 400.0, "recommended": 800.0}
    assert out["job"]["mtbf_hours"] == pytest.approx(24.0)
    assert out["job"]["recommended_checkpoint_minutes"] == pytest.approx(120.0)


def test_table_names_the_bottleneck_and_the_best_alternative(report_path, capsys):
    assert main(["impact", str(report_path)]) == 1
    out = capsys.readouterr().out
    assert "leaf-su01-r1[5] -> spine01[1]" in out
    assert "gpu0001, gpu0005" in out
    assert "Young/Daly" in out


def test_write_stores_the_section_and_the_report_still_loads(report_path, capsys):
    assert main(["impact", str(report_path), "--write", "--json"]) == 1
    again = Report.load(report_path)
    assert again.impact.allreduce_busbw_gbps.now == 400.0


def test_job_hosts_file_restricts_the_job(report_path, tmp_path, capsys):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("# the job\ngpu0002\ngpu0003\n\ngpu0006  # comment\ngpu0007\n")
    assert main(["impact", str(report_path), "--job-hosts", str(hosts), "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert out["job_hosts"] == 4
    assert out["allreduce_busbw_gbps"]["now"] == 800.0


def test_unknown_job_host_and_bad_report_are_one_line_errors(report_path, tmp_path, capsys):
    hosts = tmp_path / "hosts.txt"
    hosts.write_text("gpu9999\n")
    assert main(["impact", str(report_path), "--job-hosts", str(hosts)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "gpu9999" in err
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema": "fabricdoc.report/v1"')
    assert main(["impact", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "bad.json" in err


def test_history_gives_the_failure_rate(report_path, tmp_path, capsys):
    older = Report.load(report_path)
    older.generated_at = "2025-01-01T00:00:00+00:00"
    older.drain = []
    newer = Report.load(report_path)
    newer.generated_at = "2025-01-01T10:00:00+00:00"
    from fabricdoc.report.drain import DrainEntry

    newer.drain = [DrainEntry(node="gpu0003", reason="test")]
    p1, p2 = tmp_path / "a.json", tmp_path / "b.json"
    older.save(p1)
    newer.save(p2)
    assert main(["impact", str(report_path), "--json", "--history-reports", str(p1), str(p2)]) == 1
    job = json.loads(capsys.readouterr().out)["job"]
    assert job["host_failures_per_hour"] == pytest.approx(1 / (8 * 10))
    assert job["rate_source"].startswith("history")


def test_a_history_store_gives_the_failure_rate_and_bad_choices_are_one_line(report_path, tmp_path, capsys):
    from fabricdoc.report.drain import DrainEntry

    db = tmp_path / "h.sqlite"
    for hour, drained in ((0, []), (10, ["gpu0003"])):
        rep = Report.load(report_path)
        rep.generated_at = f"2025-01-01T{hour:02d}:00:00+00:00"
        rep.run_id = f"sweep-at-{hour}"  # two sweeps, as two runs of `fabricdoc sweep --history` would be
        rep.drain = [DrainEntry(node=h, reason="test") for h in drained]
        store(db, rep)
    assert main(["impact", str(report_path), "--json", "--history-db", str(db)]) == 1
    job = json.loads(capsys.readouterr().out)["job"]
    assert job["host_failures_per_hour"] == pytest.approx(1 / (8 * 10))
    assert job["rate_source"].startswith("history: 1 host failures in 2 sweeps")
    for argv in (["--history-db", str(tmp_path / "missing.sqlite")],
                 ["--history-db", str(db), "--host-mtbf-hours", "100"]):
        assert main(["impact", str(report_path), *argv]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1, err
    assert not (tmp_path / "missing.sqlite").exists()


@pytest.mark.parametrize("hours", ["0", "-1", "nan", "1e9"])
def test_a_job_length_that_is_not_physical_is_refused(report_path, hours, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["impact", str(report_path), "--hours", hours])
    assert exc.value.code == 2 and "--hours" in capsys.readouterr().err


@pytest.mark.parametrize("k", [1, 3])
def test_alternatives_are_at_most_k_and_none_only_ties_the_recommendation(tmp_path, capsys, k):
    from fabricdoc.sweep import SweepConfig, run_sweep

    path = tmp_path / "demo.json"
    run_sweep(SweepConfig(fabric="demo")).save(path)
    main(["impact", str(path), "--json", "--alternatives", str(k)])
    rows = json.loads(capsys.readouterr().out)["what_if"]
    alternatives = [w for w in rows if w["choice"] == "alternative"]
    assert len(alternatives) <= k
    (best,) = [w for w in rows if w["choice"] == "recommended"]
    for w in alternatives:
        assert (w["hosts"], w["busbw_gbps"], w["throughput_fraction"]) != (best["hosts"], best["busbw_gbps"],
                                                                           best["throughput_fraction"])
    keys = [(tuple(w["drain"]), tuple(map(str, w.get("isolate") or []))) for w in rows]
    assert len(keys) == len(set(keys))  # no choice listed twice
