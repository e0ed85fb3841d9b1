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
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from fabricdoc.model.memory import gc_paused
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


# fabricdoc's own name -> its class, from the same table (a canonical name has one class).
CANONICAL_CLASS: dict[str, str] = {d.canonical: d.cls for d in (*COUNTERS.values(), *(d for _, d in PATTERNS))}


def canonical_class(canonical: str) -> str | None:
    """The class ("error", "congestion", "traffic", "event", "gauge") of a fabricdoc counter name, or None."""
    return CANONICAL_CLASS.get(canonical)


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
    before: Iterable[PortCounters], after: Iterable[PortCounters], *, changed_only: bool = False,
    only: Collection[str] | None = None,
) -> list[CounterDelta]:
    """Per-port, per-canonical-counter deltas between two samples of the same ports.

    Samples pair up by node, port, interface and probe source. Ports present in
    only one sample are skipped; counters the device did not report (``None``)
    give no delta, so missing is never read as zero. With ``changed_only``,
    counters that did not move are left out (what threshold rules need); with ``only``, just
    those canonical counters (the ones some rule reads: data and packet counters, most of a
    sweep's deltas, are then never built).

    Ports that report the same counter names are computed together, one numpy
    array per counter (a 32,768-port sweep is a few array operations); a port
    with a missing value or its own register widths takes :func:`_port_deltas`,
    the same rule one port at a time.
    """
    first = {(c.node, c.port, c.ifname, c.source): c for c in before}
    known: dict[tuple[str, ...], list[tuple[str, CounterDef, int]]] = {}
    groups: dict[tuple[str, ...], list[tuple[int, PortCounters, PortCounters]]] = {}
    single: list[tuple[int, PortCounters, PortCounters]] = []
    pos = 0
    for cur in after:
        prev = first.get((cur.node, cur.port, cur.ifname, cur.source))
        if prev is None:
            continue
        names = tuple(cur.values)
        if names not in known:
            known[names] = [
                (name, cdef, (1 << cdef.width_bits) - 1)
                for name in names
                if (cdef := lookup(name)) is not None and cdef.cls != "gauge"
                and (only is None or cdef.canonical in only)
            ]
        if cur.width_bits:
            single.append((pos, cur, prev))
        else:
            groups.setdefault(names, []).append((pos, cur, prev))
        pos += 1
    # Tens of thousands of small records and no cycles among them: a collection pass over
    # everything already alive (the fabric, the samples) would cost more than building them.
    with gc_paused():
        parts: list[tuple[list[int], list[CounterDelta]]] = []
        for names, rows in groups.items():
            at, got, left = _group_deltas(rows, known[names], changed_only)
            parts.append((at, got))
            single.extend(left)
        if single:
            at, got = [], []
            for p, cur, prev in single:
                more = _port_deltas(cur, prev, known[tuple(cur.values)], changed_only)
                at.extend([p] * len(more))
                got.extend(more)
            parts.append((at, got))
        if len(parts) == 1:
            return parts[0][1]
        at = [p for part in parts for p in part[0]]
        got = [d for part in parts for d in part[1]]
        order = sorted(range(len(got)), key=at.__getitem__)  # stable: a port's counters keep their order
        return [got[i] for i in order]


def _port_deltas(cur: PortCounters, prev: PortCounters, defs: list[tuple[str, CounterDef, int]],
                 changed_only: bool) -> list[CounterDelta]:
    """One port's deltas (the rule :func:`deltas` applies to many ports at once)."""
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
    out: list[CounterDelta] = []
    if not acc:
        return out
    ref = PortRef(cur.node, cur.port)
    for canon, (value, at_least, reset, raw, _prefer, _summed) in acc.items():
        if changed_only and value == 0 and not reset:
            continue
        out.append(CounterDelta(ref, canon, value, interval, at_least, reset, tuple(sorted(raw))))
    return out


def _combine(defs: list[tuple[str, CounterDef, int]]) -> list[tuple[str, list[int]]]:
    """Which counters make each canonical quantity when every one is present: the rule of
    :func:`_port_deltas` (highest ``prefer`` wins, only ``summed`` names add up), as
    ``(canonical, indexes into defs)`` in the order the port rule emits them."""
    acc: dict[str, list] = {}
    for i, (_name, cdef, _top) in enumerate(defs):
        slot = acc.get(cdef.canonical)
        if slot is not None and cdef.prefer < slot[1]:
            continue
        if slot is None or cdef.prefer > slot[1] or not (cdef.summed and slot[2]):
            if slot is not None and cdef.prefer == slot[1]:
                continue
            acc[cdef.canonical] = [[i], cdef.prefer, cdef.summed]
        else:
            slot[0].append(i)
    return [(canon, slot[0]) for canon, slot in acc.items()]


