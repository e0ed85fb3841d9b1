"""Every fault fabricdoc can name, declared once: one row of ``faults.toml`` per fault.

A row says what the fault means, its short name, how a cable's evidence is classified into it,
what it does to the busbw figures, whether the sweep re-tests it, and what to do about it; the
analysis, the impact model, the drain tags and the actions all read it here, so a new fault class
is one table in ``faults.toml``. A fault without a row (a user's counter rule may name one) gets
:func:`fault`'s defaults and the ``"*"`` actions.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any, Literal

from fabricdoc.errors import ConfigError
from fabricdoc.model.findings import ACTION_URGENCY, ACTION_WHO, Action, Finding, short_hash
from fabricdoc.model.severity import SEVERITIES

FAULTS_FILE = Path(__file__).with_name("faults.toml")
ANY = "*"  # the row whose actions apply to any fault no more specific rule covers
SHORT_CHARS = 10  # "fd:<short> <tag>" fits sinfo -R's 20-character REASON column: 3 + 10 + 1 + 6
KINDS = ("link", "switch", "host", "nic", "gpu", "port", "pair")
ENDS = ("switches", "host")
LANDS_ON = ("cable", "port", "nic", "counting_end", "host_cable_or_nic")
CAPACITY = ("rate", "down", "untested", "load")
LandsOn = Literal["cable", "port", "nic", "counting_end", "host_cable_or_nic"]
Capacity = Literal["rate", "down", "untested", "load"]
_ROW_KEYS = {"words", "short", "order", "lands_on", "capacity", "isolate", "retest", "trained_low", "slows_host",
             "absorbs", "unless", "absorbed_severity", "action"}
_ACTION_KEYS = {"kind", "ends", "severity", "do", "who", "urgency", "why"}


@dataclass(frozen=True)
class ActionRule:
    """One ``[[<fault>.action]]`` table: the conditions a finding meets and the action it gets."""

    fault: str  # the row it belongs to; ANY for the fallbacks
    kinds: tuple[str, ...]
    ends: str | None
    severities: tuple[str, ...]
    action: Action

    def matches(self, finding: Finding, ends: str | None) -> bool:
        """Whether ``finding`` (whose cable joins ``ends``, None when unknown) meets every condition."""
        return ((self.fault in (ANY, finding.fault))
                and (not self.kinds or finding.kind in self.kinds)
                and (self.ends is None or self.ends == ends)
                and (not self.severities or str(finding.severity) in self.severities))

    @property
    def specificity(self) -> tuple[bool, bool, bool, bool]:
        """How much the rule names, compared in turn: its kinds, its fault, its ends, its severities
        (the most specific rule a finding matches gives its action)."""
        return bool(self.kinds), self.fault != ANY, self.ends is not None, bool(self.severities)


@dataclass(frozen=True)
class FaultClass:
    """On one cable, ``fault`` explains ``absorbs`` unless a fault in ``unless`` is there too."""

    fault: str
    absorbs: tuple[str, ...]
    unless: tuple[str, ...] = ()
    severity: str = "own"  # "own" | "max": keep the class's severity, or take the worse of it and what it absorbed


@dataclass(frozen=True)
class FaultInfo:
    """One fault's row (the field meanings are in ``faults.toml``'s header)."""

    name: str
    words: str = ""
    short: str = ""
    order: int | None = None
    lands_on: LandsOn = "cable"
    capacity: Capacity = "rate"
    isolate: bool = True
    retest: bool = False
    trained_low: bool = False
    slows_host: bool = False
    klass: FaultClass | None = None
    actions: tuple[ActionRule, ...] = ()


@dataclass(frozen=True)
class Registry:
    """Every row of a faults file, in its order, and the ``"*"`` actions."""

    rows: dict[str, FaultInfo]
    fallback: tuple[ActionRule, ...]

    def get(self, name: str) -> FaultInfo:
        """``name``'s row, or a row of defaults for a fault no file declares."""
        return self.rows.get(name) or FaultInfo(name, short=_derived_short(name))

    def names(self, **flags: object) -> frozenset[str]:
        """The faults whose rows have every attribute ``flags`` gives (``names(retest=True)``)."""
        return frozenset(n for n, r in self.rows.items() if all(getattr(r, k) == v for k, v in flags.items()))

    def classes(self) -> tuple[FaultClass, ...]:
        """The class rules, in the file's order (the order they apply in)."""
        return tuple(r.klass for r in self.rows.values() if r.klass is not None)

    def naming_order(self) -> tuple[str, ...]:
        """Faults with an ``order``, lowest first: which fault names a cable's finding among equals."""
        return tuple(sorted((n for n, r in self.rows.items() if r.order is not None),
                            key=lambda n: self.rows[n].order))  # type: ignore[arg-type,return-value]

    def action_rules(self) -> tuple[ActionRule, ...]:
        """Every action rule: the rows' in file order, then the ``"*"`` fallbacks."""
        return tuple(a for r in self.rows.values() for a in r.actions) + self.fallback


def registry_from_toml(text: str, source: str) -> Registry:
    """A registry from faults-file text, strictly checked; errors name ``source``, the fault and the key."""
    from fabricdoc.model.inputs import loads_toml

    data = loads_toml(text, source)
    rows: dict[str, FaultInfo] = {}
    fallback: tuple[ActionRule, ...] = ()
    for name, raw in data.items():
        where = f"{source}: [{name}]"
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: expected a table")
        if name == ANY:
            if set(raw) - {"action"}:
                raise ConfigError(f"{where}: only [[\"*\".action]] tables belong here")
            fallback = _actions(ANY, raw.get("action", []), where)
            continue
        rows[name] = _row(name, raw, where)
    _check_shorts(rows, source)
    for r in rows.values():
        if r.klass is not None:
            unknown = [f for f in r.klass.absorbs + r.klass.unless if f not in rows]
            if unknown:
                raise ConfigError(f"{source}: [{r.name}]: no row for fault {unknown[0]!r}")
    return Registry(rows, fallback)


