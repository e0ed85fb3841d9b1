"""What failures cost a training job: failure probability, MTBF, Young/Daly checkpoint interval, goodput.

Closed forms, with hosts failing independently at a constant rate (exponential
lifetimes), which is what the published fleet figures assume:

- one host fails within T hours with probability ``p = 1 - exp(-lambda T)``;
- a job on N hosts meets at least one failure with probability ``1 - (1 - p)^N``;
- the job's mean time between failures is ``M = 1 / (N lambda)``;
- checkpointing every ``tau`` (write time ``delta``, restart time ``R``) wastes
  ``delta / tau`` of the time writing and, per failure, on average half an
  interval of lost work plus the restart: ``W = delta/tau + (tau/2 + R)/M``
  (Young 1974); the interval that minimises it is ``tau* = sqrt(2 delta M)``
  (Young/Daly first order). Goodput is ``1 - W``, clamped to [0, 1].

The default rate, when neither the report history nor the caller gives one, is
the Llama 3 training run's: 419 unexpected interruptions in 54 days on 16,384
GPUs (Dubey et al. 2024, section 3.3.4), i.e. ``419 / (16384/8 hosts x 1296 h)``
per 8-GPU host-hour (a host MTBF of about 6,300 hours).
"""

from __future__ import annotations

import math
from typing import Any

from fabricdoc.errors import ConfigError

DEFAULT_HOST_FAILURES_PER_HOUR = 419 / ((16384 / 8) * 54 * 24)
DEFAULT_SOURCE = "default: Llama 3 fleet rate (419 interruptions / 54 days / 2,048 8-GPU hosts)"
DEFAULT_CHECKPOINT_WRITE_MINUTES = 5.0


def host_failure_probability(rate_per_hour: float, hours: float) -> float:
    """Probability one host fails within ``hours`` at a constant ``rate_per_hour``."""
    return -math.expm1(-rate_per_hour * hours)


def job_failure_probability(p_host: float, n_hosts: int) -> float:
    """Probability at least one of ``n_hosts`` fails, each with probability ``p_host``: 1-(1-p)^N."""
    if p_host >= 1.0:
        return 1.0 if n_hosts > 0 else 0.0
    return -math.expm1(n_hosts * math.log1p(-p_host))


def young_daly_minutes(checkpoint_write_minutes: float, mtbf_hours: float) -> float:
    """Checkpoint interval (minutes) minimising lost work: sqrt(2 x write time x MTBF)."""
    return math.sqrt(2.0 * checkpoint_write_minutes * mtbf_hours * 60.0)


def wasted_fraction(interval_min: float, write_min: float, mtbf_hours: float, restart_min: float = 0.0) -> float:
    """Share of wall time lost to checkpoint writes plus rework after failures (first order)."""
    mtbf_min = mtbf_hours * 60.0
    return write_min / interval_min + (interval_min / 2.0 + restart_min) / mtbf_min


def job_cost(
    n_hosts: int,
    hours: float,
    *,
    host_failures_per_hour: float | None = None,
    host_mtbf_hours: float | None = None,
    checkpoint_write_minutes: float = DEFAULT_CHECKPOINT_WRITE_MINUTES,
    checkpoint_interval_minutes: float | None = None,
    restart_minutes: float = 0.0,
    extra_failures_per_hour: float = 0.0,
    rate_source: str | None = None,
) -> dict[str, Any]:
    """Failure probability, job MTBF, recommended checkpoint interval and goodput for one job.

    Give the per-host rate as ``host_failures_per_hour`` or ``host_mtbf_hours``
    (neither: the Llama 3 default). ``extra_failures_per_hour`` adds job-wide
    failures from shared parts (links, switches on the job's paths).
    ``checkpoint_interval_minutes`` evaluates goodput at that interval instead
    of the recommended one. Every value is JSON-able: an infinite MTBF is ``None``.
    """
    if n_hosts < 0 or hours < 0 or checkpoint_write_minutes < 0 or restart_minutes < 0:
        raise ConfigError("job cost: hosts, hours and minutes must not be negative")
    if host_failures_per_hour is not None and host_mtbf_hours is not None:
        raise ConfigError("job cost: give a failure rate or an MTBF, not both")
    source = rate_source or "given"
    if host_mtbf_hours is not None:
        if host_mtbf_hours <= 0:
            raise ConfigError(f"job cost: host MTBF must be positive, got {host_mtbf_hours}")
        rate = 1.0 / host_mtbf_hours
    elif host_failures_per_hour is not None:
        if host_failures_per_hour < 0:
            raise ConfigError(f"job cost: failure rate must not be negative, got {host_failures_per_hour}")
        rate = host_failures_per_hour
    else:
        rate = DEFAULT_HOST_FAILURES_PER_HOUR
        source = rate_source or DEFAULT_SOURCE
    if extra_failures_per_hour < 0:
        raise ConfigError("job cost: extra failure rate must not be negative")

    p_host = host_failure_probability(rate, hours)
    job_rate = n_hosts * rate + extra_failures_per_hour
    p_job = -math.expm1(-job_rate * hours) if extra_failures_per_hour else job_failure_probability(p_host, n_hosts)
    out: dict[str, Any] = {
        "n_hosts": n_hosts,
        "hours": hours,
        "host_failures_per_hour": rate,
        "host_mtbf_hours": None if rate == 0 else 1.0 / rate,
        "rate_source": source,
        "host_failure_probability": p_host,
        "failure_probability": p_job,
        "expected_failures": job_rate * hours,
        "checkpoint_write_minutes": checkpoint_write_minutes,
        "restart_minutes": restart_minutes,
    }
    if job_rate == 0:
        interval = checkpoint_interval_minutes
        overhead = checkpoint_write_minutes / interval if interval else 0.0
        out.update(
            mtbf_hours=None,
            recommended_checkpoint_minutes=None,
            checkpoint_interval_minutes=interval,
            expected_lost_hours=0.0,
            expected_goodput=_clamp(1.0 - overhead),
        )
        return out
    mtbf = 1.0 / job_rate
    recommended = young_daly_minutes(checkpoint_write_minutes, mtbf)
    interval = checkpoint_interval_minutes if checkpoint_interval_minutes is not None else recommended
    if interval <= 0:
        raise ConfigError(f"job cost: checkpoint interval must be positive, got {interval}")
    lost_per_failure_h = (interval / 2.0 + restart_minutes) / 60.0
    out.update(
        mtbf_hours=mtbf,
        recommended_checkpoint_minutes=recommended,
        checkpoint_interval_minutes=interval,
        expected_lost_hours=job_rate * hours * lost_per_failure_h,
        expected_goodput=_clamp(1.0 - wasted_fraction(interval, checkpoint_write_minutes, mtbf, restart_minutes)),
    )
    return out


def _clamp(x: float) -> float:
    return min(1.0, max(0.0, x))


def observed_rates(observed: tuple[float, str] | None) -> dict[str, Any]:
    """``impact_section`` failure-rate inputs from an observed ``(rate, description)``.

    No observation gives ``{}`` (the default rate). A history with no host failure
    yet cannot tell a rate from zero: it keeps the default and says so, rather than
    promising a job that never fails.
    """
    if observed is None:
        return {}
    rate, why = observed
    if rate <= 0:
        return {"source": f"{DEFAULT_SOURCE}; {why}, too few to estimate a rate"}
    return {"host_per_hour": rate, "source": why}
