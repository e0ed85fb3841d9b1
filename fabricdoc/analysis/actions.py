"""What to do about each finding: the first matching rule of ``actions.toml`` (rules are data).

A rule matches on the finding's fault (or ``*``), and optionally its kind, its
severity and whether its cable joins two switches (routing can avoid it) or
reaches a host (only a drain avoids it). :func:`attach_actions` is applied once,
in :meth:`fabricdoc.report.report.Report.build`, which every path (sweep,
analyze, runtime) goes through.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricdoc.errors import ConfigError, TopologyError
from fabricdoc.model.findings import ACTION_URGENCY, ACTION_WHO, Action, Finding
from fabricdoc.model.severity import SEVERITIES
from fabricdoc.model.topology import Fabric

ACTIONS_FILE = Path(__file__).with_name("actions.toml")
KINDS = ("link", "switch", "host", "nic", "gpu", "port", "pair")
ENDS = ("switches", "host")
_KEYS = {"fault", "kind", "ends", "severity", "do", "who", "urgency", "why"}


@dataclass(frozen=True)
class ActionRule:
    """One ``[[action]]`` table: the conditions a finding meets and the action it gets."""

    fault: str
    kinds: tuple[str, ...]
    ends: str | None
    severities: tuple[str, ...]
    action: Action

    def matches(self, finding: Finding, ends: str | None) -> bool:
        """Whether ``finding`` (whose cable joins ``ends``, None when unknown) meets every condition."""
        return ((self.fault in ("*", finding.fault))
                and (not self.kinds or finding.kind in self.kinds)
                and (self.ends is None or self.ends == ends)
                and (not self.severities or str(finding.severity) in self.severities))


def actions_from_toml(text: str, source: str) -> tuple[ActionRule, ...]:
    """Rules from TOML ``[[action]]`` tables, strictly checked; errors name ``source`` and the rule."""
    from fabricdoc.model.inputs import loads_toml

    data = loads_toml(text, source)
    if set(data) - {"action"}:
        raise ConfigError(f"{source}: unknown key {sorted(set(data) - {'action'})[0]!r} (expected [[action]] tables)")
    items = data.get("action", [])
    if not isinstance(items, list):
        raise ConfigError(f"{source}: 'action' must be [[action]] tables")
    return tuple(_rule(raw, f"{source}: action {i}") for i, raw in enumerate(items, 1))


def _rule(raw: Any, where: str) -> ActionRule:
    if not isinstance(raw, dict):
        raise ConfigError(f"{where}: expected a table")
    extra = set(raw) - _KEYS
    if extra:
        raise ConfigError(f"{where}: unknown key {sorted(extra)[0]!r}")
    missing = {"fault", "do", "who", "urgency"} - set(raw)
    if missing:
        raise ConfigError(f"{where}: missing key {sorted(missing)[0]!r}")
    for key in ("fault", "do", "who", "urgency", "why", "ends"):
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
    return ActionRule(raw["fault"], lists["kind"], raw.get("ends"), lists["severity"],
                      Action(raw["do"], raw["who"], raw["urgency"], raw.get("why", "")))


DEFAULT_ACTIONS = actions_from_toml(ACTIONS_FILE.read_text(encoding="utf-8"), str(ACTIONS_FILE))


def cable_ends(fabric: Fabric | None, finding: Finding) -> str | None:
    """``switches`` when a link finding's cable joins two switches, ``host`` when one end is a host,
    None when the finding names no cable or the fabric cannot place it."""
    if fabric is None or finding.kind != "link" or not finding.endpoints or len(finding.endpoints) != 2:
        return None
    try:
        kinds = {fabric.nodes[fabric.resolve_port(str(label), int(port)).node].kind
                 for label, port in finding.endpoints}
    except (TopologyError, KeyError):
        return None
    return "switches" if kinds == {"switch"} else "host"


def action_for(finding: Finding, fabric: Fabric | None = None,
               rules: tuple[ActionRule, ...] = DEFAULT_ACTIONS) -> Action | None:
    """The first rule's action that ``finding`` matches (None when no rule does)."""
    ends = cable_ends(fabric, finding)
    return next((r.action for r in rules if r.matches(finding, ends)), None)


def attach_actions(findings: Iterable[Finding], fabric: Fabric | None = None,
                   rules: tuple[ActionRule, ...] = DEFAULT_ACTIONS) -> list[Finding]:
    """The findings, each given its action in place (an action already set is kept)."""
    out = list(findings)
    for f in out:
        if f.action is None:
            f.action = action_for(f, fabric, rules)
    return out
