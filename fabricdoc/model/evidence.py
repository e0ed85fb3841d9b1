"""Typed evidence: one frozen dataclass per kind of fact behind a finding.

Evidence says only what a tool said (a counter delta, a port state, link-down
events, slow or corrupting bandwidth tests, GPU facts) or what inference
counted over those facts (a switch whose links fail together). Each kind has
``to_dict``/``from_dict``; in a report each item is ``{"type": KIND, ...fields}``
and the JSON Schema has one shape per kind. Node names here are labels
(untrusted text, escaped wherever shown).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, ClassVar

from fabricdoc.errors import ParseError


def _plain(value: Any) -> Any:
    if isinstance(value, tuple):
        return [_plain(v) for v in value]
    if isinstance(value, list):
        return [_plain(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    return value


class _Kind:
    """Shared (de)serialisation; subclasses are frozen dataclasses with a ``kind``."""

    kind: ClassVar[str]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"type": self.kind}
        for f in dataclasses.fields(self):  # type: ignore[arg-type]
            out[f.name] = _plain(getattr(self, f.name))
        return out

    @classmethod
    def _from(cls, data: dict[str, Any]) -> Any:
        names = {f.name for f in dataclasses.fields(cls)}  # type: ignore[arg-type]
        return cls(**{k: v for k, v in data.items() if k in names})  # type: ignore[call-arg]


@dataclass(frozen=True)
class CounterEvidence(_Kind):
    """A canonical counter moved on one port: ``delta`` in canonical units over ``interval_s``.

    ``raw`` names the vendor counters read; ``at_least`` when a register
    saturated (the true change may be larger); ``reset`` when it went backwards.
    ``per_second`` is None when the interval is unknown or zero.
    """

    kind: ClassVar[str] = "counter"
    node: str
    port: int
    counter: str
    delta: float
    per_second: float | None
    interval_s: float | None
    raw: tuple[str, ...] = ()
    at_least: bool = False
    reset: bool = False

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CounterEvidence:
        return cls._from({**d, "raw": tuple(d.get("raw") or ())})


@dataclass(frozen=True)
class StateEvidence(_Kind):
    """A port state as a tool reported it, with the width and speed it trained at and supports.

    ``node``/``port`` are None for a link the fabric description itself shows
    degraded. ``source`` names the tool (``iblinkinfo``, ``netlink``, ``sim``...).
    """

    kind: ClassVar[str] = "state"
    node: str | None = None
    port: int | None = None
    state: str | None = None
    phys_state: str | None = None
    lanes: int | None = None
    supported_lanes: int | None = None
    lane_gbps: float | None = None
    supported_lane_gbps: float | None = None
    source: str | None = None
    # What set the supported (expected) width/speed: "topology", "enabled", "supported",
    # "could_be" (iblinkinfo's hint) or "majority" (the fabric's most common, last resort).
    expected_from: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> StateEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class NotRespondingEvidence(_Kind):
    """A live discovery did not reach this port's node while the switch port facing it is up.

    ``node``/``port``: the silent end (labels); ``switch``/``switch_port``: the port facing it,
    with ``switch_state``/``switch_phys_state`` exactly as ``source`` read them (iblinkinfo);
    ``far_answered`` False when that tool printed "Port not available" for the far end.
    """

    kind: ClassVar[str] = "not_responding"
    node: str
    port: int
    switch: str
    switch_port: int
    switch_state: str
    switch_phys_state: str | None = None
    far_answered: bool | None = None
    source: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NotRespondingEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class NotDiscoveredEvidence(_Kind):
    """An expected port missing from a live discovery, with nothing read about its state."""

    kind: ClassVar[str] = "not_discovered"
    node: str
    port: int
    source: str | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NotDiscoveredEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class FlapEvidence(_Kind):
    """Link-down events seen on a cable: how many, when (epoch seconds), how often."""

    kind: ClassVar[str] = "event"
    flaps: int
    first: float
    last: float
    per_minute: float | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> FlapEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class PairSample:
    """One bandwidth test as evidence: its ends (label, port), status and figures."""

    src: tuple[str, int]
    dst: tuple[str, int]
    status: str
    busbw_gbps: float | None
    expected_gbps: float | None
    ratio: float | None
    relative: float | None = None  # measured over what healthy tests of its shape reach here

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> PairSample:
        return cls(tuple(d["src"]), tuple(d["dst"]), d["status"], d.get("busbw_gbps"),  # type: ignore[arg-type]
                   d.get("expected_gbps"), d.get("ratio"), d.get("relative"))


@dataclass(frozen=True)
class SlowPairsEvidence(_Kind):
    """Bandwidth tomography: of ``tests`` tests through this cable, ``slow`` were slow.

    ``alternatives`` are cables that explain exactly the same slow tests (equally
    likely suspects, each ``((node id, port), (node id, port))``), so a re-test can
    tell them apart. ``slow_pairs`` holds up to 20 of the slow tests. Ratios are of the
    nominal rate; ``median_relative`` is of what healthy tests of the same shape reach here
    (``healthy_efficiency`` of the nominal rate). ``suspect_only``: its tests sit low but not
    clearly slow: a suspect to re-test, not a named fault.
    """

    kind: ClassVar[str] = "pairs"
    tests: int
    slow: int
    worst_ratio: float
    median_ratio: float
    equivalent_suspects: int = 1
    alternatives: tuple[tuple[tuple[str, int], tuple[str, int]], ...] = ()
    slow_pairs: tuple[PairSample, ...] = ()
    median_relative: float | None = None
    healthy_efficiency: float | None = None
    suspect_only: bool = False

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SlowPairsEvidence:
        alts = tuple((tuple(a), tuple(b)) for a, b in d.get("alternatives") or ())
        pairs = tuple(PairSample.from_dict(p) for p in d.get("slow_pairs") or ())
        return cls._from({**d, "alternatives": alts, "slow_pairs": pairs})


@dataclass(frozen=True)
class GroupSample:
    """One group test as evidence: its label, collective, size, ratio and the flows it put on the part."""

    label: str
    test: str
    members: int
    status: str
    ratio: float | None
    flows: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GroupSample:
        return cls(str(d["label"]), str(d["test"]), int(d["members"]), str(d["status"]), d.get("ratio"),
                   int(d["flows"]))


@dataclass(frozen=True)
class GroupLoadEvidence(_Kind):
    """Group tomography: every group test that put more than ``passing_flows`` concurrent flows on this
    part failed (``failing`` of them, the lightest with ``failing_flows``), while tests with at most
    ``passing_flows`` flows passed, pair tests (one flow) included: ``pair_tests`` crossed it,
    ``pair_slow`` were slow. ``toward`` is the cable end the overloaded direction flows into (None
    for a switch); ``alternatives`` explain exactly the same failing tests."""

    kind: ClassVar[str] = "groups"
    tests: int
    failing: int
    failing_flows: int
    passing_flows: int
    worst_ratio: float
    toward: tuple[str, int] | None = None  # the end the overloaded direction flows into (label, port)
    pair_tests: int = 0
    pair_slow: int = 0
    equivalent_suspects: int = 1
    alternatives: tuple[str, ...] = ()
    failing_groups: tuple[GroupSample, ...] = ()

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
    wrong_pairs: int
    pairs: tuple[tuple[str, str, int], ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CorruptionEvidence:
        return cls._from({**d, "pairs": tuple(tuple(p) for p in d.get("pairs") or ())})


@dataclass(frozen=True)
class SwitchLinksEvidence(_Kind):
    """Inference over a switch's cables: how many are bad, of how many, how many down."""

    kind: ClassVar[str] = "switch_links"
    links_bad: int
    links_total: int
    links_down: int

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> SwitchLinksEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class GpuEvidence(_Kind):
    """What NVML reported about one GPU that a GPU rule judged a fault."""

    kind: ClassVar[str] = "gpu"
    uuid: str | None
    problems: tuple[str, ...]

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> GpuEvidence:
        return cls._from({**d, "problems": tuple(d.get("problems") or ())})


