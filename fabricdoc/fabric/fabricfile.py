"""Fabric and fault files (YAML): a generator with its parameters, or nodes and links, and faults.

A fabric file either names a generator with its parameters or lists nodes and
links; it may carry a ``faults:`` list for the simulator. Every error names the
file and the line it comes from.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from fabricdoc.errors import ConfigError, ParseError, TopologyError
from fabricdoc.fabric.faults import FAULT_KINDS, SWITCH_FAULT_KINDS, Fault
from fabricdoc.fabric.generators import GENERATORS
from fabricdoc.fabric.realism import DEFAULT, Realism, parse_realism
from fabricdoc.model.inputs import compose_yaml, construct_scalar, read_text
from fabricdoc.model.records import Node, PortRef
from fabricdoc.model.topology import Fabric

_PORT_RE = re.compile(r"^\s*(?P<node>.+?)\s*\[\s*(?P<port>\d+)\s*\]\s*$")


class _Map(dict):
    line: int = 0


class _Seq(list):
    line: int = 0
    lines: list[int]


def _plain(node: yaml.Node, source: str = "") -> Any:
    """YAML node tree -> Python values, keeping each mapping's and sequence item's line."""
    if isinstance(node, yaml.MappingNode):
        out = _Map()
        out.line = node.start_mark.line + 1
        for k, v in node.value:
            if not isinstance(k, yaml.ScalarNode):
                raise ParseError(source, k.start_mark.line + 1, "", "a mapping or list used as a key: keys are "
                                 "names or numbers")
            out[_plain(k, source)] = _plain(v, source)
        return out
    if isinstance(node, yaml.SequenceNode):
        seq = _Seq(_plain(v, source) for v in node.value)
        seq.line = node.start_mark.line + 1
        seq.lines = [v.start_mark.line + 1 for v in node.value]
        return seq
    return construct_scalar(node, source)


def read_yaml(path: str | Path) -> Any:
    """Parse a YAML file keeping line numbers; a syntax error names file and line."""
    root = compose_yaml(read_text(path, "YAML file"), str(path))
    return _plain(root, str(path)) if root is not None else None


def _where(path: Path, obj: Any, fallback: int = 0) -> str:
    line = getattr(obj, "line", 0) or fallback
    return f"{path}:{line}" if line else str(path)


def _check_keys(path: Path, obj: Any, allowed: set[str], what: str) -> None:
    if not isinstance(obj, dict):
        raise ConfigError(f"{_where(path, obj)}: {what} must be a mapping")
    unknown = sorted(set(obj) - allowed)
    if unknown:
        raise ConfigError(f"{_where(path, obj)}: unknown key {unknown[0]!r} in {what} (allowed: {', '.join(sorted(allowed))})")


def parse_port(text: Any, where: str) -> tuple[str, int]:
    """``"leaf01[3]"`` -> ("leaf01", 3)."""
    m = _PORT_RE.match(str(text)) if isinstance(text, str) and len(text) <= 300 else None
    if not m or int(m.group("port")) > MAX_PORTS:
        raise ConfigError(f"{where}: expected a port like \"leaf01[3]\", got {text!r}"[:200])
    return m.group("node"), int(m.group("port"))


MAX_PORTS = 4096  # ports on one node (real switches have at most a few hundred)
MAX_GENERATED_HOSTS = 1 << 20


def _int(where: str, key: str, value: Any, lo: int, hi: int) -> int:
    """A whole number in [lo, hi], or a ConfigError naming file, line and key."""
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ConfigError(f"{where}: {key} must be a whole number from {lo} to {hi}, got {value!r}")
    return value


def _num(where: str, key: str, value: Any, lo: float, hi: float, *, open_low: bool = False) -> float:
    """A finite number in [lo, hi] ((lo, hi] with ``open_low``), or a ConfigError naming file, line and key."""
    ok = not isinstance(value, bool) and isinstance(value, int | float) and value == value and abs(value) != float("inf")
    if not ok or value > hi or value < lo or (open_low and value == lo):
        bound = f"({lo:g}, {hi:g}]" if open_low else f"[{lo:g}, {hi:g}]"
        raise ConfigError(f"{where}: {key} must be a number in {bound}, got {value!r}")
    return float(value)


def _text(where: str, key: str, value: Any) -> str:
    if not isinstance(value, str | int) or isinstance(value, bool) or not str(value).strip() or len(str(value)) > 256:
        raise ConfigError(f"{where}: {key} must be a name (1-256 characters), got {value!r}"[:200])
    return str(value)


_FABRIC_KEYS = {"name", "generator", "params", "nodes", "links", "faults", "description", "measurements"}
_NODE_KEYS = {"id", "kind", "ports", "label", "guid", "attrs"}
_LINK_KEYS = {"a", "b", "lanes", "lane_gbps", "max_lanes", "max_lane_gbps", "state"}
_FAULT_KEYS = {"kind", "port", "switch", "lanes", "lane_gbps", "factor", "rate_per_hour", "flaps", "flows"}


@dataclass
class FabricFile:
    """What a fabric file holds: the fabric, the faults it carries for the simulator, and how the
    simulator's measurements scatter (``measurements:``, :mod:`fabricdoc.fabric.realism`)."""

    fabric: Fabric
    faults: list[Fault]
    realism: Realism = DEFAULT


