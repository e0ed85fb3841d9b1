"""History store round trip: counters to rates over days, flaps per week, failure rates."""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime, timedelta

import pytest

from fabricdoc.cli.main import main
from fabricdoc.errors import FabricdocError
from fabricdoc.model.records import LinkEvent, PortCounters
from fabricdoc.report.history import History
from tests.helpers.reports import make_report, nic_down, store

T0 = datetime(2026, 11, 30, 8, 0, tzinfo=UTC)  # a Monday: ISO week 2026-W49
DAY = 86400.0


def report_at(t: datetime, bad_hosts=()):
    rep = make_report(bad_hosts=bad_hosts)
    rep.generated_at = t.isoformat(timespec="seconds")
    return rep


def sample(t: datetime, sym: int, xmit_words: int, downed: int = 0) -> PortCounters:
    return PortCounters(
        "leaf01", 3, t.timestamp(),
        {"SymbolErrorCounter": sym, "PortXmitData": xmit_words, "LinkDownedCounter": downed, "PortRcvErrors": None},
    )


def test_rates_over_days_use_counter_semantics_and_keep_guid_and_peer(tmp_path):
    db = tmp_path / "h.sqlite"
    for day, (sym, words) in enumerate([(0, 1000), (100, 3000), (300, 3000)]):
        t = T0 + timedelta(days=day)
        store(db, report_at(t), counters=[sample(t, sym, words)])
    with History(db) as h:
        rates = h.counter_rates(counter="symbol_errors")
        assert list(rates["delta"]) == [100, 200]
        assert rates["per_second"].iloc[0] == pytest.approx(100 / DAY)
        assert rates["guid"].iloc[0].startswith("0x") and rates["peer"].iloc[0] == "spine01[1]"
        xmit = h.counter_rates(counter="xmit_bytes")
        assert list(xmit["delta"]) == [8000, 0]  # PortXmitData counts 4-byte words
        # A counter the device did not report stays missing, never a zero rate.
        assert h.counter_rates(counter="rcv_errors").empty


def test_saturated_and_reset_registers_are_flagged(tmp_path):
    db = tmp_path / "h.sqlite"
    for day, sym in enumerate([65535, 65535, 12]):
        t = T0 + timedelta(days=day)
        store(db, report_at(t), counters=[sample(t, sym, 0)])
    with History(db) as h:
        r = h.counter_rates(counter="symbol_errors")
    assert list(r["at_least"]) == [True, True]
    assert list(r["reset"]) == [False, True]


def test_appending_the_same_report_twice_stores_it_once(tmp_path):
    db = tmp_path / "h.sqlite"
    rep = report_at(T0)
    first = store(db, rep, counters=[sample(T0, 1, 1)])
    assert store(db, rep, counters=[sample(T0, 1, 1)]) == first
    with History(db) as h:
        assert len(h.sweeps()) == 1
        assert h.db.execute("SELECT COUNT(*) FROM counters").fetchone()[0] == 4


def test_flaps_per_week_from_events_and_link_downed_counter(tmp_path):
    db = tmp_path / "h.sqlite"
    t1, t2, t3 = T0, T0 + timedelta(days=1), T0 + timedelta(days=8)  # W49, W49, W50
    events = [LinkEvent("node0001", 1, (t1 + timedelta(hours=h)).timestamp(), s) for h, s in ((1, "down"), (2, "up"), (3, "down"), (4, "up"))]
    store(db, report_at(t1), counters=[sample(t1, 0, 0, downed=0)])
    store(db, report_at(t2), counters=[sample(t2, 0, 0, downed=0)], events=events)
    store(db, report_at(t3), counters=[sample(t3, 0, 0, downed=3)])
    with History(db) as h:
        flaps = h.flaps_per_week()
    got = {(r.node, r.port, r.week): r.flaps for r in flaps.itertuples()}
    assert got == {("node0001", 1, "2026-W49"): 2, ("leaf01", 3, "2026-W50"): 3}


