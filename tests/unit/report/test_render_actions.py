"""The text summary says what to do about each finding, what the recommendation does, and the expected busbw."""

from __future__ import annotations

import json
import re

import jsonschema
import pytest

from fabricdoc.impact.records import ExpectedBusbw, Recommendation
from fabricdoc.model.findings import Action
from fabricdoc.report.render import action_line, expected_lines, recommendation_lines, summary_text
from fabricdoc.report.report import Report
from fabricdoc.report.schema import REPORT_SCHEMA


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    from fabricdoc.sweep import SweepConfig, run_sweep

    path = tmp_path_factory.mktemp("demo") / "report.json"
    run_sweep(SweepConfig(fabric="demo")).save(path)
    return path


def test_the_demo_report_with_actions_recommendation_and_expected_busbw_validates_and_loads(demo):
    data = json.loads(demo.read_text())
    jsonschema.Draft202012Validator(REPORT_SCHEMA).validate(data)
    report = Report.load(demo)
    assert all(f.action is not None for f in report.findings)
    assert report.impact.recommendation.isolate and report.impact.expected_busbw.calibrated


def test_each_finding_is_followed_by_what_to_do_who_and_how_soon(demo):
    report = Report.load(demo)
    text = summary_text(report)
    for f in report.findings:
        assert action_line(f.action) in text
    lines = text.splitlines()
    first = next(i for i, ln in enumerate(lines) if ln.startswith(report.findings[0].id + " "))
    nxt = next(i for i, ln in enumerate(lines) if ln.startswith(report.findings[1].id + " "))
    assert any(ln.strip().startswith("> NOW (network): take the port out of service") for ln in lines[first:nxt])


def test_the_summary_gives_the_recommendation_and_the_calibrated_expected_figures(demo):
    report = Report.load(demo)
    text = summary_text(report)
    assert "/ recommended 400.0" in text
    cables = sorted(f.id for f in report.findings if f.kind == "link" and f.fault != "flapping")
    assert f"take out of service (3 cables, routed around) for {', '.join(cables)}:" in text
    assert "    leaf02[5] -- spine01[2]" in text
    now = re.search(r"AllReduce busbw \(Gb/s\): nominal 400.0 / now ([0-9.]+) /", text)
    assert now, text
    # The calibrated line reports the same measured busbw as the line above it, and the learned efficiency.
    assert re.search(r"expected \(ring, x0\.[89][0-9] efficiency learned from \d+ healthy tests", text), text
    assert f"now {now.group(1)} (measured)" in text


def test_untrusted_names_in_the_recommendation_and_actions_are_escaped():
    rec = {"hosts": 3, "throughput_fraction": 0.5, "drain": ["evil\x1b[31m"],
           "isolate": [[["leaf\x1b]0;x\x07", 1], ["spine01", 2]]], "findings": ["F001"]}
    out = "\n".join(recommendation_lines(Recommendation.from_dict(rec)))
    assert "\x1b" not in out and "\x07" not in out
    assert "\x1b" not in action_line(Action("reseat \x1b[2J it", "network", "now"))


def test_an_uncalibrated_report_prints_no_expected_line_and_an_old_report_no_recommendation():
    uncalibrated = {"calibrated": False, "efficiency_source": "none", "by_algorithm": {}}
    assert expected_lines(ExpectedBusbw.from_dict(uncalibrated)) == []
    assert recommendation_lines(None) == []

