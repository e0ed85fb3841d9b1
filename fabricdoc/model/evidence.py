"""Typed evidence: one frozen dataclass per kind of fact behind a finding, declared once.

Evidence says only what a tool said (a counter delta, a port state, link-down
events, slow or corrupting bandwidth tests, GPU facts) or what inference
counted over those facts (a switch whose links fail together). Each kind has
``to_dict``/``from_dict``; in a report each item is ``{"type": KIND, ...fields}``.
Each kind's ``summary`` and each field's metadata (:func:`doc`: what it means, its
unit, JSON Schema bounds) are the declaration its JSON Schema is generated from
(:mod:`fabricdoc.report.evidence_schema`): a field whose type allows None may be
left out of the JSON and reads as None. Node names here are labels (untrusted
text, escaped wherever shown).
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from fabricdoc.errors import ParseError


def doc(description: str, unit: str | None = None, **schema: Any) -> dict[str, Any]:
    """A field's metadata: what it means, its unit, and JSON Schema bounds (``minimum=0``, ``minItems=2``)."""
    meta: dict[str, Any] = {"description": description}
    if unit:
        meta["unit"] = unit
    if schema:
        meta["schema"] = schema
    return meta


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


@functools.cache
def _nullable_without_default(cls: type) -> frozenset[str]:
    """Fields that must be passed but may be None: absent from the JSON, they read as None."""
    hints = typing.get_type_hints(cls)
    return frozenset(
        f.name for f in dataclasses.fields(cls)  # type: ignore[arg-type]
        if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
        and typing.get_origin(hints[f.name]) in (types.UnionType, typing.Union)
        and type(None) in typing.get_args(hints[f.name]))


class _Kind:
    """Shared (de)serialisation; subclasses are frozen dataclasses with a ``kind`` and a ``summary``."""

    kind: ClassVar[str]
    summary: ClassVar[str]  # one line: the kind's description in the JSON Schema

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            out[f.name] = _plain(getattr(self, f.name))
        return out

    @classmethod
    def _from(cls, data: dict[str, Any]) -> Any:
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        absent = {name: None for name in _nullable_without_default(cls) if name not in data}
        return cls(**absent, **{k: v for k, v in data.items() if k in names})  # type: ignore[call-arg]


_LABEL = "the node's label as the fabric names it (untrusted text)"
_PORT_END = "[node label, port]"
_CABLE = "[[node id, port], [node id, port]]"
_GBPS = "Gb/s"
_EPOCH = "epoch seconds"
_COUNT = {"minimum": 0}


