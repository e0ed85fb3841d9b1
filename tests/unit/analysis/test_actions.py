"""An action per finding: rules as data, the cable's ends decide who acts, every report carries them."""

from __future__ import annotations

import json

import pytest

from fabricdoc.analysis.actions import action_for, attach_actions, cable_ends
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.faults import registry
from fabricdoc.model.findings import ACTION_URGENCY, ACTION_WHO, Action, Finding
from fabricdoc.report.report import Report

SPINE_LINK = [("leaf01", 3), ("spine01", 1)]
HOST_LINK = [("leaf01", 1), ("node0001", 1)]


def _finding(fault: str, kind: str = "link", endpoints=SPINE_LINK, severity: str = "error") -> Finding:
    ends = list(endpoints) if endpoints else None
    return Finding("F001", kind, "part", fault, severity, 0.9, [], ends, [e[0] for e in ends] if ends else ["node0001"])


@pytest.fixture(scope="module")
def fabric():
    return fat_tree_2(leaves=2, spines=2, hosts_per_leaf=2)


def test_every_registered_fault_has_its_own_action_not_the_fallback():
    fallback = registry().fallback[-1]
    assert fallback.fault == "*" and not fallback.kinds
    for fault in registry().rows:
        assert action_for(_finding(fault, "nic", None)) != fallback.action, fault


def test_a_bad_spine_cable_is_taken_out_of_service_by_the_network_a_host_cable_is_the_data_center(fabric):
    spine = action_for(_finding("width_degraded"), fabric)
    host = action_for(_finding("width_degraded", endpoints=HOST_LINK), fabric)
    assert cable_ends(fabric, _finding("x")) == "switches"
    assert cable_ends(fabric, _finding("x", endpoints=HOST_LINK)) == "host"
    assert spine.who == "network" and "out of service" in spine.do and spine.urgency == "now"
    assert host.who == "data center" and "out of service" not in host.do and "optic" in host.do


def test_a_few_symbol_errors_are_watched_a_high_rate_is_fixed(fabric):
    assert action_for(_finding("symbol_errors", severity="warning"), fabric).urgency == "watch"
    assert action_for(_finding("symbol_errors", severity="error"), fabric).urgency == "now"
    assert action_for(_finding("symbol_errors", severity="error", endpoints=HOST_LINK), fabric).urgency == \
        "next maintenance"


def test_congestion_needs_a_config_check_not_a_part_and_a_dead_switch_needs_the_data_center_now():
    congestion = action_for(_finding("congestion", "port"))
    dead = action_for(_finding("dead", "switch", None, "critical"))
    assert congestion.who == "network" and "PFC" in congestion.do and congestion.urgency == "watch"
    assert dead.who == "data center" and dead.urgency == "now" and "switch" in dead.do


def test_every_default_action_says_who_and_how_soon_in_the_contracts_words():
    for r in registry().action_rules():
        assert r.action.who in ACTION_WHO and r.action.urgency in ACTION_URGENCY and r.action.do


def test_an_action_survives_the_json_round_trip_and_old_reports_without_one_still_load():
    f = _finding("flapping")
    f.action = Action("reseat it", "data center", "now", "flaps")
    d = json.loads(json.dumps(f.to_dict()))
    assert d["action"] == {"do": "reseat it", "who": "data center", "urgency": "now", "why": "flaps"}
    assert Finding.from_dict(d).action == f.action
    d.pop("action")
    assert Finding.from_dict(d).action is None
    f.action = None
    assert f.to_dict()["action"] is None


def test_attach_keeps_an_action_already_set_and_gives_the_rest_theirs(fabric):
    given = _finding("flapping")
    given.action = Action("leave it", "nobody", "watch")
    other = _finding("down", endpoints=HOST_LINK)
    out = attach_actions([given, other], fabric)
    assert out[0].action.who == "nobody"
    assert out[1].action.who == "data center" and out[1].action.urgency == "now"


def test_every_finding_of_a_report_carries_its_action_in_the_json(fabric):
    from fabricdoc.bandwidth.plan import plan_sweep
    from fabricdoc.fabric.faults import Fault
    from fabricdoc.model.records import PortRef
    from fabricdoc.sources.sim.simulator import Simulator

    f = fat_tree_2(4, 2, 2)
    sim = Simulator(f, [Fault("lossy", port=PortRef("leaf02", 3)), Fault("down", port=PortRef("node0005", 1))], seed=2)
    result = sim.run(plan_sweep(f).rounds)
    from fabricdoc.analysis.localize import localize

    report = Report.build(result.observed, localize(result.observed, result.observations), result.observations)
    data = json.loads(report.to_json())
    assert data["findings"] and all(x["action"]["do"] and x["action"]["who"] in ACTION_WHO for x in data["findings"])
    assert Report.from_dict(data).findings[0].action == report.findings[0].action


def test_a_switch_that_collapses_under_load_gets_its_own_action_not_the_generic_switch_one():
    from fabricdoc.analysis.actions import action_for
    from fabricdoc.model.findings import Finding

    f = Finding("F1", "switch", "spine02", "load_collapse", "error", 0.99, [], None, ["spine02"])
    action = action_for(f)
    assert action is not None and "buffer" in action.do and "line card" not in action.do


def test_every_rule_that_names_a_fault_and_a_kind_is_reachable_by_that_pair():
    # A rule that matches the same (fault, kind) as specifically would shadow it.
    for rule in registry().action_rules():
        if rule.fault == "*" or not rule.kinds or rule.ends or rule.severities:
            continue
        for kind in rule.kinds:
            f = Finding("F1", kind, "x", rule.fault, "error", 0.9, [], None, ["x"])
            assert action_for(f).do == rule.action.do, (rule.fault, kind)
