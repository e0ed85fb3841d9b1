"""Qdisc stats: root counters per port, AQM ECN marks summed, ingress ignored; real qdiscs in a namespace."""

from __future__ import annotations

import pytest
from fabricdoc.probes.host import tc as tcstats

from tests.helpers.netns_lab import sh


@pytest.mark.netns
def test_real_tbf_and_htb_stats_are_read(two_hosts):
    _lab, a, _b = two_hosts
    sh("ip", "netns", "exec", a, "tc", "qdisc", "add", "dev", "fdha0", "root", "handle", "1:", "htb",
       "default", "10")
    sh("ip", "netns", "exec", a, "tc", "class", "add", "dev", "fdha0", "parent", "1:", "classid", "1:10",
       "htb", "rate", "5mbit")
    sh("ip", "netns", "exec", a, "tc", "qdisc", "add", "dev", "fdha0", "parent", "1:10", "handle", "10:",
       "tbf", "rate", "5mbit", "burst", "10kb", "limit", "20kb")
    facts = tcstats.collect_qdiscs(a)
    assert tcstats.qdisc_kinds(f for f in facts if f["ifname"] == "fdha0") == {"fdha0": ["htb", "tbf"]}
    (c,) = tcstats.parse_qdiscs(facts, a, {"fdha0": 1})
    assert c.values["qdisc_drops"] == 0 and c.values["qdisc_packets"] is not None
