"""The history's newest samples per port: what the exporter reads, picked in SQL, never the whole past."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from fabricdoc.model.records import PortCounters
from fabricdoc.report.history import History
from tests.helpers.reports import make_report, store

T0 = datetime(2026, 11, 1, tzinfo=UTC)


def test_newest_samples_are_each_ports_last_n_oldest_first_with_the_newest_labels(tmp_path):
    db = tmp_path / "h.sqlite"
    for day in range(5):
        t = T0 + timedelta(days=day)
        rep = make_report()
        rep.generated_at = t.isoformat()
        ports = [PortCounters("leaf01", 3, t.timestamp(), {"SymbolErrorCounter": day})]
        if day < 2:  # a port that stopped being sampled keeps its own last two samples
            ports.append(PortCounters("leaf02", 1, t.timestamp(), {"SymbolErrorCounter": 10 + day}))
        store(db, rep, counters=ports)
    with History(db, create=False) as h:
        got = {(pcs[-1].node, pcs[-1].port): (facts, pcs) for facts, pcs in h.newest_samples(2)}
        assert h.sweep_count() == 5
        one = h.newest_samples(1)
    assert sorted(got) == [("leaf01", 3), ("leaf02", 1)]
    facts, pcs = got[("leaf01", 3)]
    assert [pc.values["SymbolErrorCounter"] for pc in pcs] == [3, 4]
    assert pcs[0].timestamp < pcs[1].timestamp == (T0 + timedelta(days=4)).timestamp()
    assert facts["label"] == "leaf01" and facts["peer"]
    assert [pc.values["SymbolErrorCounter"] for pc in got[("leaf02", 1)][1]] == [10, 11]
    assert sorted(len(pcs) for _, pcs in one) == [1, 1]


def test_an_empty_store_has_no_samples_and_no_sweeps(tmp_path):
    with History(tmp_path / "h.sqlite") as h:
        assert h.newest_samples(2) == [] and h.sweep_count() == 0
