"""Graph walks on numpy arrays: grouped offsets, spans of a flat array, sorted-key look-ups and the
breadth-first hop distances of the level rule, shared by :func:`fabricdoc.model.topology.hop_levels`
and :mod:`fabricdoc.model.updown_arrays` (a Python walk over 65,536 hosts' cabling costs seconds)."""

from __future__ import annotations

import numpy as np


def offsets(owner: np.ndarray, n: int) -> np.ndarray:
    """Start of each of owners ``0..n-1``'s entries in an array grouped by owner (``n + 1`` values)."""
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=n), out=off[1:])
    return off


def spans(start: np.ndarray, count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Every position of the spans ``[start[i], start[i] + count[i])``, span by span: (the span each
    belongs to, the position)."""
    owner = np.repeat(np.arange(start.size), count)
    first = np.cumsum(count) - count
    return owner, start[owner] + np.arange(owner.size) - first[owner]


def find_sorted(keys: np.ndarray, wanted: np.ndarray) -> np.ndarray:
    """Where each of ``wanted`` sits in the sorted array ``keys``; -1 where it is not there."""
    at = np.searchsorted(keys, wanted)
    hit = at < keys.size
    hit[hit] = keys[at[hit]] == wanted[hit]
    return np.where(hit, at, -1)


def hop_distances(is_host: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Hops from the nearest host to every node over the cables ``a[i]``--``b[i]`` (node indexes);
    -1 where no host reaches. The breadth-first search of the level rule, a level at a time."""
    n = is_host.size
    here = np.concatenate([a, b])
    there = np.concatenate([b, a])[np.argsort(here, kind="stable")]
    off = offsets(here, n)
    dist = np.full(n, -1, dtype=np.int64)
    frontier = np.flatnonzero(is_host)
    dist[frontier] = 0
    hops = 0
    while frontier.size:
        hops += 1
        _, at = spans(off[frontier], off[frontier + 1] - off[frontier])
        near = there[at]
        frontier = np.unique(near[dist[near] < 0])
        dist[frontier] = hops
    return dist
