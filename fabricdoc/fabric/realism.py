"""How the simulator's measurements look like a real cluster's: efficiency, variance, jitter, outliers, background.

Real clusters never measure their nominal rate: a healthy test reaches a fraction of its path's rate
that depends on the test kind and rises with the message size; hosts differ by a few percent; a test
repeated differs by 1-4%; now and then one is transiently slow (a neighbour's checkpoint, a GC pause);
other jobs' traffic takes a share of some cables. A fabric file's ``measurements:`` mapping sets these
(every key optional)::

    measurements:
      efficiency: 0.85            # or per test kind: {sendrecv: 0.95, all_reduce: 0.9, alltoall: 0.8}
      half_size: 2M               # the message size at which a test reaches half that efficiency
      host_variance: 0.02         # spread of each host's own factor (drawn once per host)
      jitter: 0.02                # spread of each test's factor
      outlier_rate: 0.01          # share of tests transiently slow
      outlier_factor: [0.3, 0.8]  # what a transient outlier keeps of its rate (uniform)
      background: 0.02            # mean share of each cable direction other traffic takes, per round (uniform)

Without it a fabric gets :data:`DEFAULT`, which looks like a real cluster; :meth:`Realism.ideal` is the
old ideal simulator (one fixed efficiency, no variance), for tests that need exact figures.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from fabricdoc.errors import ConfigError
from fabricdoc.model.inputs import parse_size

TEST_KINDS = ("sendrecv", "all_reduce", "alltoall", "fan")
_KEYS = {"efficiency", "half_size", "host_variance", "jitter", "outlier_rate", "outlier_factor", "background"}


@dataclass(frozen=True)
class Realism:
    """What healthy measurements reach and how they scatter (see the module docstring)."""

    efficiency: dict[str, float] = field(default_factory=lambda: {
        "sendrecv": 0.93, "all_reduce": 0.9, "alltoall": 0.82, "fan": 0.85})
    half_size_bytes: int = 2 << 20
    host_variance: float = 0.02
    jitter: float = 0.02
    outlier_rate: float = 0.01
    outlier_factor: tuple[float, float] = (0.3, 0.8)
    background: float = 0.02

    @classmethod
    def ideal(cls, efficiency: float = 0.92) -> Realism:
        """Every healthy test at one efficiency, whatever its size, no variance, no outliers, no background."""
        return cls({k: efficiency for k in TEST_KINDS}, 0, 0.0, 0.0, 0.0, (1.0, 1.0), 0.0)

    def at(self, test: str, size_bytes: int | None) -> float:
        """The healthy efficiency of ``test`` (``fan:K`` is ``fan``) at ``size_bytes``: the curve
        ``eff x s / (s + half_size)`` that rises with the size, the large-size figure when the size is unknown.

        >>> r = Realism({"sendrecv": 0.9}, half_size_bytes=1 << 20)
        >>> round(r.at("sendrecv", 1 << 20), 3), round(r.at("sendrecv", 1 << 30), 3)
        (0.45, 0.899)
        """
        kind = test.split(":", 1)[0]
        eff = self.efficiency.get(kind, self.efficiency.get("sendrecv", 0.9))
        if not size_bytes or not self.half_size_bytes:
            return eff
        return eff * size_bytes / (size_bytes + self.half_size_bytes)


DEFAULT = Realism()


def _number(where: str, key: str, value: Any, lo: float, hi: float) -> float:
    ok = not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)
    if not ok or not lo <= value <= hi:
        raise ConfigError(f"{where}: measurements.{key} must be a number from {lo:g} to {hi:g}, got {value!r}"[:200])
    return float(value)


def _size(where: str, value: Any) -> int:
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 1 << 40:
        return value
    try:
        return parse_size(value) if isinstance(value, str) else parse_size("")
    except ConfigError:
        raise ConfigError(f"{where}: measurements.half_size must be bytes or a size like 2M, got {value!r}"[:200]) from None


def parse_realism(path: str | Path, data: Any, line: int = 0) -> Realism:
    """A fabric file's ``measurements:`` mapping as a :class:`Realism` (defaults for what it leaves out);
    a bad key or value is a ConfigError naming the file, the line and the key."""
    where = f"{path}:{line}" if line else str(path)
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: measurements must be a mapping (efficiency, jitter, ...)")
    unknown = sorted(str(k) for k in data if k not in _KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key {unknown[0]!r} in measurements (allowed: {', '.join(sorted(_KEYS))})")
    base = DEFAULT
    eff = dict(base.efficiency)
    given = data.get("efficiency")
    if isinstance(given, dict):
        for kind, value in given.items():
            if kind not in TEST_KINDS:
                raise ConfigError(f"{where}: measurements.efficiency: unknown test kind {kind!r} "
                                  f"(one of {', '.join(TEST_KINDS)})"[:200])
            eff[str(kind)] = _number(where, f"efficiency.{kind}", value, 0.01, 1.0)
    elif given is not None:
        value = _number(where, "efficiency", given, 0.01, 1.0)
        eff = {k: value for k in TEST_KINDS}
    factor = data.get("outlier_factor", list(base.outlier_factor))
    if not isinstance(factor, list | tuple) or len(factor) != 2:
        raise ConfigError(f"{where}: measurements.outlier_factor must be [low, high], got {factor!r}"[:200])
    lo, hi = (_number(where, "outlier_factor", v, 0.0, 1.0) for v in factor)
    if lo > hi:
        raise ConfigError(f"{where}: measurements.outlier_factor: low {lo:g} is above high {hi:g}")
    return Realism(
        efficiency=eff,
        half_size_bytes=_size(where, data["half_size"]) if "half_size" in data else base.half_size_bytes,
        host_variance=_number(where, "host_variance", data.get("host_variance", base.host_variance), 0.0, 0.3),
        jitter=_number(where, "jitter", data.get("jitter", base.jitter), 0.0, 0.3),
        outlier_rate=_number(where, "outlier_rate", data.get("outlier_rate", base.outlier_rate), 0.0, 0.5),
        outlier_factor=(lo, hi),
        background=_number(where, "background", data.get("background", base.background), 0.0, 0.5),
    )
