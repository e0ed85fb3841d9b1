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
    "rcv_errors",  # receive errors (bad packets) at ``port``, no symbol errors
    "congested",  # egress queue backs up at ``port``: XmitWait, discards; link at full width and speed
    "hung",  # carries no data while it reports Active: tests through it start and never finish
    "dead_switch",  # every port of a switch down
    "bad_nic",  # a host port that drops and corrupts: host-side receive errors, switch side clean
    "silent_hca",  # a host port's CA stops answering (no counters, no state); its switch port stays up
    # Load-only faults: full rate for up to ``flows`` concurrent flows, ``factor`` of it above (no counter shows them).
    "load_collapse",  # a cable (either direction) that falls apart at full load
    "incast_pfc",  # PFC pause storm on the switch egress toward ``port`` when more than ``flows`` flows converge
    "switch_collapse",  # a switch (``switch``) whose shared buffer collapses when more than ``flows`` flows cross it
    # a switch (``switch``) that throttles (thermal or power capping): it forwards ``flows`` flows' worth of line
    # rate at most, so above that every flow through it gets its share (the more flows, the slower each)
    "switch_throttle",
)
# Kinds that sit on a host's own port.
HOST_FAULT_KINDS = frozenset({"bad_nic", "silent_hca"})
# Kinds that only show when several flows meet: pair rounds (one flow per cable direction) never see them.
LOAD_FAULT_KINDS = frozenset({"load_collapse", "incast_pfc", "switch_collapse", "switch_throttle"})
# Kinds that name a whole switch instead of a port.
SWITCH_FAULT_KINDS = frozenset({"dead_switch", "switch_collapse", "switch_throttle"})


@dataclass(frozen=True)
class Fault:
    """One injected fault. ``port`` names a cable by either end; ``switch`` a whole switch."""

    kind: str
    port: PortRef | None = None
    switch: str | None = None
    lanes: int | None = None
    lane_gbps: float | None = None
    factor: float | None = None  # for "slow", "congested", ...: remaining bandwidth fraction
    rate_per_hour: float = 3600.0  # for "lossy": symbol errors per hour
    flaps: int = 3  # for "flapping"
    flows: int = 1  # for load-only kinds: the most concurrent flows it still carries at full rate

    def link(self, fabric: Fabric) -> LinkKey:
        """The cable this fault sits on (``port`` names either end)."""
        if self.port is None:
            raise TopologyError(f"fault {self.kind!r} needs a port")
        link = fabric.link_at(self.port)
        if link is None:
            raise TopologyError(f"fault {self.kind!r}: port {self.port} is not cabled")
        return link.key
