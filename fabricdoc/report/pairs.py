"""One row of the report's ``pairs`` (a bandwidth test, measured vs expected), and the column layout
a large report saves them in.

:meth:`PairRow.as_dict` is the row's JSON (report writing) and :meth:`PairRow.from_dict` the way back
(report loading); everything else reads attributes.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from fabricdoc.model.expectation import Judged
from fabricdoc.model.records import PairResult
from fabricdoc.model.topology import Fabric

End = tuple[str, int]
"""A tested port as the report names it: ``(label, port)``, written ``[label, port]``."""

_FIELDS = ("status", "busbw_gbps", "expected_gbps", "ratio", "relative", "slow", "round", "test", "wrong", "error",
           "size_bytes")
_OPTIONAL = frozenset({"slow", "round"})  # left out when unknown (older reports): the schema has no null for them


@dataclass(frozen=True, slots=True)
class PairRow:
    """One bandwidth test: its two ports, how it ended, measured and expected busbw (Gb/s), their ratio,
    measured over what healthy tests of its shape reach here (``relative``), whether it was judged slow,
    its round, test kind, corrupt-data count, error and message size."""

    src: End
    dst: End
    status: str
    busbw_gbps: float | None = None
    expected_gbps: float | None = None
    ratio: float | None = None
    relative: float | None = None
    slow: bool | None = None
    round: int | None = None
    test: str | None = None
    wrong: int | None = None
    error: str | None = None
    size_bytes: int | None = None

    @classmethod
    def of(cls, fabric: Fabric, p: PairResult, judged: Judged) -> PairRow:
        """The row of one measured test, judged against what healthy tests of its shape reach."""
        return cls(
            src=(fabric.label(p.src.node), p.src.port),
            dst=(fabric.label(p.dst.node), p.dst.port),
            status=p.status,
            busbw_gbps=p.busbw_gbps,
            expected_gbps=p.expected_gbps,
            ratio=None if p.ratio is None else round(p.ratio, 4),
            relative=None if judged.relative is None else round(judged.relative, 4),
            slow=p.status == "hung" or (p.status == "ok" and judged.slow),
            round=p.round,
            test=p.test,
            wrong=p.wrong,
            error=p.error,
            size_bytes=p.size_bytes,
        )

    def as_dict(self) -> dict[str, Any]:
        """The row as the report's JSON writes it."""
        out: dict[str, Any] = {"src": [self.src[0], self.src[1]], "dst": [self.dst[0], self.dst[1]]}
        for name in _FIELDS:
            value = getattr(self, name)
            if value is not None or name not in _OPTIONAL:
                out[name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> PairRow:
        """From the JSON object (``src``, ``dst`` and ``status`` are required; the rest may be absent)."""
        src, dst = data["src"], data["dst"]
        get = data.get
        return cls((src[0], src[1]), (dst[0], dst[1]), data["status"], get("busbw_gbps"), get("expected_gbps"),
                   get("ratio"), get("relative"), get("slow"), get("round"), get("test"), get("wrong"), get("error"),
                   get("size_bytes"))


def row_columns(rows: list[PairRow]) -> dict[str, Any]:
    """:func:`pair_columns` of the rows' JSON objects, without the objects between."""
    return {
        "src": [p.src[0] for p in rows], "src_port": [p.src[1] for p in rows],
        "dst": [p.dst[0] for p in rows], "dst_port": [p.dst[1] for p in rows],
        **{f: values for f in _FIELDS for values in [[getattr(p, f) for p in rows]]
           if f not in _OPTIONAL or any(v is not None for v in values)},
    }  # fmt: skip


def rows_from_columns(cols: dict[str, Any]) -> list[PairRow]:
    """The rows of :func:`pair_columns`' columns, without JSON objects between."""
    fields = [f for f in _FIELDS if f in cols]
    ends = (cols["src"], cols["src_port"], cols["dst"], cols["dst_port"])
    if len(fields) == len(_FIELDS):
        return [PairRow((s, sp), (d, dp), *rest) for s, sp, d, dp, *rest in zip(
            *ends, *(cols[f] for f in fields), strict=True)]
    return [PairRow((s, sp), (d, dp), **dict(zip(fields, rest, strict=True)))
            for s, sp, d, dp, *rest in zip(*ends, *(cols[f] for f in fields), strict=True)]


def pair_columns(pairs: list[dict[str, Any]]) -> dict[str, Any]:
    """The pair list (as JSON objects) as columns: ``src`` / ``dst`` labels, ``src_port`` / ``dst_port``,
    then one per field."""
    return {
        "src": [p["src"][0] for p in pairs], "src_port": [p["src"][1] for p in pairs],
        "dst": [p["dst"][0] for p in pairs], "dst_port": [p["dst"][1] for p in pairs],
        **{f: [p.get(f) for p in pairs] for f in _FIELDS if any(f in p for p in pairs)},
    }  # fmt: skip


def from_pair_columns(cols: dict[str, Any]) -> list[dict[str, Any]]:
    """Inverse of :func:`pair_columns`."""
    fields = [f for f in _FIELDS if f in cols]
    return [
        {"src": [s, sp], "dst": [d, dp], **dict(zip(fields, rest, strict=True))}
        for s, sp, d, dp, *rest in zip(cols["src"], cols["src_port"], cols["dst"], cols["dst_port"],
                                       *(cols[f] for f in fields), strict=True)
    ]
