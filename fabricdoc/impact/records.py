"""The report's impact section as frozen records, read by attribute everywhere.

:func:`fabricdoc.impact.section.impact_section` builds them; :meth:`ImpactSection.as_dict` is the only way
to JSON (report writing, ``fabricdoc impact --json``) and :meth:`ImpactSection.from_dict` the only way back
(report loading). Field order is the JSON's key order. A field that is None is left out of the JSON
unless its record lists it in ``_ALWAYS`` (a figure the section writes as null): so a section read from
an older report, which lacks the fields added since, writes back as it was read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, fields
from typing import Any, ClassVar, Self

Cable = tuple[tuple[str, int], tuple[str, int]]
"""A cable as the report names it: ``((label, port), (label, port))``, written ``[[label, port], [label, port]]``."""

BUSBW_KEYS = ("nominal", "now", "after_drain", "recommended")
"""The busbw figures, in the order every output shows them."""


def cable(value: Sequence[Sequence[Any]]) -> Cable:
    """A cable from its JSON form ``[[label, port], [label, port]]``."""
    a, b = value
    return (a[0], a[1]), (b[0], b[1])


def _json(value: Any) -> Any:
    """A field's value as JSON-able data: records as dicts, tuples as lists."""
    if isinstance(value, _Record):
        return value.as_dict()
    if isinstance(value, tuple | list):
        return [_json(v) for v in value]
    if isinstance(value, dict):
        return {k: _json(v) for k, v in value.items()}
    return value


def _tuple(value: Any, item: Any = None) -> tuple | None:
    """A JSON list as a tuple (each item through ``item``), None when absent."""
    if value is None:
        return None
    return tuple(value) if item is None else tuple(item(v) for v in value)


def _maybe(parse: Any, value: Any) -> Any:
    """``parse(value)`` for a non-empty JSON object, else None."""
    return parse(value) if isinstance(value, dict) and value else None


class _Record:
    """The JSON rule every impact record shares: fields in order, None left out unless in ``_ALWAYS``."""

    _ALWAYS: ClassVar[frozenset[str]] = frozenset()

    def _written(self) -> frozenset[str]:
        return self._ALWAYS

    def as_dict(self) -> dict[str, Any]:
        """The record as the report's JSON writes it."""
        always = self._written()
        out = {}
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if value is not None or f.name in always:
                out[f.name] = _json(value)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Self:
        """From the JSON object: each field its key's value (records with nested ones read those themselves)."""
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})  # type: ignore[arg-type]


class _Figures(_Record):
    """Records that carry the busbw figures of :data:`BUSBW_KEYS` as attributes."""

    def figure(self, key: str) -> float | None:
        """The figure ``key`` (one of :data:`BUSBW_KEYS`) in Gb/s, as read; None when absent or not a number."""
        value = getattr(self, key, None) if key in BUSBW_KEYS else None
        return value if isinstance(value, int | float) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class Busbw(_Figures):
    """Predicted nccl-tests AllReduce busbw (Gb/s): all links healthy, with the findings, also without
    the drain list's hosts, with the recommendation applied."""

    nominal: float | None = None
    now: float | None = None
    after_drain: float | None = None
    recommended: float | None = None
    _ALWAYS = frozenset({"nominal", "now", "after_drain"})


@dataclass(frozen=True)
class Bottleneck(_Record):
    """The link that bounds a collective: the cable, its busier direction, its capacity and how many flows
    share it, and the finding that slowed it (``link`` None: a host has no route)."""

    link: Cable | None = None
    direction: str | None = None
    capacity_gbps: float | None = None
    flows: int | None = None
    reason: str | None = None
    finding: str | None = None
    measured: bool | None = None  # bound by a measured bandwidth (absent before calibration existed)

    def _written(self) -> frozenset[str]:
        routed = self.link is not None  # a host without a route has no finding to name
        return frozenset({"link", "direction", "capacity_gbps", "flows", "reason", *(("finding",) if routed else ())})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Bottleneck:
        """From the JSON object (or the impact model's dict)."""
        link = data.get("link")
        return cls(None if link is None else cable(link), data.get("direction"), data.get("capacity_gbps"),
                   data.get("flows"), data.get("reason"), data.get("finding"), data.get("measured"))


@dataclass(frozen=True)
class AlgorithmFigures(_Figures):
    """One collective algorithm's busbw figures, its per-rail busbw and bottleneck now; or only why it
    was not computed (``skipped``)."""

    nominal: float | None = None
    now: float | None = None
    after_drain: float | None = None
    per_rail_now: tuple[float, ...] | None = None
    bottleneck_now: Bottleneck | None = None
    recommended: float | None = None
    skipped: str | None = None

    def _written(self) -> frozenset[str]:
        return frozenset() if self.skipped is not None else frozenset({"nominal", "now", "after_drain", "bottleneck_now"})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> AlgorithmFigures:
        """From the JSON object."""
        return cls(data.get("nominal"), data.get("now"), data.get("after_drain"), _tuple(data.get("per_rail_now")),
                   _maybe(Bottleneck.from_dict, data.get("bottleneck_now")), data.get("recommended"),
                   data.get("skipped"))


