"""The host map: which scheduler host (and rail) an HCA belongs to when its description does not say.

On real fabrics many HCAs keep their firmware's default node description
(``MT4129 ConnectX7   Mellanox Technologies``) because nothing on the host set
it, so the fabric alone cannot tell whose HCA it is. A host map names them::

    # CSV: a header, then one HCA per line; give exactly one of guid, lid, description
    guid,lid,description,host,rail
    0xe09d730300858d88,,,a06-p1-dgx-02-c06,5
    ,495,,a06-p1-dgx-02-c08,5

    # YAML: a list of the same entries
    - {guid: "0xe09d730300858d88", host: a06-p1-dgx-02-c06, rail: 5}
    - {lid: 495, host: a06-p1-dgx-02-c08}

``guid`` is the node GUID (any form the tools print), ``lid`` a CA port's LID,
``description`` the exact node description; ``rail`` (optional) is the HCA's rail
index on its host, 0-based (without it, the rail of the leaf the HCA is cabled to).
Strict: an unknown column or key, a bad GUID or LID, a row naming more or less
than one HCA, or the same HCA twice is a ConfigError naming the file and the line.
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fabricdoc.errors import ConfigError
from fabricdoc.model.ib import guid_id
from fabricdoc.model.inputs import compose_yaml, read_text

_KEYS = ("guid", "lid", "description")
_COLUMNS = {*_KEYS, "host", "rail"}
_HOST = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_MAX_UNICAST_LID = 0xBFFF


@dataclass(frozen=True)
class HostMapEntry:
    """One HCA -> host line: exactly one of ``guid``, ``lid``, ``description`` is set."""

    host: str
    rail: int | None
    guid: str | None
    lid: int | None
    description: str | None
    line_no: int

    @property
    def key(self) -> tuple[str, str | int]:
        if self.guid is not None:
            return ("guid", self.guid)
        if self.lid is not None:
            return ("lid", self.lid)
        return ("description", self.description or "")


@dataclass(frozen=True)
class HostMap:
    """Every entry of one host map file, looked up by GUID, LID or description."""

    source: str
    entries: tuple[HostMapEntry, ...]

    def find(self, guid: str | None, lids: tuple[int, ...], description: str) -> HostMapEntry | None:
        """The entry for an HCA: by GUID first, then any of its ports' LIDs, then its description."""
        for entry in self.entries:
            if entry.guid is not None and entry.guid == guid:
                return entry
        for entry in self.entries:
            if entry.lid is not None and entry.lid in lids:
                return entry
        for entry in self.entries:
            if entry.description is not None and entry.description == description:
                return entry
        return None


def load_host_map(path: str | Path) -> HostMap:
    """A host map from a CSV (``.csv``) or YAML (``.yaml``/``.yml``) file."""
    p = Path(path)
    text = read_text(p, "host map")
    if p.suffix.lower() == ".csv":
        entries = _from_csv(text, str(p))
    elif p.suffix.lower() in (".yaml", ".yml"):
        entries = _from_yaml(text, str(p))
    else:
        raise ConfigError(f"{p}: a host map is a .csv or .yaml file")
    _no_duplicates(entries, str(p))
    return HostMap(str(p), tuple(entries))


def _from_csv(text: str, source: str) -> list[HostMapEntry]:
    header: list[str] | None = None
    entries = []
    for no, raw in enumerate(text.splitlines(), 1):
        if not raw.strip() or raw.lstrip().startswith("#"):
            continue
        try:
            cells = [c.strip() for c in next(csv.reader([raw]))]
        except csv.Error as exc:
            raise ConfigError(f"{source}:{no}: not a CSV row: {exc}") from None
        if header is None:
            header = [c.lower() for c in cells]
            unknown = [c for c in header if c not in _COLUMNS]
            if unknown:
                raise ConfigError(f"{source}:{no}: unknown column {unknown[0]!r} (columns: guid, lid, "
                                  f"description, host, rail)")
            if "host" not in header or not set(header) & set(_KEYS):
                raise ConfigError(f"{source}:{no}: the header needs a host column and one of guid, lid, description")
            continue
        if len(cells) != len(header):
            raise ConfigError(f"{source}:{no}: {len(cells)} fields, the header has {len(header)}")
        entries.append(_entry(dict(zip(header, cells, strict=True)), source, no))
    if header is None:
        raise ConfigError(f"{source}: empty host map (no header line)")
    return entries


