"""The one probe-health recorder: every probe step becomes a ProbeRun (ok, error, timeout...).

A report says what it could not see because every tool run, file read and
parse is recorded here with its status, duration and one-line error. A
failing step is recorded, never raised, so the other probes still run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from fabricdoc.errors import FabricdocError, ParseError
from fabricdoc.model.records import ProbeRun, ProbeStatus

T = TypeVar("T")


def one_line(exc: BaseException | str, limit: int = 300) -> str:
    """An error as one line of at most ``limit`` characters."""
    text = " ".join(str(exc).split()) or (type(exc).__name__ if isinstance(exc, BaseException) else "")
    return text if len(text) <= limit else text[: limit - 3] + "..."


class HealthRecorder:
    """Runs probe steps and keeps one :class:`ProbeRun` per step in ``runs``."""

    def __init__(self) -> None:
        self.runs: list[ProbeRun] = []

    def record(self, probe: str, target: str, status: ProbeStatus | str, duration_s: float = 0.0,
               error: str | None = None) -> ProbeRun:
        run = ProbeRun(probe, target, ProbeStatus(status), round(duration_s, 6), error)
        self.runs.append(run)
        return run

    def call(self, probe: str, target: str, fn: Callable[[], T]) -> T | None:
        """Run ``fn``; a FabricdocError or OSError is recorded with its status and gives None."""
        start = time.monotonic()
        try:
            result = fn()
        except ParseError as exc:
            self.record(probe, target, ProbeStatus.ERROR, time.monotonic() - start, one_line(exc))
            return None
        except FabricdocError as exc:
            status = getattr(exc, "status", ProbeStatus.ERROR)
            self.record(probe, target, status, time.monotonic() - start, one_line(exc))
            return None
        except OSError as exc:
            self.record(probe, target, ProbeStatus.ERROR, time.monotonic() - start, f"{probe}: {one_line(exc)}")
            return None
        self.record(probe, target, ProbeStatus.OK, time.monotonic() - start)
        return result

    def fail(self, probe: str, target: str, error: BaseException | str,
             status: ProbeStatus | str = ProbeStatus.ERROR) -> None:
        """Mark the latest ok run of ``probe`` on ``target`` failed (its output could not be used),
        or record a new failed run when there is none."""
        for i in range(len(self.runs) - 1, -1, -1):
            r = self.runs[i]
            if r.probe == probe and r.target == target and r.status == ProbeStatus.OK:
                self.runs[i] = ProbeRun(r.probe, r.target, ProbeStatus(status), r.duration_s, one_line(error))
                return
        self.record(probe, target, status, 0.0, one_line(error))

    def parse(self, probe: str, target: str, fn: Callable[[], T]) -> T | None:
        """Parse a finished run's output; a FabricdocError marks that run failed and gives None."""
        try:
            return fn()
        except FabricdocError as exc:
            self.fail(probe, target, exc)
            return None
