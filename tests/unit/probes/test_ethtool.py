"""ethtool -S: real veth output captured here, mlx5 names, and the ways reading it fails."""

from __future__ import annotations

import os

import pytest
from fabricdoc.probes.host import ethtool

from fabricdoc.errors import ParseError, ProbeError
from fabricdoc.model.counters import lookup
from tests.helpers.paths import DATA

ETHTOOL = os.path.join(DATA, "ethtool")


def read(case: str) -> str:
    with open(os.path.join(ETHTOOL, case, "ethtool-S.txt")) as fh:
        return fh.read()


def test_veth_output_captured_here_parses():
    stats = ethtool.parse_ethtool_stats(read("veth"))
    assert "peer_ifindex" in stats
    assert stats["rx_queue_0_drops"] == 0
    # per-queue software counters are not port health
    assert ethtool.port_stats(stats) == {"peer_ifindex": stats["peer_ifindex"]}


def test_mlx5_pfc_and_phy_counters_keep_their_real_names():
    stats = ethtool.port_stats(ethtool.parse_ethtool_stats(read("mlx5_cx6")))
    assert stats["rx_prio3_pause"] == 263144
    assert stats["tx_prio3_pause"] == 41288
    assert stats["rx_prio3_pause_duration"] == 5218840
    assert stats["tx_pause_storm_warning_events"] == 2
    assert stats["link_down_events_phy"] == 3
    assert stats["rx_discards_phy"] == 1287
    assert stats["rx_symbol_err_phy"] == 17
    assert stats["rx_corrected_bits_phy"] == 912340
    assert "rx0_packets" not in stats and "tx1_bytes" not in stats


def test_every_issue_named_mlx5_counter_is_in_the_counter_table():
    names = ["rx_prio3_pause", "tx_prio3_pause", "rx_prio3_pause_duration",
             "tx_pause_storm_warning_events", "link_down_events_phy", "rx_discards_phy",
             "rx_symbol_err_phy", "rx_corrected_bits_phy"]
    assert all(lookup(n) is not None for n in names), [n for n in names if lookup(n) is None]


def test_truncated_output_names_the_cut_line():
    text = read("truncated")
    with pytest.raises(ParseError) as exc:
        ethtool.parse_ethtool_stats(text, source="ethtool -S ens1f0np0")
    assert exc.value.line_no == len(text.splitlines())
    assert "ens1f0np0" in str(exc.value)


def test_empty_output_is_a_parse_error():
    with pytest.raises(ParseError, match="NIC statistics"):
        ethtool.parse_ethtool_stats("")


def test_missing_ethtool_command_is_one_unsupported_line(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    with pytest.raises(ProbeError) as exc:
        ethtool.collect_ethtool("eth0", netns="fdh-none", use_ioctl=False)
    assert exc.value.status == "unsupported"
    assert str(exc.value) == "ethtool: the ethtool command is not installed"