def _row(name: str, raw: dict[str, Any], where: str) -> FaultInfo:
    extra = set(raw) - _ROW_KEYS
    if extra:
        raise ConfigError(f"{where}: unknown key {sorted(extra)[0]!r}")
    for key in ("words", "short", "lands_on", "capacity", "absorbed_severity"):
        if key in raw and not isinstance(raw[key], str):
            raise ConfigError(f"{where}: {key!r} must be a string")
    for key in ("isolate", "retest", "trained_low", "slows_host"):
        if key in raw and not isinstance(raw[key], bool):
            raise ConfigError(f"{where}: {key!r} must be true or false")
    if not raw.get("words"):
        raise ConfigError(f"{where}: missing key 'words' (what the fault means)")
    if "order" in raw and (not isinstance(raw["order"], int) or isinstance(raw["order"], bool) or raw["order"] < 1):
        raise ConfigError(f"{where}: 'order' must be a positive integer")
    for key, allowed in (("lands_on", LANDS_ON), ("capacity", CAPACITY), ("absorbed_severity", ("own", "max"))):
        if key in raw and raw[key] not in allowed:
            raise ConfigError(f"{where}: {key} {raw[key]!r} is not one of {', '.join(allowed)}")
    short = raw.get("short") or name
    if len(short) > SHORT_CHARS:
        raise ConfigError(f"{where}: a name over {SHORT_CHARS} characters needs a 'short' of at most {SHORT_CHARS}")
    klass = None
    if "absorbs" in raw:
        absorbs, unless = _names(raw, "absorbs", where), _names(raw, "unless", where)
        klass = FaultClass(name, absorbs, unless, raw.get("absorbed_severity", "own"))
    elif "unless" in raw or "absorbed_severity" in raw:
        raise ConfigError(f"{where}: 'unless' and 'absorbed_severity' need 'absorbs'")
    return FaultInfo(name, raw["words"], short, raw.get("order"), raw.get("lands_on", "cable"),
                     raw.get("capacity", "rate"), raw.get("isolate", True), raw.get("retest", False),
                     raw.get("trained_low", False), raw.get("slows_host", False), klass,
                     _actions(name, raw.get("action", []), where))


def _names(raw: dict[str, Any], key: str, where: str) -> tuple[str, ...]:
    value = raw.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key!r} must be a list of fault names")
    return tuple(value)


def _actions(fault: str, items: Any, where: str) -> tuple[ActionRule, ...]:
    if not isinstance(items, list):
        raise ConfigError(f"{where}: 'action' must be [[{fault}.action]] tables")
    return tuple(_action(fault, raw, f"{where} action {i}") for i, raw in enumerate(items, 1))


def _action(fault: str, raw: Any, where: str) -> ActionRule:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table")
    extra = set(raw) - _ACTION_KEYS
    if extra:
        raise ConfigError(f"{where}: unknown key {sorted(extra)[0]!r}")
    missing = {"do", "who", "urgency"} - set(raw)
    if missing:
        raise ConfigError(f"{where}: missing key {sorted(missing)[0]!r}")
    for key in ("do", "who", "urgency", "why", "ends"):
        if key in raw and not isinstance(raw[key], str):
            raise ConfigError(f"{where}: {key!r} must be a string")
    if raw["who"] not in ACTION_WHO:
        raise ConfigError(f"{where}: who {raw['who']!r} is not one of {', '.join(ACTION_WHO)}")
    if raw["urgency"] not in ACTION_URGENCY:
        raise ConfigError(f"{where}: urgency {raw['urgency']!r} is not one of {', '.join(ACTION_URGENCY)}")
    if raw.get("ends") is not None and raw["ends"] not in ENDS:
        raise ConfigError(f"{where}: ends {raw['ends']!r} is not one of {', '.join(ENDS)}")
    lists = {}
    for key, allowed in (("kind", KINDS), ("severity", SEVERITIES)):
        value = raw.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ConfigError(f"{where}: {key!r} must be a list of names")
        bad = [v for v in value if v not in allowed]
        if bad:
            raise ConfigError(f"{where}: unknown {key} {bad[0]!r}")
        lists[key] = tuple(value)
    return ActionRule(fault, lists["kind"], raw.get("ends"), lists["severity"],
                      Action(raw["do"], raw["who"], raw["urgency"], raw.get("why", "")))


def _check_shorts(rows: dict[str, FaultInfo], source: str) -> None:
    seen: dict[str, str] = {}
    for r in rows.values():
        if r.short in seen:
            raise ConfigError(f"{source}: [{r.name}] and [{seen[r.short]}] share the short name {r.short!r}")
        seen[r.short] = r.name


def _derived_short(fault: str) -> str:
    """An undeclared fault's short name: itself when short, else its first seven characters, '-' and
    two hex digits of the whole name, so two long names sharing a prefix stay apart."""
    if len(fault) <= SHORT_CHARS:
        return fault
    return f"{fault[:SHORT_CHARS - 3]}-{short_hash(fault)[:2]}"


@cache
def registry() -> Registry:
    """The packaged ``faults.toml``, read once."""
    return registry_from_toml(FAULTS_FILE.read_text(encoding="utf-8"), str(FAULTS_FILE))


def fault(name: str) -> FaultInfo:
    """``name``'s row in the packaged registry (defaults for an undeclared fault)."""
    return registry().get(name)
