"""The brakes on draining: a per-sweep cap, confirmation across sweeps, a maintenance list, comment-only.

A false or flapping drain takes GPUs out of service for nothing, so fabricdoc's
drain list passes through a policy before any scheduler sees it (what NHC,
UFM and NVSentinel users rely on):

- ``maintenance``: hosts (Slurm hostlists of fabric host names) and ports
  (``NODE/PORT``, node by label or id) known to be down or being worked on;
  their drains are held back, not repeated every sweep;
- ``confirm_sweeps`` of the last ``confirm_window`` sweeps (this one included,
  the others from the history store) must show a non-critical finding before
  it drains; a critical one drains at once;
- at most ``cap(hosts)`` hosts per sweep: ``max_drain`` when set, else
  max(``min_cap``, ``cap_pct`` % of the hosts), as UFM caps isolation at
  max(10, 0.5 % of ports); the worst findings go first;
- ``mode = "comment"`` annotates the nodes (``scontrol update comment=``)
  instead of draining them.

What is held back stays in the report (``drain_held``) with the reason.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from fabricdoc.errors import ConfigError, ParseError
from fabricdoc.model.findings import Finding
from fabricdoc.model.hostlist import expand_hostlist
from fabricdoc.model.severity import Severity
from fabricdoc.report.drain import DrainEntry

MODES = ("drain", "comment")


@dataclass(frozen=True)
class DrainPolicy:
    """When a host on the drain list is drained. Every field is a key of the TOML policy file."""

    mode: str = "drain"  # "drain", or "comment": annotate the node, keep it in service
    max_drain: int | None = None  # hosts per sweep at most; None: max(min_cap, cap_pct % of hosts)
    min_cap: int = 4
    cap_pct: float = 0.5
    confirm_sweeps: int = 1  # a non-critical finding must be seen in this many ...
    confirm_window: int = 1  # ... of the last this many sweeps (this one included)
    maintenance: tuple[str, ...] = ()  # hostlists of hosts, or NODE/PORT ports, known down or in maintenance

    def cap(self, hosts: int) -> int:
        """The most hosts one sweep may drain on a fabric of ``hosts`` hosts."""
        if self.max_drain is not None:
            return self.max_drain
        return max(self.min_cap, math.ceil(self.cap_pct / 100.0 * hosts))

    def validate(self, where: str = "drain policy") -> DrainPolicy:
        if self.mode not in MODES:
            raise ConfigError(f"{where}: key 'mode' is {self.mode!r}; expected one of {', '.join(MODES)}")
        for key, lo in (("min_cap", 0), ("confirm_sweeps", 1), ("confirm_window", 1)):
            _int(where, key, getattr(self, key), lo)
        if self.max_drain is not None:
            _int(where, "max_drain", self.max_drain, 0)
        if isinstance(self.cap_pct, bool) or not isinstance(self.cap_pct, int | float) or not 0 <= self.cap_pct <= 100:
            raise ConfigError(f"{where}: key 'cap_pct' is {self.cap_pct!r}; expected a percentage 0..100")
        if self.confirm_sweeps > self.confirm_window:
            raise ConfigError(f"{where}: confirm_sweeps ({self.confirm_sweeps}) is more than confirm_window "
                              f"({self.confirm_window}): nothing could ever be confirmed")
        if not all(isinstance(m, str) and m.strip() for m in self.maintenance):
            raise ConfigError(f"{where}: key 'maintenance' must be a list of hostlists or NODE/PORT strings")
        try:
            Maintenance.of(self.maintenance)
        except ParseError as exc:
            raise ConfigError(f"{where}: key 'maintenance': {exc.line!r}: {exc.reason}") from None
        return self

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self), "maintenance": list(self.maintenance)}


def _int(where: str, key: str, value: Any, lo: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < lo:
        raise ConfigError(f"{where}: key {key!r} is {value!r}; expected a whole number >= {lo}")


def drain_policy_from(data: dict[str, Any], where: str = "drain policy", base: DrainPolicy | None = None) -> DrainPolicy:
    """A DrainPolicy from plain keys (a TOML file, a report's record, flags), strictly checked."""
    from fabricdoc.model.inputs import settings_from

    return settings_from(DrainPolicy, data, where, base, lists=("maintenance",))


def load_drain_policy(path: str) -> DrainPolicy:
    """Read a TOML drain policy; an unknown key or a bad value names the file and the key."""
    from fabricdoc.model.inputs import loads_toml, read_text

    return drain_policy_from(loads_toml(read_text(path, "drain policy"), path), path)


@dataclass
class Held:
    """A host on the drain list that the policy held back, and why."""

    node: str
    reason: str
    findings: list[str] = field(default_factory=list)
    why: str = ""
    tag: str = ""  # the worst finding's tag, as on the drain entry it was
    tags: list[str] = field(default_factory=list)

    @classmethod
    def of(cls, entry: DrainEntry, why: str) -> Held:
        """The drain ``entry``, held back for ``why``."""
        return cls(entry.node, entry.reason, list(entry.findings), why, entry.tag, list(entry.tags))


@dataclass
class Maintenance:
    """The maintenance list resolved: host names, and ports as (node, port) by label or id."""

    hosts: set[str] = field(default_factory=set)
    ports: set[tuple[str, int]] = field(default_factory=set)

    @classmethod
    def of(cls, entries: Sequence[str]) -> Maintenance:
        """Each entry is a ``NODE/PORT`` port or a Slurm hostlist of hosts; a malformed hostlist is a ParseError."""
        out = cls()
        for entry in entries:
            node, slash, port = entry.strip().rpartition("/")
            if slash and port.isdigit() and node:
                out.ports.add((node, int(port)))
            else:
                out.hosts.update(expand_hostlist(entry, "maintenance", 0))
        return out

    def covers(self, entry: DrainEntry, findings: Sequence[Finding]) -> str | None:
        """Why this drain is maintenance's (its host, or a port its findings sit on), or None."""
        if entry.node in self.hosts:
            return f"{entry.node} is in the maintenance list"
        for f in findings:
            ends = list(f.endpoints or [])
            ids = list(f.node_ids)
            for i, (label, port) in enumerate(ends):
                nid = ids[i] if i < len(ids) else label
                if (label, port) in self.ports or (nid, port) in self.ports:
                    return f"{label}/{port} is in the maintenance list"
        return None


def apply_drain_policy(
    drain: list[DrainEntry],
    findings: Sequence[Finding],
    policy: DrainPolicy,
    hosts: int,
    seen_before: Sequence[set[str]] | None = None,
) -> tuple[list[DrainEntry], list[Held]]:
    """The drains the policy lets through, and the ones it holds back with why.

    ``seen_before`` holds the finding keys of the previous sweeps, newest first
    (from the history store; None when there is no store). The maintenance list takes Slurm
    hostlists (``node[0001-0004]``) through :mod:`fabricdoc.model.hostlist`.
    """
    by_key = {f.key: f for f in findings}
    maintenance = Maintenance.of(policy.maintenance)
    earlier = list(seen_before or [])[: policy.confirm_window - 1]
    kept: list[tuple[tuple[int, float], DrainEntry]] = []
    held: list[Held] = []
    for entry in drain:
        found = [by_key[k] for k in entry.findings if k in by_key]
        why = maintenance.covers(entry, found)
        if why:
            held.append(Held.of(entry, why))
            continue
        critical = any(f.severity == Severity.CRITICAL for f in found)
        if not critical and policy.confirm_sweeps > 1:
            times = max((1 + sum(1 for keys in earlier if f.key in keys) for f in found), default=1)
            if times < policy.confirm_sweeps:
                if seen_before is None:
                    note = "; no history store given (--history or $FABRICDOC_HISTORY)"
                elif len(earlier) < policy.confirm_window - 1:
                    note = f"; the history holds {len(earlier)} earlier sweep(s)"
                else:
                    note = ""
                held.append(Held.of(entry, f"seen in {times} of the last {policy.confirm_window} sweeps, "
                                            f"{policy.confirm_sweeps} needed (not critical){note}"))
                continue
        worst = max(((f.severity.rank, f.confidence) for f in found), default=(0, 0.0))
        kept.append((worst, entry))
    cap = policy.cap(hosts)
    ranked = sorted(kept, key=lambda item: (-item[0][0], -item[0][1], item[1].node))
    out = [entry for _, entry in ranked[:cap]]
    for _, entry in ranked[cap:]:
        held.append(Held.of(entry, f"over this sweep's drain cap of {cap} hosts (worst findings drained first)"))
    order = {entry.node: i for i, entry in enumerate(drain)}
    return sorted(out, key=lambda e: order[e.node]), held
