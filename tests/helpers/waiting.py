"""Waiting on conditions in tests (never a fixed sleep)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")


def wait_for(cond: Callable[[], T], timeout_s: float, what: str, interval_s: float = 0.05) -> T:
    """Poll ``cond`` until it returns something truthy; AssertionError naming ``what`` at the deadline."""
    deadline = time.monotonic() + timeout_s
    last: object = None
    while True:
        last = cond()
        if last:
            return last  # type: ignore[return-value]
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout_s:g}s waiting for {what} (last: {last!r})")
        time.sleep(interval_s)


def process_gone(pid: int, timeout_s: float = 5.0) -> bool:
    """True once ``pid`` no longer exists, False if it is still alive after ``timeout_s``."""

    def gone() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        return False

    try:
        wait_for(gone, timeout_s, f"process {pid} to exit", 0.02)
    except AssertionError:
        return False
    return True
