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
import math
from typing import Any

from fabricdoc.errors import FabricdocError, ParseError
from fabricdoc.model.counters import register_problem
from fabricdoc.model.inputs import json_values
from fabricdoc.model.records import (
    GpuHealth,
    HostCheck,
    KernelEvent,
    LinkEvent,
    Observations,
    PairResult,
    PortCounters,
    PortRef,
    PortState,
    ProbeRun,
    ProbeStatus,
)

FORMAT = "fabricdoc-records"
VERSION = 1

Record = PortCounters | PortState | LinkEvent | PairResult | ProbeRun | GpuHealth | KernelEvent | HostCheck

RECORD_TYPES: dict[str, type] = {
    cls.__name__: cls
    for cls in (PortCounters, PortState, LinkEvent, PairResult, ProbeRun, GpuHealth, KernelEvent, HostCheck)
}
# Where observations_from_records puts each record type (counters are paired up on their own).
_LIST_OF: dict[type, str] = {PortState: "states", LinkEvent: "events", PairResult: "pairs", ProbeRun: "probes",
                             GpuHealth: "gpus", KernelEvent: "kernel_events", HostCheck: "host_checks"}
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


MAX_PORT = 65535
_STR, _INT, _NUM, _BOOL = "text", "whole number", "finite number >= 0", "true or false"
# Field -> (kind, may be null) for every scalar field; dict fields are checked on their own below.
_FIELDS: dict[str, dict[str, tuple[str, bool]]] = {
    "PortCounters": {"node": (_STR, False), "port": (_INT, False), "timestamp": (_NUM, False),
                     "source": (_STR, False), "ifname": (_STR, True)},
    "PortState": {"node": (_STR, False), "port": (_INT, False), "state": (_STR, False), "phys_state": (_STR, True),
                  "lanes": (_INT, True), "lane_gbps": (_NUM, True), "max_lanes": (_INT, True),
                  "max_lane_gbps": (_NUM, True), "source": (_STR, False), "ifname": (_STR, True)},
    "LinkEvent": {"node": (_STR, False), "port": (_INT, False), "timestamp": (_NUM, False), "state": (_STR, False),
                  "source": (_STR, False), "ifname": (_STR, True)},
    "PairResult": {"status": (_STR, False), "busbw_gbps": (_NUM, True), "expected_gbps": (_NUM, True),
                   "algbw_gbps": (_NUM, True), "size_bytes": (_INT, True), "wrong": (_INT, False),
                   "duration_s": (_NUM, True), "round": (_INT, False), "test": (_STR, False), "error": (_STR, True)},
    "ProbeRun": {"probe": (_STR, False), "target": (_STR, False), "status": (_STR, False),
                 "duration_s": (_NUM, False), "error": (_STR, True)},
    "GpuHealth": {"host": (_STR, False), "index": (_INT, False), "uuid": (_STR, True), "status": (_STR, False),
                  "error": (_STR, True)},
    "KernelEvent": {"node": (_STR, False), "timestamp": (_NUM, True), "kind": (_STR, False), "driver": (_STR, False),
                    "message": (_STR, False), "device": (_STR, True), "ifname": (_STR, True), "port": (_INT, True),
                    "state": (_STR, True), "source": (_STR, False)},
    "HostCheck": {"node": (_STR, False), "check": (_STR, False), "status": (_STR, False), "subject": (_STR, False),
                  "reason": (_STR, False), "port": (_INT, True)},
}
_ENUMS = {("LinkEvent", "state"): ("up", "down"), ("PairResult", "status"): ("ok", "hung", "wrong", "error"),
          ("ProbeRun", "status"): tuple(s.value for s in ProbeStatus),
          ("GpuHealth", "status"): tuple(s.value for s in ProbeStatus),
          ("HostCheck", "status"): ("ok", "fail", "unknown", "n/a")}


def _bad_scalar(value: Any, kind: str) -> bool:
    if kind == _STR:
        return not isinstance(value, str) or len(value) > 4096
    if kind == _BOOL:
        return not isinstance(value, bool)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return True
    if kind == _INT:
        return not isinstance(value, int) or not 0 <= value <= 1 << 64
    return not math.isfinite(value) or value < 0


