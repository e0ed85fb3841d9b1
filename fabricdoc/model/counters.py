"""Counter semantics: vendor names to fabricdoc names, register widths, deltas and rates.

Raw records keep the vendor's names (IBTA ``SymbolErrorCounter``, sysfs
``symbol_error``, mlx5 ``rx_prio3_pause``, RDMA ``np_ecn_marked_roce_packets``);
:data:`COUNTERS` maps each to one canonical name, once. IBTA PortCounters are
*saturating* registers of a per-counter width: a counter at its maximum means
"at least this many", never a wrap. Extended (64-bit) counters wrap. A counter
that went down was reset (node reboot or ``perfquery -R``): flagged, not
subtracted. Missing values stay ``None``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from fabricdoc.errors import ParseError
from fabricdoc.model.records import PortCounters, PortRef


@dataclass(frozen=True)
class CounterDef:
    """What a vendor counter means: canonical name, class, register width, unit scale.

    Several vendor names may measure one quantity at different places (``rx_bytes``
    on the netdev, ``rx_bytes_phy`` at the physical port): they are never summed;
    the one with the highest ``prefer`` is used (port-level ``_phy`` counters for
    link health). Only names marked ``summed`` (the per-priority PFC counters, one
    quantity split by priority) add up under their canonical name.
    """

    canonical: str
    cls: str  # "error", "traffic", "congestion", "event", "gauge"
    width_bits: int = 64
    saturating: bool = False
    scale: float = 1.0  # multiply a delta by this to get the canonical unit
    prefer: int = 0
    summed: bool = False

    def saturates_at(self, bits: int | None = None) -> bool:
        """Whether the register sticks at its maximum (IBTA PortCounters) rather than wrapping.

        A counter read from a 64-bit register (PortCountersExtended) wraps even when
        its 32-bit PortCounters namesake saturates.
        """
        return self.saturating and (bits or self.width_bits) < 64

    @property
    def maximum(self) -> int:
        return (1 << self.width_bits) - 1


def _ib(canonical: str, cls: str, bits: int, scale: float = 1.0) -> CounterDef:
    return CounterDef(canonical, cls, bits, saturating=bits < 64, scale=scale)


# Vendor name -> meaning. Exact names first; patterns (per priority) in PATTERNS.
COUNTERS: dict[str, CounterDef] = {
    # IBTA PortCounters (perfquery), widths from the IBTA spec; they saturate.
    "SymbolErrorCounter": _ib("symbol_errors", "error", 16),
    "LinkErrorRecoveryCounter": _ib("link_error_recovery", "error", 8),
    "LinkDownedCounter": _ib("link_downed", "event", 8),
    "PortRcvErrors": _ib("rcv_errors", "error", 16),
    "PortRcvRemotePhysicalErrors": _ib("rcv_remote_phys_errors", "error", 16),
    "PortRcvSwitchRelayErrors": _ib("rcv_switch_relay_errors", "error", 16),
    "PortXmitDiscards": _ib("xmit_discards", "congestion", 16),
    "PortXmitConstraintErrors": _ib("xmit_constraint_errors", "error", 8),
    "PortRcvConstraintErrors": _ib("rcv_constraint_errors", "error", 8),
    "LocalLinkIntegrityErrors": _ib("local_link_integrity_errors", "error", 4),
    "ExcessiveBufferOverrunErrors": _ib("buffer_overrun_errors", "error", 4),
    "VL15Dropped": _ib("vl15_dropped", "error", 16),
    "PortXmitWait": _ib("xmit_wait_ticks", "congestion", 32),
    # PortXmitData/PortRcvData count 4-byte words; canonical unit is bytes.
    "PortXmitData": _ib("xmit_bytes", "traffic", 32, 4.0),
    "PortRcvData": _ib("rcv_bytes", "traffic", 32, 4.0),
    "PortXmitPkts": _ib("xmit_packets", "traffic", 32),
    "PortRcvPkts": _ib("rcv_packets", "traffic", 32),
    "PortUnicastXmitPkts": _ib("xmit_unicast_packets", "traffic", 64),
    "PortUnicastRcvPkts": _ib("rcv_unicast_packets", "traffic", 64),
    "PortMulticastXmitPkts": _ib("xmit_multicast_packets", "traffic", 64),
    "PortMulticastRcvPkts": _ib("rcv_multicast_packets", "traffic", 64),
    # Linux /sys/class/infiniband/<dev>/ports/<n>/counters (same registers, sysfs names).
    "symbol_error": _ib("symbol_errors", "error", 16),
    "link_error_recovery": _ib("link_error_recovery", "error", 8),
    "link_downed": _ib("link_downed", "event", 8),
    "port_rcv_errors": _ib("rcv_errors", "error", 16),
    "port_rcv_remote_physical_errors": _ib("rcv_remote_phys_errors", "error", 16),
    "port_rcv_switch_relay_errors": _ib("rcv_switch_relay_errors", "error", 16),
    "port_xmit_discards": _ib("xmit_discards", "congestion", 16),
    "port_xmit_constraint_errors": _ib("xmit_constraint_errors", "error", 8),
    "port_rcv_constraint_errors": _ib("rcv_constraint_errors", "error", 8),
    "local_link_integrity_errors": _ib("local_link_integrity_errors", "error", 4),
    "excessive_buffer_overrun_errors": _ib("buffer_overrun_errors", "error", 4),
    "VL15_dropped": _ib("vl15_dropped", "error", 16),
    # The kernel reads PortXmitWait from the 32-bit PortCounters attribute: it saturates.
    "port_xmit_wait": _ib("xmit_wait_ticks", "congestion", 32),
    "port_xmit_data": CounterDef("xmit_bytes", "traffic", 64, scale=4.0),
    "port_rcv_data": CounterDef("rcv_bytes", "traffic", 64, scale=4.0),
    "port_xmit_packets": CounterDef("xmit_packets", "traffic"),
    "port_rcv_packets": CounterDef("rcv_packets", "traffic"),
    # mlx5 ethtool -S (physical port), 64-bit.
    "tx_pause_storm_warning_events": CounterDef("pause_storm_warnings", "congestion"),
    "tx_pause_storm_error_events": CounterDef("pause_storm_errors", "congestion"),
    "link_down_events_phy": CounterDef("link_downed", "event", prefer=1),
    "rx_discards_phy": CounterDef("rx_discards", "congestion", prefer=1),
    "tx_discards_phy": CounterDef("xmit_discards", "congestion", prefer=1),
    "rx_symbol_err_phy": CounterDef("symbol_errors", "error", prefer=1),
    "rx_corrected_bits_phy": CounterDef("corrected_bits", "error"),
    "rx_crc_errors_phy": CounterDef("rcv_errors", "error", prefer=1),
    "rx_out_of_buffer": CounterDef("rx_out_of_buffer", "congestion"),
    "rx_bytes_phy": CounterDef("rcv_bytes", "traffic", prefer=1),
    "tx_bytes_phy": CounterDef("xmit_bytes", "traffic", prefer=1),
    "rx_packets_phy": CounterDef("rcv_packets", "traffic", prefer=1),
    "tx_packets_phy": CounterDef("xmit_packets", "traffic", prefer=1),
    # RDMA hw_counters (mlx5), 64-bit.
    "np_ecn_marked_roce_packets": CounterDef("ecn_marked", "congestion"),
    "np_cnp_sent": CounterDef("cnp_sent", "congestion"),
    "rp_cnp_handled": CounterDef("cnp_handled", "congestion"),
    "rp_cnp_ignored": CounterDef("cnp_ignored", "congestion"),
    "out_of_sequence": CounterDef("out_of_sequence", "error"),
    "packet_seq_err": CounterDef("packet_seq_err", "error"),
    "local_ack_timeout_err": CounterDef("local_ack_timeout", "error"),
    "implied_nak_seq_err": CounterDef("implied_nak", "error"),
    "out_of_buffer": CounterDef("rx_out_of_buffer", "congestion"),
    # Linux netlink interface stats (rtnl_link_stats64) and qdisc stats.
    "rx_bytes": CounterDef("rcv_bytes", "traffic"),
    "tx_bytes": CounterDef("xmit_bytes", "traffic"),
    "rx_packets": CounterDef("rcv_packets", "traffic"),
    "tx_packets": CounterDef("xmit_packets", "traffic"),
    "rx_errors": CounterDef("rcv_errors", "error"),
    "tx_errors": CounterDef("xmit_errors", "error"),
    "rx_dropped": CounterDef("rx_discards", "congestion"),
    "tx_dropped": CounterDef("xmit_discards", "congestion"),
    "rx_crc_errors": CounterDef("rcv_errors", "error", prefer=1),  # more specific than rx_errors
    "carrier_changes": CounterDef("carrier_changes", "event"),
    "carrier_down_count": CounterDef("link_downed", "event"),  # netlink IFLA_CARRIER_DOWN_COUNT
    "qdisc_drops": CounterDef("qdisc_drops", "congestion"),
    "qdisc_overlimits": CounterDef("qdisc_overlimits", "congestion"),
    "qdisc_backlog_bytes": CounterDef("qdisc_backlog_bytes", "gauge"),
    "qdisc_marked": CounterDef("ecn_marked", "congestion"),
    "ce_received": CounterDef("ce_received", "congestion"),
    "InCEPkts": CounterDef("ce_received", "congestion"),  # /proc/net/netstat IpExt, per namespace
}

# Per-priority mlx5 names (and the link-level pause counters): pause frames of different
# priorities are different frames, so these are summed under one canonical name.
PATTERNS: list[tuple[re.Pattern[str], CounterDef]] = [
    (re.compile(r"rx_prio\d_pause$"), CounterDef("pause_rx_frames", "congestion", summed=True)),
    (re.compile(r"tx_prio\d_pause$"), CounterDef("pause_tx_frames", "congestion", summed=True)),
    (re.compile(r"rx_prio\d_pause_duration$"), CounterDef("pause_rx_us", "congestion", summed=True)),
    (re.compile(r"tx_prio\d_pause_duration$"), CounterDef("pause_tx_us", "congestion", summed=True)),
    (re.compile(r"rx_pause_ctrl_phy$"), CounterDef("pause_rx_frames", "congestion", summed=True)),
    (re.compile(r"tx_pause_ctrl_phy$"), CounterDef("pause_tx_frames", "congestion", summed=True)),
]


def lookup(name: str) -> CounterDef | None:
    """The meaning of a vendor counter name, or None when fabricdoc does not know it."""
    found = COUNTERS.get(name)
    if found is not None:
        return found
    for pattern, cdef in PATTERNS:
        if pattern.match(name):
            return cdef
    return None


@dataclass(frozen=True)
class CounterDelta:
    """Change of one canonical counter at one port over ``interval_s``.

    ``value`` is in canonical units (bytes for data). ``at_least`` is set when a
    saturated register or a reset means the true change may be larger;
    ``reset`` when the register went backwards.
    """

    port: PortRef
    name: str
    value: float
    interval_s: float
    at_least: bool = False
    reset: bool = False
    raw_names: tuple[str, ...] = ()

    @property
    def per_second(self) -> float | None:
        """The rate, or None when the interval is zero or negative (no rate can be told)."""
        return self.value / self.interval_s if self.interval_s > 0 else None

    @property
    def per_hour(self) -> float | None:
        rate = self.per_second
        return None if rate is None else rate * 3600.0


def raw_delta(before: int | None, after: int | None, cdef: CounterDef, width_bits: int | None = None):
    """Delta of one register: (value, at_least, reset), or None when either sample is missing.

    A saturating register at its maximum gives "at least" the difference. A wrapping
    register that went down from the upper half to the lower half wrapped once (the
    plausible reading for a 64-bit counter); any other decrease was a reset: the
    delta is at least the new value, and flagged.
    """
    if before is None or after is None:
        return None
    bits = width_bits or cdef.width_bits
    top = (1 << bits) - 1
    saturating = cdef.saturates_at(bits)
    if after >= before:
        return (after - before, saturating and after >= top, False)
    if not saturating and before > (top >> 1) and after < (top >> 1):
        return (top - before + 1 + after, False, False)
    return (after, True, True)


def deltas(
    before: Iterable[PortCounters], after: Iterable[PortCounters], *, changed_only: bool = False
) -> list[CounterDelta]:
    """Per-port, per-canonical-counter deltas between two samples of the same ports.

    Samples pair up by node, port, interface and probe source. Ports present in
    only one sample are skipped; counters the device did not report (``None``)
    give no delta, so missing is never read as zero. With ``changed_only``,
    counters that did not move are left out (what threshold rules need).
    """
    first = {(c.node, c.port, c.ifname, c.source): c for c in before}
    known: dict[tuple[str, ...], list[tuple[str, CounterDef, int]]] = {}
    out: list[CounterDelta] = []
    for cur in after:
        prev = first.get((cur.node, cur.port, cur.ifname, cur.source))
        if prev is None:
            continue
        names = tuple(cur.values)
        defs = known.get(names)
        if defs is None:
            defs = []
            for name in names:
                cdef = lookup(name)
                if cdef is not None and cdef.cls != "gauge":
                    defs.append((name, cdef, (1 << cdef.width_bits) - 1))
            known[names] = defs
        interval = max(cur.timestamp - prev.timestamp, 0.0)
        pv, cv = prev.values, cur.values
        acc: dict[str, list] = {}
        for name, cdef, top in defs:
            b, a = pv.get(name), cv[name]
            if b is None or a is None:
                continue
            if a >= b and not cur.width_bits:
                got = (a - b, cdef.saturating and a >= top, False)
            else:
                got = raw_delta(b, a, cdef, cur.width_bits.get(name))
            slot = acc.get(cdef.canonical)
            if slot is not None and cdef.prefer < slot[4]:
                continue  # a port-level counter of the same quantity is there: use it, never both
            if slot is None or cdef.prefer > slot[4] or not (cdef.summed and slot[5]):
                if slot is not None and cdef.prefer == slot[4]:
                    continue  # two names of one quantity at one level: keep the first, never sum
                acc[cdef.canonical] = [got[0] * cdef.scale, got[1], got[2], [name], cdef.prefer, cdef.summed]
            else:
                slot[0] += got[0] * cdef.scale
                slot[1] |= got[1]
                slot[2] |= got[2]
                slot[3].append(name)
        if not acc:
            continue
        ref = PortRef(cur.node, cur.port)
        for canon, (value, at_least, reset, raw, _prefer, _summed) in acc.items():
            if changed_only and value == 0 and not reset:
                continue
            out.append(CounterDelta(ref, canon, value, interval, at_least, reset, tuple(sorted(raw))))
    return out


def totals(values: dict[str, int | None]) -> tuple[dict[str, float], dict[str, float]]:
    """One sample's vendor counters as (totals, gauges) by canonical name, in canonical units.

    The rule of :func:`deltas`: of several names for one
    quantity the most port-level (``prefer``) wins, and only ``summed`` ones (per-priority
    pause counters) add up. Missing (None) values are left out, never read as 0.
    """
    best: dict[str, list[Any]] = {}
    gauges: dict[str, float] = {}
    for name, value in values.items():
        cdef = lookup(name)
        if cdef is None or value is None:
            continue
        if cdef.cls == "gauge":
            gauges[cdef.canonical] = float(value)
            continue
        slot = best.get(cdef.canonical)
        if slot is None or cdef.prefer > slot[0]:
            best[cdef.canonical] = [cdef.prefer, value * cdef.scale]
        elif cdef.prefer == slot[0] and cdef.summed:
            slot[1] += value * cdef.scale
    return {k: float(v) for k, (_, v) in best.items()}, gauges


def gauges(sample: Iterable[PortCounters]) -> dict[tuple[PortRef, str], float]:
    """Point-in-time values (queue backlog) from the latest sample, by canonical name."""
    out: dict[tuple[PortRef, str], float] = {}
    for c in sample:
        for name, value in c.values.items():
            cdef = lookup(name)
            if cdef is not None and cdef.cls == "gauge" and value is not None:
                out[(PortRef(c.node, c.port), cdef.canonical)] = float(value)
    return out


def register_problem(name: str, value: object, width_bits: int | None = None) -> str | None:
    """Why ``value`` cannot be a reading of counter ``name`` (None when it can): not a whole
    number, negative, or wider than the counter's register (a 4-bit register reading 16)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        return "a counter must be a whole number or null"
    cdef = lookup(name)
    bits = width_bits or (cdef.width_bits if cdef is not None else 64)
    if value < 0 or value > (1 << bits) - 1:
        return f"counter outside its {bits}-bit register (0..{(1 << bits) - 1})"
    return None


def check_values(sample: PortCounters, source: str, line_no: int = 0) -> PortCounters:
    """Refuse (ParseError) a sample whose counters cannot be register values; unknown stays None."""
    for name, value in sample.values.items():
        why = register_problem(name, value, sample.width_bits.get(name))
        if why:
            raise ParseError(source, line_no, f"{name}={value!r}"[:120], why)
    return sample