def test_component_failures_count_episodes_and_rates_per_kind(tmp_path):
    db = tmp_path / "h.sqlite"
    pattern = [["node0002"], ["node0002"], [], ["node0002", "node0004"]]
    for day, bad in enumerate(pattern):
        store(db, report_at(T0 + timedelta(days=day), bad_hosts=bad))
    with History(db) as h:
        comp = h.component_failures().set_index("component")
        assert comp.loc["nic:node0002", "episodes"] == 2
        assert comp.loc["nic:node0002", "faulty_sweeps"] == 3
        assert comp.loc["nic:node0004", "episodes"] == 1
        assert comp.loc["nic:node0002", "episodes_per_day"] == pytest.approx(2 / 3)
        kinds = h.kind_failure_rates().set_index("kind")
        assert kinds.loc["nic", "episodes"] == 3
        assert kinds.loc["nic", "per_component_hour"] == pytest.approx(3 / (4 * 72))
        rate, why = h.host_failure_rate()
    # Hosts entering the drain list: node0002 on day 0->1? no (already), day 2->3 node0002 and node0004.
    # Exposure: (4-1)*24 + (4-1)*24 + (4-0)*24 host-hours.
    assert rate == pytest.approx(2 / (3 * 24 + 3 * 24 + 4 * 24))
    assert "2 host failures in 4 sweeps" in why


def test_not_a_database_is_a_clear_error(tmp_path):
    bad = tmp_path / "h.sqlite"
    bad.write_text("this is not sqlite, just text that is long enough to have a header" * 20)
    with pytest.raises(FabricdocError, match="not a usable fabricdoc history database"):
        History(bad)


def test_cli_history_add_then_failures_json(tmp_path, capsys):
    import json

    from fabricdoc.cli.main import main

    db = tmp_path / "h.sqlite"
    paths = []
    for day, bad in enumerate([["node0003"], [], ["node0003"]]):
        p = tmp_path / f"r{day}.json"
        report_at(T0 + timedelta(days=day), bad_hosts=bad).save(p)
        paths.append(str(p))
    assert main(["history", "--db", str(db), "add", *paths]) == 0
    capsys.readouterr()
    assert main(["history", "--db", str(db), "--json", "failures"]) == 0
    comp_line, kind_line = capsys.readouterr().out.strip().splitlines()
    comp = json.loads(comp_line)
    assert comp == [
        {"id": nic_down("node0003").id, "component": "nic:node0003", "name": "node0003 mlx5_0", "kind": "nic",
         "fault": "down", "episodes": 2, "faulty_sweeps": 2, "sweeps": 3, "observed_days": 2.0,
         "episodes_per_day": 1.0, "node_ids": ["node0003"]}
    ]
    assert json.loads(kind_line)[0]["kind"] == "nic"


