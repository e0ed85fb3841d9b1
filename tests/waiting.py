"""Waiting on conditions in tests (never a fixed sleep)."""

from __future__ import annotations

import os
import time


def process_gone(pid: int, timeout_s: float = 5.0, poll_s: float = 0.02) -> bool:
    """True once ``pid`` no longer exists, False if it is still alive after ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(poll_s)
    return False
