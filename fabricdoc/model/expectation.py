"""What a healthy test reaches on this fabric now, learned from the tests themselves: the one slow-test rule.

Real clusters never measure their nominal rate: a healthy sendrecv reaches 0.95-0.97 of the line rate on
a good NDR fabric and 0.78-0.85 on many others, hosts differ by a few percent, a repeated test by 1-4%,
and a test now and then is transiently slow. So a test is judged against what healthy tests of the same
*shape* reach here now: the same test kind, message size and path class (cables on its route), learned
robustly from the bulk of those tests (:func:`healthy_bulk`: the highest dense mode, outliers clipped),
with the nominal rate as an upper bound. A shape with too few tests takes its parent's figure (all path
classes of that test and size), then earlier sweeps' (the history store), then a stated prior.

A test is *slow* when it is below its shape's healthy figure by more than the noise explains
(:data:`Z_SLOW` spreads, and at least :data:`MIN_DROP`), or hung. A measurement above its path's line
rate, or a learned efficiency below what any fabric reaches, means the topology's rates, the host
mapping or the logs are wrong: :attr:`Expectations.contradictions` says which, and tests are then judged
relatively (against the learned figure alone), never passed on.

All figures are fractions of the nominal rate (``ratio``) or of the learned figure (``relative``).
"""

from __future__ import annotations

import heapq
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from fabricdoc.model.paths import pair_links
from fabricdoc.model.records import GroupResult, LinkKey, PairResult
from fabricdoc.model.topology import Fabric

PRIOR_EFFICIENCY = 0.88  # stated efficiency when nothing can be learned (real fabrics: 0.78-0.97)
PRIOR_SPREAD = 0.08  # the prior's spread (log units): wide, so it blames only clear slowdowns
MIN_TESTS = 8  # tests of a shape needed to learn its figure (fewer: the parent's, history's or the prior)
SCREEN_APART = 16  # screening tests of a test and size from which a sweep's re-tests are judged, not learned from
MIN_GROUP_TESTS = 3  # group tests of one collective needed to learn its figure
GROUP_PLAUSIBLE = 0.4  # a group figure below this share of the pairs' (or the prior) is the failing groups' mode (a runner's overhead, gloo's ~0.5, is not)
# A group's figure scatters more than a pair's: few tests, each a whole round's worth of flows and gated by its
# slowest member (healthy 4-16 host groups of one simulated fabric: 0.71-0.80 of the flow model's figure).
GROUP_SPREAD_FLOOR = 0.04
REFERENCE_FROM = 6  # groups in the healthy bulk from which the screens' own figure stands without a reference
REFERENCE_BELOW = 0.7  # groups learned below this share of the pairs' figure: run the groups no spine carries
GROUP_GAP = 2.0  # ... when groups near the pairs' figure reach at least this many times it
SPREAD_FLOOR = 0.01  # printed figures carry ~1% jitter even on the quietest fabric
Z_SLOW = 2.5  # a test this many spreads below its shape's figure is slow...
COARSE_SCALE = 0.2  # log units: the scale at which widely scattered healthy tests still form a mode
# Noise wider than this (log units, ~25%) is not one bulk: three such spreads below it reach a tenth of its
# rate, where a shaped or broken cable's tests sit, and the clip would take them in.
MAX_SPREAD = 0.25
SKEW = 1.25  # the lower half of the healthy bulk may be this much wider than its upper half (noise only slows)
NEAR_LINE = math.log(0.97)  # a bulk whose upper quartile reaches this share of the line rate is cut short by it
PILE = 0.0025  # log units: tests this close to the bulk's fastest are piled up against a limit...
PILED = 0.075  # ...when at least this share of the bulk (and 3) is there: the upper half is cut short
FAST_APART = 3.5  # a figure this many root mean squares above the bulk's median is not its noise
MIN_UPPER = 4  # tests above the median needed to read the noise from them (fewer: the quartiles)
MIN_DROP = 0.07  # ...and at least this far below it (hosts differ by a few percent: that is not slow)
CEILING = 1.05  # measured/nominal above this: faster than the line rate (rounding and clocks allowed)
FLOOR = 0.15  # a learned efficiency below this at bandwidth-bound sizes: no fabric is that slow
# Imported nccl-tests logs whose healthy tests reach less than this at their best size do not fit the
# fabric given (a real fabric's worst healthy sendrecv reaches ~0.78): most likely another fabric's logs.
LOGS_FIT = 0.5
CLASS_BOUND = 0.05  # a path class's figure stays within this of its parent's (log units)
BANDWIDTH_BOUND = 0.5  # sizes whose healthy figure is at least this share of the best size's are judged
GROUP_PREFIX = "group:"  # shapes of group collectives: "group:alltoall"
LEARN_PHASES = frozenset({"screen", "full_load", "job"})  # group phases not chosen because something failed
APART_Z = 1.0  # a cable whose tests' upper median sits this many spreads low...
APART_COMBINED = 3.0  # ...and together (capped at APART_CAP each) this far below: its tests are set apart
APART_CAP = 4.0  # one test counts at most this many spreads when a cable's tests are set apart