def test_cli_history_tables_show_fabric_names_with_control_characters_escaped(tmp_path, capsys):
    from fabricdoc.cli.main import main

    rep = report_at(T0, bad_hosts=["node0003"])
    for f in rep.findings:
        f.name = f.node_ids[0] = "evil\x1b[2Jnode"
    path = tmp_path / "r.json"
    rep.save(path)
    db = tmp_path / "h.sqlite"
    assert main(["history", "--db", str(db), "add", str(path)]) == 0
    capsys.readouterr()
    assert main(["history", "--db", str(db), "failures"]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out
    assert "evil\\x1b[2Jnode" in out


def test_the_host_failure_rate_counts_only_the_named_fabrics_sweeps(tmp_path):
    db = tmp_path / "h.sqlite"
    for day, bad in enumerate([[], ["node0002"]]):
        store(db, report_at(T0 + timedelta(days=day), bad_hosts=bad))
        other = report_at(T0 + timedelta(days=day, hours=1), bad_hosts=[[], ["node0001", "node0003"]][day])
        other.fabric = {**other.fabric, "name": "other"}
        store(db, other)
    with History(db) as h:
        name = report_at(T0).fabric["name"]
        rate, why = h.host_failure_rate(name)
        assert rate == pytest.approx(1 / (4 * 24)) and "1 host failures in 2 sweeps" in why
        rate, why = h.host_failure_rate("other")
        assert rate == pytest.approx(2 / (4 * 24)) and "2 host failures in 2 sweeps" in why
        assert h.host_failure_rate("absent") is None


def test_a_sweep_with_a_history_takes_the_jobs_failure_rate_from_it(tmp_path):
    from fabricdoc.report.report import Report
    from fabricdoc.sweep import SweepConfig, run_sweep

    fresh = tmp_path / "fresh.sqlite"
    first = run_sweep(SweepConfig(fabric="demo", history=str(fresh)))
    # One sweep is no history yet: the documented default rate, and the sweep is stored.
    assert first.impact.job.rate_source.startswith("default")
    with History(fresh) as h:
        assert len(h.sweeps()) == 1
    # Ten hours earlier the same fabric drained nothing: the next sweep's drain is a new failure.
    db = tmp_path / "h.sqlite"
    earlier = Report.from_dict(first.to_dict())
    when = datetime.fromisoformat(first.generated_at) - timedelta(hours=10)
    earlier.generated_at = when.isoformat(timespec="seconds")
    earlier.drain = []
    store(db, earlier)
    second = run_sweep(SweepConfig(fabric="demo", history=str(db)))
    job = second.impact.job
    assert len(second.drain) == 1
    # Exposure: every host from the earlier sweep to this one (10 h and the seconds since).
    assert job.host_failures_per_hour == pytest.approx(1 / (second.fabric["hosts"] * 10), rel=0.01)
    assert job.rate_source.startswith("history: 1 host failures in 2 sweeps")


def test_a_non_utf8_cell_is_said_and_every_other_row_still_read(tmp_path, capsys):
    import sqlite3

    from fabricdoc.cli.main import main

    db = tmp_path / "h.sqlite"
    paths = []
    for day in range(2):
        p = tmp_path / f"r{day}.json"
        report_at(T0 + timedelta(days=day), bad_hosts=["node0003"]).save(p)
        paths.append(str(p))
    assert main(["history", "--db", str(db), "add", *paths]) == 0
    capsys.readouterr()
    with sqlite3.connect(db) as raw:  # one cell garbled by another tool or a disk fault
        raw.execute("UPDATE findings SET name = CAST(X'6e6f6465ff30303033' AS TEXT)")
    for view in ("sweeps", "rates", "flaps", "failures"):
        assert main(["history", "--db", str(db), view]) == 0, view
    out, err = capsys.readouterr()
    assert "Traceback" not in err and "internal error" not in err
    assert "text cells are not valid UTF-8; shown with U+FFFD" in err
    assert "node\ufffd0003" in out and "nic:node0003" in out


def test_a_report_whose_numbers_no_reader_holds_is_refused_at_the_schema(tmp_path, capsys):
    import json

    from fabricdoc.cli.main import main

    path = tmp_path / "r.json"
    report_at(T0).save(path)
    doc = json.loads(path.read_text())
    doc["pairs"] = [{"src": ["node0001", 1], "dst": ["node0002", 1], "status": "ok", "busbw_gbps": 1.0,
                     "expected_gbps": 2.0, "ratio": 0.5, "round": 0, "test": "sendrecv", "wrong": 0,
                     "error": None, "size_bytes": 2**64}]
    path.write_text(json.dumps(doc))
    assert main(["schema", "--validate", str(path)]) == 2
    assert main(["history", "--db", str(tmp_path / "h.sqlite"), "add", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("pairs/0/size_bytes") == 2 and "greater than the maximum of 9223372036854775807" in err
    assert "internal error" not in err


def test_history_tables_read_as_people_read_them(tmp_path, capsys):
    from fabricdoc.cli.main import main

    db = tmp_path / "h.sqlite"
    paths = []
    for minute in range(2):  # two sweeps two minutes apart: far too little to read a rate per day from
        p = tmp_path / f"r{minute}.json"
        report_at(T0 + timedelta(minutes=2 * minute), bad_hosts=["node0003"]).save(p)
        paths.append(str(p))
    assert main(["history", "--db", str(db), "add", *paths]) == 0
    capsys.readouterr()
    assert main(["history", "--db", str(db), "sweeps"]) == 0
    out = capsys.readouterr().out
    assert "at (UTC)" in out and T0.strftime("%Y-%m-%d %H:%M:%S") in out
    assert not re.search(r"\b1\.\d{6}e\+09\b|\b17\d{8}\.\d\b", out)  # no epoch floats
    assert main(["history", "--db", str(db), "failures"]) == 0
    out = capsys.readouterr().out
    assert "episodes per day need at least a day of history" in out
    assert not re.search(r"\b\d{3,}\.\d+\b", out.split("kind")[0])  # no 838.83-style extrapolation
    assert main(["history", "--db", str(db), "rates"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("(none: the store's 2 sweeps hold no counter samples") and "--history" in out


def test_two_simulated_sweeps_never_read_their_different_counter_bases_as_flaps(tmp_path, capsys):
    from fabricdoc.cli.main import main

    db = tmp_path / "h.sqlite"
    for seed in (1, 7):  # each simulated sweep counts from its own base (and their samples interleave)
        assert main(["sweep", "--fabric", "demo", "--seed", str(seed), "--history", str(db), "-q"]) == 1
    capsys.readouterr()
    assert main(["history", "--db", str(db), "--json", "flaps"]) == 0
    flaps = json.loads(capsys.readouterr().out)
    assert {(f["node"], f["port"]) for f in flaps} == {("leaf07", 3), ("node0027", 1)}  # the demo's flapping cable
    assert main(["history", "--db", str(db), "rates"]) == 0
    out = capsys.readouterr().out
    assert "per second" in out and "counter intervals with no change not shown" in out


def _two_ports(t: datetime, sym: int) -> list[PortCounters]:
    return [PortCounters(node, port, t.timestamp(), {"SymbolErrorCounter": sym, "LinkDownedCounter": sym // 10})
            for node, port in (("leaf01", 3), ("leaf01", 4), ("leaf02", 3))]


@pytest.mark.parametrize(("part", "want"), [
    ("leaf01", {("leaf01", 3), ("leaf01", 4)}),
    ("leaf01[4]", {("leaf01", 4)}),
    ("LEAF02", {("leaf02", 3)}),
    ("0x0002C90200000003", {("leaf02", 3)}),  # its GUID (the report's topology gives it), in any case
    ("0002c90200000002[3]", {("leaf01", 3)}),
])
def test_history_views_narrow_to_a_part_by_the_names_people_use(tmp_path, capsys, part, want):
    db = tmp_path / "h.sqlite"
    for day, sym in enumerate((0, 20)):
        t = T0 + timedelta(days=day)
        store(db, report_at(t, bad_hosts=["node0001"] if day else []), counters=_two_ports(t, sym))
    assert main(["history", "--history", str(db), "--json", "rates", "--part", part, "--counter", "symbol_errors"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert {(r["node"], r["port"]) for r in rows} == want and all(r["delta"] == 20 for r in rows)
    assert main(["history", "--history", str(db), "--json", "flaps", "--part", part]) == 0
    assert {(r["node"], r["port"]) for r in json.loads(capsys.readouterr().out)} == want


def test_history_failures_narrow_to_a_host_and_a_bad_part_is_one_line(tmp_path, capsys):
    db = tmp_path / "h.sqlite"
    store(db, report_at(T0, bad_hosts=["node0001", "node0002"]))
    assert main(["history", "--history", str(db), "failures", "--part", "node0002"]) == 0
    out = capsys.readouterr().out
    assert nic_down("node0002").id in out and nic_down("node0001").id not in out
    assert "per_component_hour" not in out  # the fabric-wide rates are not one host's
    for part, why in (("nosuch", "no host or switch of that name"), ("leaf01[300]", "a port number is 0 to 255")):
        assert main(["history", "--history", str(db), "failures", "--part", part]) == 2
        out, err = capsys.readouterr()
        assert out == "" and len(err.splitlines()) == 1 and why in err and "--part" in err
