"""Collective communication patterns: the one definition of a job's ring, and NCCL's double binary tree.

A job's ranks are its hosts in sorted scheduler-name order (what a launcher
given a sorted host list assigns); rank i sends to rank i+1 as NCCL's ring
does (``step=-1``: to rank i-1, as gloo's ring does). Every user of "the
job's ring" (the impact model, the gate) takes it from here.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np


def job_ring(hosts: Iterable[str]) -> list[str]:
    """The job's ranks: its scheduler host names, each once, sorted."""
    return sorted(set(hosts))


def ring_edges(n: int, step: int = 1) -> list[tuple[int, int]]:
    """(sender rank, receiver rank) of every ring hop over ``n`` ranks."""
    return [(i, (i + step) % n) for i in range(n)] if n > 1 else []


def btree_parents(n: int) -> np.ndarray:
    """Parent rank of every rank in NCCL's binary tree over ``n`` ranks (-1 for the root)."""
    rank = np.arange(n, dtype=np.int64)
    bit = rank & -rank
    up = (rank ^ bit) | (bit << 1)
    up = np.where(up >= n, rank ^ bit, up)
    up[0] = -1
    return up


def dtree_parents(n: int) -> tuple[np.ndarray, np.ndarray]:
    """Parents in NCCL's two complementary trees: mirrored (even ``n``) or shifted by one (odd)."""
    first = btree_parents(n)
    rank = np.arange(n, dtype=np.int64)
    if n % 2:
        u = first[(rank - 1) % n]
        second = np.where(u < 0, -1, (u + 1) % n)
    else:
        u = first[n - 1 - rank]
        second = np.where(u < 0, -1, n - 1 - u)
    return first, second