@dataclass(frozen=True)
class Shape:
    """What tests are compared with: test kind, message size (0: unknown) and path class (cables on the
    route; None: every class of that test and size)."""

    test: str
    size_bytes: int = 0
    path: int | None = None


@dataclass(frozen=True)
class Baseline:
    """What healthy tests of one shape reach: ``efficiency`` (measured over nominal, the healthy bulk's
    median) and ``spread`` (its robust standard deviation, log units), from ``tests`` tests.

    ``source``: ``learned`` (this sweep's tests; a path class with too few of its own is judged by its
    test and size's figure), ``history`` (earlier sweeps of this fabric), ``pairs`` (a group collective
    with too few tests of its own, judged by the pair tests' figure) or ``prior`` (nothing to learn from:
    :data:`PRIOR_EFFICIENCY`).
    """

    shape: Shape
    efficiency: float
    spread: float
    tests: int
    source: str
    slowest_ok: float = 0.0  # the relative figure below which a test is slow (see :func:`slow_below`)

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.shape.test, "size_bytes": self.shape.size_bytes, "path_cables": self.shape.path,
                "efficiency": round(self.efficiency, 4), "spread": round(self.spread, 4), "tests": self.tests,
                "source": self.source, "slow_below": round(self.slowest_ok, 4)}


def slow_below(spread: float) -> float:
    """The relative figure under which a test is slower than noise of ``spread`` explains.

    >>> round(slow_below(0.01), 3)   # quiet fabric: at least MIN_DROP
    0.93
    >>> round(slow_below(0.05), 3)   # 5% noise: 2.5 spreads
    0.882
    """
    return min(1.0 - MIN_DROP, math.exp(-Z_SLOW * spread))


def healthy_bulk(values: Sequence[float] | np.ndarray, *, min_mass: float = 0.15, min_count: int = 3,
                 floor: float = SPREAD_FLOOR) -> tuple[float, float, int]:
    """Center, spread and size of the healthy bulk of log figures ``values``.

    Faults only slow tests down, so the healthy tests are the highest dense mode: the highest value whose
    neighbourhood holds at least ``min_mass`` of the values (and ``min_count``), climbed to its mode (at
    :data:`COARSE_SCALE` where a mode dense only at that scale sits well above the fine one). The
    bulk is then what lies above three spreads below its median, and the spread is the root mean square
    of its upper half's distances from the median: nothing makes a test faster, so slow tests, gray faults'
    tests and transient outliers below do not widen it, and a mean square of half the tests scatters far
    less than a quartile (a screening has 15-30 tests of a shape). Where tests pile up against the line
    rate (hardware never reads faster: :data:`NEAR_LINE`, :data:`PILE`) the upper half is cut short, and the
    spread is read from the lower half ((median - lower quartile) / 0.6745), at most :data:`SKEW` times the
    upper one's.

    >>> import math
    >>> healthy = [math.log(0.85 * (1 + 0.02 * ((i * 7) % 11 - 5) / 5)) for i in range(40)]
    >>> slow = [math.log(0.42)] * 15 + [math.log(0.3)]
    >>> c, s, n = healthy_bulk(healthy + slow)
    >>> round(math.exp(c), 2), n
    (0.85, 40)
    """
    x = np.sort(np.asarray(values, dtype=float))
    n = len(x)
    if n == 0:
        raise ValueError("no values")
    if n < min_count:
        return float(np.median(x)), floor, n
    med = float(np.median(x))
    mad = 1.4826 * float(np.median(np.abs(x - med)))
    h = min(0.05, max(2 * floor, 0.9 * mad * n ** -0.2))
    need = max(min_count, math.ceil(min_mass * n))
    center = _highest_dense(x, h, need)
    # Healthy tests on a noisy fabric (a loaded host, background traffic) can scatter wider than h while the
    # tests through one fault sit tight (all held to that cable's rate): then the tight mode is the only one
    # dense at h. Faults only slow, so a mode dense at a coarser scale well above it is the healthy one.
    coarse = _highest_dense(x, COARSE_SCALE, need)
    if coarse > center + 2 * COARSE_SCALE:
        h, center = COARSE_SCALE, coarse
    for _ in range(20):  # climb to the mode (a median shift within two bandwidths)
        moved = float(np.median(x[(x >= center - 2 * h) & (x <= center + 2 * h)]))
        if abs(moved - center) < 1e-6:
            break
        center = moved
    spread = min(MAX_SPREAD, max(0.05, 2 * h))  # generous at first: the lower clip only tightens from there
    kept = x
    for _ in range(30):
        kept = x[x >= center - 3 * spread]
        # The center is the median of what lies within two spreads of it: a gray fault's tests a few
        # spreads low stay in the bulk (they widen its lower half) but do not drag its center down.
        near = kept[(kept >= center - 2 * spread) & (kept <= center + 2 * spread)]
        new_center = float(np.median(near if len(near) else kept))
        new_spread = min(MAX_SPREAD, max(floor, _spread(kept, new_center, floor)))
        if abs(new_center - center) < 1e-7 and abs(new_spread - spread) < 1e-7:
            break
        center, spread = new_center, new_spread
    return center, spread, int(len(kept))