def _check_fields(name: str, data: dict[str, Any], source: str, where: str) -> None:
    """Types, finite non-negative numbers, ports in range, known enum values: one ParseError otherwise."""
    for key, (kind, nullable) in _FIELDS[name].items():
        if key not in data:
            continue
        value = data[key]
        if value is None and nullable:
            continue
        if value is None or _bad_scalar(value, kind):
            raise ParseError(source, 0, f"{key}={value!r}"[:120], f"{where} ({name}): {key} must be a {kind}")
        allowed = _ENUMS.get((name, key))
        if allowed and value not in allowed:
            raise ParseError(source, 0, f"{key}={value!r}"[:120], f"{where} ({name}): {key} is one of {', '.join(allowed)}")
        if key == "port" and value > MAX_PORT:
            raise ParseError(source, 0, f"port={value}", f"{where} ({name}): no port {value} (at most {MAX_PORT})")
    if name == "PortCounters":
        values, widths = data.get("values"), data.get("width_bits", {})
        if not isinstance(values, dict) or not isinstance(widths, dict):
            raise ParseError(source, 0, repr(values)[:120], f"{where} (PortCounters): values and width_bits are objects")
        for counter, bits in widths.items():
            if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= 64:
                raise ParseError(source, 0, f"{counter}={bits!r}"[:120], f"{where}: a register width is 1..64 bits")
        for counter, value in values.items():
            why = register_problem(str(counter), value, widths.get(counter))
            if why:
                raise ParseError(source, 0, f"{counter}={value!r}"[:120], f"{where} (PortCounters): {why}")
    if name in ("GpuHealth", "HostCheck"):
        values = data.get("values", {})
        if not isinstance(values, dict) or len(values) > 256:
            raise ParseError(source, 0, repr(values)[:120], f"{where} ({name}): values is an object")
        bad = [v for v in values.values() if not _plain_value(v)] if name == "HostCheck" else []
        if bad:
            raise ParseError(source, 0, repr(bad[0])[:120], f"{where} ({name}): values are text, numbers or null")


def _plain_value(value: Any) -> bool:
    """What a host check may record as read: text, a finite number, true/false or null."""
    return value is None or isinstance(value, str | bool) or (isinstance(value, int | float) and math.isfinite(value))


MAX_SIZES = 256  # message sizes one test may carry (nccl-tests -b 1 -e 16G -f 2 prints 35)


def _sizes(value: Any, source: str, where: str) -> tuple[tuple[int, float], ...]:
    """A PairResult's per-size figures: a list of [size_bytes, busbw_gbps] (whole, finite, >= 0)."""
    ok = isinstance(value, list | tuple) and len(value) <= MAX_SIZES and all(
        isinstance(v, list | tuple) and len(v) == 2 and not _bad_scalar(v[0], _INT) and not _bad_scalar(v[1], _NUM)
        for v in value)
    if not ok:
        raise ParseError(source, 0, repr(value)[:120], f"{where} (PairResult): sizes is a list of at most "
                         f"{MAX_SIZES} [size_bytes, busbw_gbps] pairs (whole and finite numbers >= 0)")
    return tuple((int(a), float(b)) for a, b in value)


