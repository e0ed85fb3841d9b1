"""Validation of a loaded report against the v1 schema: jsonschema for the body, a fast structural check of
long arrays and column blocks, and bounded numbers."""

from __future__ import annotations

from typing import Any

import jsonschema

from fabricdoc.errors import FabricdocError
from fabricdoc.report.schema import PAIR_COLUMNS, REPORT_SCHEMA, TOPOLOGY_COLUMNS

_BULK = 256  # arrays longer than this get the fast structural check below


def _bad(source: str, where: str, what: str) -> FabricdocError:
    return FabricdocError(f"{source}: not a fabricdoc v1 report at {where}: {what}")


def _port_ok(v: Any) -> bool:
    return isinstance(v, list) and len(v) == 2 and isinstance(v[0], str) and isinstance(v[1], int)


def _check_bulk(data: dict[str, Any], source: str) -> dict[str, Any]:
    """Check the big arrays (topology nodes and links, pairs) with plain loops and return the
    report with those arrays cut to one item, so jsonschema checks the rest quickly."""
    slim = dict(data)
    topo = data.get("topology")
    if isinstance(topo, dict):
        nodes, links = topo.get("nodes"), topo.get("links")
        if isinstance(nodes, list) and isinstance(links, list) and len(nodes) + len(links) > _BULK:
            for i, n in enumerate(nodes):
                if not (isinstance(n, dict) and isinstance(n.get("id"), str) and isinstance(n.get("label"), str)
                        and n.get("kind") in ("host", "switch") and isinstance(n.get("ports"), int)):
                    raise _bad(source, f"topology/nodes/{i}", "needs id, label, kind (host|switch) and ports")
            for i, lk in enumerate(links):
                if not (isinstance(lk, dict) and _port_ok(lk.get("a")) and _port_ok(lk.get("b"))
                        and isinstance(lk.get("lanes"), int) and isinstance(lk.get("lane_gbps"), int | float)
                        and lk.get("state", "up") in ("up", "down")):
                    raise _bad(source, f"topology/links/{i}", "needs a, b ([node, port]), lanes, lane_gbps, state")
            slim["topology"] = {**topo, "nodes": nodes[:1], "links": links[:1]}
    pairs = data.get("pairs")
    if isinstance(pairs, list) and len(pairs) > _BULK:
        for i, p in enumerate(pairs):
            if not (isinstance(p, dict) and _port_ok(p.get("src")) and _port_ok(p.get("dst"))
                    and p.get("status") in ("ok", "hung", "wrong", "error")):
                raise _bad(source, f"pairs/{i}", "needs src, dst ([node, port]) and status")
        slim["pairs"] = pairs[:1]
    _check_columns(data, slim, source)
    return slim


_COLUMN_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,), "integer": (int,), "number": (int, float), "boolean": (bool,), "null": (type(None),),
}


def _column_ok(values: list[Any], item: dict[str, Any]) -> int | None:
    """The index of the first value ``item`` (a column's item schema) refuses, else None.

    Whole-column set operations first (a 200,000-long column in milliseconds); only a
    column that fails is walked value by value to name the first bad one."""
    if "enum" in item:
        allowed = set(item["enum"])
        try:
            if set(map(type, values)) <= {str, type(None)} and set(values) <= allowed:
                return None
        except TypeError:
            pass
        return next(i for i, v in enumerate(values) if not (type(v) is str and v in allowed))
    kinds = item["type"] if isinstance(item["type"], list) else [item["type"]]
    types = {t for k in kinds for t in _COLUMN_TYPES[k]}
    low, high = item.get("minimum"), item.get("maximum")
    present = set(map(type, values))
    numbers = [v for v in values if v is not None]
    if present <= types and (not numbers or ((low is None or min(numbers) >= low)
                                             and (high is None or max(numbers) <= high))):
        return None
    return next(i for i, v in enumerate(values)
                if type(v) not in types or (v is not None and ((low is not None and v < low)
                                                               or (high is not None and v > high))))