def _spread(kept: np.ndarray, center: float, floor: float) -> float:
    """The noise of the healthy bulk ``kept`` (log figures) around ``center``: see :func:`healthy_bulk`."""
    lower, upper = kept[kept <= center], kept[kept >= center]
    below = (center - float(np.median(lower))) / 0.6745 if len(lower) else floor
    above = (float(np.median(upper)) - center) / 0.6745 if len(upper) else floor
    # The lower half also holds slow tests that sit within the clip (a fault on a good share of a small
    # fabric's tests), the upper half is squeezed where tests pile up against the line rate: neither
    # quartile alone is the noise, so the lower one counts up to SKEW times the upper one.
    quartiles = min(below, SKEW * above)
    piled = float(np.quantile(kept, 0.75)) >= NEAR_LINE or (
        len(kept) >= 6 and np.count_nonzero(kept >= kept.max() - PILE) >= max(3, PILED * len(kept)))
    if piled or len(upper) < MIN_UPPER:
        return quartiles
    rise = upper - center
    rms = float(np.sqrt(np.mean(rise ** 2)))
    rise = rise[rise <= FAST_APART * rms]  # a misread log's figure far above the rest is not noise
    # Never below half the quartiles' figure: a few tests at the top must not shrink the bulk to themselves.
    return max(float(np.sqrt(np.mean(rise ** 2))), quartiles / 2)


def _highest_dense(x: np.ndarray, h: float, need: int) -> float:
    """The highest of the sorted values ``x`` with at least ``need`` of them within ``h`` (else the one
    with the most)."""
    mass = np.searchsorted(x, x + h, side="right") - np.searchsorted(x, x - h, side="left")
    dense = np.nonzero(mass >= need)[0]
    return float(x[dense[-1]]) if len(dense) else float(x[int(np.argmax(mass))])


@dataclass(frozen=True)
class Sample:
    """One figure to learn from or judge: ``ratio`` measured over nominal, for ``shape``; ``test_id``
    ties the sizes of one run together."""

    shape: Shape
    ratio: float
    test_id: int
    learn: bool = True  # False: judged, not learned from (a group isolation chose because something failed)


@dataclass(frozen=True)
class Judged:
    """One test judged: ``relative`` (measured over what healthy tests of its shape reach; the median over
    its bandwidth-bound sizes), ``z`` (how many spreads below, negative when slower), ``slow``, and the
    ``baseline`` it was judged by (its largest judged size's)."""

    relative: float | None
    z: float | None
    slow: bool
    baseline: Baseline | None
    above_line_rate: bool = False


@dataclass
class Expectations:
    """The learned figures of every shape seen, and what they say about the topology."""

    baselines: dict[Shape, Baseline] = field(default_factory=dict)
    contradictions: list[str] = field(default_factory=list)
    relative_only: bool = False  # the nominal rate is no bound (measurements contradict it)
    notes: list[str] = field(default_factory=list)  # shapes judged with too few tests, and the like
    slow_ratio: float | None = None  # given (--slow-ratio): slow below this share of the learned figure
    _best: dict[str, float] = field(default_factory=dict)  # best healthy efficiency over sizes, per test

    # -- judging ------------------------------------------------------------------------
    def baseline(self, shape: Shape) -> Baseline:
        """The figure ``shape`` is judged by: its own, else its parent's, else the prior."""
        found = self.baselines.get(shape)
        if found is None and shape.path is not None:
            found = self.baselines.get(Shape(shape.test, shape.size_bytes))
        if found is None:
            found = _prior(Shape(shape.test, shape.size_bytes))
            self.baselines[found.shape] = found
        return found

    def judge(self, samples: Sequence[Sample]) -> Judged:
        """Judge one test from its figures (one per size): the median relative figure and z over the
        bandwidth-bound sizes; slow when that median is below the largest judged size's threshold."""
        if not samples:
            return Judged(None, None, False, None)
        best = self._best.get(samples[0].shape.test)
        use = []
        for s in samples:
            b = self.baseline(s.shape)
            if best is None or b.efficiency >= BANDWIDTH_BOUND * best or len(samples) == 1:
                use.append((s, b))
        if not use:  # every size latency-bound: judge the largest
            s = max(samples, key=lambda t: t.shape.size_bytes)
            use = [(s, self.baseline(s.shape))]
        rel = [s.ratio / b.efficiency for s, b in use]
        z = [math.log(max(r, 1e-9)) / b.spread for r, (_, b) in zip(rel, use, strict=True)]
        ref = max(use, key=lambda t: t[0].shape.size_bytes)[1]
        relative = rel[0] if len(rel) == 1 else statistics.median(rel)  # a few figures: no numpy here
        above = any(s.ratio > CEILING for s, _ in use) and not self.relative_only
        below = ref.slowest_ok if self.slow_ratio is None else self.slow_ratio
        return Judged(relative, z[0] if len(z) == 1 else statistics.median(z), relative < below, ref, above)

    def to_dict(self) -> dict[str, Any]:
        """The report's ``expectations``: every shape's learned figure, what contradicts the topology."""
        return {
            "shapes": [b.to_dict() for b in sorted(self.baselines.values(),
                                                   key=lambda b: (b.shape.test, b.shape.size_bytes,
                                                                  -1 if b.shape.path is None else b.shape.path))],
            "contradictions": list(self.contradictions),
            "relative_only": self.relative_only,
            "slow_ratio": self.slow_ratio,
            "notes": list(self.notes),
            "assumes": {"prior_efficiency": PRIOR_EFFICIENCY, "prior_spread": PRIOR_SPREAD, "min_tests": MIN_TESTS,
                        "z_slow": Z_SLOW, "min_drop": MIN_DROP, "ceiling": CEILING, "floor": FLOOR},
        }


