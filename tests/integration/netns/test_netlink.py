"""Netlink probe: interface counters and state, and a watcher that counts and times flaps.

The netns tests flap a real veth pair (the peer end goes down and up; this end
loses carrier) and read it back through rtnetlink.
"""

from __future__ import annotations

import pytest
from fabricdoc.probes.host import netlink

from fabricdoc.analysis.flaps import port_summary
from fabricdoc.errors import ProbeError

UP, DOWN = {"operstate": "UP", "flags": 0x11043}, {"operstate": "DOWN", "flags": 0x1003}




@pytest.mark.netns
def test_stats_and_state_of_every_interface_in_a_namespace(two_hosts):
    _lab, a, _b = two_hosts
    counters, states = netlink.parse_links(netlink.collect_links(a), a, {"fdha0": 1})
    assert [(c.port, c.ifname, c.source) for c in counters] == [(1, "fdha0", "netlink")]
    v = counters[0].values
    assert v["rx_bytes"] is not None and v["carrier_changes"] is not None
    assert states[0].state == "up"


@pytest.mark.netns
def test_watcher_counts_five_flaps_of_a_veth(two_hosts):
    lab, a, b = two_hosts
    before = {c.ifname: c for c in netlink.parse_links(netlink.collect_links(a), a)[0]}
    watcher = netlink.LinkWatcher(a, duration_s=60).start()
    lab.flap(b, "fdhb0", a, "fdha0", times=5)
    facts = watcher.stop()
    after = {c.ifname: c for c in netlink.parse_links(netlink.collect_links(a), a)[0]}
    events = [e for e in netlink.parse_link_events(facts, a) if e.ifname == "fdha0"]
    assert [e.state for e in events] == ["down", "up"] * 5
    summary = port_summary(events, facts[0]["time"], events[-1].timestamp)
    assert summary[(a, before["fdha0"].port)]["flaps"] == 5
    assert summary[(a, before["fdha0"].port)]["down_s"] > 0
    assert after["fdha0"].values["carrier_down_count"] - before["fdha0"].values["carrier_down_count"] == 5


@pytest.mark.netns
def test_missing_namespace_is_one_error_line():
    with pytest.raises(ProbeError, match="network namespace 'fdh-absent' does not exist"):
        netlink.collect_links("fdh-absent")
    with pytest.raises(ProbeError, match="does not exist"):
        netlink.LinkWatcher("fdh-absent", 1).start()