def _check_table(table: Any, props: dict[str, Any], required: list[str], source: str, where: str) -> Any:
    """Check one table of columns (same length, each value its column's type); return it cut to one row."""
    if not isinstance(table, dict) or any(not isinstance(table.get(k), list) for k in required):
        raise _bad(source, where, f"needs the columns {', '.join(required)} as arrays")
    n = len(table[required[0]])
    slim = dict(table)
    for key, item in props.items():
        values = table.get(key)
        if values is None and key not in required:
            continue
        if not isinstance(values, list) or len(values) != n:
            raise _bad(source, f"{where}/{key}", f"needs an array of {n} items, like {required[0]}")
        bad = _column_ok(values, item["items"])
        if bad is not None:
            raise _bad(source, f"{where}/{key}/{bad}", f"{values[bad]!r} is not valid here")
        slim[key] = values[:1]
    return slim


def _check_columns(data: dict[str, Any], slim: dict[str, Any], source: str) -> None:
    """The column tables of a large report, checked with plain loops and cut to one row for jsonschema."""
    topo = data.get("topology_columns")
    if isinstance(topo, dict):
        schema = TOPOLOGY_COLUMNS["properties"]
        nodes = _check_table(topo.get("nodes"), {k: v for k, v in schema["nodes"]["properties"].items() if k != "attrs"},
                             schema["nodes"]["required"], source, "topology_columns/nodes")
        count = len(topo["nodes"]["id"])
        attrs = topo["nodes"].get("attrs", {})
        if isinstance(attrs, dict):
            for key, values in attrs.items():
                if not isinstance(values, list) or len(values) != count:
                    raise _bad(source, f"topology_columns/nodes/attrs/{key}", f"needs an array of {count} items")
            nodes["attrs"] = {k: v[:1] for k, v in attrs.items()}
        links = _check_table(topo.get("links"), schema["links"]["properties"], schema["links"]["required"],
                             source, "topology_columns/links")
        for end in ("a", "b"):
            far = next((i for i, v in enumerate(topo["links"][end]) if v >= count), None)
            if far is not None:
                raise _bad(source, f"topology_columns/links/{end}/{far}",
                           f"no node {topo['links'][end][far]} (there are {count})")
        slim["topology_columns"] = {**topo, "nodes": nodes, "links": links}
    pairs = data.get("pairs_columns")
    if isinstance(pairs, dict):
        slim["pairs_columns"] = _check_table(pairs, PAIR_COLUMNS["properties"], PAIR_COLUMNS["required"],
                                             source, "pairs_columns")


# What a report's readers hold: SQLite's (the history store's) and most JSON consumers' 64-bit signed
# integers, and finite doubles far from overflow. Every integer and number of the schema is bounded so;
# a report the schema accepts is one every reader accepts.
INT_MIN, INT_MAX = -(1 << 63), (1 << 63) - 1
NUM_LIMIT = 1e300


def _bounded(node: Any) -> None:
    """Add those bounds to every integer and number in a schema (in place), keeping tighter ones."""
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            kinds = item.get("type")
            kinds = kinds if isinstance(kinds, list) else [kinds]
            if "integer" in kinds or "number" in kinds:
                low, high = (INT_MIN, INT_MAX) if "number" not in kinds else (-NUM_LIMIT, NUM_LIMIT)
                item["minimum"] = max(item.get("minimum", low), low)
                item["maximum"] = min(item.get("maximum", high), high)
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


_bounded(REPORT_SCHEMA)


def validate_report(data: Any, source: str = "report") -> None:
    """Raise a one-line FabricdocError naming the source and the JSON path of the first problem."""
    if isinstance(data, dict):
        data = _check_bulk(data, source)
    validator = jsonschema.Draft202012Validator(REPORT_SCHEMA)
    error = jsonschema.exceptions.best_match(validator.iter_errors(data))
    if error is not None:
        where = "/".join(str(p) for p in error.absolute_path) or "(top)"
        message = error.message if len(error.message) <= 240 else f"{error.message[:120]}...{error.message[-80:]}"
        raise FabricdocError(f"{source}: not a fabricdoc v1 report at {where}: {message}")