def _prior(shape: Shape, source: str = "prior", efficiency: float = PRIOR_EFFICIENCY,
           spread: float = PRIOR_SPREAD, tests: int = 0) -> Baseline:
    return Baseline(shape, efficiency, spread, tests, source, slow_below(spread))


def _fit(shape: Shape, ratios: Sequence[float], source: str, min_count: int = 3,
         floor: float = SPREAD_FLOOR) -> Baseline:
    center, spread, n = healthy_bulk([math.log(max(r, 1e-9)) for r in ratios], min_count=min_count, floor=floor)
    # A few tests estimate the spread low: widen it by the estimate's own uncertainty.
    spread *= 1.0 + 1.0 / math.sqrt(max(n, 1))
    return Baseline(shape, math.exp(center), spread, n, source, slow_below(spread))


def learn(samples: Iterable[Sample], history: Iterable[Sample] = (), later: Iterable[Sample] = ()) -> Expectations:
    """Learn every shape's figure from ``samples`` (this sweep's), with ``history`` (earlier sweeps'
    figures, path class unknown) where a test and size has too few of its own. ``later`` samples
    (targeted re-tests: suspects' tests are over-represented among them) join a test and size's
    samples only where those are fewer than :data:`SCREEN_APART` (a small lab's few screening tests
    need the re-tests' healthy ones for their healthy figure to stand out).

    Pair shapes with at least :data:`MIN_TESTS` tests are learned per path class (kept within
    :data:`CLASS_BOUND` of the test and size's figure, so a fault on every route of one class is not
    learned as normal; the spread is the test and size's), test and size over every class; group shapes with at least
    :data:`MIN_GROUP_TESTS` per collective and size, else the pairs' figure with a wider spread.
    """
    samples = list(samples)
    out = Expectations()
    later = list(later)
    if later:
        counts = Counter((s.shape.test, s.shape.size_bytes) for s in samples)
        samples += [s for s in later if counts[(s.shape.test, s.shape.size_bytes)] < SCREEN_APART]
    pair_samples = [s for s in samples if not s.shape.test.startswith(GROUP_PREFIX)]
    out.relative_only = _check_physics(pair_samples, out)
    usable = pair_samples if out.relative_only else [s for s in pair_samples if s.ratio <= CEILING]
    by_parent: dict[Shape, list[float]] = defaultdict(list)
    by_class: dict[Shape, list[float]] = defaultdict(list)
    for s in usable:
        by_parent[Shape(s.shape.test, s.shape.size_bytes)].append(s.ratio)
        by_class[s.shape].append(s.ratio)
    past: dict[Shape, list[float]] = defaultdict(list)
    for s in history:
        if 0 < s.ratio <= CEILING:
            past[Shape(s.shape.test, s.shape.size_bytes)].append(s.ratio)
    for parent, ratios in by_parent.items():
        if len(ratios) >= MIN_TESTS:
            out.baselines[parent] = _fit(parent, ratios, "learned")
        elif len(past.get(parent, ())) >= MIN_TESTS:
            out.baselines[parent] = _fit(parent, past[parent], "history")
        else:
            out.baselines[parent] = _prior(parent, tests=len(ratios))
            out.notes.append(f"{_shape_text(parent)}: {len(ratios)} test{'s' if len(ratios) != 1 else ''}, "
                             f"too few to learn from (at least {MIN_TESTS}): judged against "
                             f"{PRIOR_EFFICIENCY:.0%} of the line rate")
    for shape, ratios in by_class.items():
        if shape.path is None or len(ratios) < MIN_TESTS or len(by_class) == 1:
            continue
        parent = out.baselines[Shape(shape.test, shape.size_bytes)]
        if parent.source != "learned":
            continue
        own = _fit(shape, ratios, "learned")
        bound = math.exp(CLASS_BOUND)
        eff = min(max(own.efficiency, parent.efficiency / bound), parent.efficiency * bound)
        # The class moves the figure, not the noise: the spread of all its test and size's tests is the
        # steadier estimate (a class holds a fraction of them).
        out.baselines[shape] = Baseline(shape, eff, parent.spread, own.tests, "learned", parent.slowest_ok)
    _groups(samples, out)
    for test in {s.test for s in out.baselines}:
        learned = [b.efficiency for b in out.baselines.values() if b.shape.test == test and b.source != "prior"]
        if learned:
            out._best[test] = max(learned)
    _check_floor(out)
    _check_logs_fit(by_parent, out)
    return out


