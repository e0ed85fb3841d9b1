"""Max-min fair sharing of directed link capacity among concurrent flows.

Used by the simulator (what a round of tests measures) and by localization
(what a round should have measured, given the routes the fabric has now).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence

import numpy as np
from scipy import sparse

from fabricdoc.model.paths import Channel
from fabricdoc.model.records import LinkKey


def maxmin(flows: Sequence[Sequence[Channel]], capacity: Callable[[LinkKey], float],
           factor: Mapping[Channel, float] | None = None) -> np.ndarray:
    """Max-min fair rate of every flow (progressive filling); an empty flow gets 0. ``factor`` scales
    some cable directions' capacity (one direction collapsed, another's share taken by other traffic)."""
    chan: dict[Channel, int] = {}
    rows, cols = [], []
    for fi, hops in enumerate(flows):
        for h in hops:
            rows.append(fi)
            cols.append(chan.setdefault(h, len(chan)))
    nflows = len(flows)
    rates = np.zeros(nflows)
    if not chan:
        return rates
    cap = np.fromiter((capacity(key) for key, _ in chan), dtype=float, count=len(chan))
    if factor:
        cap *= np.fromiter((factor.get(c, 1.0) for c in chan), dtype=float, count=len(chan))
    inc = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(nflows, len(chan)))
    inc_t = inc.T.tocsr()
    active = np.array([bool(h) for h in flows])
    remaining = cap.copy()
    for _ in range(len(chan) + 1):
        if not active.any():
            break
        load = inc_t @ active.astype(float)
        used = load > 0
        share = np.full(len(chan), np.inf)
        share[used] = remaining[used] / load[used]
        step = max(share.min(), 0.0)
        rates[active] += step
        remaining -= load * step
        saturated = used & (remaining <= 1e-9 * np.maximum(cap, 1.0))
        active &= ~((inc @ saturated.astype(float)) > 0)
    return rates


def shares_channels(flows: Sequence[Sequence[Channel]]) -> bool:
    """True when two flows use the same directed channel (so they contend)."""
    seen: set[Channel] = set()
    for hops in flows:
        for h in hops:
            if h in seen:
                return True
            seen.add(h)
    return False
