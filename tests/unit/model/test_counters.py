"""Counter semantics: saturation, wrap, reset, missing values."""

from hypothesis import given
from hypothesis import strategies as st

from fabricdoc.model import counters as ctr
from fabricdoc.model.records import PortCounters


def _pair(name, before, after, t=10.0, **kw):
    return (
        [PortCounters("sw", 1, 0.0, {name: before}, **kw)],
        [PortCounters("sw", 1, t, {name: after}, **kw)],
    )


def test_saturated_16bit_counter_is_at_least_never_negative():
    (d,) = ctr.deltas(*_pair("SymbolErrorCounter", 65000, 65535))
    assert d.name == "symbol_errors"
    assert d.value == 535 and d.at_least and not d.reset


def test_a_counter_that_went_down_was_reset_and_is_flagged():
    (d,) = ctr.deltas(*_pair("SymbolErrorCounter", 500, 7))
    assert d.reset and d.at_least and d.value == 7


def test_64bit_extended_counter_wraps():
    top = 2**64
    (d,) = ctr.deltas(*_pair("port_xmit_data", top - 10, 5))
    assert not d.reset and d.value == 15 * 4  # 4-byte words -> bytes


def test_xmit_data_counts_four_byte_words():
    (d,) = ctr.deltas(*_pair("PortXmitData", 1000, 3000))
    assert d.name == "xmit_bytes" and d.value == 8000 and d.per_second == 800


def test_missing_is_unknown_not_zero():
    assert ctr.deltas(*_pair("SymbolErrorCounter", None, 5)) == []
    assert ctr.deltas(*_pair("SymbolErrorCounter", 5, None)) == []


def test_per_priority_pause_counters_sum_under_one_name():
    before = [PortCounters("h", 1, 0.0, {"rx_prio3_pause": 10, "rx_prio4_pause": 0}, source="ethtool")]
    after = [PortCounters("h", 1, 1.0, {"rx_prio3_pause": 5010, "rx_prio4_pause": 100}, source="ethtool")]
    (d,) = ctr.deltas(before, after)
    assert d.name == "pause_rx_frames" and d.value == 5100


@given(
    bits=st.sampled_from([4, 8, 16, 32]),
    before=st.integers(min_value=0, max_value=2**32),
    after=st.integers(min_value=0, max_value=2**32),
)
def test_saturating_delta_is_never_negative(bits, before, after):
    top = (1 << bits) - 1
    before, after = min(before, top), min(after, top)
    cdef = ctr.CounterDef("x", "error", bits, saturating=True)
    value, at_least, reset = ctr.raw_delta(before, after, cdef)
    assert value >= 0
    if after < before:
        assert reset and at_least
    elif after == top:
        assert at_least
    else:
        assert value == after - before


@given(before=st.integers(0, 2**64 - 1), step=st.integers(0, 2**40))
def test_64bit_delta_recovers_the_step_across_a_wrap(before, step):
    after = (before + step) % 2**64
    cdef = ctr.CounterDef("x", "traffic", 64)
    value, _, reset = ctr.raw_delta(before, after, cdef)
    if before + step < 2**64 or before > 2**63:
        assert value == step and not reset


def test_samples_of_one_port_from_different_probes_are_kept_apart():
    before = [
        PortCounters("h", 1, 0.0, {"qdisc_drops": 0}, source="tc"),
        PortCounters("h", 1, 0.0, {"ce_received": 0}, source="netstat"),
    ]
    after = [
        PortCounters("h", 1, 10.0, {"qdisc_drops": 900}, source="tc"),
        PortCounters("h", 1, 10.0, {"ce_received": 5000}, source="netstat"),
    ]
    assert sorted(d.name for d in ctr.deltas(before, after)) == ["ce_received", "qdisc_drops"]