def _from_yaml(text: str, source: str) -> list[HostMapEntry]:
    root = compose_yaml(text, source)
    if root is None:
        raise ConfigError(f"{source}: empty host map")
    if root.tag != "tag:yaml.org,2002:seq":
        raise ConfigError(f"{source}:{root.start_mark.line + 1}: a host map is a list of entries")
    entries = []
    for item in root.value:
        no = item.start_mark.line + 1
        if item.tag != "tag:yaml.org,2002:map":
            raise ConfigError(f"{source}:{no}: an entry is a mapping (guid/lid/description, host, rail)")
        fields: dict[str, str] = {}
        for key_node, value_node in item.value:
            key = str(key_node.value)
            if key not in _COLUMNS:
                raise ConfigError(f"{source}:{key_node.start_mark.line + 1}: unknown key {key!r} (keys: guid, lid, "
                                  f"description, host, rail)")
            if not isinstance(value_node.value, str):
                raise ConfigError(f"{source}:{value_node.start_mark.line + 1}: {key} must be a plain value")
            fields[key] = value_node.value.strip()
        entries.append(_entry(fields, source, no))
    return entries


def _entry(fields: dict[str, Any], source: str, no: int) -> HostMapEntry:
    given = [k for k in _KEYS if fields.get(k)]
    if len(given) != 1:
        raise ConfigError(f"{source}:{no}: give exactly one of guid, lid, description (got {', '.join(given) or 'none'})")
    host = fields.get("host") or ""
    if not _HOST.match(host):
        raise ConfigError(f"{source}:{no}: host {host!r} is not a host name")
    return HostMapEntry(
        host=host,
        rail=_rail(fields.get("rail") or "", source, no),
        guid=_guid(fields["guid"], source, no) if given[0] == "guid" else None,
        lid=_lid(fields["lid"], source, no) if given[0] == "lid" else None,
        description=fields["description"] if given[0] == "description" else None,
        line_no=no,
    )


def _guid(text: str, source: str, no: int) -> str:
    t = text.strip()
    if not re.fullmatch(r"(?:0x|[SHR]-)?[0-9a-fA-F]{1,16}", t):
        raise ConfigError(f"{source}:{no}: guid {text!r} is not a GUID (0x + up to 16 hex digits)")
    return guid_id(t if not t.startswith("0x") else t[2:])


def _lid(text: str, source: str, no: int) -> int:
    try:
        lid = int(text, 0)
    except ValueError:
        raise ConfigError(f"{source}:{no}: lid {text!r} is not a number") from None
    if not 1 <= lid <= _MAX_UNICAST_LID:
        raise ConfigError(f"{source}:{no}: lid {lid} is not a unicast LID (1..{_MAX_UNICAST_LID})")
    return lid


def _rail(text: str, source: str, no: int) -> int | None:
    if not text:
        return None
    if not text.isdigit() or len(text) > 4:
        raise ConfigError(f"{source}:{no}: rail {text!r} is not a whole number from 0 to 9999")
    return int(text)


def _no_duplicates(entries: list[HostMapEntry], source: str) -> None:
    seen: dict[tuple[str, str | int], int] = {}
    rails: dict[tuple[str, int], int] = {}
    for e in entries:
        if e.key in seen:
            raise ConfigError(f"{source}:{e.line_no}: {e.key[0]} {e.key[1]} is already mapped on line {seen[e.key]}")
        seen[e.key] = e.line_no
        if e.rail is not None:
            if (e.host, e.rail) in rails:
                raise ConfigError(f"{source}:{e.line_no}: {e.host} rail {e.rail} is already given on line "
                                  f"{rails[(e.host, e.rail)]}")
            rails[(e.host, e.rail)] = e.line_no
