"""Cables no finished bandwidth test crossed are said in the report's coverage and text, without making a
healthy report incomplete (a cable no route uses carries no job's traffic either)."""

from __future__ import annotations

from fabricdoc.analysis.localize import Options
from fabricdoc.bandwidth.simulated import SimMeasure
from fabricdoc.fabric.generators import fat_tree_3
from fabricdoc.model.records import Observations
from fabricdoc.report.coverage import Planned
from fabricdoc.report.render import summary_text
from fabricdoc.report.report import Report
from fabricdoc.report.validation import validate_report
from fabricdoc.sources.sim.simulator import Simulator, rerouted_lfts
from fabricdoc.sweep import measure_and_retest


def _swept(fabric):
    sim = Simulator(fabric, [], seed=1)
    obs = Observations()
    found = measure_and_retest(sim.truth, obs, SimMeasure(sim), Options())
    report = Report.build(sim.truth, found.findings, obs, planned=Planned(tests=found.planned_tests),
                          judged=found.judged)
    return sim.truth, obs, report


def test_cables_no_route_crosses_are_named_and_a_healthy_fabric_still_passes():
    fabric = fat_tree_3(4)
    fabric.lfts = rerouted_lfts(fabric)  # min-hop tables that leave half the core cables without a route
    fabric.invalidate()
    truth, obs, report = _swept(fabric)
    routed = {k for a in truth.host_ports() for b in truth.host_ports() if a != b for k in truth.path(a, b)}
    unrouted = [k for k in truth.links if k not in routed]
    assert unrouted  # the premise
    cables = report.coverage["cables"]
    assert cables["untested"] == len(unrouted) and len(cables["untested_shown"]) == min(20, len(unrouted))
    assert report.verdict == "pass"
    text = summary_text(report)
    assert f"no bandwidth test crossed {len(unrouted)} cables" in text
    validate_report(report.to_dict())


def test_a_fabric_whose_every_cable_was_tested_says_nothing_of_it():
    _, _, report = _swept(fat_tree_3(4))
    assert report.coverage["cables"]["untested"] == 0
    assert "no bandwidth test crossed" not in summary_text(report)
