"""Parse saved ``perfquery`` output (one or more runs, concatenated) into per-port counter samples.

perfquery prints one block per port it read, a ``#`` header then dotted ``Name:....value`` lines:

- ``# Port counters: Lid 3 port 5 (CapMask: 0x1300)``: PortCounters (plain ``perfquery``, ``-l``);
  IBTA register widths (SymbolErrorCounter 16 bits, PortXmitData 32 bits...), saturating;
- ``# Port extended counters: Lid 3 port 5 (CapMask: ... CapMask2: ...)``: PortCountersExtended
  (``-x``); every counter in it is a 64-bit register that wraps, the error counters after
  ``CounterSelect2`` included (a port with AdditionalPortCountersExtended);
- ``# PortRcvErrorDetails counters: Lid 3 port 5`` and the other optional attributes
  (``-E``, ``-D``, ``-X``, ``-S``, ``-T``...): kept under their own names, with the attribute as
  the sample's source.

Port 255 is every port of the node summed (``perfquery -a``, or a PMA's AllPortSelect): not one
port's counters, so it never becomes a PortCounters; :attr:`PerfqueryDump.aggregates` keeps it
for the caller to report. PortXmitData and PortRcvData count 4-byte words (the canonical mapping
in :mod:`fabricdoc.model.counters` scales them). The dump names ports by LID; placing a LID on
a fabric node is the caller's job (:meth:`PerfquerySample.on`).
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass

from fabricdoc.probes.ib import MAX_PORTS, check_port
from fabricdoc.probes.ib.common import IBTA_ERRORS, check_register, tool_warning, whole_lines

from fabricdoc.errors import ParseError
from fabricdoc.model.ib import ToolWarning, guid_id
from fabricdoc.model.records import PortCounters

ALL_PORTS = 255  # perfquery's and the PMA's "every port of the node"
MAX_LID = 0xBFFF  # unicast LIDs are 1..0xBFFF

_HEAD_BASIC = re.compile(
    r"^# Port counters: Lid (\d{1,6}) port (\d{1,4}) \(CapMask: 0x[0-9A-Fa-f]{1,8}\)$"
)
_HEAD_EXT = re.compile(
    r"^# Port extended counters: Lid (\d{1,6}) port (\d{1,4}) "
    r"\(CapMask: 0x[0-9A-Fa-f]{1,8} CapMask2: 0x[0-9A-Fa-f]{1,8}\)$"
)
# infiniband-diags' common_func: "# <Attribute> counters: <portid> port <n>" (-E, -D, -X, -S, -T, ...).
_HEAD_OTHER = re.compile(
    r"^# ([A-Z][A-Za-z0-9]*(?: [A-Za-z0-9-]+)*) counters: Lid (\d{1,6}) port (\d{1,4})$"
)
# A value is a counter (decimal, at most 20 digits: 2^64-1) or a select/mask field (hex).
_FIELD = re.compile(r"^([A-Za-z][A-Za-z0-9]*):\.*(?:(\d{1,20})|0x([0-9A-Fa-f]{1,16}))$")
_LONG_NUMBER = re.compile(r"^[A-Za-z][A-Za-z0-9]*:\.*(?:\d{21,}|0x[0-9A-Fa-f]{17,})$")
_GUID_IN_NAME = re.compile(r"(?<![0-9A-Za-z])0x([0-9A-Fa-f]{16})(?![0-9A-Za-z])")

BASIC, EXTENDED = "PortCounters", "PortCountersExtended"
# Where each attribute's block ends: a block without these fields was cut short.
_REQUIRED: dict[str, tuple[str, ...]] = {
    BASIC: (*IBTA_ERRORS, "PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"),
    EXTENDED: ("PortXmitData", "PortRcvData", "PortXmitPkts", "PortRcvPkts"),
    "PortRcvErrorDetails": (
        "PortLocalPhysicalErrors",
        "PortMalformedPktErrors",
        "PortBufferOverrunErrors",
        "PortDLIDMappingErrors",
        "PortVLMappingErrors",
        "PortLoopingErrors",
    ),
    "PortXmitDiscardDetails": (
        "PortInactiveDiscards",
        "PortNeighborMTUDiscards",
        "PortSwLifetimeLimitDiscards",
        "PortSwHOQLifetimeLimitDiscards",
    ),
}
# PortCountersExtended with AdditionalPortCountersExtended: CounterSelect2 then these (64-bit each).
_EXT_ERRORS = IBTA_ERRORS
# Fields of the basic attribute that fabricdoc's counter table does not know, with their IBTA width.
_BASIC_BITS = {"QP1Dropped": 16}
# The sample's source per attribute (the option that prints it): samples pair up by source.
_SOURCE = {
    BASIC: "perfquery",
    EXTENDED: "perfquery -x",
    "PortRcvErrorDetails": "perfquery -E",
    "PortXmitDiscardDetails": "perfquery -D",
    "PortXmitDataSL": "perfquery -X",
    "PortRcvDataSL": "perfquery -S",
}


@dataclass(frozen=True)
class PerfquerySample:
    """One block of a dump: the counters of port ``port`` of the node at ``lid``.

    ``attribute`` is the PerfMgt attribute the block shows (``PortCounters``,
    ``PortCountersExtended``, ``PortRcvErrorDetails``...); ``values`` the counters under their
    real names; ``width_bits`` the register width of each, where it is not the IBTA
    PortCounters width of its name (64 for every counter of an extended block).
    ``guid`` is the node GUID the dump's file name gives, else None; ``line_no`` the header's line.
    """

    lid: int
    port: int
    attribute: str
    values: dict[str, int]
    width_bits: dict[str, int]
    line_no: int
    guid: str | None = None

    @property
    def source(self) -> str:
        """How the sample was read (``perfquery``, ``perfquery -x``, ...): two samples pair up by it."""
        return _SOURCE.get(self.attribute, f"perfquery {self.attribute}")

    def on(self, node: str, timestamp: float) -> PortCounters:
        """This sample as a PortCounters of fabric node ``node`` (the LID placed by the caller)."""
        return PortCounters(
            node=node,
            port=self.port,
            timestamp=timestamp,
            values=dict(self.values),
            source=self.source,
            width_bits=dict(self.width_bits),
        )


@dataclass(frozen=True)
class PerfqueryDump:
    """What one saved file of perfquery output holds: per-port samples, in the order printed;
    the all-port sums (port 255) kept apart; the warnings the tool printed among its output."""

    samples: tuple[PerfquerySample, ...]
    aggregates: tuple[PerfquerySample, ...]
    warnings: tuple[ToolWarning, ...]
    guid: str | None = None

    def counters(self, timestamp: float | None = None) -> list[PortCounters]:
        """Every per-port sample as PortCounters named after its node GUID when the dump gives one,
        else ``lid:<n>`` (for a caller with no fabric to place the LIDs on)."""
        ts = time.time() if timestamp is None else timestamp
        return [s.on(s.guid or f"lid:{s.lid}", ts) for s in self.samples]


def guid_in_name(path: str | os.PathLike[str]) -> str | None:
    """The node GUID a saved dump's file name carries (``perfquery-l-x_0x506b4b03005c2740.out``),
    as ``0x%016x``; None when the name holds no 16-digit GUID."""
    m = _GUID_IN_NAME.search(os.path.basename(os.fspath(path)))
    return guid_id(m.group(1)) if m else None


def _whole_last_line(line: str) -> bool:
    """A saved file's last line without its line end is whole when it is a complete field line."""
    return bool(_FIELD.match(line.strip())) or not line.strip()


