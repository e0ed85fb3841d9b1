"""Deltas of many ports at once (numpy) give exactly what the one-port rule gives, port by port."""

from dataclasses import replace

from hypothesis import given, settings
from hypothesis import strategies as st

from fabricdoc.model import counters as ctr
from fabricdoc.model.records import PortCounters

# Saturating 4/8/16/32-bit IBTA names, 64-bit wrapping ones, a summed per-priority pair,
# and two names of one quantity at different levels (rx_crc_errors_phy wins over rx_errors).
NAMES = [
    "SymbolErrorCounter", "LinkDownedCounter", "LocalLinkIntegrityErrors", "PortXmitWait", "PortXmitData",
    "port_xmit_data", "rx_prio3_pause", "rx_prio4_pause", "rx_errors", "rx_crc_errors_phy", "rx_bytes",
]


def _width(name: str) -> int:
    cdef = ctr.lookup(name)
    return cdef.width_bits if cdef else 64


def _value(name: str):
    top = (1 << _width(name)) - 1
    return st.one_of(
        st.none(), st.sampled_from([0, 1, top - 1, top, top >> 1, (top >> 1) + 1]),
        st.integers(min_value=0, max_value=top),
    )


@st.composite
def _samples(draw):
    names = draw(st.lists(st.sampled_from(NAMES), min_size=1, max_size=len(NAMES), unique=True))
    ports = draw(st.integers(min_value=1, max_value=12))
    before, after = [], []
    for p in range(1, ports + 1):
        b = {n: draw(_value(n)) for n in names}
        a = {n: draw(_value(n)) for n in names}
        if draw(st.booleans()):  # most ports report every value
            b = {n: (v if v is not None else 0) for n, v in b.items()}
            a = {n: (v if v is not None else 1) for n, v in a.items()}
        t0, t1 = draw(st.sampled_from([(0.0, 10.0), (5.0, 5.0), (10.0, 2.5)]))
        before.append(PortCounters("sw", p, t0, b))
        after.append(PortCounters("sw", p, t1, a))
    return before, after


def _one_port_at_a_time(before, after, changed_only):
    """``deltas`` of one port per call, each port declaring every register's width (its own, else the
    registry's): a port with declared widths takes the one-port rule, and the registry's widths change nothing."""
    out = []
    for b, a in zip(before, after, strict=True):
        widths = {**{n: c.width_bits for n in a.values if (c := ctr.lookup(n)) is not None}, **a.width_bits}
        out.extend(ctr.deltas([b], [replace(a, width_bits=widths)], changed_only=changed_only))
    return out


@settings(max_examples=300, deadline=None)
@given(_samples(), st.booleans())
def test_array_deltas_equal_the_one_port_rule(samples, changed_only):
    before, after = samples
    assert ctr.deltas(before, after, changed_only=changed_only) == _one_port_at_a_time(before, after, changed_only)


def test_ports_with_their_own_widths_or_missing_names_keep_their_place():
    before = [
        PortCounters("sw", 1, 0.0, {"PortXmitData": 10, "SymbolErrorCounter": 1}),
        PortCounters("sw", 2, 0.0, {"PortXmitData": 2**32 - 5}, width_bits={"PortXmitData": 64}),
        PortCounters("sw", 3, 0.0, {"PortXmitData": 7}),  # lacks SymbolErrorCounter
    ]
    after = [
        PortCounters("sw", 1, 10.0, {"PortXmitData": 20, "SymbolErrorCounter": 3}),
        PortCounters("sw", 2, 10.0, {"PortXmitData": 3}, width_bits={"PortXmitData": 64}),
        PortCounters("sw", 3, 10.0, {"PortXmitData": 9, "SymbolErrorCounter": 4}),
    ]
    got = ctr.deltas(before, after)
    assert [(d.port.port, d.name) for d in got] == [
        (1, "xmit_bytes"), (1, "symbol_errors"), (2, "xmit_bytes"), (3, "xmit_bytes"),
    ]
    assert got[2].reset and got[2].value == 12.0  # 64-bit register read: no upper-half wrap, a reset
    assert got == _one_port_at_a_time(before, after, False)


def test_a_saturated_32bit_counter_among_many_ports_is_at_least():
    top = 2**32 - 1
    before = [PortCounters("sw", p, 0.0, {"PortXmitWait": 100}) for p in range(1, 6)]
    after = [PortCounters("sw", p, 1.0, {"PortXmitWait": top if p == 3 else 100 + p}) for p in range(1, 6)]
    got = {d.port.port: d for d in ctr.deltas(before, after, changed_only=True)}
    assert set(got) == {1, 2, 3, 4, 5}
    assert got[3].at_least and got[3].value == top - 100 and not got[3].reset
    assert not any(got[p].at_least for p in (1, 2, 4, 5))


def test_values_that_are_not_whole_register_readings_take_the_one_port_rule():
    before = [PortCounters("sw", p, 0.0, {"port_xmit_data": v}) for p, v in ((1, 1.5), (2, 2**63 + 5))]
    after = [PortCounters("sw", p, 10.0, {"port_xmit_data": v}) for p, v in ((1, 3), (2, 2**64 - 1))]
    got = ctr.deltas(before, after)
    assert got == _one_port_at_a_time(before, after, False)
    assert got[0].value == 1.5 * 4.0 and got[1].value == float(2**63 - 6) * 4.0
