"""Counter semantics for every counter and source: saturation, wrap, reset, register widths, rates."""

from __future__ import annotations

import pytest
from fabricdoc.probes.host.sysfs import parse_counter
from hypothesis import given, settings
from hypothesis import strategies as st

from fabricdoc.errors import ParseError
from fabricdoc.model import counters as ctr
from fabricdoc.model.records import PortCounters
from fabricdoc.sources.records import records_from_json, records_to_json

NAMES = sorted(ctr.COUNTERS)


def _delta(name: str, before: int, after: int, *, bits: int | None = None, t: float = 10.0):
    widths = {name: bits} if bits else {}
    got = ctr.deltas([PortCounters("n", 1, 0.0, {name: before}, width_bits=widths)],
                     [PortCounters("n", 1, t, {name: after}, width_bits=widths)])
    return got[0] if got else None


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(NAMES), data=st.data())
def test_every_counter_reads_a_delta_that_is_never_negative(name, data):
    cdef = ctr.COUNTERS[name]
    top = cdef.maximum
    before = data.draw(st.integers(0, top))
    after = data.draw(st.integers(0, top))
    d = _delta(name, before, after)
    if cdef.cls == "gauge":
        assert d is None
        return
    assert d is not None and d.value >= 0
    if after >= before:
        assert d.value == (after - before) * cdef.scale and not d.reset
        assert d.at_least == (cdef.saturates_at() and after == top)
    elif cdef.saturates_at():
        assert d.reset and d.at_least and d.value == after * cdef.scale
    elif before > top >> 1 and after < top >> 1:
        assert not d.reset and d.value == (top - before + 1 + after) * cdef.scale  # wrapped once
    else:
        assert d.reset and d.at_least


@settings(max_examples=200, deadline=None)
@given(name=st.sampled_from(NAMES), value=st.integers(-(2**70), 2**70))
def test_a_value_outside_its_register_is_refused(name, value):
    cdef = ctr.COUNTERS[name]
    why = ctr.register_problem(name, value)
    assert (why is None) == (0 <= value <= cdef.maximum)


def test_a_64_bit_counter_near_its_top_wraps_to_a_small_delta():
    d = _delta("PortXmitData", 2**64 - 10, 5, bits=64)
    assert (d.value, d.reset, d.at_least) == (15 * 4, False, False)  # PortXmitData counts 4-byte words


def test_the_32_bit_data_counter_saturates_and_is_at_least():
    d = _delta("PortXmitData", 2**32 - 100, 2**32 - 1)
    assert d.at_least and d.value == 99 * 4


def test_sysfs_port_xmit_wait_is_32_bit_and_saturates():
    d = _delta("port_xmit_wait", 10, 2**32 - 1)
    assert d.at_least and not d.reset
    d = _delta("port_xmit_wait", 2**32 - 1, 5)  # cleared, not wrapped
    assert d.reset and d.value == 5


def test_a_4_bit_register_cannot_read_16():
    assert ctr.register_problem("LocalLinkIntegrityErrors", 16) is not None
    with pytest.raises(ParseError, match="4-bit"):
        records_from_json(records_to_json([PortCounters("n", 1, 0.0, {"LocalLinkIntegrityErrors": 15})])
                          .replace(": 15", ": 16"), "r.json")


def test_a_refused_record_is_named_by_its_place_in_the_file():
    recs = [PortCounters("n", 1, float(t), {"LocalLinkIntegrityErrors": 15}) for t in range(3)]
    text = records_to_json(recs)
    bad = text[: text.rindex(": 15")] + ": 16" + text[text.rindex(": 15") + 4 :]  # the third record
    with pytest.raises(ParseError, match="record 2 "):
        records_from_json(bad, "r.json")
    with pytest.raises(ParseError, match="record 3 "):
        records_from_json(records_to_json(recs[:1]) + "\n" + bad, "r.json")  # numbered across documents


def test_negative_and_garbled_sysfs_counters_are_refused_at_parse():
    with pytest.raises(ParseError):
        parse_counter("-5\n", "symbol_error")
    with pytest.raises(ParseError):
        parse_counter(str(2**64) + "\n", "port_xmit_data")
    assert parse_counter("N/A (no PMA)\n", "symbol_error") is None


@pytest.mark.parametrize("interval", [0.0, -3.0])
def test_no_rate_from_a_zero_or_negative_interval(interval):
    d = ctr.CounterDelta(ctr.PortRef("n", 1), "symbol_errors", 50.0, interval)
    assert d.per_second is None and d.per_hour is None


def test_one_quantity_under_two_names_is_never_summed():
    names = {"rx_bytes": 100, "rx_bytes_phy": 130, "rx_errors": 7, "rx_crc_errors": 3}
    before = [PortCounters("h", 1, 0.0, dict.fromkeys(names, 0), source="ethtool")]
    after = [PortCounters("h", 1, 10.0, names, source="ethtool")]
    got = {d.name: (d.value, d.raw_names) for d in ctr.deltas(before, after)}
    assert got["rcv_bytes"] == (130, ("rx_bytes_phy",))  # the port-level counter, not 230
    assert got["rcv_errors"] == (3, ("rx_crc_errors",))


def test_priorities_of_pause_frames_do_add_up():
    before = [PortCounters("h", 1, 0.0, {"rx_prio3_pause": 0, "rx_prio4_pause": 0}, source="ethtool")]
    after = [PortCounters("h", 1, 1.0, {"rx_prio3_pause": 5, "rx_prio4_pause": 7}, source="ethtool")]
    (d,) = ctr.deltas(before, after)
    assert (d.name, d.value) == ("pause_rx_frames", 12)


def test_only_registers_narrower_than_64_bits_saturate():
    for name, cdef in ctr.COUNTERS.items():
        assert 1 <= cdef.width_bits <= 64, name
        assert not cdef.saturating or cdef.width_bits < 64, name