def parse_perfquery(
    text: str, source: str = "perfquery", *, guid: str | None = None
) -> PerfqueryDump:
    """Parse the text of one or more concatenated perfquery outputs.

    ``guid`` is the queried node's GUID when known (from the file name: :func:`guid_in_name`).
    Blank lines and the warnings infiniband-diags prints (``ibwarn: ...``, kept in
    ``warnings``) are skipped; anything else that is not a block header or a field line is a
    ParseError naming ``source`` and the line, and so are: a tool failure (``iberror:``), a
    field before any header, a number wider than its register (or than 20 digits), a PortSelect
    that is not the header's port, a port outside 0..255, a block missing the fields its
    attribute always prints (output cut short), and a dump with no block at all (empty file).
    """
    if text and not text.endswith(("\n", "\r")) and _whole_last_line(text.splitlines()[-1]):
        text += "\n"  # pasted or edited without the final line end, last line whole
    lines = whole_lines(text, source)
    node_guid = guid_id(guid) if guid else None
    samples: list[PerfquerySample] = []
    aggregates: list[PerfquerySample] = []
    warnings: list[ToolWarning] = []
    block: dict | None = None

    def close() -> None:
        if block is None:
            return
        attr, values, no = block["attribute"], block["values"], block["line_no"]
        required = _REQUIRED.get(attr, ())
        if attr == EXTENDED and "CounterSelect2" in block["selects"]:
            required = required + _EXT_ERRORS
        missing = [f for f in required if f not in values]
        if missing or not values:
            what = f"no {missing[0]}" if missing else "no counters"
            raise ParseError(
                source, no, block["header"], f"{attr} block cut short ({what}): output ends early"
            )
        if "PortSelect" not in block["selects"]:
            raise ParseError(source, no, block["header"], f"{attr} block has no PortSelect line")
        widths = {name: 64 for name in values} if attr == EXTENDED else {}
        sample = PerfquerySample(
            block["lid"], block["port"], attr, dict(values), widths, no, node_guid
        )
        (aggregates if block["port"] == ALL_PORTS else samples).append(sample)

    for no, raw in enumerate(lines, 1):
        line = raw.strip()
        if not line:
            continue
        head = _header(line)
        if head is not None:
            close()
            attr, lid, port = head
            if not 1 <= lid <= MAX_LID:
                raise ParseError(source, no, raw, f"LID {lid} is not a unicast LID (1..{MAX_LID})")
            check_port(port, source, no, raw, lowest=0, highest=MAX_PORTS)
            block = {
                "attribute": attr,
                "lid": lid,
                "port": port,
                "values": {},
                "selects": {},
                "line_no": no,
                "header": raw,
            }
            continue
        if line.startswith("#"):
            raise ParseError(source, no, raw, "not a perfquery block header")
        warning = tool_warning(raw, source, no)
        if warning is not None:
            warnings.append(warning)
            continue
        m = _FIELD.match(line)
        if m is None:
            if _LONG_NUMBER.match(line):
                raise ParseError(
                    source, no, raw, "a number wider than any counter (2^64-1 has 20 digits)"
                )
            raise ParseError(source, no, raw, "not a perfquery 'Name:....value' line")
        if block is None:
            raise ParseError(
                source, no, raw, "a counter line before any '# ... counters: Lid N port P' header"
            )
        name, dec, hexa = m.groups()
        if name in block["values"] or name in block["selects"]:
            raise ParseError(source, no, raw, f"{name} twice in one block")
        if dec is None or name == "PortSelect":
            number = int(dec) if dec is not None else int(hexa, 16)
            if name == "PortSelect" and number != block["port"]:
                raise ParseError(
                    source, no, raw, f"PortSelect {number} under a header for port {block['port']}"
                )
            block["selects"][name] = number
            continue
        value = int(dec)
        bits = 64 if block["attribute"] == EXTENDED else _BASIC_BITS.get(name)
        check_register(name, value, bits, source, no, raw)
        block["values"][name] = value
    close()
    if not samples and not aggregates:
        why = "empty file" if not text.strip() else "no '# Port counters: Lid N port P' block"
        raise ParseError(source, 0, "", f"no perfquery counters: {why}")
    return PerfqueryDump(tuple(samples), tuple(aggregates), tuple(warnings), node_guid)


def _header(line: str) -> tuple[str, int, int] | None:
    """(attribute, LID, port) of a block header, else None."""
    m = _HEAD_BASIC.match(line)
    if m:
        return BASIC, int(m.group(1)), int(m.group(2))
    m = _HEAD_EXT.match(line)
    if m:
        return EXTENDED, int(m.group(1)), int(m.group(2))
    m = _HEAD_OTHER.match(line)
    if m:
        return m.group(1), int(m.group(2)), int(m.group(3))
    return None
