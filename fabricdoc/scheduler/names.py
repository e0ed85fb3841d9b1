"""Fabric host names to scheduler node names: an exact map first, then regex rules, else unchanged.

InfiniBand names hosts by their HCAs' descriptions (``gpu017 mlx5_0``); Slurm
and Kubernetes by hostnames. A map file (YAML or two columns) and
``--host-rule REGEX REPLACEMENT`` rules say how one becomes the other. Every
scheduler back end (:mod:`fabricdoc.scheduler.protocol`) names nodes through
this one map, and reads which hosts a report tested with :func:`tested_nodes`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from fabricdoc.errors import ConfigError, ParseError
from fabricdoc.model.inputs import load_yaml, read_text

if TYPE_CHECKING:  # the report loads numpy and networkx: the NPD check names nodes without it
    from fabricdoc.report.report import Report


@dataclass(frozen=True)
class HostRule:
    """Rewrite a fabric name that fully matches ``pattern`` with ``replacement`` (``\\1``, ``\\g<name>``)."""

    pattern: re.Pattern[str]
    replacement: str

    @staticmethod
    def of(pattern: str, replacement: str, where: str = "--host-rule") -> HostRule:
        try:
            return HostRule(re.compile(pattern), replacement)
        except re.error as exc:
            raise ConfigError(f"{where}: invalid regular expression {pattern!r}: {exc}") from None

    def apply(self, name: str) -> str | None:
        m = self.pattern.fullmatch(name)
        if m is None:
            return None
        try:
            return m.expand(self.replacement)
        except (re.error, IndexError) as exc:
            raise ConfigError(f"host rule {self.pattern.pattern!r}: bad replacement {self.replacement!r}: {exc}") from None


@dataclass(frozen=True)
class NameMap:
    """Fabric host name -> scheduler node name: exact map entries first, then the first matching rule, else unchanged."""

    names: Mapping[str, str] = field(default_factory=dict)
    rules: tuple[HostRule, ...] = ()

    def node_name(self, fabric_name: str) -> str:
        """The scheduler's node name for a fabric host name (not yet checked: each back end's
        ``name_problem`` says whether its scheduler takes it)."""
        if fabric_name in self.names:
            return self.names[fabric_name]
        for rule in self.rules:
            out = rule.apply(fabric_name)
            if out is not None:
                return out
        return fabric_name

    def with_rules(self, rules: Iterable[HostRule]) -> NameMap:
        """This map with ``rules`` tried after its own."""
        return NameMap(dict(self.names), tuple(self.rules) + tuple(rules))


def topology_host(node: Mapping[str, Any]) -> str:
    """The fabric host name of a report topology node: its ``host`` attribute (each HCA of a
    host carries it), else its label."""
    return str(node.get("attrs", {}).get("host") or node["label"])


def report_hosts(report: Report) -> set[str] | None:
    """Fabric host names the report covered (from its topology), or None when it has no topology."""
    if not report.topology:
        return None
    return {topology_host(n) for n in report.topology.get("nodes", []) if n.get("kind") == "host"}


def tested_nodes(report: Report, names: NameMap) -> dict[str, str] | None:
    """Scheduler node name -> fabric host name of every host the report tested (its topology),
    or None without a topology: a report that cannot show a node was tested never clears it."""
    hosts = report_hosts(report)
    return None if hosts is None else {names.node_name(h): h for h in hosts}


_MAP_KEYS = {"names", "rules"}
_RULE_KEYS = {"match", "replace"}


def load_name_map(path: str | Path) -> NameMap:
    """Read a map file: YAML (``names:`` mapping, ``rules:`` list of ``{match, replace}``) or two-column text.

    Text form: one ``FABRIC_NAME SLURM_NAME`` per line, ``#`` comments; the
    Slurm name is the last column, so fabric names may contain spaces
    (InfiniBand node descriptions such as ``node0001 mlx5_0``).
    """
    path = Path(path)
    text = read_text(path, "name map")
    if path.suffix.lower() in (".yaml", ".yml"):
        return _parse_yaml_map(text, str(path))
    return parse_text_map(text, str(path))


def parse_text_map(text: str, source: str = "name map") -> NameMap:
    """Parse the two-column text form of a name map."""
    names: dict[str, str] = {}
    for no, raw in enumerate(text.splitlines(), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        parts = line.rsplit(None, 1)
        if len(parts) != 2:
            raise ParseError(source, no, raw, "expected 'FABRIC_NAME SLURM_NAME'")
        fabric, slurm = parts[0].strip(), parts[1]
        if fabric in names and names[fabric] != slurm:
            raise ParseError(source, no, raw, f"{fabric!r} is mapped twice")
        names[fabric] = slurm
    return NameMap(names)


def _parse_yaml_map(text: str, source: str) -> NameMap:
    data = load_yaml(text, source)
    if data is None:
        return NameMap()
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: expected a mapping with keys 'names' and/or 'rules'")
    unknown = set(data) - _MAP_KEYS
    if unknown:
        raise ConfigError(f"{source}: unknown key {sorted(map(str, unknown))[0]!r} (allowed: names, rules)")
    names = data.get("names") or {}
    if not isinstance(names, dict):
        raise ConfigError(f"{source}: key 'names' must be a mapping of fabric name to Slurm name")
    for k, v in names.items():
        if not isinstance(k, str) or not isinstance(v, str):
            raise ConfigError(f"{source}: names.{k}: fabric and Slurm names must be strings")
    rules = []
    for i, r in enumerate(data.get("rules") or []):
        where = f"{source}: rules[{i}]"
        if not isinstance(r, dict):
            raise ConfigError(f"{where}: expected {{match: REGEX, replace: TEXT}}")
        bad = set(r) - _RULE_KEYS
        if bad:
            raise ConfigError(f"{where}: unknown key {sorted(map(str, bad))[0]!r} (allowed: match, replace)")
        if not isinstance(r.get("match"), str) or not isinstance(r.get("replace"), str):
            raise ConfigError(f"{where}: 'match' and 'replace' are both required strings")
        rules.append(HostRule.of(r["match"], r["replace"], where))
    return NameMap(dict(names), tuple(rules))
