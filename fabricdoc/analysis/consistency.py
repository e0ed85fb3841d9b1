"""Whether the tests' paths fit the fabric: no test runs faster than a cable on its path carries.

Bandwidth tomography names a cable slow when the tests through it are slow. On the fabric the tests
ran on, every test through a cable that carries half its rate is capped at that half. When the
tests came from another fabric (logs whose host names match by accident), or the host mapping or
routes are not today's, the tests "through" a named cable are a mix: some at its slow figure, some
at full speed, which no cable can do. Counted over the cables named hard-slow (and those tomography
left suspects because such tests crossed them), such tests mean the paths do not fit, and the report
says so (a contradiction: the verdict is ``incomplete``).
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from fabricdoc.analysis.blame import named_cable
from fabricdoc.errors import TopologyError
from fabricdoc.model.evidence import SlowPairsEvidence
from fabricdoc.model.expectation import TestJudgement
from fabricdoc.model.findings import Finding
from fabricdoc.model.paths import is_bidirectional, tested_links
from fabricdoc.model.records import LinkKey, Observations
from fabricdoc.model.topology import Fabric

HARD = 0.75  # a cable whose slow tests sit at or below this share of healthy caps every test through it
FAST = 0.9  # a test at or above this share of healthy (and well above the cable's figure) passed it at speed
ABOVE = 1.25  # ... and at least this many times the cable's slow figure (2-4 % jitter never spans that)
MIN_FAST = 2  # one such test is noise (a mis-timed row, a test that missed an intermittent fault)
MIN_SHARE = 0.05  # of the tests through the hard-slow cables (on the right paths there are none)
# slow tests a suspect cable (one tomography left a suspect) needs to count: two transient slowdowns
# (1-2 % of tests) meet on one cable by chance among a sweep's 70-odd tests, and a test through it at
# full speed then reads as a contradiction; on tests that do not fit the fabric, suspects gather many
MIN_SUSPECT_SLOW = 3


def paths_contradiction(fabric: Fabric, obs: Observations, judged: TestJudgement,
                        findings: Sequence[Finding]) -> str | None:
    """One line saying the tests' paths do not fit the fabric, or None when they do (or nothing tells)."""
    slow_at: dict[LinkKey, tuple[float, str]] = {}
    for f in findings:
        ev = next(iter(f.evidence_of(SlowPairsEvidence)), None)
        # A cable left a suspect because tests through it ran faster (it carried them) counts too: those
        # very tests are what this check reads.
        if f.kind not in ("link", "nic", "port") or ev is None or not f.endpoints:
            continue
        if ev.suspect_only and (not ev.carried or len(ev.slow_pairs) < MIN_SUSPECT_SLOW):
            continue
        rel = [s.relative for s in ev.slow_pairs if s.relative is not None]
        figure = statistics.median(rel) if rel else ev.median_relative
        key = named_cable(fabric, f)
        if figure is not None and figure <= HARD and key is not None:
            slow_at[key] = (figure, f.name)
    if not slow_at:
        return None
    through, fast = 0, []
    for i, p in enumerate(obs.pairs):
        rel = judged.pairs[i].relative if i < len(judged.pairs) else None
        if p.status != "ok" or rel is None:
            continue
        try:
            cables = [k for k in tested_links(fabric, p.src, p.dst, is_bidirectional(p.test)) if k in slow_at]
        except (TopologyError, KeyError):  # a test fabricdoc cannot route says nothing about paths here
            continue
        if not cables:
            continue
        through += 1
        worst = min(cables, key=lambda k: slow_at[k][0])
        figure, name = slow_at[worst]
        if rel >= max(FAST, ABOVE * figure):
            fast.append((rel, figure, name, p))
    if len(fast) < MIN_FAST or len(fast) < MIN_SHARE * through:
        return None
    rel, figure, name, p = max(fast, key=lambda x: x[0] / x[1])
    return (f"the tests' paths do not fit this fabric: {len(fast)} of {through} tests through the "
            f"{len(slow_at)} cables named slow ran at full speed (e.g. {fabric.label(p.src.node)}[{p.src.port}] -> "
            f"{fabric.label(p.dst.node)}[{p.dst.port}] at {rel:.0%} of healthy through {name}, whose other tests "
            f"reach {figure:.0%}), and no test passes a cable faster than it carries: the logs come from another "
            "fabric, the hosts are mapped onto the wrong ports, or the routes are not the ones the tests took")
