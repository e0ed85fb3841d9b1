"""Each evidence kind's JSON Schema, generated from its declaration in :mod:`fabricdoc.model.evidence`.

A kind's dataclass is the one place it is described: the field types give the JSON types, each field's
metadata (:func:`fabricdoc.model.evidence.doc`) its description, unit and bounds, the kind's ``summary``
the object's description. A field with no default whose type does not allow None is required; a
nested dataclass becomes a nested object; a fixed-length tuple an array of exactly that length.
"""

from __future__ import annotations

import dataclasses
import types
import typing
from typing import Any, Literal

from fabricdoc.model.evidence import EVIDENCE_KINDS

_SCALARS: dict[Any, str] = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _optional(hint: Any) -> Any | None:
    """``X`` for ``X | None``, else None."""
    if typing.get_origin(hint) not in (types.UnionType, typing.Union):
        return None
    rest = [a for a in typing.get_args(hint) if a is not type(None)]
    if len(rest) != 1 or len(rest) == len(typing.get_args(hint)):
        raise TypeError(f"no JSON shape for {hint!r}: a union must be X | None")
    return rest[0]


def type_schema(hint: Any) -> dict[str, Any]:
    """The JSON Schema of a field type: str/int/float/bool, Literal, tuple, list, X | None, a dataclass."""
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    inner = _optional(hint)
    if inner is not None:
        shape = type_schema(inner)
        if set(shape) == {"type"} and isinstance(shape["type"], str):
            return {"type": [shape["type"], "null"]}
        if set(shape) == {"enum"}:
            return {"enum": [*shape["enum"], None]}
        return {"oneOf": [{"type": "null"}, shape]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Literal:
        return {"enum": list(args)}
    if origin is list or (origin is tuple and len(args) == 2 and args[1] is Ellipsis):
        return {"type": "array", "items": type_schema(args[0])}
    if origin is tuple and args:
        items = [type_schema(a) for a in args]
        n = len(items)
        if all(item == items[0] for item in items):
            return {"type": "array", "items": items[0], "minItems": n, "maxItems": n}
        return {"type": "array", "prefixItems": items, "minItems": n, "maxItems": n}
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return object_schema(hint)
    raise TypeError(f"no JSON shape for {hint!r}")


def field_schema(hint: Any, metadata: typing.Mapping[str, Any]) -> dict[str, Any]:
    """One field's JSON Schema: its type's, with the bounds and description of its metadata."""
    shape = {**type_schema(hint), **metadata.get("schema", {})}
    if metadata.get("description"):
        unit = metadata.get("unit")
        shape["description"] = metadata["description"] + (f" ({unit})" if unit else "")
    return shape


def _required(f: dataclasses.Field[Any], hint: Any) -> bool:
    no_default = f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING
    return no_default and _optional(hint) is None


def object_schema(cls: type) -> dict[str, Any]:
    """A (nested) dataclass as a JSON object: its summary, required fields and one property per field."""
    hints = typing.get_type_hints(cls)
    fields = dataclasses.fields(cls)  # type: ignore[arg-type]
    out: dict[str, Any] = {"type": "object"}
    if getattr(cls, "summary", ""):
        out["description"] = cls.summary  # type: ignore[attr-defined]
    out["required"] = [f.name for f in fields if _required(f, hints[f.name])]
    out["properties"] = {f.name: field_schema(hints[f.name], f.metadata) for f in fields}
    return out


def kind_schema(cls: type) -> dict[str, Any]:
    """One evidence kind's JSON Schema: ``{"type": KIND, ...fields}`` and no other property."""
    shape = object_schema(cls)
    return {"type": "object", "description": shape.get("description", ""), "required": ["type", *shape["required"]],
            "additionalProperties": False,
            "properties": {"type": {"const": cls.kind}, **shape["properties"]}}  # type: ignore[attr-defined]


def evidence_schemas() -> list[dict[str, Any]]:
    """One JSON Schema per evidence kind, in the registry's order."""
    return [kind_schema(cls) for cls in EVIDENCE_KINDS.values()]


def undescribed(cls: type) -> list[str]:
    """What a declaration leaves undescribed: ``Class`` without a summary, ``Class.field`` without a
    description, in the class and the dataclasses nested in its fields."""
    missing = [] if getattr(cls, "summary", "") else [cls.__name__]
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if not f.metadata.get("description"):
            missing.append(f"{cls.__name__}.{f.name}")
        for nested in _dataclasses_in(hints[f.name]):
            missing.extend(undescribed(nested))
    return missing


def _dataclasses_in(hint: Any) -> list[type]:
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return [hint]
    return [c for a in typing.get_args(hint) for c in _dataclasses_in(a)]