def read_fabric_file(path: str | Path) -> FabricFile:
    """Load a fabric file: the fabric, its faults (empty when none) and its measurements' realism."""
    path = Path(path)
    data = read_yaml(path)
    _check_keys(path, data, _FABRIC_KEYS, "fabric file")
    name = _text(_where(path, data), "name", data["name"]) if data.get("name") is not None else path.stem
    if "generator" in data:
        fabric = _generate(path, data, name)
    else:
        fabric = _listed(path, data, name)
    fabric.source = f"file:{path}"
    faults = parse_faults(path, data.get("faults"), fabric) if data.get("faults") else []
    measurements = data.get("measurements")
    realism = DEFAULT if measurements is None else parse_realism(path, measurements, getattr(measurements, "line", 0))
    return FabricFile(fabric, faults, realism)


def _generate(path: Path, data: dict, name: str) -> Fabric:
    gen = data["generator"]
    if not isinstance(gen, str) or gen not in GENERATORS:
        raise ConfigError(f"{_where(path, data)}: unknown generator {str(gen)[:80]!r} (one of {', '.join(GENERATORS)})")
    params = data.get("params") or {}
    if not isinstance(params, dict):
        raise ConfigError(f"{_where(path, data)}: params must be a mapping")
    where = _where(path, params)
    allowed = [n for n in inspect.signature(GENERATORS[gen]).parameters if n != "name"]
    unknown = sorted(str(k) for k in params if k not in allowed)
    if unknown:
        raise ConfigError(f"{where}: bad params for {gen}: unknown parameter {unknown[0]!r} "
                          f"(allowed: {', '.join(allowed)})")
    for key, value in params.items():
        if key == "lane_gbps":
            _num(where, key, value, 0.0, 10_000.0, open_low=True)
        elif key != "name":
            _int(where, str(key), value, 0, 1 << 16)
    sizes = [int(v) for k, v in params.items() if k in ("leaves", "hosts_per_leaf", "units", "hosts_per_unit", "k")]
    if gen == "fat_tree_3" and int(params.get("k", 4)) ** 3 // 4 > MAX_GENERATED_HOSTS or (
            len(sizes) >= 2 and sizes[0] * sizes[1] > MAX_GENERATED_HOSTS):
        raise ConfigError(f"{where}: more than {MAX_GENERATED_HOSTS:,} hosts: too big a fabric to generate")
    try:
        return GENERATORS[gen](name=name, **params)
    except TypeError as exc:
        raise ConfigError(f"{_where(path, params)}: bad params for {gen}: {exc}") from None
    except TopologyError as exc:
        raise ConfigError(f"{_where(path, params)}: {exc}") from None


