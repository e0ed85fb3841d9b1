"""Job cost closed forms: failure probability, MTBF, Young/Daly interval, goodput."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricdoc.errors import ConfigError
from fabricdoc.impact.failure_rate import host_failure_rate
from fabricdoc.impact.jobcost import (
    DEFAULT_HOST_FAILURES_PER_HOUR,
    job_cost,
    job_failure_probability,
    young_daly_minutes,
)
from fabricdoc.report.drain import DrainEntry
from fabricdoc.report.history import snapshots_from_reports
from fabricdoc.report.report import Report


def test_one_host_with_mtbf_equal_to_job_length_fails_with_probability_1_minus_1_over_e():
    out = job_cost(1, 100.0, host_mtbf_hours=100.0)
    assert out["failure_probability"] == pytest.approx(1 - math.exp(-1))
    assert out["mtbf_hours"] == pytest.approx(100.0)


def test_ten_hosts_at_p_one_tenth_meet_a_failure_with_1_minus_0_9_to_the_10():
    assert job_failure_probability(0.1, 10) == pytest.approx(1 - 0.9**10)


def test_young_daly_interval_for_five_minute_writes_and_24h_mtbf_is_120_minutes():
    # sqrt(2 x 5 min x 1440 min) = sqrt(14400) = 120 min
    assert young_daly_minutes(5.0, 24.0) == pytest.approx(120.0)
    out = job_cost(100, 24.0, host_mtbf_hours=2400.0, checkpoint_write_minutes=5.0)
    assert out["mtbf_hours"] == pytest.approx(24.0)
    assert out["recommended_checkpoint_minutes"] == pytest.approx(120.0)
    # waste = 5/120 + 60/1440 = 1/24 + 1/24
    assert out["expected_goodput"] == pytest.approx(1 - 1 / 12)
    # one failure expected in 24 h, each loses half an interval (1 h)
    assert out["expected_failures"] == pytest.approx(1.0)
    assert out["expected_lost_hours"] == pytest.approx(1.0)


def test_restart_time_adds_to_work_lost_per_failure():
    out = job_cost(100, 24.0, host_mtbf_hours=2400.0, checkpoint_write_minutes=5.0, restart_minutes=30.0)
    assert out["expected_lost_hours"] == pytest.approx(1.5)
    assert out["expected_goodput"] == pytest.approx(1 - 1 / 12 - 30 / 1440)


def test_a_given_interval_is_evaluated_instead_of_the_recommended_one():
    out = job_cost(100, 24.0, host_mtbf_hours=2400.0, checkpoint_write_minutes=5.0, checkpoint_interval_minutes=60.0)
    assert out["recommended_checkpoint_minutes"] == pytest.approx(120.0)
    assert out["expected_goodput"] == pytest.approx(1 - 5 / 60 - 30 / 1440)


def test_zero_failure_rate_gives_no_mtbf_and_stays_json():
    out = job_cost(8, 24.0, host_failures_per_hour=0.0)
    assert out["failure_probability"] == 0.0
    assert out["mtbf_hours"] is None
    assert out["recommended_checkpoint_minutes"] is None
    assert out["expected_goodput"] == 1.0
    json.dumps(out, allow_nan=False)


def test_without_a_rate_the_documented_fleet_default_is_used():
    out = job_cost(2048, 24.0)
    assert out["host_failures_per_hour"] == DEFAULT_HOST_FAILURES_PER_HOUR
    assert out["rate_source"].startswith("default")
    # Llama 3: 419 interruptions in 54 days on the whole 2,048-host fleet -> ~7.8 per day
    assert out["expected_failures"] == pytest.approx(419 / 54, rel=1e-9)


def test_bad_inputs_are_config_errors():
    with pytest.raises(ConfigError):
        job_cost(8, 24.0, host_mtbf_hours=0.0)
    with pytest.raises(ConfigError):
        job_cost(8, 24.0, host_mtbf_hours=10.0, host_failures_per_hour=0.1)
    with pytest.raises(ConfigError):
        job_cost(-1, 24.0)


@given(
    n=st.integers(min_value=1, max_value=100_000),
    hours=st.floats(min_value=0.01, max_value=10_000),
    mtbf=st.floats(min_value=1.0, max_value=1e7),
    write=st.floats(min_value=0.1, max_value=60.0),
)
def test_closed_forms_agree_and_young_daly_is_the_minimum(n, hours, mtbf, write):
    out = job_cost(n, hours, host_mtbf_hours=mtbf, checkpoint_write_minutes=write)
    p = 1 - math.exp(-hours / mtbf)
    assert out["failure_probability"] == pytest.approx(1 - (1 - p) ** n, rel=1e-6, abs=1e-12)
    assert out["mtbf_hours"] == pytest.approx(mtbf / n)
    tau = out["recommended_checkpoint_minutes"]
    assert tau == pytest.approx(math.sqrt(2 * write * out["mtbf_hours"] * 60))
    assert 0.0 <= out["expected_goodput"] <= 1.0
    for other in (tau * 0.8, tau * 1.25):
        worse = job_cost(n, hours, host_mtbf_hours=mtbf, checkpoint_write_minutes=write, checkpoint_interval_minutes=other)
        assert worse["expected_goodput"] <= out["expected_goodput"] + 1e-12
    json.dumps(out, allow_nan=False)


def _report(when: datetime, drained: list[str], hosts: int = 100) -> Report:
    return Report(
        fabric={"name": "t", "source": "test", "hosts": hosts, "switches": 1, "links": hosts},
        verdict="pass",
        findings=[],
        drain=[DrainEntry(node=h, reason="test") for h in drained],
        tests={},
        generated_at=when.isoformat(timespec="seconds"),
    )


def test_history_counts_newly_drained_hosts_per_host_hour_in_service():
    t0 = datetime(2025, 1, 1, tzinfo=UTC)
    reports = [
        _report(t0 + timedelta(hours=10), ["a"]),
        _report(t0, []),
        _report(t0 + timedelta(hours=20), ["a", "b", "c"]),
    ]
    rate, why = host_failure_rate(snapshots_from_reports(reports), "reports")
    # 3 new drains; exposure 100 h x 10 + 99 h x 10 host-hours
    assert rate == pytest.approx(3 / (1000 + 990))
    assert "3 host failures" in why
    assert host_failure_rate(snapshots_from_reports(reports[:1])) is None


def test_a_history_without_failures_keeps_the_default_rate_and_says_why():
    from fabricdoc.impact.jobcost import DEFAULT_SOURCE, observed_rates

    assert observed_rates(None) == {}
    assert observed_rates((0.002, "history: 2 host failures")) == {"host_per_hour": 0.002, "source": "history: 2 host failures"}
    kept = observed_rates((0.0, "history: 0 host failures in 3 reports over 48.0 h"))
    assert "host_per_hour" not in kept
    assert kept["source"].startswith(DEFAULT_SOURCE) and "0 host failures" in kept["source"]
    job = job_cost(10, 24.0, rate_source=kept["source"])
    assert job["host_failures_per_hour"] == pytest.approx(DEFAULT_HOST_FAILURES_PER_HOUR)
    assert job["failure_probability"] > 0
