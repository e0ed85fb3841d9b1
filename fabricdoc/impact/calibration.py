"""Calibrated expected busbw: the topology's nominal figure times the fabric's measured efficiency.

The nominal busbw is a link-load bound (line rate x topology); NCCL reaches a
fraction of it that depends on the fabric and the message size. The efficiency
is learned from healthy bandwidth tests (status ok, not slow: measured over
expected, the median per message size) of this sweep and of earlier reports of
the same fabric, or given (``0.85`` or ``1M=0.6,16M=0.8,256M=0.9``). It assumes
the collective reaches the same fraction of its bound as a pair test of that
size reaches of its path's rate. A figure whose bottleneck is a link known by a
measured bandwidth (a slow link's measured ratio) is kept as is at the largest
size (the measurement already includes the efficiency) and scaled by the
efficiency's ratio to that size's at smaller sizes. Without either source the figures are nominal
only and say so: no efficiency is invented.

Each figure names the collective algorithm it assumes: NCCL ring, NCCL double
binary tree, and, only when declared, in-network reduction (InfiniBand SHARP /
CollNet): each host sends its buffer up once and receives the result once, so
busbw = rails x 2(n-1)/n x the slowest host link (switch links do not bind).
NVLink SHARP (NVLS) reduces inside a node, which this model of the network does not see.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from fabricdoc.errors import ConfigError
from fabricdoc.model.expectation import healthy_bulk
from fabricdoc.model.inputs import parse_size

ASSUMES = {
    "ring": "NCCL ring: each rank sends to the next, the slowest hop sets the pace; busbw = rails x its share",
    "tree": "NCCL double binary tree: each tree carries half the buffer up and down; busbw = 4 x rails x (n-1)/n x "
            "the slowest edge share",
    "sharp": "in-network reduction (SHARP/CollNet, declared): each host link carries the buffer once each way; "
             "busbw = rails x 2(n-1)/n x the slowest host link",
}


@dataclass(frozen=True)
class Efficiency:
    """Measured over nominal, per message size (bytes; 0: size unknown), and where it came from."""

    by_size: dict[int, float]
    source: str
    tests: dict[int, int] = field(default_factory=dict)  # healthy tests behind each size's figure

    def at(self, size: int | None) -> float:
        """The efficiency at ``size``: log-size interpolation between measured sizes, the nearest
        end outside them, the largest size's when ``size`` is None (the bandwidth-bound regime)."""
        sizes = sorted(self.by_size)
        if size is None or len(sizes) == 1:
            return self.by_size[sizes[-1]]
        if size <= sizes[0]:
            return self.by_size[sizes[0]]
        if size >= sizes[-1]:
            return self.by_size[sizes[-1]]
        for lo, hi in zip(sizes, sizes[1:], strict=False):
            if lo <= size <= hi:
                t = (math.log(size) - math.log(max(lo, 1))) / (math.log(hi) - math.log(max(lo, 1)))
                return self.by_size[lo] + t * (self.by_size[hi] - self.by_size[lo])
        return self.by_size[sizes[-1]]


def given_efficiency(spec: str, source: str = "--efficiency") -> Efficiency:
    """An efficiency as given: one fraction (``0.85``) or ``SIZE=FRACTION`` pairs (``1M=0.6,256M=0.9``)."""
    by_size: dict[int, float] = {}
    for i, part in enumerate(p for p in spec.split(",") if p.strip()):
        size_text, _, value = part.rpartition("=")
        try:
            eff = float(value)
        except ValueError:
            raise ConfigError(f"{source}: item {i + 1} {part.strip()!r}: the efficiency is not a number") from None
        if not 0 < eff <= 1 or not math.isfinite(eff):
            raise ConfigError(f"{source}: item {i + 1} {part.strip()!r}: the efficiency is a fraction of the line "
                              "rate, in (0, 1]: a fabric never carries more than its links")
        try:
            size = parse_size(size_text) if size_text.strip() else 0
        except ConfigError as e:
            raise ConfigError(f"{source}: item {i + 1}: {e}") from None
        by_size[size] = eff
    if not by_size:
        raise ConfigError(f"{source}: empty (give 0.85 or 1M=0.6,256M=0.9)")
    return Efficiency(by_size, f"given ({source} {spec.strip()})")


