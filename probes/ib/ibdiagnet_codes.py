"""How ibdiagnet prints values and PortInfo codes: its "not available" forms, and the
state, width and speed codes of its files.

Values the device does not give (``N/A``, ``-1``, ``0xfffffffffffffffe``) are
``None``, never 0.
"""

from __future__ import annotations

# PortInfo codes as ibdiagnet prints them in PORTS (IBTA 14.2.5.6).
PORT_STATES = {1: "Down", 2: "Init", 3: "Armed", 4: "Active"}
PHYS_STATES = {1: "Sleep", 2: "Polling", 3: "Disabled", 4: "PortConfigurationTraining", 5: "LinkUp",
               6: "LinkErrorRecovery", 7: "PhyTest"}
WIDTH_LANES = {1: 1, 2: 4, 4: 8, 8: 12, 16: 2}
NODE_TYPES = {1: "Ca", 2: "Switch", 3: "Rt"}
# ibdiagnet's LinkSpeed* fields are 32 bits: byte 1 the IBTA speeds, byte 2 the extended
# speeds, byte 3 Mellanox's (FDR10) -- the comment above START_PORTS in the file says so.
_REGULAR = {1: "SDR", 2: "DDR", 4: "QDR"}
_EXTENDED = {1: "FDR", 2: "EDR", 4: "HDR", 8: "NDR", 16: "XDR"}
_MLNX = {1: "FDR10"}
# .lst / .net_dump print the data rate per lane in Gb/s.
_LANE_RATE_NAMES = {"2.5": "SDR", "5": "DDR", "10": "QDR", "14": "FDR", "25": "EDR", "50": "HDR",
                    "100": "NDR", "200": "XDR", "FDR10": "FDR10"}
_NA = {"N/A", "NA", ""}


def _int(text: str) -> int | None:
    """A number as ibdiagnet prints it (decimal or 0x-hex); its "not available" forms are None."""
    t = text.strip()
    if t in _NA or t == "-1" or t.lower() == "0xfffffffffffffffe":
        return None
    return int(t, 0)


def active_speed(code: int) -> str | None:
    """The speed a LinkSpeedActv code names: the extended byte wins, then FDR10, then the IBTA byte."""
    ext, mlnx, regular = (code >> 8) & 0xFF, (code >> 16) & 0xFF, code & 0xFF
    if ext:
        return _EXTENDED.get(ext)
    if mlnx:
        return _MLNX.get(mlnx)
    return _REGULAR.get(regular)


def max_speed(code: int) -> str | None:
    """The fastest speed a LinkSpeedSup/En code allows (None for 0: nothing said)."""
    ext, mlnx, regular = (code >> 8) & 0xFF, (code >> 16) & 0xFF, code & 0xFF
    for byte, names in ((ext, _EXTENDED), (mlnx, _MLNX), (regular, _REGULAR)):
        bits = [bit for bit in names if byte & bit]
        if bits:
            return names[max(bits)]
    return None


def max_width(code: int) -> int | None:
    """The widest lane count a LinkWidthSup/En code allows (bits: 1x, 4x, 8x, 12x, 2x; None for 0)."""
    lanes = [n for bit, n in WIDTH_LANES.items() if code & bit]
    return max(lanes) if lanes else None