def _groups(samples: list[Sample], out: Expectations) -> None:
    """Group collectives per collective and size, learned from the unbiased ones (screening rounds, a
    job's communicators: not the halves and probes isolation chose because something failed) when there
    are enough and a dense healthy mode among them; else the pair tests' figure with a wider spread."""
    by_shape: dict[Shape, list[float]] = defaultdict(list)
    seen: set[Shape] = set()
    for s in samples:
        if s.shape.test.startswith(GROUP_PREFIX):
            shape = Shape(s.shape.test, s.shape.size_bytes)
            seen.add(shape)
            if s.learn:
                by_shape[shape].append(s.ratio)
    pairs = _pairs_figure(out)
    reference = PRIOR_EFFICIENCY if pairs is None else pairs
    for shape in seen:
        ratios = by_shape.get(shape, [])
        # Clipped at the groups' own noise floor: a few groups estimate the spread at the 1% floor, and one
        # 5% below two others (gloo's 2-rank alltoalls on a shared machine) is noise, not a slow group.
        fitted = (_fit(shape, ratios, "learned", floor=GROUP_SPREAD_FLOOR) if len(ratios) >= MIN_GROUP_TESTS
                  else None)
        if fitted is not None and fitted.efficiency < GROUP_PLAUSIBLE * reference:
            # Most screening groups held a bad host (d bad hosts fail most of a few groups): the dense mode
            # is the failing one. A higher pair of groups near what healthy tests reach is the healthy figure.
            high = [r for r in ratios if r >= GROUP_PLAUSIBLE * reference]
            higher = _fit(shape, high, "learned", min_count=2, floor=GROUP_SPREAD_FLOOR) if len(high) >= 2 else None
            if len(high) == 1:  # one healthy group among failing ones (4 bad hosts on 3 of 4 leaves): its
                # figure, with the prior's wide spread, as no second group says how much they scatter
                higher = Baseline(shape, high[0], PRIOR_SPREAD, 1, "learned", slow_below(PRIOR_SPREAD))
            if higher is not None and higher.efficiency >= GROUP_GAP * fitted.efficiency:
                # Two modes far apart (a bad host at a fraction of the rate): not a runner's overhead, which
                # spreads every group alike.
                fitted = Baseline(shape, higher.efficiency, higher.spread, MIN_GROUP_TESTS, "learned",
                                  higher.slowest_ok)
        if fitted is not None and fitted.tests >= MIN_GROUP_TESTS:
            spread = max(fitted.spread, GROUP_SPREAD_FLOOR)
            out.baselines[shape] = Baseline(shape, fitted.efficiency, spread, fitted.tests, "learned",
                                            slow_below(spread))
        elif pairs is not None:
            out.baselines[shape] = _prior(shape, "pairs", pairs, 0.12, len(ratios))
        else:
            out.baselines[shape] = _prior(shape, tests=len(ratios))


def _pairs_figure(out: Expectations) -> float | None:
    """What the pair tests reach here: the median of their learned test-and-size figures (None: none
    learned), the figure group collectives are held against."""
    pairs = [b.efficiency for b in out.baselines.values() if b.shape.path is None and b.source != "prior"
             and not b.shape.test.startswith(GROUP_PREFIX)]
    return float(np.median(pairs)) if pairs else None


def _check_physics(samples: list[Sample], out: Expectations) -> bool:
    """Tests above their path's line rate: most of them (the topology's rates are wrong: judge
    relatively) or some hosts' (their mapping or rates are wrong). Returns whether to judge relatively."""
    if not samples:
        return False
    peak: dict[int, float] = {}  # each test's best figure over its sizes
    for s in samples:
        peak[s.test_id] = max(peak.get(s.test_id, 0.0), s.ratio)
    above = {t: r for t, r in peak.items() if r > CEILING}
    if not above:
        return False
    worst = max(above.values())
    if len(above) * 2 > len(peak):
        med = float(np.median(list(peak.values())))
        out.contradictions.append(
            f"{len(above)} of {len(peak)} tests measured above their path's line rate (median {med:.2f}x, "
            f"up to {worst:.1f}x): the topology's link rates are wrong (or the logs belong to another "
            "fabric); tests were judged against each other only")
        return True
    out.contradictions.append(
        f"{len(above)} of {len(peak)} tests measured above their path's line rate (up to {worst:.2f}x): "
        "the host mapping, those hosts' link rates or their logs are wrong")
    return False


