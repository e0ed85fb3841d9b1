"""Allocation-heavy blocks: the cyclic garbage collector paused while they only build."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """The cyclic garbage collector off for a block that only allocates (it frees nothing there):
    a collection pass over everything already alive (a 65,536-host fabric) would cost more than
    the block itself."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()
