"""Faults a fabric file (or --faults FILE) injects into the simulator: kinds and their records."""

from __future__ import annotations

from dataclasses import dataclass

from fabricdoc.errors import TopologyError
from fabricdoc.model.records import LinkKey, PortRef
from fabricdoc.model.topology import Fabric

FAULT_KINDS = (
    "down",  # cable unplugged / port disabled
    "flapping",  # link goes down and up during the interval
    "degraded",  # trained below what both ends support (width or speed)
    "slow",  # delivers less than its rate without any counter showing it
    "lossy",  # symbol / receive errors, link-level retries
    "congested",  # egress queue backs up: XmitWait, discards, PFC pauses
    "dead_switch",  # every port of a switch down
    "bad_nic",  # a host port that drops and corrupts
)


@dataclass(frozen=True)
class Fault:
    """One injected fault. ``port`` names a cable by either end; ``switch`` a whole switch."""

    kind: str
    port: PortRef | None = None
    switch: str | None = None
    lanes: int | None = None
    lane_gbps: float | None = None
    factor: float | None = None  # for "slow" and "congested": remaining bandwidth fraction
    rate_per_hour: float = 3600.0  # for "lossy": symbol errors per hour
    flaps: int = 3  # for "flapping"

    def link(self, fabric: Fabric) -> LinkKey:
        if self.port is None:
            raise TopologyError(f"fault {self.kind!r} needs a port")
        link = fabric.link_at(self.port)
        if link is None:
            raise TopologyError(f"fault {self.kind!r}: port {self.port} is not cabled")
        return link.key