def _check_floor(out: Expectations) -> None:
    """A learned figure far below what any fabric reaches at its best size: the rates are wrong too."""
    for test, best in out._best.items():
        if test.startswith(GROUP_PREFIX) or out.relative_only:
            continue
        if best < FLOOR:
            out.contradictions.append(
                f"healthy {test} tests reach only {best:.1%} of their path's line rate at their best size: "
                "the topology's link rates are higher than the fabric runs (or the logs are in other units); "
                "tests were judged against each other only")
            out.relative_only = True



def _check_logs_fit(by_parent: dict[Shape, list[float]], out: Expectations) -> None:
    """Imported nccl-tests logs whose tests, at their best size, sit far below what any healthy fabric
    reaches do not fit the fabric given (another cluster's logs whose host names match by accident):
    said before any finding, and the tests are judged against each other, not against a prior they
    could never meet (which would blame every cable they crossed)."""
    if out.relative_only:
        return
    best: dict[str, float] = {}
    for shape, ratios in by_parent.items():
        if shape.test.startswith("nccl-tests:") and ratios:
            best[shape.test] = max(best.get(shape.test, 0.0), float(np.median(ratios)))
    for test, figure in sorted(best.items()):
        if figure >= LOGS_FIT:
            continue
        out.contradictions.append(
            f"the logs' {test} tests reach only {figure:.1%} of their path's line rate at their best size, "
            "where a healthy fabric reaches 78% or more: these logs do not fit the fabric given (another "
            "fabric's logs, or link rates the fabric does not run); tests were judged against each other only")
        out.relative_only = True
        for shape, ratios in by_parent.items():
            if shape.test == test and out.baselines[shape].source == "prior" and len(ratios) >= 3:
                out.baselines[shape] = _fit(shape, ratios, "learned")


def _shape_text(shape: Shape) -> str:
    size = f" at {shape.size_bytes:,} B" if shape.size_bytes else ""
    return f"{shape.test}{size}"


# -- tests to samples ------------------------------------------------------------------------------


def pair_samples(pair: PairResult, path_cables: int | None, test_id: int) -> list[Sample]:
    """The figures of one pair test (one per size it printed, else its one figure); none unless ``ok``."""
    if pair.status != "ok" or not pair.expected_gbps:
        return []
    sizes = pair.sizes or ((pair.size_bytes or 0, pair.busbw_gbps),)
    out = []
    for size, bw in sizes:
        if bw is None or not math.isfinite(bw) or bw <= 0:
            continue
        out.append(Sample(Shape(pair.test, int(size or 0), path_cables), bw / pair.expected_gbps, test_id))
    return out


def history_samples(reports: Iterable[dict[str, Any]]) -> list[Sample]:
    """Earlier sweeps' tests (report dicts with ``pairs``, e.g. the history store's pools) as figures to
    learn from: those that ran, of a known test kind, not judged slow then."""
    out = []
    for n, rep in enumerate(reports):
        for p in rep.get("pairs") or []:
            ratio, test = p.get("ratio"), p.get("test")
            if (p.get("status") != "ok" or not isinstance(test, str) or p.get("slow")
                    or not isinstance(ratio, int | float) or not math.isfinite(ratio) or ratio <= 0):
                continue
            out.append(Sample(Shape(test, int(p.get("size_bytes") or 0)), float(ratio), -1 - n))
    return out


def group_family(test: str) -> str:
    """The shape name a group collective is learned under: ``group:`` and its collective (``fan:K`` is one
    collective whatever K)."""
    return GROUP_PREFIX + test.split(":", 1)[0]


def group_samples(group: GroupResult, test_id: int) -> list[Sample]:
    """The figure of one group collective; none unless ``ok`` with an expectation."""
    ratio = group.ratio
    if group.status != "ok" or ratio is None or not math.isfinite(ratio) or ratio <= 0:
        return []
    return [Sample(Shape(group_family(group.test), int(group.size_bytes or 0)), ratio, test_id,
                   learn=group.phase in LEARN_PHASES)]