def record_from_dict(data: Any, source: str = "<json>", index: int = 0) -> Record:
    """Rebuild one record; a wrong type, a missing field or an impossible value is a ParseError
    naming the record (numbers finite and non-negative, ports in range, counters within their register)."""
    where = f"record {index}"
    if not isinstance(data, dict):
        raise ParseError(source, 0, repr(data)[:120], f"{where} is not an object")
    name = data.get("type")
    cls = RECORD_TYPES.get(name) if isinstance(name, str) else None
    if cls is None:
        raise ParseError(source, 0, repr(name), f"{where} has unknown type")
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = set(data) - names - {"type"}
    if unknown:
        raise ParseError(source, 0, ", ".join(sorted(map(str, unknown)))[:120], f"{where} ({name}) has unknown fields")
    _check_fields(name, data, source, where)
    kwargs: dict[str, Any] = {}
    for key, value in data.items():
        if key == "type":
            continue
        if key == "sizes" and name == "PairResult":
            value = _sizes(value, source, where)
        if key in _PORTREF_FIELDS and value is not None:
            ok = (isinstance(value, dict) and isinstance(value.get("node"), str) and isinstance(value.get("port"), int)
                  and not isinstance(value.get("port"), bool) and 0 <= value["port"] <= MAX_PORT)
            if not ok:
                raise ParseError(source, 0, repr(value)[:120], f"{where} field {key} is not a port")
            value = PortRef(value["node"], value["port"])
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
    docs: list[dict[str, Any]] = []
    for no, start, value in json_values(text, source):
        if isinstance(value, list):
            value = {"format": FORMAT, "version": VERSION, "records": value}
        if not isinstance(value, dict) or value.get("format") != FORMAT:
            raise ParseError(source, no, text[start : start + 80], f"not a {FORMAT} document")
        if value.get("version") != VERSION:
            raise ParseError(source, no, str(value.get("version")), f"unsupported {FORMAT} version")
        docs.append(value)
    return docs


def records_from_json(text: str, source: str = "<json>", problems: list[ParseError] | None = None) -> list[Record]:
    """All records of every document in ``text``, in order. With ``problems``, a record that cannot be
    read is left out and its error appended there (the others are kept); without, it is raised."""
    out: list[Record] = []
    seen = 0  # records are numbered across the documents of the file
    for doc in documents_from_json(text, source):
        records = doc.get("records")
        if not isinstance(records, list):
            raise ParseError(source, 0, "", "document has no records list")
        for i, r in enumerate(records):
            try:
                out.append(record_from_dict(r, source, seen + i))
            except ParseError as exc:
                if problems is None:
                    raise
                problems.append(exc)
        seen += len(records)
    return out


def observations_from_records(records: list[Record]) -> Observations:
    """Bundle records for analysis: per (node, port, source), the earliest counter sample
    is ``before`` and the latest ``after``; a port sampled once appears only in ``after``."""
    obs = Observations()
    samples: dict[tuple[str, int, str, str | None], list[PortCounters]] = {}
    for r in records:
        if isinstance(r, PortCounters):
            samples.setdefault((r.node, r.port, r.source, r.ifname), []).append(r)
        else:
            for cls in type(r).__mro__:  # a subclass (an IB PortState) goes where its base goes
                if cls in _LIST_OF:
                    getattr(obs, _LIST_OF[cls]).append(r)
                    break
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
    """Read files written by ``fabricdoc probe`` (fabricdoc-records JSON) into one Observations;
    a file holding no records is a ``records`` ProbeRun error (something planned was not seen)."""
    from fabricdoc.model.inputs import read_text

    records: list[Record] = []
    unseen: list[ProbeRun] = []
    for path in paths:
        # One bad file, or one bad record in a file, costs only itself: it is listed as not seen.
        problems: list[ParseError] = []
        try:
            text = read_text(path, "records")
            got = records_from_json(text, source=str(path), problems=problems)
        except FabricdocError as exc:
            unseen.append(ProbeRun("records", str(path), "error", 0.0, str(exc)))
            continue
        for exc in problems[:MAX_LISTED]:
            unseen.append(ProbeRun("records", str(path), "error", 0.0, str(exc)))
        if len(problems) > MAX_LISTED:
            unseen.append(ProbeRun("records", str(path), "error", 0.0,
                                   f"{path}: {len(problems) - MAX_LISTED} more records could not be read"))
        if not got and not problems:  # a host whose probe wrote nothing: not seen, never a silent pass
            why = "empty file (0 bytes)" if not text else "no records in it"
            unseen.append(ProbeRun("records", str(path), "error", 0.0, f"{path}: {why}: no probe output"))
        records.extend(got)
    obs = observations_from_records(records)
    obs.probes.extend(unseen)
    return obs


MAX_LISTED = 20  # bad records of one file listed one by one; the rest are counted
