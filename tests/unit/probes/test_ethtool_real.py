"""ethtool -S of real NICs (mlx5, i40e, ice, bnxt_en; tests/data/ethtool/real_*/README.md says where each came
from): values as the text states them, and one canonical counter per quantity, never a sum of aliases."""

from __future__ import annotations

import pytest
from fabricdoc.probes.host import ethtool

from fabricdoc.errors import ParseError
from fabricdoc.model import counters as ctr
from fabricdoc.model.records import PortCounters
from tests.helpers.paths import DATA


def _text(case: str) -> str:
    from pathlib import Path

    return (Path(DATA) / "ethtool" / case / "ethtool-S.txt").read_text()


def _canonical(stats: dict[str, int]) -> dict[str, tuple[float, tuple[str, ...]]]:
    """Each canonical counter's delta from zero, and the raw name it was read from."""
    before = [PortCounters("h", 1, 0.0, dict.fromkeys(stats, 0), source="ethtool")]
    after = [PortCounters("h", 1, 10.0, stats, source="ethtool")]
    return {d.name: (d.value, d.raw_names) for d in ctr.deltas(before, after)}


def test_mlx5_stored_without_its_header_is_refused_at_line_1():
    with pytest.raises(ParseError, match=r":1: expected 'NIC statistics:'"):
        ethtool.parse_ethtool_stats(_text("real_ethq_mlx5_core_cx4lx_ubuntu1804"), source="mlx5.txt")


def test_mlx5_reads_the_port_level_phy_counters_and_never_adds_the_netdev_ones():
    # The ethq maintainer stored this capture without ethtool's header and indent; put them back.
    raw = _text("real_ethq_mlx5_core_cx4lx_ubuntu1804")
    text = "NIC statistics:\n" + "".join(f"     {line}\n" for line in raw.splitlines())
    stats = ethtool.port_stats(ethtool.parse_ethtool_stats(text))
    assert stats["rx_bytes"] == 2195783498134 and stats["rx_bytes_phy"] == 2202570777997
    got = _canonical(stats)
    assert got["rcv_bytes"] == (2202570777997, ("rx_bytes_phy",))  # not 4398354276131, the sum
    assert got["xmit_bytes"] == (2662454044895, ("tx_bytes_phy",))
    assert got["rcv_packets"] == (845715962, ("rx_packets_phy",))
    assert got["rcv_errors"] == (0, ("rx_crc_errors_phy",))
    assert got["symbol_errors"] == (0, ("rx_symbol_err_phy",))


def test_i40e_crc_errors_and_rx_errors_are_one_quantity_not_two():
    stats = ethtool.port_stats(ethtool.parse_ethtool_stats(_text("real_ethq_i40e_v2.3.2k")))
    assert stats["rx_bytes"] == 34195001351783 and stats["rx_dropped"] == 179160
    got = _canonical(stats)
    assert got["rcv_bytes"] == (34195001351783, ("rx_bytes",))
    assert got["rcv_errors"] == (0, ("rx_crc_errors",))
    assert got["rx_discards"] == (179160, ("rx_dropped",))


@pytest.mark.parametrize(("case", "name", "value"), [
    ("real_ethq_ice", "rx_bytes", 848243014),
    ("real_ethq_ice", "rx_bytes.nic", 848255752),
    ("real_ethq_bnxt_en", "rx_bytes", 577687185962088),
    ("real_ethq_bnxt_en", "rx_total_ring_discards", 655430134),
])
def test_other_drivers_parse_with_the_values_in_their_text(case, name, value):
    stats = ethtool.parse_ethtool_stats(_text(case))
    assert stats[name] == value
