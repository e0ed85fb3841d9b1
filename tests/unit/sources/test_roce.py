"""The RoCE source runs every host's probe through the exec seam: a host whose probe cannot answer is
one ProbeRun saying why (not seen), and the other hosts' records are kept."""

from __future__ import annotations

from fabricdoc.probes import exec as px

from fabricdoc.model.records import Node, PortCounters, PortRef, ProbeStatus
from fabricdoc.model.topology import Fabric
from fabricdoc.report.coverage import Planned, measure
from fabricdoc.sources import roce
from fabricdoc.sources.records import records_to_json

HOSTS = ("h1", "h2", "h3", "h4")


def one_leaf() -> Fabric:
    """Four hosts on one switch."""
    f = Fabric("roce")
    f.add_node(Node("leaf", "switch", "leaf", len(HOSTS)))
    for i, host in enumerate(HOSTS, 1):
        f.add_node(Node(host, "host", host, 1))
        f.add_link(PortRef(host, 1), PortRef("leaf", i))
    return f


def test_each_host_that_cannot_answer_is_one_probe_run_saying_why_and_the_rest_is_kept(monkeypatch):
    answers = {
        "h1": ("ok", records_to_json([PortCounters("h1", 1, 100.0, {"rx_bytes": 10}, source="netlink",
                                                   ifname="eth0")]), "", 0),
        "h2": ("hangs", "", "", None),
        "h3": ("fails", "", "Traceback (most recent call last):\nfabricdoc probe: error: netlink: permission denied\n", 2),
        "h4": ("garbles", "Segmentation fault", "", 0),
    }
    asked = []

    def run(argv, *, timeout_s, env=None, cwd=None, tool=None) -> px.Completed:
        host = argv[argv.index("--node") + 1]
        asked.append(host)
        _, out, err, rc = answers[host]
        return px.Completed(tuple(argv), out, err, rc, timeout_s if rc is None else 0.5, 0.0)

    monkeypatch.setattr(px, "run", run)
    fabric = one_leaf()
    obs = roce.collect(fabric, launcher="local", interval_s=1.0, timeout_s=7.0)
    assert sorted(asked) == list(HOSTS)
    runs = {r.target: r for r in obs.probes}
    assert [(r.probe, r.status) for r in (runs[h] for h in HOSTS)] == [
        ("probe", ProbeStatus.OK), ("probe", ProbeStatus.TIMEOUT), ("probe", ProbeStatus.ERROR),
        ("probe", ProbeStatus.ERROR),
    ]
    assert runs["h1"].error is None
    assert runs["h2"].error == "killed after 7s"
    assert runs["h3"].error == "fabricdoc probe: error: netlink: permission denied"  # what it died saying
    assert "probe on h4" in runs["h4"].error  # output that is not records: the parse error names the host
    assert [c.node for c in obs.after] == ["h1"]
    cov = measure(fabric, obs, Planned(hosts=set(HOSTS)))
    assert {d["what"] for d in cov.not_seen} >= {"probe on h2", "probe on h3", "probe on h4"}
    assert not cov.complete