@dataclass
class TestJudgement:
    """Every test of a sweep judged: ``pairs[i]`` for ``obs.pairs[i]``, ``groups[j]`` for ``obs.groups[j]``."""

    expectations: Expectations
    pairs: list[Judged]
    groups: list[Judged]
    retest_from: int | None = None  # pairs of this round on are a sweep's targeted re-tests (None: no re-test)

    def pair_slow(self, i: int, pair: PairResult) -> bool:
        """Hung, or slower than its shape's healthy figure by more than noise explains."""
        return pair.status == "hung" or (pair.status == "ok" and self.pairs[i].slow)

    def threshold(self, i: int) -> float:
        """The relative figure below which pair ``i`` is slow (its shape's; the given ``--slow-ratio``)."""
        if self.expectations.slow_ratio is not None:
            return self.expectations.slow_ratio
        b = self.pairs[i].baseline
        return b.slowest_ok if b is not None else slow_below(PRIOR_SPREAD)

    def group_failed(self, j: int, group: GroupResult) -> bool:
        """Hung, or slower than its collective's healthy figure by more than noise explains."""
        return group.status == "hung" or (group.status == "ok" and self.groups[j].slow)


NO_JUDGEMENT = Judged(None, None, False, None)


def judge_tests(pairs: Sequence[PairResult], groups: Sequence[GroupResult],
                path_cables: Callable[[PairResult], int | None], history: Iterable[Sample] = (),
                slow_ratio: float | None = None, learn_rounds: int | None = None,
                apart: AbstractSet[int] = frozenset()) -> TestJudgement:
    """Learn every shape's figure from these tests (and ``history``) and judge each test by it.

    ``path_cables(pair)`` gives the cables on a pair's route (its path class; None when unknown).
    ``slow_ratio``, when given, replaces the noise-derived threshold: slow below that share of the
    learned figure. With ``learn_rounds``, pairs of later rounds (a sweep's targeted re-tests, chosen
    because they cross suspects) are judged but learned from only where the earlier ones are few. Pairs
    ``apart`` (indices: tests through a cable that sits low as a whole) are judged, never learned from.
    """
    per_pair = [pair_samples(p, path_cables(p) if p.status == "ok" else None, i) for i, p in enumerate(pairs)]
    per_group = [group_samples(g, len(pairs) + j) for j, g in enumerate(groups)]
    early = [ss for i, (ss, p) in enumerate(zip(per_pair, pairs, strict=True))
             if (learn_rounds is None or p.round < learn_rounds) and i not in apart]
    later = [] if learn_rounds is None else [s for i, (ss, p) in enumerate(zip(per_pair, pairs, strict=True))
                                             if p.round >= learn_rounds and i not in apart for s in ss]
    expectations = learn([s for ss in (*early, *per_group) for s in ss], history, later)
    expectations.slow_ratio = slow_ratio
    return TestJudgement(expectations, [expectations.judge(s) if s else NO_JUDGEMENT for s in per_pair],
                         [expectations.judge(s) if s else NO_JUDGEMENT for s in per_group], learn_rounds)


def judge_observations(fabric: Fabric, pairs: Sequence[PairResult], groups: Sequence[GroupResult],
                       history: Iterable[Sample] = (), slow_ratio: float | None = None,
                       learn_rounds: int | None = None) -> TestJudgement:
    """:func:`judge_tests` with each pair's path class read from ``fabric``'s routes (cables it loads).

    Judged twice: a gray cable's tests (a few spreads low, inside the healthy bulk) widen the learned
    spread on a small fabric until they no longer stand out, so the tests through a cable that sits low
    as a whole (:func:`set_apart`) are set apart and every shape learned again without them.
    """
    paths = [pair_links(fabric, p) if p.status == "ok" else None for p in pairs]
    lengths = {id(p): len(path) for p, path in zip(pairs, paths, strict=True) if path is not None}

    def cables(p: PairResult) -> int | None:
        return lengths.get(id(p))

    first = judge_tests(pairs, groups, cables, history, slow_ratio, learn_rounds)
    apart = set_apart(pairs, paths, first.pairs)
    if not apart:
        return first
    return judge_tests(pairs, groups, cables, history, slow_ratio, learn_rounds, apart)


