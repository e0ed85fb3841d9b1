"""Netlink probe: interface counters and state, and a watcher that counts and times flaps.

The netns tests flap a real veth pair (the peer end goes down and up; this end
loses carrier) and read it back through rtnetlink.
"""

from __future__ import annotations

import pytest
from fabricdoc.probes import netlink

from fabricdoc.errors import ProbeError
from fabricdoc.model import LinkEvent

UP, DOWN = {"operstate": "UP", "flags": 0x11043}, {"operstate": "DOWN", "flags": 0x1003}


def fact(t: float, state: dict, changes: int, index: int = 2) -> dict:
    return {"event": "RTM_NEWLINK", "index": index, "ifname": "eth0", "time": t,
            "carrier_changes": changes, **state}


def test_transitions_become_events_and_repeats_do_not():
    facts = [fact(0.0, UP, 2), fact(1.0, DOWN, 3), fact(1.5, DOWN, 3), fact(2.0, UP, 4)]
    events = netlink.parse_link_events(facts, "h1")
    assert [(e.timestamp, e.state, e.source) for e in events] == [
        (1.0, "down", "netlink"), (2.0, "up", "netlink")]


def test_coalesced_flaps_are_inferred_from_carrier_changes():
    # Two down/up pairs happened between the messages but the kernel sent only "up".
    events = netlink.parse_link_events([fact(0.0, UP, 2), fact(5.0, UP, 6)], "h1")
    assert [e.state for e in events] == ["down", "up", "down", "up"]
    assert all(e.source == "netlink-inferred" and 0.0 < e.timestamp < 5.0 for e in events)
    assert len({e.timestamp for e in events}) == 4


def test_flap_summary_counts_and_times_downs():
    evs = [LinkEvent("h1", 1, t, s) for t, s in ((10.0, "down"), (12.0, "up"), (40.0, "down"), (41.0, "up"))]
    s = netlink.summarize_flaps(evs, 0.0, 60.0)[("h1", 1)]
    assert s["flaps"] == 2 and s["flaps_per_min"] == pytest.approx(2.0) and s["down_s"] == pytest.approx(3.0)


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
    summary = netlink.summarize_flaps(events, facts[0]["time"], events[-1].timestamp)
    assert summary[(a, before["fdha0"].port)]["flaps"] == 5
    assert summary[(a, before["fdha0"].port)]["down_s"] > 0
    assert after["fdha0"].values["carrier_down_count"] - before["fdha0"].values["carrier_down_count"] == 5


@pytest.mark.netns
def test_missing_namespace_is_one_error_line():
    with pytest.raises(ProbeError, match="network namespace 'fdh-absent' does not exist"):
        netlink.collect_links("fdh-absent")
    with pytest.raises(ProbeError, match="does not exist"):
        netlink.LinkWatcher("fdh-absent", 1).start()
