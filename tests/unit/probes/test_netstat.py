"""/proc/net/netstat: the IpExt ECN counters, and garbled input."""

from __future__ import annotations

import pytest
from fabricdoc.probes.host import netstat

from fabricdoc.errors import ParseError

SAMPLE = (
    "TcpExt: SyncookiesSent SyncookiesRecv\nTcpExt: 0 3\n"
    "IpExt: InNoRoutes InNoECTPkts InECT1Pkts InECT0Pkts InCEPkts\nIpExt: 0 10 0 299 771\n"
)


def test_ecn_counters_come_from_ipext():
    assert netstat.ecn_counts(netstat.parse_netstat(SAMPLE)) == {
        "InNoECTPkts": 10, "InECT1Pkts": 0, "InECT0Pkts": 299, "InCEPkts": 771}


def test_this_machines_netstat_parses():
    parsed = netstat.parse_netstat(netstat.collect_netstat())
    assert "InCEPkts" in parsed["IpExt"]


def test_value_line_shorter_than_header_names_the_line():
    with pytest.raises(ParseError) as exc:
        netstat.parse_netstat(SAMPLE.replace("0 10 0 299 771", "0 10 0"), "node3:/proc/net/netstat")
    assert exc.value.line_no == 4


def test_a_missing_value_line_is_an_error():
    with pytest.raises(ParseError, match="without a value line"):
        netstat.parse_netstat(SAMPLE.rsplit("\n", 2)[0])
