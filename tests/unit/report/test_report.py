"""Report v1: schema, round trip, atomic writes, clear errors on bad files."""

import json
import re

import jsonschema
import pytest

from fabricdoc.analysis.localize import localize
from fabricdoc.bandwidth.plan import plan_sweep
from fabricdoc.errors import FabricdocError
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.records import PortRef
from fabricdoc.model.text import escape as safe
from fabricdoc.report.files import write_atomic
from fabricdoc.report.render import summary_text
from fabricdoc.report.report import Report
from fabricdoc.report.schema import REPORT_SCHEMA
from fabricdoc.sources.sim.simulator import Simulator


@pytest.fixture(scope="module")
def report():
    fabric = fat_tree_2(4, 2, 2)
    faults = [Fault("lossy", port=PortRef("leaf02", 3)), Fault("down", port=PortRef("node0005", 1))]
    result = Simulator(fabric, faults, seed=2).run(plan_sweep(fabric).rounds)
    findings = localize(result.observed, result.observations)
    return Report.build(result.observed, findings, result.observations, duration_s=1.5)


def test_report_validates_against_its_schema(report):
    data = json.loads(report.to_json())
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(data)
    assert data["schema"] == "fabricdoc.report/v1"
    assert data["verdict"] == "fail"
    assert {f["fault"] for f in data["findings"]} == {"symbol_errors", "down"}
    (entry,) = data["drain"]
    assert {k: entry[k] for k in ("node", "reason", "findings")} == {
        "node": "node0005", "reason": "behind link leaf03[1] -- node0005[1] (down)",
        "findings": ["link:leaf03/1~node0005/1:down"]}
    # The tag the scheduler's reason carries, so an operator can match a drain to its finding.
    assert re.fullmatch(r"[0-9a-f]{6}", entry["tag"]) and entry["tags"] == [entry["tag"]]


def test_the_impact_section_is_validated_field_by_field(report, tmp_path):
    from fabricdoc.impact.section import impact_section

    data = json.loads(report.to_json())
    data["impact"] = impact_section(report.fabric_model(), report.findings, [d.node for d in report.drain]).as_dict()
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(data)
    assert {w["choice"] for w in data["impact"]["what_if"]} >= {"report", "none"}
    del data["impact"]["job"]["failure_probability"]
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    with pytest.raises(FabricdocError, match="at impact/job: 'failure_probability' is a required property"):
        Report.load(path)


def test_report_round_trips_through_its_file(report, tmp_path):
    path = report.save(tmp_path / "r.json")
    again = Report.load(path)
    assert again.to_dict() == report.to_dict()
    fabric = again.fabric_model()
    assert fabric.summary() == {"hosts": 8, "switches": 6, "links": 16}


def test_atomic_write_keeps_the_old_file_when_writing_fails(tmp_path):
    path = tmp_path / "r.json"
    path.write_text("old")

    with pytest.raises(TypeError):
        write_atomic(path, 12345)  # type: ignore[arg-type]
    assert path.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_atomic_write_gives_the_umask_mode_or_keeps_the_replaced_files(tmp_path):
    import os
    import stat

    old = os.umask(0o022)
    try:
        fresh = write_atomic(tmp_path / "report.json", "{}\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # readable by the scheduler, like open() gives
        fresh.chmod(0o640)
        write_atomic(fresh, "{\"again\": 1}\n")
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o640
        os.umask(0o077)
        assert stat.S_IMODE(write_atomic(tmp_path / "private.json", "{}\n").stat().st_mode) == 0o600
    finally:
        os.umask(old)
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ('{"schema": "fabricdoc.report/v1",\n "verdict": ', ":2: not valid JSON"),
        ('{"schema": "other/v9"}', "not a fabricdoc v1 report"),
        ("[]", "not a fabricdoc v1 report"),
    ],
)
def test_bad_report_files_give_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(FabricdocError, match=message) as info:
        Report.load(path)
    assert str(path) in str(info.value) and "\n" not in str(info.value)


def test_untrusted_labels_are_escaped_in_the_text_summary(report):
    assert safe("evil\x1b[31mred\nnext") == "evil\\x1b[31mred\\x0anext"
    text = summary_text(report)
    assert "verdict: FAIL" in text and "drain (1 host):" in text
    assert "\x1b" not in text


def test_a_bad_link_deep_in_a_large_report_is_named_by_its_path():
    from fabricdoc.fabric.generators import fat_tree_3
    from fabricdoc.model.records import Observations

    data = json.loads(Report.build(fat_tree_3(8), [], Observations()).to_json())
    Report.from_dict(data, "big.json")
    data["topology"]["links"][300]["b"] = ["spine", "one"]
    with pytest.raises(FabricdocError, match="big.json: .* at topology/links/300"):
        Report.from_dict(data, "big.json")


def test_bidi_overrides_and_c1_controls_in_names_are_escaped_in_the_json_file_too():
    import json

    from tests.helpers.reports import make_report

    report = make_report(bad_hosts=["node0003"])
    report.findings[0].name = "node\u202e0003\x85\x1b[2J"
    text = report.to_json()
    assert "\u202e" not in text and "\x85" not in text and "\x1b" not in text
    assert "\\u202e" in text and "\\u0085" in text
    assert json.loads(text)["findings"][0]["name"] == "node\u202e0003\x85\x1b[2J"  # the same value


def test_exporter_label_values_show_escape_and_bidi_characters_as_text():
    from fabricdoc.scheduler.exposition import labels

    out = labels(node="leaf\x1b[2J\u202e01", port=3)
    assert "\x1b" not in out and "\u202e" not in out
    assert out == '{node="leaf\\\\x1b[2J\\\\u202e01",port="3"}'