def set_apart(pairs: Sequence[PairResult], paths: Sequence[tuple[LinkKey, ...] | None],
              judged: Sequence[Judged]) -> set[int]:
    """Tests through a cable whose tests sit low as a whole: their upper median :data:`APART_Z` spreads
    and :data:`MIN_DROP` low (a host a few percent slower than the rest is the noise, not a fault), and
    their sum (each capped at :data:`APART_CAP`) :data:`APART_COMBINED` over the root of their count.
    The lowest cable goes first; the cables beside it are judged on the tests it leaves. None of a test
    kind when that would leave fewer than twice :data:`MIN_TESTS` or half its tests: a fault under most
    of a kind's tests cannot be told from its healthy figure."""
    through: dict[LinkKey, list[int]] = defaultdict(list)
    for i, path in enumerate(paths):
        if path is not None and judged[i].z is not None:
            for key in path:
                through[key].append(i)
    apart: set[int] = set()

    def score(key: LinkKey) -> float | None:
        tests = [i for i in through[key] if i not in apart]
        if len(tests) < 2:
            return None
        z = sorted(max(float(judged[i].z or 0.0), -APART_CAP) for i in tests)
        rel = sorted(float(judged[i].relative or 0.0) for i in tests)
        if z[len(z) // 2] > -APART_Z or rel[len(rel) // 2] > 1.0 - MIN_DROP:
            return None
        combined = sum(z) / math.sqrt(len(z))
        return combined if combined <= -APART_COMBINED else None

    # The lowest first, lazily: a cable's figure is read again when it comes up (tests set apart since
    # may have left it short), so each round touches only the cables that still qualify.
    heap = [(found, n, key) for n, key in enumerate(through) if (found := score(key)) is not None]
    heapq.heapify(heap)
    while heap:
        stored, n, key = heapq.heappop(heap)
        now = score(key)
        if now is None:
            continue
        if now > stored + 1e-12:
            heapq.heappush(heap, (now, n, key))
            continue
        apart.update(through[key])
    kinds = Counter(pairs[i].test for i, path in enumerate(paths) if path is not None and judged[i].z is not None)
    left = Counter(pairs[i].test for i in apart)
    keep = {k for k, n in kinds.items() if n - left[k] < max(2 * MIN_TESTS, n / 2)}
    return {i for i in apart if pairs[i].test not in keep}


def explains(cable: float | None, group: Judged, slow_ratio: float | None = None) -> bool:
    """Whether a cable other evidence blamed at relative figure ``cable`` (None: no figure, a cable down or
    erroring) explains a failing ``group``: the group, taken over that figure, is no longer slow (a hung group,
    or one without a figure, is explained). A 0.8x cable slows a group through it to about 0.8; it does not
    take it to 0.5: a load-only fault behind it is still to be found."""
    if cable is None or group.relative is None or group.baseline is None:
        return True
    below = group.baseline.slowest_ok if slow_ratio is None else slow_ratio
    return group.relative >= cable * below


class GroupJudge:
    """Judges group collectives as isolation gets them: against what healthy groups of the same collective
    and size reach so far (every result seen, learned as :func:`learn` does), the pair tests' figure while
    too few have run. ``slow_ratio``, when given, replaces the noise-derived threshold."""

    def __init__(self, pairs: Expectations | None = None, slow_ratio: float | None = None) -> None:
        self.pairs = pairs or Expectations()
        self.slow_ratio = slow_ratio
        self.samples: list[Sample] = []
        self._current: Expectations | None = None
        self._excused: Callable[[GroupResult, Judged], bool] | None = None

    def excuse(self, excused: Callable[[GroupResult, Judged], bool]) -> None:
        """From now on a slow group ``excused(group, judged)`` holds is not failed: a part other evidence
        already blamed explains it (isolation then chases only what that part does not)."""
        self._excused = excused

    def see(self, results: Iterable[GroupResult]) -> None:
        """Add a round's results to what healthy groups are learned from."""
        for r in results:
            self.samples.extend(group_samples(r, len(self.samples)))
        self._current = None

    def failed(self, group: GroupResult) -> bool:
        """Hung, or slower than healthy groups of its collective by more than the noise explains."""
        if group.status == "hung":
            return True
        samples = group_samples(group, -1)
        if not samples:
            return False
        judged = self._expectations().judge(samples)
        return judged.slow and (self._excused is None or not self._excused(group, judged))

    def judged(self, group: GroupResult) -> Judged:
        """``group`` judged against what healthy groups of its collective reach so far (hung: no figure)."""
        samples = group_samples(group, -1) if group.status == "ok" else []
        return self._expectations().judge(samples) if samples else NO_JUDGEMENT

    def doubtful(self, test: str) -> bool:
        """Whether the groups of collective ``test`` seen so far leave what a healthy one reaches in doubt:
        fewer than :data:`REFERENCE_FROM` in the healthy bulk (a few groups, one failing among them, say
        little), or learned below :data:`REFERENCE_BELOW` of what the pair tests reach (the
        prior without them). Every group may then share one slow part (a spine under every pair of
        leaves): groups that part does not carry are needed to tell."""
        current = self._expectations()
        figures = [b for b in current.baselines.values() if b.shape.test == group_family(test)]
        pairs = _pairs_figure(current)
        reference = PRIOR_EFFICIENCY if pairs is None else pairs
        return not figures or any(b.source != "learned" or b.tests < REFERENCE_FROM
                                  or b.efficiency < REFERENCE_BELOW * reference for b in figures)

    def _expectations(self) -> Expectations:
        if self._current is None:
            self._current = Expectations(baselines={k: b for k, b in self.pairs.baselines.items()
                                                    if not k.test.startswith(GROUP_PREFIX)},
                                         slow_ratio=self.slow_ratio)
            _groups(self.samples, self._current)
        return self._current
