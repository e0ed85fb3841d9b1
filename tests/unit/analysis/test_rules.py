"""Counter threshold rules: data, strict on load, firing by delta and by rate."""

import pytest

from fabricdoc.analysis.rules import DEFAULT_RULES, anomalies, load_rules
from fabricdoc.errors import ConfigError
from fabricdoc.model import counters as ctr
from fabricdoc.model.records import PortCounters


def _pair(name, before, after, t=10.0, **kw):
    return (
        [PortCounters("sw", 1, 0.0, {name: before}, **kw)],
        [PortCounters("sw", 1, t, {name: after}, **kw)],
    )


def test_the_default_rules_are_the_bundled_data_file():
    assert {(r.counter, r.op) for r in DEFAULT_RULES} >= {("symbol_errors", "per_hour_gt"), ("xmit_wait_ticks", "per_second_gt")}


def test_pause_frames_rising_fast_are_congestion():
    before = [PortCounters("h", 1, 0.0, {"rx_prio3_pause": 10}, source="ethtool")]
    after = [PortCounters("h", 1, 1.0, {"rx_prio3_pause": 5010}, source="ethtool")]
    (a,) = anomalies(ctr.deltas(before, after))
    assert a.fault == "congestion"


def test_a_rate_rule_cannot_fire_without_an_interval():
    (d,) = ctr.deltas(*_pair("SymbolErrorCounter", 0, 50, t=0.0))
    assert d.per_second is None
    assert [a.severity for a in anomalies([d])] == ["warning"]  # only the delta rule fires


def test_rules_fire_by_rate_and_by_delta():
    (d,) = ctr.deltas(*_pair("SymbolErrorCounter", 0, 1, t=3600.0))
    (a,) = anomalies([d])
    assert a.severity == "warning"  # one error an hour: worth a look, not a fail
    (d,) = ctr.deltas(*_pair("SymbolErrorCounter", 0, 50, t=10.0))
    (a,) = anomalies([d])
    assert a.severity == "error"


def test_user_rules_replace_the_defaults_for_their_counter(tmp_path):
    path = tmp_path / "rules.toml"
    path.write_text('[[rule]]\ncounter = "symbol_errors"\nop = "delta_gt"\nvalue = 1000\nfault = "symbol_errors"\nseverity = "error"\n')
    rules = load_rules(path)
    (d,) = ctr.deltas(*_pair("SymbolErrorCounter", 0, 50, t=10.0))
    assert anomalies([d], rules) == []


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
        load_rules(path)
    assert str(path) in str(info.value)