@dataclass(frozen=True)
class CandidatesEvidence(_Kind):
    """Inference: the evidence cannot tell these parts apart (a NIC or its cable; cables that
    explain the same slow tests). ``tell_apart`` says what would; ``tests`` are host-port pairs
    ``((label, port), (label, port))`` whose re-test separates them."""

    kind: ClassVar[str] = "candidates"
    candidates: tuple[str, ...]
    tell_apart: str
    tests: tuple[tuple[tuple[str, int], tuple[str, int]], ...] = ()

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> CandidatesEvidence:
        tests = tuple((tuple(a), tuple(b)) for a, b in d.get("tests") or ())
        return cls._from({**d, "candidates": tuple(d.get("candidates") or ()), "tests": tests})


@dataclass(frozen=True)
class HostEvidence(_Kind):
    """A host-side fact behind a host or NIC finding: a failed configuration check (sysfs/procfs)
    or kernel messages about a NIC (``count`` of them, ``first``/``last`` epoch seconds).

    ``check`` names it (``pcie_link``, ``gpudirect``, ``aer``, ``cmd_timeout``...), ``subject`` the
    part (``mlx5_0``, a PCI address, an interface), ``reason`` the line a person reads; ``source``
    is ``sysfs`` or ``kmsg``. Subject and reason may carry host text: escape when shown.
    """

    kind: ClassVar[str] = "host"
    check: str
    subject: str
    reason: str
    source: str = "sysfs"
    count: int = 1
    first: float | None = None
    last: float | None = None

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HostEvidence:
        return cls._from(d)


@dataclass(frozen=True)
class NcclLogEvidence(_Kind):
    """A line of a job's NCCL_DEBUG output behind a finding: a failed connection on the cable
    blamed, or the transport a host really used. ``source``/``line_no`` say where it was read;
    ``host`` printed it; ``reason`` is what it means. ``line`` is untrusted text: escape when shown.
    """

    kind: ClassVar[str] = "nccl_log"
    source: str
    line_no: int
    line: str
    host: str
    reason: str

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> NcclLogEvidence:
        return cls._from(d)


Evidence = (
    CounterEvidence | StateEvidence | FlapEvidence | SlowPairsEvidence | CorruptionEvidence
    | SwitchLinksEvidence | GpuEvidence | CandidatesEvidence
    | NotRespondingEvidence | NotDiscoveredEvidence | HostEvidence | NcclLogEvidence | GroupLoadEvidence
)
EVIDENCE_KINDS: dict[str, Any] = {
    cls.kind: cls
    for cls in (CounterEvidence, StateEvidence, FlapEvidence, SlowPairsEvidence, CorruptionEvidence,
                SwitchLinksEvidence, GpuEvidence, CandidatesEvidence, NotRespondingEvidence, NotDiscoveredEvidence,
                HostEvidence, NcclLogEvidence, GroupLoadEvidence)
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
