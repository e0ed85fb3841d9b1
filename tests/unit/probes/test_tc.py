"""Qdisc stats: root counters per port, AQM ECN marks summed, ingress ignored; real qdiscs in a namespace."""

from __future__ import annotations

from fabricdoc.probes.host import tc as tcstats


def q(index, kind, handle, parent, drops=0, overlimits=0, backlog=0, xstats=None, ifname="eth0"):
    return {"index": index, "ifname": ifname, "kind": kind, "handle": handle, "parent": parent,
            "bytes": 1000, "packets": 10, "drops": drops, "overlimits": overlimits, "requeues": 0,
            "backlog": backlog, "qlen": 1 if backlog else 0, "xstats": xstats or {}}


def test_root_qdisc_counters_with_aqm_marks_summed():
    facts = [
        q(2, "htb", "1:0", "root", drops=40, overlimits=900, backlog=3000),
        q(2, "red", "10:0", "1:10", drops=40, xstats={"early": 3, "pdrop": 37, "marked": 120}),
        q(2, "fq_codel", "20:0", "1:20", xstats={"ecn_mark": 5, "drop_overlimit": 0}),
        q(2, "ingress", "ffff:0", "ffff:fff1"),
        q(3, "noqueue", "0:0", "root", ifname="lo0"),
    ]
    out = {c.ifname: c for c in tcstats.parse_qdiscs(facts, "h1", timestamp=5.0)}
    v = out["eth0"].values
    assert (out["eth0"].port, out["eth0"].source) == (2, "tc")
    assert (v["qdisc_drops"], v["qdisc_overlimits"], v["qdisc_backlog_bytes"]) == (40, 900, 3000)
    assert v["qdisc_marked"] == 125
    assert out["lo0"].values["qdisc_marked"] is None  # no AQM: unknown, not 0


def test_port_map_picks_and_numbers_interfaces():
    facts = [q(2, "tbf", "1:0", "root", drops=7), q(3, "tbf", "1:0", "root", ifname="eth1")]
    out = tcstats.parse_qdiscs(facts, "h1", {"eth1": 4})
    assert [(c.ifname, c.port) for c in out] == [("eth1", 4)]