def learned_efficiency(reports: Iterable[dict[str, Any]], source: str = "") -> Efficiency | None:
    """What healthy tests reach, per message size, over the pair lists of ``reports`` (report dicts with
    ``pairs``): the healthy bulk's median measured/expected (:func:`fabricdoc.model.expectation.healthy_bulk`:
    slow tests and transient outliers left out) of tests that ran (status ok) and were not judged slow;
    None when there are none."""
    ratios: dict[int, list[float]] = {}
    n_reports = 0
    for rep in reports:
        used = False
        for p in rep.get("pairs") or []:
            ratio = p.get("ratio")
            if p.get("status") != "ok" or ratio is None or not p.get("expected_gbps") or p.get("slow") or ratio <= 0:
                continue
            ratios.setdefault(int(p.get("size_bytes") or 0), []).append(float(ratio))
            used = True
        n_reports += used
    if not ratios:
        return None
    bulk = {s: healthy_bulk([math.log(r) for r in v]) for s, v in ratios.items()}
    by_size = {s: round(min(1.0, math.exp(center)), 4) for s, (center, _, _) in bulk.items()}
    if len(by_size) > 1 and 0 in by_size:
        del by_size[0]  # tests of unknown size say nothing about size once sizes are known
    tests = {s: bulk[s][2] for s in by_size}
    what = source or f"{n_reports} report{'s' if n_reports != 1 else ''}"
    return Efficiency(by_size, f"learned from {sum(tests.values())} healthy tests in {what}", tests)


def sharp_busbw(model: Any, hosts: Iterable[str] | None = None, state: str = "now") -> float:
    """In-network reduction busbw (SHARP, declared): rails x 2(n-1)/n x the slowest host link."""
    ranks = model.job_hosts if hosts is None else sorted(set(hosts))
    n = len(ranks)
    if n < 2:
        return 0.0
    cap = model.capacity[state]
    rails = min(len(model.host_ports[h]) for h in ranks)
    slowest = math.inf
    for h in ranks:
        for port in model.host_ports[h][:rails]:
            link = model.fabric.link_at(port)
            if link is None:
                return 0.0
            i = 2 * model.index[link.key]
            slowest = min(slowest, float(cap[i]), float(cap[i + 1]))
    return 0.0 if not math.isfinite(slowest) else rails * 2 * (n - 1) / n * slowest


def expected_section(figures: dict[str, dict[str, float]], efficiency: Efficiency | None,
                     sizes: Iterable[int] = (), measured: dict[str, list[str]] | None = None) -> dict[str, Any]:
    """The report's ``expected_busbw``: per algorithm (``figures[alg]`` holds nominal / now / recommended
    Gb/s) the assumption and the expected figures at each size (efficiency x figure). A figure listed in
    ``measured[alg]`` is bound by a measured bandwidth, which already includes the efficiency: kept as is."""
    measured = measured or {}
    out: dict[str, Any] = {
        "efficiency_source": efficiency.source if efficiency else
        "none: no healthy bandwidth test and no --efficiency; the figures are the nominal link-load bound",
        "calibrated": efficiency is not None,
        "by_algorithm": {},
    }
    wanted = sorted(set(sizes) | (set(efficiency.by_size) - {0} if efficiency else set()))
    for alg, fig in figures.items():
        entry: dict[str, Any] = {"assumes": ASSUMES.get(alg, alg), **{k: _r(v) for k, v in fig.items()}}
        if efficiency:
            eff = efficiency.at(None)
            entry["efficiency"] = round(eff, 4)
            keep = set(measured.get(alg, ()))
            entry["expected"] = {k: _r(v if k in keep else v * eff) for k, v in fig.items()}
            entry["by_size"] = [{"size_bytes": s, "efficiency": round(efficiency.at(s), 4),
                                 **{k: _r(v * efficiency.at(s) / (eff if k in keep else 1.0)) for k, v in fig.items()}}
                                for s in wanted]
            if keep:
                entry["measured"] = sorted(keep)
        out["by_algorithm"][alg] = entry
    if efficiency:
        out["efficiency_by_size"] = [{"size_bytes": s, "efficiency": e, "tests": efficiency.tests.get(s)}
                                     for s, e in sorted(efficiency.by_size.items())]
    return out


def _r(x: float) -> float:
    return round(float(x), 4) if math.isfinite(x) else 0.0
