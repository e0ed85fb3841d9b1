"""What every infiniband-diags parser shares: the whole-lines check and the 64-bit counter names."""

from __future__ import annotations

from fabricdoc.errors import ParseError

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


def whole_lines(text: str, source: str) -> list[str]:
    """The output's lines; output cut in the middle of a line (a killed tool) is a ParseError."""
    lines = text.splitlines()
    if text and not text.endswith("\n") and lines:
        raise ParseError(source, len(lines), lines[-1], "output ends in the middle of a line")
    return lines

