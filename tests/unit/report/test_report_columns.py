"""A large report keeps its topology and tests as columns, loads back the same, and stays v1."""

from __future__ import annotations

import json

import pytest

import fabricdoc.report.report as report_module
from fabricdoc.errors import FabricdocError
from fabricdoc.fabric.generators import fat_tree_3
from fabricdoc.model.records import Observations
from fabricdoc.report.pairs import PairRow
from fabricdoc.report.report import Report
from fabricdoc.report.validation import validate_report

PAIR = {"src": ["h1", 1], "dst": ["h2", 1], "status": "ok", "busbw_gbps": 48.5, "expected_gbps": 50.0,
        "ratio": 0.97, "round": 1, "test": "sendrecv", "wrong": None, "error": None}  # as an older report has it


@pytest.fixture
def small_compact(monkeypatch):
    """Columns from a few dozen items on, so a k=4 fat-tree is a 'large' report."""
    monkeypatch.setattr(report_module, "COMPACT_MIN", 10)


def _report() -> Report:
    report = Report.build(fat_tree_3(4), [], Observations())
    report.pairs = [PairRow.from_dict(dict(PAIR, round=i)) for i in range(20)]
    return report


def test_a_large_report_is_saved_as_columns_and_loads_back_the_same(tmp_path, small_compact):
    report = _report()
    path = report.save(tmp_path / "r.json")
    data = json.loads(path.read_text())
    assert "topology" not in data and "pairs" not in data
    assert len(data["topology_columns"]["links"]["a"]) == 48 and len(data["pairs_columns"]["src"]) == 20
    back = Report.load(path)
    assert back.topology == report.topology and back.pairs == report.pairs
    assert back.to_dict() == report.to_dict()
    assert back.fabric_model().summary() == fat_tree_3(4).summary()


def test_columns_kept_as_read_rebuild_the_same_fabric_and_save_back_the_same(tmp_path, small_compact):
    report = _report()
    report.topology["links"][3]["state"] = "down"  # a down cable and its rates must survive the columns too
    path = report.save(tmp_path / "r.json")
    kept = Report.load(path, keep_columns=True)
    assert kept.topology is None and kept.pairs == []  # not expanded: the impact model's process only rebuilds
    full = Report.load(path).fabric_model()
    fabric = kept.fabric_model()
    assert list(fabric.links.items()) == list(full.links.items())
    assert {k: (n.kind, n.label, n.num_ports, n.guid, n.attrs) for k, n in fabric.nodes.items()} == {
        k: (n.kind, n.label, n.num_ports, n.guid, n.attrs) for k, n in full.nodes.items()}
    again = kept.save(tmp_path / "again.json")
    assert json.loads(again.read_text()) == json.loads(path.read_text())  # nothing lost by keeping them


@pytest.mark.parametrize(("column", "value", "says"), [
    ("b_port", None, "is already cabled"),  # cable 5's far end on cable 4's port
    ("a_port", 99, "has no port 99"),
])
def test_a_cabling_the_bulk_check_refuses_is_named_cable_by_cable(tmp_path, small_compact, column, value, says):
    path = _report().save(tmp_path / "r.json")
    data = json.loads(path.read_text())
    links = data["topology_columns"]["links"]
    if value is None:
        links["b"][5], links["b_port"][5] = links["b"][4], links["b_port"][4]
    else:
        links[column][3] = value
    path.write_text(json.dumps(data))
    for keep in (False, True):  # the dicts' path and the columns' path say the same
        with pytest.raises(FabricdocError, match=says):
            Report.load(path, keep_columns=keep).fabric_model()


def test_a_small_report_keeps_one_object_per_link_and_test(tmp_path):
    data = json.loads(_report().save(tmp_path / "r.json").read_text())
    assert "topology_columns" not in data and isinstance(data["topology"]["links"][0], dict)
    assert data["pairs"][0]["src"] == ["h1", 1]


def test_the_columns_are_one_line_each_and_the_rest_stays_indented(tmp_path, small_compact):
    text = _report().to_json()
    column_lines = [line for line in text.splitlines() if '"topology_columns"' in line or '"pairs_columns"' in line]
    assert len(column_lines) == 2
    assert '\n  "verdict": ' in text


@pytest.mark.parametrize(("where", "value", "says"), [
    (("links", "a"), [0] * 47, "topology_columns/links/a"),
    (("links", "b"), None, "topology_columns/links/b/0"),
    (("links", "state"), "sideways", "topology_columns/links/state/3"),
    (("nodes", "kind"), "router", "topology_columns/nodes/kind/3"),
])
def test_a_broken_column_is_refused_naming_where(tmp_path, small_compact, where, value, says):
    data = json.loads(_report().to_json())
    table = data["topology_columns"][where[0]]
    if isinstance(value, list):
        table[where[1]] = value
    elif value is None:
        table[where[1]][0] = 10_000
    else:
        table[where[1]][3] = value
    with pytest.raises(FabricdocError, match=says):
        validate_report(data, "r.json")


def test_a_pair_column_of_the_wrong_length_is_refused(small_compact):
    data = json.loads(_report().to_json())
    data["pairs_columns"]["status"].pop()
    with pytest.raises(FabricdocError, match="pairs_columns/status"):
        validate_report(data, "r.json")


def test_the_printed_schema_describes_the_columns():
    from fabricdoc.report.schema import REPORT_SCHEMA

    assert {"topology_columns", "pairs_columns"} <= set(REPORT_SCHEMA["properties"])


def test_link_loads_survive_the_columns_and_links_without_one_stay_without():
    from fabricdoc.report.report import from_topology_columns, topology_columns

    topo = {"nodes": [{"id": "a", "label": "a", "kind": "switch", "ports": 2, "guid": None, "attrs": {}},
                      {"id": "b", "label": "b", "kind": "switch", "ports": 2, "guid": None, "attrs": {}}],
            "links": [{"a": ["a", 1], "b": ["b", 1], "lanes": 4, "lane_gbps": 100.0, "max_lanes": 4,
                       "max_lane_gbps": 100.0, "state": "up", "load": 0.42},
                      {"a": ["a", 2], "b": ["b", 2], "lanes": 4, "lane_gbps": 100.0, "max_lanes": 4,
                       "max_lane_gbps": 100.0, "state": "up"}]}
    assert from_topology_columns(topology_columns(topo)) == topo
    no_loads = {**topo, "links": [{k: v for k, v in lk.items() if k != "load"} for lk in topo["links"]]}
    assert "load" not in topology_columns(no_loads)["links"]


def test_a_large_report_whose_tests_carry_slow_flags_loads_back(tmp_path, small_compact):
    # A sweep's tests are judged: each carries ``slow`` (true/false), a boolean column once saved as columns.
    report = _report()
    report.pairs = [PairRow.from_dict(dict(PAIR, round=i, slow=i % 3 == 0, relative=0.9)) for i in range(20)]
    path = report.save(tmp_path / "r.json")
    assert json.loads(path.read_text())["pairs_columns"]["slow"][:3] == [True, False, False]
    back = Report.load(path)
    assert [p.slow for p in back.pairs] == [p.slow for p in report.pairs]
