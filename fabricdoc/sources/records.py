"""JSON form of the probe records, so records gathered from many nodes can be read back exactly.

A document is ``{"format": "fabricdoc-records", "version": 1, "records": [...],
"extra": {...}}``; each record is its dataclass fields plus ``"type"`` (the class
name). :func:`records_from_json` also accepts several documents one after
another (what a launcher gets by concatenating every node's stdout), or a bare
list of records.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any

from fabricdoc.errors import ParseError
from fabricdoc.model.records import (
    GpuHealth,
    LinkEvent,
    Observations,
    PairResult,
    PortCounters,
    PortRef,
    PortState,
    ProbeRun,
)

FORMAT = "fabricdoc-records"
VERSION = 1

Record = PortCounters | PortState | LinkEvent | PairResult | ProbeRun | GpuHealth

RECORD_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (PortCounters, PortState, LinkEvent, PairResult, ProbeRun, GpuHealth)
}
# Fields holding a PortRef, written as {"node": ..., "port": ...}.
_PORTREF_FIELDS = {"peer", "src", "dst"}


def record_to_dict(record: Record) -> dict[str, Any]:
    """One record as a JSON-able dict with its ``type``."""
    name = type(record).__name__
    if name not in RECORD_TYPES:
        raise TypeError(f"not a fabricdoc record: {name}")
    out: dict[str, Any] = {"type": name}
    for f in dataclasses.fields(record):
        value = getattr(record, f.name)
        if isinstance(value, PortRef):
            value = {"node": value.node, "port": value.port}
        out[f.name] = value
    return out


def record_from_dict(data: Any, source: str = "<json>", index: int = 0) -> Record:
    """Rebuild one record; a wrong type or missing field is a ParseError naming the record."""
    where = f"record {index}"
    if not isinstance(data, dict):
        raise ParseError(source, 0, repr(data)[:120], f"{where} is not an object")
    name = data.get("type")
    cls = RECORD_TYPES.get(name)  # type: ignore[arg-type]
    if cls is None:
        raise ParseError(source, 0, repr(name), f"{where} has unknown type")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names - {"type"}
    if unknown:
        raise ParseError(source, 0, ", ".join(sorted(unknown)), f"{where} ({name}) has unknown fields")
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "type":
            continue
        if key in _PORTREF_FIELDS and value is not None:
            try:
                value = PortRef(str(value["node"]), int(value["port"]))
            except (KeyError, TypeError, ValueError) as exc:
                raise ParseError(source, 0, repr(value)[:120], f"{where} field {key} is not a port") from exc
        kwargs[key] = value
    try:
        return cls(**kwargs)
    except TypeError as exc:
        raise ParseError(source, 0, name, f"{where}: {exc}") from exc


def records_to_json(
    records: list[Record], extra: dict[str, Any] | None = None, indent: int | None = None
) -> str:
    """One JSON document holding ``records`` (and optional JSON-able ``extra`` facts)."""
    doc: dict[str, Any] = {
        "format": FORMAT,
        "version": VERSION,
        "records": [record_to_dict(r) for r in records],
    }
    if extra:
        doc["extra"] = extra
    return json.dumps(doc, indent=indent, allow_nan=False)


def documents_from_json(text: str, source: str = "<json>") -> list[dict[str, Any]]:
    """Every document in ``text`` (one, several concatenated, or one per line)."""
    decoder = json.JSONDecoder()
    docs: list[dict[str, Any]] = []
    pos = 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            value, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as exc:
            line = text.splitlines()[exc.lineno - 1] if text.splitlines() else ""
            raise ParseError(source, exc.lineno, line, f"invalid JSON: {exc.msg}") from exc
        if isinstance(value, list):
            value = {"format": FORMAT, "version": VERSION, "records": value}
        if not isinstance(value, dict) or value.get("format") != FORMAT:
            raise ParseError(source, text.count("\n", 0, pos) + 1, text[pos : pos + 80],
                             f"not a {FORMAT} document")
        if value.get("version") != VERSION:
            raise ParseError(source, text.count("\n", 0, pos) + 1, str(value.get("version")),
                             f"unsupported {FORMAT} version")
        docs.append(value)
        pos = end
    return docs


def records_from_json(text: str, source: str = "<json>") -> list[Record]:
    """All records of every document in ``text``, in order."""
    out: list[Record] = []
    for doc in documents_from_json(text, source):
        records = doc.get("records")
        if not isinstance(records, list):
            raise ParseError(source, 0, "", "document has no records list")
        out.extend(record_from_dict(r, source, len(out) + i) for i, r in enumerate(records))
    return out


def observations_from_records(records: list[Record]) -> Observations:
    """Bundle records for analysis: per (node, port, source), the earliest counter sample
    is ``before`` and the latest ``after``; a port sampled once appears only in ``after``."""
    obs = Observations()
    samples: dict[tuple[str, int, str, str | None], list[PortCounters]] = {}
    for r in records:
        if isinstance(r, PortCounters):
            samples.setdefault((r.node, r.port, r.source, r.ifname), []).append(r)
        elif isinstance(r, PortState):
            obs.states.append(r)
        elif isinstance(r, LinkEvent):
            obs.events.append(r)
        elif isinstance(r, PairResult):
            obs.pairs.append(r)
        elif isinstance(r, ProbeRun):
            obs.probes.append(r)
        elif isinstance(r, GpuHealth):
            obs.gpus.append(r)
    intervals = []
    for group in samples.values():
        group.sort(key=lambda c: c.timestamp)
        if len(group) > 1:
            obs.before.append(group[0])
            intervals.append(group[-1].timestamp - group[0].timestamp)
        obs.after.append(group[-1])
    if intervals:
        obs.interval_s = max(intervals)
    obs.events.sort(key=lambda e: e.timestamp)
    return obs


def load_records(paths: list[str]) -> Observations:
    """Read files written by ``fabricdoc probe`` (fabricdoc-records JSON) into one Observations."""
    from fabricdoc.model.inputs import read_text

    records: list[Record] = []
    for path in paths:
        records.extend(records_from_json(read_text(path, "records"), source=str(path)))
    return observations_from_records(records)
