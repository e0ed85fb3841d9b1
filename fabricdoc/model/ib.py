"""InfiniBand records shared by the parsers, the fabric builder and the sources.

What ibnetdiscover, ibroute, dump_fts and ibdiagnet describe (nodes, cabled
ports, a switch's LFT, cable modules), the warnings the tools print among
their output, the IBTA lane rates by name, and GUIDs in the one form
fabricdoc keys on.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from fabricdoc.model.records import PortRef, PortState


@functools.lru_cache(maxsize=65536)
def guid_id(text: str) -> str:
    """A GUID in any form the tools print (``S-0002c9...``, ``0x2c9...``, ``2c9...``) as ``0x%016x``."""
    t = text.strip()
    if len(t) > 2 and t[1] == "-" and t[0] in "SHR":
        t = t[2:]
    return f"0x{int(t, 16):016x}"


@dataclass(frozen=True)
class ToolWarning:
    """A warning an infiniband-diags tool printed among its output, kept with where it stood.

    libibmad prints ``ibwarn: [pid] func: ...``; libibnetdisc prints
    ``src/query_smp.c:195; umad (DR path ...) bad status 110; Connection timed out``
    when a MAD to one node times out. The rest of the output is still good, so
    these are warnings (a ProbeRun with status ``warning``), never parse errors.
    """

    source: str
    line_no: int
    text: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line_no}: {self.text}"


# What a live discovery observed about an expected port that is not a state any tool reported:
# the CA (or switch) behind an up switch port did not answer ibnetdiscover's MADs, or nothing at
# all was read about the port (neither end in the discovery, iblinkinfo silent about both).
NO_RESPONSE = "NoResponse"
NOT_DISCOVERED = "NotDiscovered"
OBSERVED_ONLY = (NO_RESPONSE, NOT_DISCOVERED)
# Where a port's expected width and speed came from, best first.
EXPECTED_FROM = ("topology", "enabled", "supported", "could_be", "majority")


@dataclass(frozen=True)
class IbPortState(PortState):
    """An InfiniBand PortState that says where its expected maximum came from and what the far end did.

    ``max_lanes_from``/``max_lane_gbps_from`` name the source of ``max_lanes``/``max_lane_gbps``: ``topology``
    (the expected fabric file), ``enabled``/``supported`` (PortInfo LinkSpeed/WidthEnabled or
    Supported of both ends), ``could_be`` (iblinkinfo's hint, or its absence: the link runs at
    what both ends support), ``majority`` (the fabric's most common trained value, last resort).
    ``far_answered`` is False when iblinkinfo printed "Port not available" for the far end.
    ``state`` is ``NO_RESPONSE``/``NOT_DISCOVERED`` only for what a live discovery observed
    (see ``OBSERVED_ONLY``); ``source`` then says which tools saw what.
    """

    max_lanes_from: str | None = None
    max_lane_gbps_from: str | None = None
    far_answered: bool | None = None


@dataclass(frozen=True)
class IbPortRecord:
    """One cabled port as ibnetdiscover prints it."""

    port: int
    remote_guid: str
    remote_port: int
    remote_description: str
    lanes: int | None
    lane_gbps: float | None
    speed: str | None  # "HDR", "EDR"...
    port_guid: str | None = None  # the CA port's own GUID (``[1](2c9...)``)
    remote_port_guid: str | None = None
    lid: int | None = None  # this port's LID (CA ports)
    remote_lid: int | None = None


@dataclass(frozen=True)
class IbNodeRecord:
    """One node record: ``Switch 36 "S-..." # "desc" ... lid 3`` or ``Ca 1 "H-..." # "desc"``."""

    type: str  # "Switch", "Ca", "Rt"
    guid: str
    num_ports: int
    description: str
    lid: int | None
    ports: tuple[IbPortRecord, ...]
    line_no: int
    system_guid: str | None = None  # sysimgguid: a SHARP aggregation node shares its switch's
    device_id: int | None = None  # devid (0x1021 ConnectX-7, 0xcf09 aggregation node, 0xd2f2 Quantum-2)
    vendor_id: int | None = None


@dataclass(frozen=True)
class IbTopology:
    """Everything ibnetdiscover printed, node by node, and the tool's own warnings among it.

    ``undescribed`` counts the cabled ports that lead to a node the text never
    describes: always 0 for a whole output, more for a capture someone trimmed
    (read with ``partial=True``); their cables are left out of the fabric.
    """

    nodes: tuple[IbNodeRecord, ...]
    warnings: tuple[ToolWarning, ...] = ()
    undescribed: int = 0

    def node(self, guid: str) -> IbNodeRecord | None:
        return next((n for n in self.nodes if n.guid == guid), None)

    @functools.cached_property
    def _lids(self) -> dict[int, PortRef]:
        return self._build_lids()

    @functools.cached_property
    def _port_guids(self) -> dict[str, PortRef]:
        return self._build_port_guids()

    def lids(self) -> dict[int, PortRef]:
        """LID -> the port that answers on it (a switch's port 0, a CA's port)."""
        return self._lids

    def port_guids(self) -> dict[str, PortRef]:
        """Port GUID -> port; a switch's ports share the switch GUID (mapped to port 0)."""
        return self._port_guids

    def _build_lids(self) -> dict[int, PortRef]:
        out: dict[int, PortRef] = {}
        for n in self.nodes:
            if n.type == "Switch":
                if n.lid:
                    out[n.lid] = PortRef(n.guid, 0)
                continue
            for p in n.ports:
                if p.lid:
                    out[p.lid] = PortRef(n.guid, p.port)
        return out

    def _build_port_guids(self) -> dict[str, PortRef]:
        out: dict[str, PortRef] = {}
        for n in self.nodes:
            if n.type == "Switch":
                out[n.guid] = PortRef(n.guid, 0)
            for p in n.ports:
                if p.port_guid:
                    out[p.port_guid] = PortRef(n.guid, p.port)
                if p.remote_port_guid:
                    out.setdefault(p.remote_port_guid, PortRef(p.remote_guid, p.remote_port))
        return out


# IBTA lane rates (Gb/s per lane, signalling) by the names ibnetdiscover and ibsim use.
IB_SPEEDS = {
    "SDR": 2.5,
    "DDR": 5.0,
    "QDR": 10.0,
    "FDR10": 10.3125,
    "FDR": 14.0625,
    "EDR": 25.78125,
    "HDR": 53.125,
    "NDR": 106.25,
    "XDR": 212.5,
}


@dataclass(frozen=True)
class IbRoute:
    """A switch's linear forwarding table as ibroute dumped it."""

    switch_guid: str
    switch_lid: int
    description: str
    lft: dict[int, int]
    destinations: dict[int, str]  # LID -> destination port GUID
    line_no: int = 0  # where the switch's dump starts in its file (0: a single dump)


@dataclass(frozen=True)
class IbRoutes:
    """Every switch's LFT from one routes file (ibroute dumps, dump_fts, ibdiagnet2.fdbs), with
    the tools' warnings that stood between the dumps."""

    routes: tuple[IbRoute, ...]
    warnings: tuple[ToolWarning, ...] = ()


@dataclass(frozen=True)
class IbCable:
    """One cable module as ibdiagnet's ``.cables`` file describes it (``--get_cable_info``).

    Readings the module does not give (``N/A``, ``-999.999 mW``, ``inf``) are
    ``None``; ``fields`` keeps every ``Key: value`` line as printed.
    """

    node_guid: str
    port: int
    vendor: str | None
    part_number: str | None
    serial: str | None
    length: str | None
    temperature_c: float | None
    rx_power_mw: tuple[float | None, ...]
    tx_power_mw: tuple[float | None, ...]
    fields: dict[str, str]
    line_no: int