@dataclass(frozen=True)
class CounterEvidence(_Kind):
    """A canonical counter moved on one port: ``delta`` in canonical units over ``interval_s``."""

    kind: ClassVar[str] = "counter"
    summary: ClassVar[str] = "a canonical counter moved on one port (delta in canonical units)"
    node: str = field(metadata=doc(_LABEL))
    port: int = field(metadata=doc("the port number"))
    counter: str = field(metadata=doc("fabricdoc's canonical counter name (symbol_errors, xmit_wait...)"))
    delta: float = field(metadata=doc("how far it moved over interval_s, in the counter's canonical unit"))
    per_second: float | None = field(metadata=doc("delta over interval_s; null when the interval is unknown or zero",
                                                  "per second"))
    interval_s: float | None = field(metadata=doc("how long delta was counted over; null when unknown", "seconds"))
    raw: tuple[str, ...] = field(default=(), metadata=doc("the vendor counters read (SymbolErrorCounter, ...)"))
    at_least: bool = field(default=False, metadata=doc("a register saturated: the true change may be larger"))
    reset: bool = field(default=False, metadata=doc("the counter went backwards (it was reset)"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CounterEvidence:
        return cls._from({**d, "raw": tuple(d.get("raw") or ())})


ExpectedFrom = Literal["topology", "enabled", "supported", "could_be", "majority"]


@dataclass(frozen=True)
class StateEvidence(_Kind):
    """A port state as a tool reported it, with the width and speed it trained at and supports."""

    kind: ClassVar[str] = "state"
    summary: ClassVar[str] = "a port state as a tool reported it, with trained and supported width/speed"
    node: str | None = field(default=None, metadata=doc(
        "the node's label (untrusted text); null for a link the fabric description itself shows degraded"))
    port: int | None = field(default=None, metadata=doc("the port number; null as for node"))
    state: str | None = field(default=None, metadata=doc("the logical state as the tool printed it (Active, Down...)"))
    phys_state: str | None = field(default=None, metadata=doc(
        "the physical state as the tool printed it (LinkUp, Polling...)"))
    lanes: int | None = field(default=None, metadata=doc("the width it trained at", "lanes"))
    supported_lanes: int | None = field(default=None, metadata=doc("the width it supports (see expected_from)",
                                                                   "lanes"))
    lane_gbps: float | None = field(default=None, metadata=doc("the speed per lane it trained at", _GBPS))
    supported_lane_gbps: float | None = field(default=None, metadata=doc(
        "the speed per lane it supports (see expected_from)", _GBPS))
    source: str | None = field(default=None, metadata=doc("the tool that read it (iblinkinfo, netlink, sim...)"))
    expected_from: ExpectedFrom | None = field(default=None, metadata=doc(
        "what set the supported width/speed the port is judged against (could_be: iblinkinfo's hint; "
        "majority: the fabric's most common, a last resort)"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StateEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class NotRespondingEvidence(_Kind):
    """A live discovery did not reach this port's node while the switch port facing it is up."""

    kind: ClassVar[str] = "not_responding"
    summary: ClassVar[str] = "a CA missing from a live discovery while the switch port facing it is up"
    node: str = field(metadata=doc("the silent node's label (untrusted text)"))
    port: int = field(metadata=doc("the silent port", **_COUNT))
    switch: str = field(metadata=doc("the label of the switch facing it (untrusted text)"))
    switch_port: int = field(metadata=doc("the switch port facing it", **_COUNT))
    switch_state: str = field(metadata=doc("that switch port's logical state exactly as source read it"))
    switch_phys_state: str | None = field(default=None, metadata=doc(
        "that switch port's physical state exactly as source read it"))
    far_answered: bool | None = field(default=None, metadata=doc(
        "false when the tool printed \"Port not available\" for the far end; null when it did not say"))
    source: str | None = field(default=None, metadata=doc("the tool that read the switch port (iblinkinfo)"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NotRespondingEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class NotDiscoveredEvidence(_Kind):
    """An expected port missing from a live discovery, with nothing read about its state."""

    kind: ClassVar[str] = "not_discovered"
    summary: ClassVar[str] = "an expected port no tool read: missing from discovery, no state known"
    node: str = field(metadata=doc(_LABEL))
    port: int = field(metadata=doc("the port number", **_COUNT))
    source: str | None = field(default=None, metadata=doc("the discovery that missed it (ibnetdiscover...)"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NotDiscoveredEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class FlapEvidence(_Kind):
    """Link-down events seen on a cable: how many, when (epoch seconds), how often."""

    kind: ClassVar[str] = "event"
    summary: ClassVar[str] = "link-down events on a cable (epoch seconds)"
    flaps: int = field(metadata=doc("link-down events seen", **_COUNT))
    first: float = field(metadata=doc("when the first was seen", _EPOCH))
    last: float = field(metadata=doc("when the last was seen", _EPOCH))
    per_minute: float | None = field(default=None, metadata=doc(
        "how often, over the span they cover; null for a single event", "per minute"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FlapEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class PairSample:
    """One bandwidth test as evidence: its ends (label, port), status and figures."""

    summary: ClassVar[str] = "one bandwidth test: its ends, status and figures"
    src: tuple[str, int] = field(metadata=doc(f"the source end, {_PORT_END}"))
    dst: tuple[str, int] = field(metadata=doc(f"the destination end, {_PORT_END}"))
    status: str = field(metadata=doc("ok, hung, wrong or error"))
    busbw_gbps: float | None = field(metadata=doc("measured bus bandwidth; null when none", _GBPS))
    expected_gbps: float | None = field(metadata=doc("the nominal rate of its path", _GBPS))
    ratio: float | None = field(metadata=doc("busbw_gbps over expected_gbps"))
    relative: float | None = field(default=None, metadata=doc(
        "measured over what healthy tests of its shape reach here: below 1 is slower than usual"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PairSample:
        return cls(tuple(d["src"]), tuple(d["dst"]), d["status"], d.get("busbw_gbps"),  # type: ignore[arg-type]
                   d.get("expected_gbps"), d.get("ratio"), d.get("relative"))


@dataclass(frozen=True)
class SlowPairsEvidence(_Kind):
    """Bandwidth tomography: of ``tests`` tests through this cable, ``slow`` were slow.

    Alternatives are equally likely suspects, so a re-test can tell them apart; ``suspect_only``
    marks a suspect to re-test, not a named fault.
    """

    kind: ClassVar[str] = "pairs"
    summary: ClassVar[str] = "bandwidth tomography: slow tests through this cable"
    tests: int = field(metadata=doc("bandwidth tests through this cable", **_COUNT))
    slow: int = field(metadata=doc("of those, the slow ones", **_COUNT))
    worst_ratio: float = field(metadata=doc("the worst of the tests it explains, over the nominal rate"))
    median_ratio: float = field(metadata=doc("the median of the tests it explains, over the nominal rate"))
    equivalent_suspects: int = field(default=1, metadata=doc(
        "cables that explain exactly the same slow tests, this one included", minimum=1))
    alternatives: tuple[tuple[tuple[str, int], tuple[str, int]], ...] = field(default=(), metadata=doc(
        f"the other cables that explain exactly the same slow tests (up to 8), each {_CABLE}"))
    slow_pairs: tuple[PairSample, ...] = field(default=(), metadata=doc("up to 20 of the slow tests"))
    median_relative: float | None = field(default=None, metadata=doc(
        "the median of its tests over what healthy tests of the same shape reach here"))
    healthy_efficiency: float | None = field(default=None, metadata=doc(
        "what healthy tests of the same shape reach here, over the nominal rate"))
    suspect_only: bool = field(default=False, metadata=doc(
        "its tests sit low but not clearly slow: a suspect to re-test, not a named fault"))
    carried: int = field(default=0, metadata=doc(
        "tests that crossed it the same way as its slow tests, faster than their best by more than tests at one "
        "cable's rate differ: it carried them, so its slow tests had another cause (a suspect, not named)",
        **_COUNT))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SlowPairsEvidence:
        alts = tuple((tuple(a), tuple(b)) for a, b in d.get("alternatives") or ())
        pairs = tuple(PairSample.from_dict(p) for p in d.get("slow_pairs") or ())
        return cls._from({**d, "alternatives": alts, "slow_pairs": pairs})


@dataclass(frozen=True)
class GroupSample:
    """One group test as evidence: its label, collective, size, ratio and the flows it put on the part."""

    summary: ClassVar[str] = "one group test: its collective, size, ratio and the flows it put on the part"
    label: str = field(metadata=doc("the group test's label"))
    test: str = field(metadata=doc("the collective (all_reduce, alltoall, fan:K)"))
    members: int = field(metadata=doc("the ports in the group", **_COUNT))
    status: str = field(metadata=doc("ok, hung, wrong or error"))
    ratio: float | None = field(metadata=doc("measured over expected busbw; null when none"))
    flows: int = field(metadata=doc("the concurrent flows it put on this part", **_COUNT))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GroupSample:
        return cls(str(d["label"]), str(d["test"]), int(d["members"]), str(d["status"]), d.get("ratio"),
                   int(d["flows"]))


@dataclass(frozen=True)
class GroupLoadEvidence(_Kind):
    """Group tomography: every group test that put more than ``passing_flows`` concurrent flows on this
    part failed, while tests with at most ``passing_flows`` flows passed, pair tests (one flow) included."""

    kind: ClassVar[str] = "groups"
    summary: ClassVar[str] = "group tomography: group tests that loaded this part past what passed all failed"
    tests: int = field(metadata=doc("group tests that loaded this part", **_COUNT))
    failing: int = field(metadata=doc("of those, the failing ones", **_COUNT))
    failing_flows: int = field(metadata=doc("the concurrent flows the lightest failing test put on it", **_COUNT))
    passing_flows: int = field(metadata=doc("the most concurrent flows a passing test put on it", **_COUNT))
    worst_ratio: float = field(metadata=doc("the worst failing test's busbw over expected"))
    toward: tuple[str, int] | None = field(default=None, metadata=doc(
        f"the cable end the overloaded direction flows into, {_PORT_END}; null for a switch"))
    pair_tests: int = field(default=0, metadata=doc("pair tests (one flow) that crossed it", **_COUNT))
    pair_slow: int = field(default=0, metadata=doc("of those, the slow ones", **_COUNT))
    equivalent_suspects: int = field(default=1, metadata=doc(
        "parts that explain exactly the same failing tests, this one included", minimum=1))
    alternatives: tuple[str, ...] = field(default=(), metadata=doc(
        "the other parts that explain exactly the same failing tests (up to 8)"))
    failing_groups: tuple[GroupSample, ...] = field(default=(), metadata=doc("up to 12 of the failing group tests"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GroupLoadEvidence:
        groups = tuple(GroupSample.from_dict(g) for g in d.get("failing_groups") or ())
        toward = tuple(d["toward"]) if d.get("toward") else None
        return cls._from({**d, "alternatives": tuple(d.get("alternatives") or ()), "failing_groups": groups,
                          "toward": toward})


@dataclass(frozen=True)
class CorruptionEvidence(_Kind):
    """Tests whose data check failed: ``pairs`` lists ``(src label, dst label, wrong elements)``."""

    kind: ClassVar[str] = "corruption"
    summary: ClassVar[str] = "tests whose data check failed"
    wrong_pairs: int = field(metadata=doc("tests whose data check failed", **_COUNT))
    pairs: tuple[tuple[str, str, int], ...] = field(default=(), metadata=doc(
        "those tests, each [src label, dst label, wrong elements]"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CorruptionEvidence:
        return cls._from({**d, "pairs": tuple(tuple(p) for p in d.get("pairs") or ())})


@dataclass(frozen=True)
class SwitchLinksEvidence(_Kind):
    """Inference over a switch's cables: how many are bad, of how many, how many down."""

    kind: ClassVar[str] = "switch_links"
    summary: ClassVar[str] = "inference over a switch's cables"
    links_bad: int = field(metadata=doc("its cables with a fault", **_COUNT))
    links_total: int = field(metadata=doc("its cables", **_COUNT))
    links_down: int = field(metadata=doc("its cables that are down", **_COUNT))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SwitchLinksEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class GpuEvidence(_Kind):
    """What NVML reported about one GPU that a GPU rule judged a fault."""

    kind: ClassVar[str] = "gpu"
    summary: ClassVar[str] = "NVML facts a GPU rule judged a fault"
    uuid: str | None = field(metadata=doc("the GPU's UUID as NVML reported it; null when unknown"))
    problems: tuple[str, ...] = field(metadata=doc("what NVML reported wrong (xid 79, ...; untrusted text)"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GpuEvidence:
        return cls._from({**d, "problems": tuple(d.get("problems") or ())})


@dataclass(frozen=True)
class CandidatesEvidence(_Kind):
    """Inference: the evidence cannot tell these parts apart (a NIC or its cable; cables that
    explain the same slow tests)."""

    kind: ClassVar[str] = "candidates"
    summary: ClassVar[str] = "parts the evidence cannot tell apart, what would, and re-tests that would"
    candidates: tuple[str, ...] = field(metadata=doc(
        "the parts (a NIC or its cable; cables that explain the same slow tests)", minItems=2))
    tell_apart: str = field(metadata=doc("what would tell them apart"))
    tests: tuple[tuple[tuple[str, int], tuple[str, int]], ...] = field(default=(), metadata=doc(
        f"host-port pairs whose re-test separates them, each [{_PORT_END}, {_PORT_END}]"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CandidatesEvidence:
        tests = tuple((tuple(a), tuple(b)) for a, b in d.get("tests") or ())
        return cls._from({**d, "candidates": tuple(d.get("candidates") or ()), "tests": tests})


@dataclass(frozen=True)
class HostEvidence(_Kind):
    """A host-side fact behind a host or NIC finding: a failed configuration check (sysfs/procfs)
    or kernel messages about a NIC. Subject and reason may carry host text: escape when shown."""

    kind: ClassVar[str] = "host"
    summary: ClassVar[str] = ("a host-side fact: a failed host configuration check (sysfs) or kernel messages "
                              "about a NIC")
    check: str = field(metadata=doc("what was checked (pcie_link, gpudirect, aer, cmd_timeout...)"))
    subject: str = field(metadata=doc("the part (mlx5_0, a PCI address, an interface; untrusted text)"))
    reason: str = field(metadata=doc("the line a person reads (untrusted text)"))
    source: str = field(default="sysfs", metadata=doc("sysfs (a configuration check) or kmsg (kernel messages)"))
    count: int = field(default=1, metadata=doc("how many kernel messages (1 for a check)", **_COUNT))
    first: float | None = field(default=None, metadata=doc("the first message; null for a check", _EPOCH))
    last: float | None = field(default=None, metadata=doc("the last message; null for a check", _EPOCH))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HostEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class NcclLogEvidence(_Kind):
    """A line of a job's NCCL_DEBUG output behind a finding: a failed connection on the cable
    blamed, or the transport a host really used. ``line`` is untrusted text: escape when shown."""

    kind: ClassVar[str] = "nccl_log"
    summary: ClassVar[str] = ("a line of a job's NCCL_DEBUG output: a failed connection, or the transport "
                              "a host used")
    source: str = field(metadata=doc("the log it was read from"))
    line_no: int = field(metadata=doc("the line's number in it", **_COUNT))
    line: str = field(metadata=doc("the line (untrusted text)"))
    host: str = field(metadata=doc("the host that printed it"))
    reason: str = field(metadata=doc("what it means"))

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NcclLogEvidence:
        return cls._from(d)


Evidence = (
    CounterEvidence | StateEvidence | FlapEvidence | SlowPairsEvidence | CorruptionEvidence
    | SwitchLinksEvidence | GpuEvidence | CandidatesEvidence
    | NotRespondingEvidence | NotDiscoveredEvidence | HostEvidence | NcclLogEvidence | GroupLoadEvidence
)
# The registry: every consumer (the JSON Schema, the readers, the text report, the TUI) walks it, in this order.
EVIDENCE_KINDS: dict[str, Any] = {
    cls.kind: cls
    for cls in (CounterEvidence, StateEvidence, NotRespondingEvidence, NotDiscoveredEvidence, FlapEvidence,
                SlowPairsEvidence, GroupLoadEvidence, CorruptionEvidence, SwitchLinksEvidence, CandidatesEvidence,
                GpuEvidence, HostEvidence, NcclLogEvidence)
}


def evidence_from_dict(data: dict[str, Any], source: str = "report") -> Evidence:
    """One evidence item from its JSON form; an unknown kind or a bad field is a ParseError."""
    kind = data.get("type")
    cls = EVIDENCE_KINDS.get(kind)  # type: ignore[arg-type]
    if cls is None:
        raise ParseError(source, 0, repr(kind)[:80], "unknown evidence type")
    try:
        return cls.from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ParseError(source, 0, repr(data)[:120], f"bad {kind} evidence ({exc})") from None
