"""Netlink probe: interface counters and state, and a watcher that counts and times flaps.

The netns tests flap a real veth pair (the peer end goes down and up; this end
loses carrier) and read it back through rtnetlink.
"""

from __future__ import annotations

import pytest
from fabricdoc.probes.host import netlink

from fabricdoc.analysis.flaps import port_summary
from fabricdoc.model.records import LinkEvent

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
    s = port_summary(evs, 0.0, 60.0)[("h1", 1)]
    assert s["flaps"] == 2 and s["flaps_per_min"] == pytest.approx(2.0) and s["down_s"] == pytest.approx(3.0)
