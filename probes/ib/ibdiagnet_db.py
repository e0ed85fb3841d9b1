"""The section reader of ``ibdiagnet2.db_csv``: ``START_<SECTION>`` / header / rows /
``END_<SECTION>`` blocks, every section read strictly (a row whose field count differs
from its header is an error). The sections fabricdoc uses are decoded in
:mod:`.ibdiagnet_sections`.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass

from fabricdoc.probes.ib.common import whole_lines

from fabricdoc.errors import ParseError


@dataclass(frozen=True)
class DbSection:
    """One ``START_X`` .. ``END_X`` block: its header and rows, each row with its line number."""

    name: str
    header: tuple[str, ...]
    rows: tuple[tuple[int, tuple[str, ...]], ...]
    line_no: int

    def records(self) -> list[tuple[int, dict[str, str]]]:
        return [(no, dict(zip(self.header, row, strict=True))) for no, row in self.rows]


@dataclass(frozen=True)
class IbdiagDb:
    """Every section of one ``ibdiagnet2.db_csv``, by name."""

    source: str
    sections: dict[str, DbSection]

    def get(self, name: str) -> DbSection | None:
        return self.sections.get(name)


def parse_db_csv(text: str, source: str = "ibdiagnet2.db_csv") -> IbdiagDb:
    """Every section of ``ibdiagnet2.db_csv``; a section without its END, or a row with
    more or fewer fields than its header, is a ParseError naming the line."""
    lines = whole_lines(text, source)
    sections: dict[str, DbSection] = {}
    name: str | None = None
    start = 0
    header: tuple[str, ...] | None = None
    rows: list[tuple[int, tuple[str, ...]]] = []
    for no, raw in enumerate(lines, 1):
        if name is None:
            if not raw.strip() or raw.startswith("#"):
                continue
            if not raw.startswith("START_"):
                raise ParseError(source, no, raw, "outside a START_/END_ section")
            name, start, header, rows = raw.strip()[6:], no, None, []
            continue
        if raw.strip() == f"END_{name}":
            if header is None:
                raise ParseError(source, start, lines[start - 1], "section without a header line")
            if name in sections:
                raise ParseError(source, start, lines[start - 1], f"section {name} appears twice")
            sections[name] = DbSection(name, header, tuple(rows), start)
            name = None
            continue
        if not raw.strip():
            raise ParseError(source, no, raw, f"no END_{name} before this blank line: the section ends early")
        try:
            fields = tuple(f.strip() for f in next(csv.reader([raw])))
        except csv.Error as exc:
            raise ParseError(source, no, raw[:120], f"not a CSV row: {exc}") from None
        if header is None:
            header = fields
        elif len(fields) != len(header):
            raise ParseError(source, no, raw, f"{name} row has {len(fields)} fields, its header {len(header)}")
        else:
            rows.append((no, fields))
    if name is not None:
        raise ParseError(source, start, lines[start - 1], f"no END_{name}: the file ends early")
    return IbdiagDb(source, sections)
