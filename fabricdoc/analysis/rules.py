"""Counter threshold rules: when a canonical counter's delta or rate means a fault on its link.

The defaults live in ``counter_rules.toml`` beside this module (rules are data);
``--rules FILE`` overrides them per counter. Operators are named, never evaluated.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from fabricdoc.errors import ConfigError
from fabricdoc.model.counters import COUNTERS, PATTERNS, CounterDelta
from fabricdoc.model.records import PortRef
from fabricdoc.model.severity import SEVERITIES, Severity

OPERATORS = ("delta_gt", "per_second_gt", "per_hour_gt")
DEFAULT_RULES_FILE = Path(__file__).with_name("counter_rules.toml")


@dataclass(frozen=True)
class Rule:
    """A threshold on one canonical counter: when it fires, the port's link has ``fault``."""

    counter: str
    op: str
    value: float
    fault: str
    severity: Severity

    def fires(self, d: CounterDelta) -> bool:
        """Whether the delta passes the threshold; a rate rule cannot fire without a rate."""
        measured = {"delta_gt": d.value, "per_second_gt": d.per_second, "per_hour_gt": d.per_hour}[self.op]
        return measured is not None and measured > self.value


_RULE_KEYS = {"counter", "op", "value", "fault", "severity"}


def rules_from_toml(text: str, source: str) -> tuple[Rule, ...]:
    """Rules from TOML ``[[rule]]`` tables, strictly checked; errors name ``source`` and the rule."""
    from fabricdoc.model.inputs import loads_toml

    data = loads_toml(text, source)
    unknown = set(data) - {"rule"}
    if unknown:
        raise ConfigError(f"{source}: unknown key {sorted(unknown)[0]!r} (expected [[rule]] tables)")
    known = {d.canonical for d in COUNTERS.values()} | {d.canonical for _, d in PATTERNS}
    items = data.get("rule", [])
    if not isinstance(items, list):
        raise ConfigError(f"{source}: 'rule' must be [[rule]] tables")
    rules = []
    for i, raw in enumerate(items, 1):
        where = f"{source}: rule {i}"
        if not isinstance(raw, dict):
            raise ConfigError(f"{where}: expected a table")
        extra = set(raw) - _RULE_KEYS
        if extra:
            raise ConfigError(f"{where}: unknown key {sorted(extra)[0]!r}")
        missing = _RULE_KEYS - set(raw) - {"severity"}
        if missing:
            raise ConfigError(f"{where}: missing key {sorted(missing)[0]!r}")
        if raw["counter"] not in known:
            raise ConfigError(f"{where}: unknown counter {raw['counter']!r}")
        if raw["op"] not in OPERATORS:
            raise ConfigError(f"{where}: unknown operator {raw['op']!r} (one of {', '.join(OPERATORS)})")
        sev = raw.get("severity", "warning")
        if sev not in SEVERITIES:
            raise ConfigError(f"{where}: unknown severity {sev!r}")
        value = raw["value"]
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value or abs(value) == float("inf"):
            raise ConfigError(f"{where}: value must be a finite number")
        if not isinstance(raw["fault"], str) or not raw["fault"]:
            raise ConfigError(f"{where}: fault must be a name")
        rules.append(Rule(raw["counter"], raw["op"], float(value), raw["fault"], Severity(sev)))
    return tuple(rules)


DEFAULT_RULES: tuple[Rule, ...] = rules_from_toml(DEFAULT_RULES_FILE.read_text(encoding="utf-8"), str(DEFAULT_RULES_FILE))


def load_rules(path: str | Path) -> tuple[Rule, ...]:
    """The default rules with a TOML file's ``[[rule]]`` tables over them; strict.

    A rule for a counter replaces all default rules for that counter, so a
    user can both tighten and loosen thresholds. Unknown keys, operators,
    severities or counters are errors naming the file and the rule.
    """
    from fabricdoc.model.inputs import read_text

    rules = rules_from_toml(read_text(path, "rules"), str(path))
    overridden = {r.counter for r in rules}
    return tuple(r for r in DEFAULT_RULES if r.counter not in overridden) + rules


@dataclass
class PortAnomaly:
    """The worst rule that fired on one port, with every delta behind it."""

    port: PortRef
    fault: str
    severity: Severity
    deltas: list[CounterDelta] = field(default_factory=list)


def anomalies(ds: Iterable[CounterDelta], rules: Iterable[Rule] = DEFAULT_RULES) -> list[PortAnomaly]:
    """Apply threshold rules to deltas; one anomaly per (port, fault) at its worst severity."""
    by_counter: dict[str, list[Rule]] = {}
    for r in rules:
        by_counter.setdefault(r.counter, []).append(r)
    found: dict[tuple[PortRef, str], PortAnomaly] = {}
    for d in ds:
        for rule in by_counter.get(d.name, ()):
            if not rule.fires(d):
                continue
            key = (d.port, rule.fault)
            cur = found.get(key)
            if cur is None:
                found[key] = PortAnomaly(d.port, rule.fault, rule.severity, [d])
            else:
                if rule.severity.rank > cur.severity.rank:
                    cur.severity = rule.severity
                if d not in cur.deltas:
                    cur.deltas.append(d)
    return list(found.values())
