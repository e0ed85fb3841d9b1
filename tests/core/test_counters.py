"""Counter semantics: saturation, wrap, reset, missing values, rules."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fabricdoc import counters as ctr
from fabricdoc.errors import ConfigError
from fabricdoc.model import PortCounters


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
    (a,) = ctr.anomalies([d])
    assert a.fault == "congestion"


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


def test_rules_fire_by_rate_and_by_delta():
    (d,) = ctr.deltas(*_pair("SymbolErrorCounter", 0, 1, t=3600.0))
    (a,) = ctr.anomalies([d])
    assert a.severity == "warning"  # one error an hour: worth a look, not a fail
    (d,) = ctr.deltas(*_pair("SymbolErrorCounter", 0, 50, t=10.0))
    (a,) = ctr.anomalies([d])
    assert a.severity == "error"


def test_user_rules_replace_the_defaults_for_their_counter(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text('[[rule]]\ncounter = "symbol_errors"\nop = "delta_gt"\nvalue = 1000\nfault = "symbol_errors"\nseverity = "error"\n')
    rules = ctr.load_rules(path)
    (d,) = ctr.deltas(*_pair("SymbolErrorCounter", 0, 50, t=10.0))
    assert ctr.anomalies([d], rules) == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('[[rule]]\ncounter = "symbol_errors"\nop = "eval"\nvalue = 1\nfault = "x"\n', "unknown operator 'eval'"),
        ('[[rule]]\ncounter = "nope"\nop = "delta_gt"\nvalue = 1\nfault = "x"\n', "unknown counter 'nope'"),
        ('[[rule]]\ncounter = "symbol_errors"\nop = "delta_gt"\nvalue = 1\nfault = "x"\ncolour = 1\n', "unknown key 'colour'"),
        ('[thresholds]\nx = 1\n', "unknown key 'thresholds'"),
        ('[[rule]\n', "rules.toml"),
    ],
)
def test_bad_rule_files_name_file_and_key(tmp_path, text, message):
    path = tmp_path / "rules.toml"
    path.write_text(text)
    with pytest.raises(ConfigError, match=message) as info:
        ctr.load_rules(path)
    assert str(path) in str(info.value)


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
