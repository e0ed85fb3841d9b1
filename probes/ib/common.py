"""What every infiniband-diags parser shares: the whole-lines check, the tools' own warning
lines, IBTA register checks and the 64-bit counter names."""

from __future__ import annotations

import re
from collections.abc import Callable

from fabricdoc.errors import ParseError
from fabricdoc.model.counters import register_problem
from fabricdoc.model.ib import IB_SPEEDS, ToolWarning

# The IBTA PortCounters error counters (and XmitWait), in the order the tools print them: what
# ibqueryerrors checks, and what PortCountersExtended's additional counters repeat at 64 bits.
IBTA_ERRORS = (
    "SymbolErrorCounter",
    "LinkErrorRecoveryCounter",
    "LinkDownedCounter",
    "PortRcvErrors",
    "PortRcvRemotePhysicalErrors",
    "PortRcvSwitchRelayErrors",
    "PortXmitDiscards",
    "PortXmitConstraintErrors",
    "PortRcvConstraintErrors",
    "LocalLinkIntegrityErrors",
    "ExcessiveBufferOverrunErrors",
    "VL15Dropped",
    "PortXmitWait",
)

# Counters the extended (64-bit) PortCountersExtended attribute reports under the same name
# as the 32-bit PortCounters one.
EXTENDED_WIDTH = {
    "PortXmitData": 64,
    "PortRcvData": 64,
    "PortXmitPkts": 64,
    "PortRcvPkts": 64,
    "PortUnicastXmitPkts": 64,
    "PortUnicastRcvPkts": 64,
    "PortMulticastXmitPkts": 64,
    "PortMulticastRcvPkts": 64,
    "PortXmitWait": 64,
}

# What the libraries under the tools print to stderr (often captured with the output, 2>&1):
# libibmad/libibumad IBWARN ("ibwarn: [1234] mad_rpc: ..."), libibnetdisc IBND_ERROR
# ("src/query_smp.c:195; umad (DR path ...) bad status 110; ..."), and the tools' own
# "WARN: ..." lines. The output around them is still whole.
_WARNING = re.compile(r"^(?:ibwarn: |[\w./-]+\.c:\d+; |WARN: |ibnd_\w+: )")
# ibdiag_common's IBEXIT/IBERROR: the tool gave up ("ibroute: iberror: failed: ...").
_FATAL = re.compile(r"^(?:[\w.-]+: )?iberror: ")

# Lane rates as iblinkinfo and the PortInfo dump print them (Gb/s per lane) -> the IBTA name.
SPEED_BY_GBPS = {
    2.5: "SDR",
    5.0: "DDR",
    10.0: "QDR",
    10.3125: "FDR10",
    14.0625: "FDR",
    25.78125: "EDR",
    53.125: "HDR",
    106.25: "NDR",
    212.5: "XDR",
}


# No field of these tools is longer: a node description is 64 bytes (IBTA NodeDescription).
_HUGE_NUMBER = re.compile(r"\d{65,}")


def whole_lines(text: str, source: str, complete: Callable[[str], bool] | None = None) -> list[str]:
    """The output's lines; output cut in the middle of a line (a killed tool) is a ParseError,
    and so is a number longer than any field the tools print (65 digits or more).

    A saved file's last line often has no line end (an editor, a paste): ``complete`` says
    whether such a line is whole (it ends the way every line of its kind ends); only then is it read."""
    lines = text.splitlines()
    if text and not text.endswith(("\n", "\r")) and lines and not (complete and complete(lines[-1])):
        raise ParseError(source, len(lines), lines[-1], "output ends in the middle of a line")
    for no, line in enumerate(lines, 1):
        if _HUGE_NUMBER.search(line):
            raise ParseError(source, no, line, "a number longer than any field the tool prints")
    return lines


def tool_warning(line: str, source: str, line_no: int) -> ToolWarning | None:
    """The warning on this line when it is one the tool or its libraries print, else None.

    A fatal ``iberror:`` line is a ParseError: the tool stopped, so what follows is missing.
    """
    text = line.strip()
    if _FATAL.match(text):
        raise ParseError(source, line_no, line, "the tool failed (iberror): its output is incomplete")
    if _WARNING.match(text):
        return ToolWarning(source, line_no, text)
    return None


def check_register(name: str, value: int, width_bits: int | None, source: str, line_no: int, line: str) -> None:
    """Refuse a counter reading its IBTA register cannot hold (SymbolErrorCounter is 16 bits:
    70000 is not a reading, and neither is a negative number)."""
    why = register_problem(name, value, width_bits)
    if why:
        raise ParseError(source, line_no, line, f"{name} = {value}: {why}")


def speed_name(lane_gbps: float) -> str | None:
    """The IBTA name of a lane rate (``25.78125`` -> ``EDR``), None when it is none of them."""
    return SPEED_BY_GBPS.get(lane_gbps)


def lane_gbps(speed: str) -> float | None:
    """The lane rate of an IBTA speed name (``NDR`` -> 106.25), None when unknown."""
    return IB_SPEEDS.get(speed.upper())
