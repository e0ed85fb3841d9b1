"""The evidence kinds' JSON Schema comes from their dataclasses: types, required fields, bounds and
descriptions, and it refuses what a reader or a renderer could not take."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar, Literal

import jsonschema
import pytest

from fabricdoc.model.evidence import (
    EVIDENCE_KINDS,
    CorruptionEvidence,
    CounterEvidence,
    GpuEvidence,
    doc,
    evidence_from_dict,
)
from fabricdoc.report.evidence_schema import kind_schema, type_schema, undescribed
from fabricdoc.report.schema import EVIDENCE_SCHEMAS


def _schema(kind: str) -> dict:
    (schema,) = [s for s in EVIDENCE_SCHEMAS if s["properties"]["type"]["const"] == kind]
    return schema


@pytest.mark.parametrize(("hint", "shape"), [
    (str | None, {"type": ["string", "null"]}),
    (tuple[str, int], {"type": "array", "prefixItems": [{"type": "string"}, {"type": "integer"}],
                       "minItems": 2, "maxItems": 2}),
    (tuple[tuple[str, int], tuple[str, int]], {"type": "array", "items": type_schema(tuple[str, int]),
                                               "minItems": 2, "maxItems": 2}),
    (tuple[str, int] | None, {"oneOf": [{"type": "null"}, type_schema(tuple[str, int])]}),
    (list[float], {"type": "array", "items": {"type": "number"}}),
    (Literal["a", "b"] | None, {"enum": ["a", "b", None]}),
])
def test_python_types_become_their_json_shapes(hint, shape):
    assert type_schema(hint) == shape


def test_a_union_of_two_real_types_has_no_json_shape():
    with pytest.raises(TypeError, match="X | None"):
        type_schema(int | str)


@dataclass(frozen=True)
class _Half:
    kind: ClassVar[str] = "half"
    summary: ClassVar[str] = "a kind half declared"
    said: int = field(metadata=doc("how many", "widgets", minimum=0))
    unsaid: float | None = None


def test_a_field_without_a_description_is_caught():
    assert undescribed(_Half) == ["_Half.unsaid"]
    schema = kind_schema(_Half)
    assert schema["required"] == ["type", "said"]
    assert schema["properties"]["said"] == {"type": "integer", "minimum": 0, "description": "how many (widgets)"}


@pytest.mark.parametrize(("kind", "bad"), [
    ("counter", {"node": "a", "port": 1, "counter": "c", "delta": 1.0, "extra": 1}),
    ("counter", {"node": "a", "port": 1, "counter": "c"}),
    ("event", {"flaps": -1, "first": 0.0, "last": 1.0}),
    ("state", {"expected_from": "guessed"}),
    ("pairs", {"tests": 1, "slow": 1, "worst_ratio": 0.5, "median_ratio": 0.5, "equivalent_suspects": 0}),
    ("pairs", {"tests": 1, "slow": 1, "worst_ratio": 0.5, "median_ratio": 0.5,
               "slow_pairs": [{"src": ["a", 1], "dst": ["b"], "status": "ok"}]}),
    ("groups", {"tests": 1, "failing": 1, "failing_flows": 2, "passing_flows": 1, "worst_ratio": 0.1,
                "failing_groups": [{"label": "g", "test": "all_reduce", "members": 4, "status": "ok"}]}),
    ("corruption", {"wrong_pairs": 1, "pairs": [["a", "b"]]}),
    ("candidates", {"candidates": ["only one"], "tell_apart": "x"}),
])
def test_the_schema_refuses_what_no_reader_takes(kind, bad):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"type": kind, **bad}, _schema(kind))


def test_a_nullable_field_left_out_reads_as_none():
    data = {"type": "counter", "node": "a", "port": 1, "counter": "symbol_errors", "delta": 3.0}
    jsonschema.validate(data, _schema("counter"))
    assert evidence_from_dict(data) == CounterEvidence("a", 1, "symbol_errors", 3.0, None, None)
    assert evidence_from_dict({"type": "gpu", "problems": ["xid 79"]}) == GpuEvidence(None, ("xid 79",))


def test_a_corrupt_pair_is_two_labels_and_a_count():
    ok = CorruptionEvidence(1, (("a", "b", 3),)).to_dict()
    jsonschema.validate(ok, _schema("corruption"))
    assert set(EVIDENCE_KINDS) == {s["properties"]["type"]["const"] for s in EVIDENCE_SCHEMAS}
