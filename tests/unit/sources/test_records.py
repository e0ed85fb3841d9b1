"""Records survive the JSON a launcher gathers: exact round trip, several documents, clear errors."""

from __future__ import annotations

import pytest

from fabricdoc.errors import ParseError
from fabricdoc.model.records import (
    GpuHealth,
    LinkEvent,
    PairResult,
    PortCounters,
    PortRef,
    PortState,
    ProbeRun,
)
from fabricdoc.sources.records import observations_from_records, records_from_json, records_to_json

RECORDS = [
    PortCounters("h1", 2, 100.0, {"rx_prio3_pause": 7, "port_xmit_wait": None}, "ethtool", {"x": 32}, "eth0"),
    PortCounters("h1", 2, 160.0, {"rx_prio3_pause": 9, "port_xmit_wait": None}, "ethtool", {"x": 32}, "eth0"),
    PortState("h1", 2, "up", "UP", 4, 50.0, peer=PortRef("sw1", 7), source="netlink", ifname="eth0"),
    LinkEvent("h1", 2, 120.5, "down", "netlink", "eth0"),
    LinkEvent("h1", 2, 120.7, "up", "netlink-inferred", "eth0"),
    PairResult(PortRef("h1", 2), PortRef("h2", 1), "ok", 180.5, expected_gbps=200.0),
    ProbeRun("ethtool", "h1:eth0", "unsupported", 0.01, "ethtool: no stats"),
    GpuHealth("h1", 0, "GPU-1", "ok", {"nvlink": {"0": {"replay": 3}}, "xid_events": [{"xid": 79, "time": 1.0}]}),
]


def test_every_record_type_round_trips_exactly():
    assert records_from_json(records_to_json(RECORDS)) == RECORDS


def test_concatenated_documents_from_many_nodes_are_all_read():
    text = records_to_json(RECORDS[:3]) + "\n" + records_to_json(RECORDS[3:], indent=2) + "\n"
    assert records_from_json(text) == RECORDS


def test_a_bare_list_of_records_is_accepted():
    import json

    doc = json.loads(records_to_json(RECORDS))
    assert records_from_json(json.dumps(doc["records"])) == RECORDS


def test_unknown_record_type_names_the_record():
    text = '{"format": "fabricdoc-records", "version": 1, "records": [{"type": "Bogus"}]}'
    with pytest.raises(ParseError, match="record 0 has unknown type"):
        records_from_json(text, source="node7.json")


def test_garbled_json_names_the_line():
    text = records_to_json(RECORDS[:1]) + "\n{not json"
    with pytest.raises(ParseError) as exc:
        records_from_json(text, source="node7.json")
    assert exc.value.source == "node7.json" and exc.value.line_no == 2


def test_a_document_of_another_format_is_refused():
    with pytest.raises(ParseError, match="not a fabricdoc-records document"):
        records_from_json('{"format": "report", "version": 1}')


def test_observations_take_earliest_as_before_and_latest_as_after():
    obs = observations_from_records(RECORDS)
    assert [c.timestamp for c in obs.before] == [100.0]
    assert [c.timestamp for c in obs.after] == [160.0]
    assert obs.interval_s == 60.0
    assert len(obs.events) == 2 and len(obs.probes) == 1 and len(obs.gpus) == 1 and len(obs.pairs) == 1


@pytest.mark.parametrize("kind", [{"a": 1}, ["PortState"], 3, None])
def test_a_record_whose_type_is_not_a_name_is_one_error_naming_the_record(kind):
    import json

    doc = {"format": "fabricdoc-records", "version": 1, "records": [{"type": kind}]}
    with pytest.raises(ParseError, match="record 0 has unknown type"):
        records_from_json(json.dumps(doc), "r.json")


def test_a_bad_record_or_file_among_good_ones_is_listed_and_the_rest_read(tmp_path):
    import json

    from fabricdoc.sources.records import load_records

    good = records_to_json([PortState("n1", 1, "Active", "LinkUp", 4, 100.0), PortState("n2", 1, "Active")])
    doc = json.loads(good)
    doc["records"].insert(1, {"type": "PortState", "node": "n3", "port": 10**30, "state": "Active"})
    (tmp_path / "a.json").write_text(json.dumps(doc))
    (tmp_path / "b.json").write_bytes(b'{"format": "fabricdoc-records", \xff')
    (tmp_path / "c.json").write_text(records_to_json([PairResult(PortRef("n1", 1), PortRef("n2", 1), "ok", 1.0, 2.0)]))
    obs = load_records([str(tmp_path / n) for n in ("a.json", "b.json", "c.json")])
    assert sorted(s.node for s in obs.states) == ["n1", "n2"] and len(obs.pairs) == 1
    errors = [p.error for p in obs.probes if p.status == "error"]
    assert len(errors) == 2
    assert "a.json" in errors[0] and "record 1" in errors[0]
    assert "b.json:1" in errors[1] and "not valid UTF-8" in errors[1]