def _listed(path: Path, data: dict, name: str) -> Fabric:
    fabric = Fabric(name=name)
    nodes = data.get("nodes") or []
    if not isinstance(nodes, list):
        raise ConfigError(f"{_where(path, data)}: nodes must be a list")
    if not nodes:
        raise ConfigError(f"{_where(path, data)}: the fabric has no nodes (give 'nodes' and 'links', or a "
                          "'generator' with its 'params')")
    for item in nodes:
        _check_keys(path, item, _NODE_KEYS, "node")
        where = _where(path, item)
        for req in ("id", "kind", "ports"):
            if req not in item:
                raise ConfigError(f"{where}: node needs {req!r}")
        if item["kind"] not in ("host", "switch"):
            raise ConfigError(f"{where}: node kind must be host or switch, got {item['kind']!r}")
        attrs = item.get("attrs") or {}
        if not isinstance(attrs, dict):
            raise ConfigError(f"{where}: attrs must be a mapping")
        attrs = dict(attrs)
        node_id = _text(where, "id", item["id"])
        if item["kind"] == "host":
            attrs.setdefault("host", node_id)
        guid = item.get("guid")
        if guid is not None and not isinstance(guid, str):
            raise ConfigError(f"{where}: guid must be text like 0x0002c90300000001, got {guid!r}")
        try:
            fabric.add_node(
                Node(id=node_id, kind=item["kind"], label=_text(where, "label", item.get("label", node_id)),
                     num_ports=_int(where, "ports", item["ports"], 1, MAX_PORTS), guid=guid, attrs=attrs)
            )
        except TopologyError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    links = data.get("links") or []
    for i, item in enumerate(links):
        where = _where(path, item, links.lines[i] if isinstance(links, _Seq) else 0)
        _check_keys(path, item, _LINK_KEYS, "link")
        if "a" not in item or "b" not in item:
            raise ConfigError(f"{where}: link needs 'a' and 'b' ports")
        a, b = parse_port(item["a"], where), parse_port(item["b"], where)
        lanes = _int(where, "lanes", item.get("lanes", 4), 1, 32)
        lane_gbps = _num(where, "lane_gbps", item.get("lane_gbps", 100.0), 0.0, 10_000.0, open_low=True)
        max_lanes = item.get("max_lanes")
        max_lane_gbps = item.get("max_lane_gbps")
        if max_lanes is not None:
            _int(where, "max_lanes", max_lanes, lanes, 32)
        if max_lane_gbps is not None:
            max_lane_gbps = _num(where, "max_lane_gbps", max_lane_gbps, lane_gbps, 10_000.0)
        state = item.get("state", "up")
        if state not in ("up", "down"):
            raise ConfigError(f"{where}: state must be up or down, got {state!r}"[:200])
        try:
            fabric.add_link(
                PortRef(*a), PortRef(*b), lanes=lanes, lane_gbps=lane_gbps, max_lanes=max_lanes,
                max_lane_gbps=max_lane_gbps, state=state,
            )
        except TopologyError as exc:
            raise ConfigError(f"{where}: {exc}") from None
    return fabric


def parse_faults(path: str | Path, items: Any, fabric: Fabric) -> list[Fault]:
    """Turn a ``faults:`` list into :class:`Fault` records checked against the fabric."""
    path = Path(path)
    if not isinstance(items, list):
        raise ConfigError(f"{_where(path, items)}: faults must be a list")
    out = []
    for i, item in enumerate(items):
        where = _where(path, item, items.lines[i] if isinstance(items, _Seq) else 0)
        _check_keys(path, item, _FAULT_KEYS, "fault")
        kind = item.get("kind")
        if kind not in FAULT_KINDS:
            raise ConfigError(f"{where}: unknown fault kind {kind!r} (one of {', '.join(FAULT_KINDS)})")
        port = None
        switch = None
        try:
            if kind in SWITCH_FAULT_KINDS:
                if "switch" not in item:
                    raise ConfigError(f"{where}: {kind} needs 'switch'")
                switch = fabric.resolve_node(str(item["switch"]))
                if fabric.nodes[switch].kind != "switch":
                    raise ConfigError(f"{where}: {item['switch']!r} is not a switch")
            else:
                if "port" not in item:
                    raise ConfigError(f"{where}: fault {kind} needs 'port' (either end of the cable)")
                port = fabric.resolve_port(*parse_port(item["port"], where))
                if fabric.link_at(port) is None:
                    raise ConfigError(f"{where}: port {item['port']} is not cabled")
        except TopologyError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        extra: dict[str, Any] = {}
        if "lanes" in item:
            extra["lanes"] = _int(where, "lanes", item["lanes"], 1, 32)
        if "lane_gbps" in item:
            extra["lane_gbps"] = _num(where, "lane_gbps", item["lane_gbps"], 0.0, 10_000.0, open_low=True)
        if "factor" in item:
            extra["factor"] = _num(where, "factor", item["factor"], 0.0, 1.0)
        if "rate_per_hour" in item:
            extra["rate_per_hour"] = _num(where, "rate_per_hour", item["rate_per_hour"], 0.0, 1e12)
        if "flaps" in item:
            extra["flaps"] = _int(where, "flaps", item["flaps"], 1, 10_000)
        if "flows" in item:
            extra["flows"] = _int(where, "flows", item["flows"], 1, 1_000_000)
        out.append(Fault(kind=kind, port=port, switch=switch, **extra))
    return out


def faults_from_yaml(path: str | Path, fabric: Fabric) -> list[Fault]:
    """A separate fault file: a mapping with ``faults:`` or a bare list."""
    path = Path(path)
    data = read_yaml(path)
    if isinstance(data, dict):
        _check_keys(path, data, {"faults"}, "fault file")
        data = data.get("faults") or []
    return parse_faults(path, data, fabric)