@dataclass(frozen=True)
class Remedy(_Record):
    """One what-if row: which choice it is (given, recommended, report, none, alternative), the hosts it
    drains and cables it takes out of service, and what it predicts (ring busbw, job throughput)."""

    choice: str | None = None
    drain: tuple[str, ...] = ()
    isolate: tuple[Cable, ...] | None = None  # absent in reports written before link what-ifs
    hosts: int | None = None
    ring_busbw_gbps: float | None = None
    busbw_gbps: float | None = None
    vs_nominal: float | None = None
    throughput_fraction: float | None = None
    _ALWAYS = frozenset({"choice", "hosts", "busbw_gbps", "vs_nominal", "throughput_fraction"})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Remedy:
        """From the JSON object (or a what-if dict of the impact model, with its ``choice``)."""
        return cls(data.get("choice"), tuple(data.get("drain") or ()), _tuple(data.get("isolate"), cable),
                   data.get("hosts"), data.get("ring_busbw_gbps"), data.get("busbw_gbps"), data.get("vs_nominal"),
                   data.get("throughput_fraction"))


@dataclass(frozen=True)
class Recommendation(_Record):
    """The remedy with the most predicted job throughput: drains, cables out of service, its figures,
    why it was chosen and the findings whose cables it takes out of service."""

    drain: tuple[str, ...] = ()
    isolate: tuple[Cable, ...] = ()
    hosts: int | None = None
    ring_busbw_gbps: float | None = None
    tree_busbw_gbps: float | None = None
    busbw_gbps: float | None = None
    vs_nominal: float | None = None
    throughput_fraction: float | None = None
    why: str | None = None
    findings: tuple[str, ...] | None = None
    _ALWAYS = frozenset({"hosts", "busbw_gbps", "throughput_fraction"})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Recommendation:
        """From the JSON object."""
        return cls(tuple(data.get("drain") or ()), _tuple(data.get("isolate") or (), cable) or (), data.get("hosts"),
                   data.get("ring_busbw_gbps"), data.get("tree_busbw_gbps"), data.get("busbw_gbps"),
                   data.get("vs_nominal"), data.get("throughput_fraction"), data.get("why"),
                   _tuple(data.get("findings")))


@dataclass(frozen=True)
class StateFigures(_Record):
    """Busbw figures (Gb/s) per state: nominal, now, with the recommendation."""

    nominal: float | None = None
    now: float | None = None
    recommended: float | None = None

    def items(self) -> Iterator[tuple[str, float]]:
        """The figures present, as (state, Gb/s), in order."""
        for key in ("nominal", "now", "recommended"):
            value = getattr(self, key)
            if value is not None:
                yield key, value


@dataclass(frozen=True)
class SizeFigures(_Record):
    """The expected figures at one message size: the efficiency there times each busbw figure."""

    size_bytes: int | None = None
    efficiency: float | None = None
    nominal: float | None = None
    now: float | None = None
    recommended: float | None = None


@dataclass(frozen=True)
class ExpectedFigures(_Record):
    """One algorithm's calibrated expectation: what it assumes, its nominal figures, the efficiency, the
    expected figures (overall and per size) and which figures a measured bandwidth bounds."""

    assumes: str | None = None
    nominal: float | None = None
    now: float | None = None
    recommended: float | None = None
    efficiency: float | None = None
    expected: StateFigures | None = None
    by_size: tuple[SizeFigures, ...] | None = None
    measured: tuple[str, ...] | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExpectedFigures:
        """From the JSON object."""
        expected = data.get("expected")
        return cls(data.get("assumes"), data.get("nominal"), data.get("now"), data.get("recommended"),
                   data.get("efficiency"), None if expected is None else StateFigures.from_dict(expected),
                   _tuple(data.get("by_size"), SizeFigures.from_dict), _tuple(data.get("measured")))


@dataclass(frozen=True)
class SizeEfficiency(_Record):
    """The fabric's efficiency at one message size and the healthy tests behind it (None: given)."""

    size_bytes: int | None = None
    efficiency: float | None = None
    tests: int | None = None
    _ALWAYS = frozenset({"size_bytes", "efficiency", "tests"})


@dataclass(frozen=True)
class ExpectedBusbw(_Record):
    """The calibrated expected busbw: where the efficiency came from, whether there was one, each
    algorithm's expectation, and the efficiency per message size."""

    efficiency_source: str | None = None
    calibrated: bool | None = None
    by_algorithm: dict[str, ExpectedFigures] | None = None
    efficiency_by_size: tuple[SizeEfficiency, ...] | None = None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ExpectedBusbw:
        """From the JSON object (or :func:`fabricdoc.impact.calibration.expected_section`'s dict)."""
        algs = data.get("by_algorithm")
        return cls(data.get("efficiency_source"), data.get("calibrated"),
                   None if algs is None else {k: ExpectedFigures.from_dict(v) for k, v in algs.items()},
                   _tuple(data.get("efficiency_by_size"), SizeEfficiency.from_dict))