def _group_deltas(rows: list[tuple[int, PortCounters, PortCounters]], defs: list[tuple[str, CounterDef, int]],
                  changed_only: bool) -> tuple[list[int], list[CounterDelta], list[tuple[int, PortCounters, PortCounters]]]:
    """Deltas of ports that report the same names, computed as arrays.

    Returns each delta's port position, the deltas, and the rows left to the
    one-port rule: a value missing in either sample, or a name the earlier
    sample lacks.
    """
    if not defs:
        return [], [], []
    import numpy as np  # here, not at the top: probes load this module and must start fast

    names = [name for name, _, _ in defs]
    get = itemgetter(*names)
    a_rows: list[tuple] = []
    b_rows: list[tuple] = []
    kept: list[tuple[int, PortCounters, PortCounters]] = []
    left: list[tuple[int, PortCounters, PortCounters]] = []
    one = len(names) == 1
    for row in rows:
        _, cur, prev = row
        try:
            a, b = get(cur.values), get(prev.values)
        except KeyError:
            left.append(row)
            continue
        if one:
            a, b = (a,), (b,)
        if None in a or None in b:
            left.append(row)
            continue
        a_rows.append(a)
        b_rows.append(b)
        kept.append(row)
    if not kept:
        return [], [], left
    after_v, before_v = _registers(np, a_rows), _registers(np, b_rows)
    if after_v is None or before_v is None:  # not whole register values: the one-port rule decides
        return [], [], left + kept
    span = np.array([cur.timestamp for _, cur, _ in kept]) - np.array([prev.timestamp for _, _, prev in kept])
    interval = np.where(span < 0.0, 0.0, span)
    values, at_least, reset = [], [], []
    for j, (_name, cdef, top) in enumerate(defs):
        a, b = after_v[:, j], before_v[:, j]
        up = a >= b
        wraps = not cdef.saturates_at(cdef.width_bits)
        half = np.uint64(top >> 1)
        wrapped = ~up & (b > half) & (a < half) if wraps else np.zeros(len(a), dtype=bool)
        back = ~up & ~wrapped  # went down, no wrap: a reset, at least the new value
        with np.errstate(over="ignore"):
            raw = np.where(up, a - b, np.where(wrapped, np.uint64(top) - b + np.uint64(1) + a, a))
        values.append(raw.astype(np.float64) * cdef.scale)
        at_least.append((up & (a >= np.uint64(top))) | back if cdef.saturating else back)
        reset.append(back)
    combos = _combine(defs)
    cols_v, cols_l, cols_r, raws = [], [], [], []
    for _canon, idx in combos:
        v, lo, rs = values[idx[0]].copy(), at_least[idx[0]].copy(), reset[idx[0]].copy()
        for i in idx[1:]:
            v += values[i]
            lo |= at_least[i]
            rs |= reset[i]
        cols_v.append(v)
        cols_l.append(lo)
        cols_r.append(rs)
        raws.append(tuple(sorted(names[i] for i in idx)))
    v_m = np.stack(cols_v, axis=1)
    l_m = np.stack(cols_l, axis=1)
    r_m = np.stack(cols_r, axis=1)
    keep = (v_m != 0) | r_m if changed_only else np.ones(v_m.shape, dtype=bool)
    ri, ci = np.nonzero(keep)
    canon = [c for c, _ in combos]
    vals, lows, rsts = v_m[ri, ci].tolist(), l_m[ri, ci].tolist(), r_m[ri, ci].tolist()
    ivals = interval.tolist()
    rows_i = ri.tolist()
    refs = {i: PortRef(kept[i][1].node, kept[i][1].port) for i in dict.fromkeys(rows_i)}
    new, put = object.__new__, object.__setattr__
    out = []
    for k, (i, c) in enumerate(zip(rows_i, ci.tolist(), strict=True)):
        # CounterDelta(...) without the frozen dataclass's per-field __setattr__: half the cost.
        d = new(CounterDelta)
        put(d, "__dict__", {"port": refs[i], "name": canon[c], "value": vals[k], "interval_s": ivals[i],
                            "at_least": lows[k], "reset": rsts[k], "raw_names": raws[c]})
        out.append(d)
    return [kept[i][0] for i in rows_i], out, left


def _registers(np: Any, rows: list[tuple]) -> Any:
    """Rows of whole, non-negative register values as a uint64 matrix; None for anything else
    (a float, a negative or oversized number), which the one-port rule then handles."""
    try:
        got = np.array(rows)
    except (OverflowError, TypeError, ValueError):
        return None
    if got.ndim != 2 or got.dtype.kind not in "iu" or (got.dtype.kind == "i" and (got < 0).any()):
        return None
    return got.astype(np.uint64)


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