@dataclass(frozen=True)
class JobCost(_Record):
    """What failures cost a job of this size (:func:`fabricdoc.impact.jobcost.job_cost`): None where no
    failure is expected (MTBF, checkpoint interval) or the host rate is zero."""

    n_hosts: int | None = None
    hours: float | None = None
    host_failures_per_hour: float | None = None
    host_mtbf_hours: float | None = None
    rate_source: str | None = None
    host_failure_probability: float | None = None
    failure_probability: float | None = None
    expected_failures: float | None = None
    checkpoint_write_minutes: float | None = None
    restart_minutes: float | None = None
    mtbf_hours: float | None = None
    recommended_checkpoint_minutes: float | None = None
    checkpoint_interval_minutes: float | None = None
    expected_lost_hours: float | None = None
    expected_goodput: float | None = None
    _ALWAYS = frozenset({"host_mtbf_hours", "mtbf_hours", "recommended_checkpoint_minutes",
                         "checkpoint_interval_minutes"})


@dataclass(frozen=True)
class LinkEffectRow(_Record):
    """A cable a finding changes: its capacity now against its nominal rate, whether it is down, the
    rule that set it and the finding."""

    link: Cable
    capacity_gbps: float | None = None
    nominal_gbps: float | None = None
    down: bool | None = None
    rule: str | None = None
    finding: str | None = None
    _ALWAYS = frozenset({"link", "capacity_gbps", "nominal_gbps", "down", "rule", "finding"})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> LinkEffectRow:
        """From the JSON object."""
        return cls(cable(data["link"]), data.get("capacity_gbps"), data.get("nominal_gbps"), data.get("down"),
                   data.get("rule"), data.get("finding"))


@dataclass(frozen=True)
class Uncosted(_Record):
    """A finding the busbw figures leave out, with why."""

    finding: str
    why: str
    _ALWAYS = frozenset({"finding", "why"})

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Uncosted:
        """From the JSON object."""
        return cls(str(data.get("finding", "")), str(data.get("why", "")))


@dataclass(frozen=True)
class ImpactSection(_Record):
    """The report's ``impact`` section: AllReduce busbw nominal / now / after draining / recommended, per
    algorithm, the recommendation and what-if rows, the calibrated expectation, the job cost, and the
    cables the findings change."""

    algorithm: str | None = None  # which algorithm the headline figures are
    job_hosts: int | None = None
    rails: int | None = None
    allreduce_busbw_gbps: Busbw | None = None
    by_algorithm: dict[str, AlgorithmFigures] | None = None
    routing_engine: str | None = None
    recommendation: Recommendation | None = None
    what_if: tuple[Remedy, ...] | None = None
    expected_busbw: ExpectedBusbw | None = None
    job: JobCost | None = None
    link_effects: tuple[LinkEffectRow, ...] | None = None
    unmapped_findings: tuple[str, ...] | None = None
    uncosted_findings: tuple[Uncosted, ...] | None = None

    @property
    def headline(self) -> AlgorithmFigures | None:
        """The figures of the headline algorithm (its bottleneck, per-rail busbw), when computed."""
        return (self.by_algorithm or {}).get(self.algorithm or "ring")

    @property
    def alternatives(self) -> tuple[Remedy, ...]:
        """The alternative remedies (deduplicated, none only tying the recommendation)."""
        return tuple(w for w in self.what_if or () if w.choice == "alternative")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ImpactSection:
        """From the report's ``impact`` object, of this version or an older one."""
        algs = data.get("by_algorithm")
        return cls(
            algorithm=data.get("algorithm"),
            job_hosts=data.get("job_hosts"),
            rails=data.get("rails"),
            allreduce_busbw_gbps=_maybe(Busbw.from_dict, data.get("allreduce_busbw_gbps")),
            by_algorithm=None if algs is None else {k: AlgorithmFigures.from_dict(v) for k, v in algs.items()},
            routing_engine=data.get("routing_engine"),
            recommendation=_maybe(Recommendation.from_dict, data.get("recommendation")),
            what_if=_tuple(data.get("what_if"), Remedy.from_dict),
            expected_busbw=_maybe(ExpectedBusbw.from_dict, data.get("expected_busbw")),
            job=None if data.get("job") is None else JobCost.from_dict(data["job"]),
            link_effects=_tuple(data.get("link_effects"), LinkEffectRow.from_dict),
            unmapped_findings=_tuple(data.get("unmapped_findings")),
            uncosted_findings=_tuple(data.get("uncosted_findings"), Uncosted.from_dict),
        )
