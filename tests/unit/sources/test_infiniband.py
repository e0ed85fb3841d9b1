"""ibsource orchestration on replayed real outputs (no ibsim needed): Down links, samples, baselines, failures."""

from __future__ import annotations

import time

import pytest
from fabricdoc.probes.health import HealthRecorder
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover
from fabricdoc.probes.ib.runner import IbRunner, ToolRun

from fabricdoc.analysis.localize import localize
from fabricdoc.errors import ConfigError, ParseError, ProbeError
from fabricdoc.fabric.infiniband import fabric_from_ib
from fabricdoc.model.records import PortRef
from fabricdoc.report.files import write_atomic
from fabricdoc.sources import infiniband as ibsource
from tests.helpers.ib import captured

LEAF04 = "0x0002c90200000006"
NODE0016 = "0x0002c90300000010"


class ReplayRunner(IbRunner):
    """Stand-in for the tools: replays outputs captured from the real tools under ibsim.

    ``cases`` picks the captured case per tool; a value that is an exception is raised instead.
    """

    def __init__(self, **cases: object) -> None:
        super().__init__(env={"PATH": "/nonexistent"})
        self.cases = {"ibnetdiscover": "healthy", "iblinkinfo": "healthy", "ibqueryerrors": "healthy",
                      "ibqueryerrors --counters": "counters", **cases}

    def run(self, tool, *args, ok_codes=(0,), timeout_s=None):  # noqa: ARG002 - same signature as IbRunner.run
        key = f"{tool} --counters" if tool == "ibqueryerrors" and "--counters" in args else tool
        case = self.cases[key]
        if isinstance(case, Exception):
            raise case
        run = ToolRun(tool, (tool, *args), captured(tool, case), "", 0, 0.001, time.monotonic())
        self.runs.append(run)
        return run


def expected():
    return fabric_from_ib(parse_ibnetdiscover(captured("ibnetdiscover", "healthy")))


def test_a_link_gone_from_the_live_fabric_is_down_only_where_iblinkinfo_said_down():
    fabric = expected()
    obs = ibsource.collect(ReplayRunner(ibnetdiscover="unlinked", iblinkinfo="unlinked"), fabric, HealthRecorder(), interval_s=0)
    assert not [s for s in obs.states if s.source.startswith("ibnetdiscover")]  # iblinkinfo read leaf04[4] Down
    leaf_port = next(s for s in obs.states if (s.node, s.port) == (LEAF04, 4))
    assert (leaf_port.state, leaf_port.phys_state, leaf_port.source) == ("Down", "Polling", "iblinkinfo")
    found = {f.name: f for f in localize(fabric, obs) if f.kind == "link"}
    down = found["leaf04[4] -- node0016[1]"]
    assert down.fault == "down"
    assert [(e.node, e.port, e.state, e.source) for e in down.evidence] == [("leaf04", 4, "Down", "iblinkinfo")]


def test_a_link_nothing_was_read_about_is_not_discovered_with_no_state():
    fabric = expected()
    obs = ibsource.collect(ReplayRunner(ibnetdiscover="unlinked", iblinkinfo=ProbeError("iblinkinfo", "gone")),
                           fabric, HealthRecorder(), interval_s=0)
    gone = {(s.node, s.port): s.state for s in obs.states}
    assert gone == {(LEAF04, 4): "NotDiscovered", (NODE0016, 1): "NotDiscovered"}
    finding = next(f for f in localize(fabric, obs) if f.fault == "not_discovered")
    assert finding.name == "leaf04[4] -- node0016[1]"
    kinds = {e.kind for e in finding.evidence}
    assert kinds == {"not_discovered"} and all(not hasattr(e, "state") for e in finding.evidence)


def test_every_cabled_port_is_sampled_with_error_counters_zero_unless_listed():
    fabric = expected()
    runner = ReplayRunner()
    before = ibsource.collect(runner, fabric, HealthRecorder(), interval_s=0).after
    assert len(before) == 48 and all(c.port != 0 for c in before)
    assert all(c.values["SymbolErrorCounter"] == 0 for c in before)
    assert all(c.values["PortXmitData"] is not None for c in before)
    runner.cases["ibqueryerrors"] = "errors"
    obs = ibsource.collect(runner, fabric, HealthRecorder(), baseline=before)
    after = {(c.node, c.port): c for c in obs.after}
    assert after[("0x0002c90200000003", 5)].values["SymbolErrorCounter"] == 57
    assert after[("0x0002c90300000003", 1)].values["PortXmitDiscards"] == 12  # a CA, via its port GUID
    found = {f.name: f.fault for f in localize(fabric, obs) if f.kind == "link"}
    assert found["spine01[1] -- leaf01[5]"] == "symbol_errors"
    assert found["spine02[2] -- leaf02[6]"] == "flapping"


def test_a_failed_error_scan_leaves_error_counters_unknown_not_zero():
    fabric = expected()
    failure = ProbeError("ibqueryerrors", "timed out after 30s (killed)", "timeout")
    obs = ibsource.collect(ReplayRunner(ibqueryerrors=failure), fabric, HealthRecorder(), interval_s=0)
    assert obs.after and all(c.values["SymbolErrorCounter"] is None for c in obs.after)
    assert all(c.values["PortXmitData"] is not None for c in obs.after)
    assert [r.error for r in obs.probes if r.status != "ok"] == ["ibqueryerrors: timed out after 30s (killed)"] * 2
    assert {r.status for r in obs.probes if r.probe == "ibqueryerrors"} == {"timeout"}


def test_a_garbled_tool_output_is_one_line_naming_the_tool_and_the_rest_is_kept():
    fabric = expected()
    obs = ibsource.collect(ReplayRunner(ibnetdiscover="garbled"), fabric, HealthRecorder(), interval_s=0)
    [line] = [r.error for r in obs.probes if r.status != "ok"]
    assert line.startswith("ibnetdiscover:") and "\n" not in line and ":11:" in line
    assert len(obs.after) == 48 and obs.states  # counters and link states still came


def test_saved_sample_loads_back_exactly_and_is_written_atomically(tmp_path):
    fabric = expected()
    obs = ibsource.collect(ReplayRunner(), fabric, HealthRecorder(), interval_s=0)
    path = write_atomic(tmp_path / "s" / "sample.json", ibsource.sample_text(obs))
    assert [p.name for p in path.parent.iterdir()] == ["sample.json"]  # no temp file left behind
    back = ibsource.load_sample(path)
    assert [(c.node, c.port, c.values, c.width_bits) for c in back] == [
        (c.node, c.port, c.values, c.width_bits) for c in obs.after
    ]


def test_a_bad_baseline_file_is_a_parse_error_naming_it(tmp_path):
    bad = tmp_path / "b.json"
    bad.write_text('{"format": "fabricdoc-records", "version": 1, "records": []}')
    with pytest.raises(ParseError) as exc:
        ibsource.load_sample(bad)
    assert exc.value.source == str(bad)
    with pytest.raises(ConfigError, match="cannot read baseline"):
        ibsource.load_sample(tmp_path / "missing.json")


def test_a_saved_discovery_as_expected_fabric_does_not_hide_a_degraded_link():
    fabric = expected()
    obs = ibsource.collect(ReplayRunner(), fabric, HealthRecorder(), interval_s=0)
    by = {(s.node, s.port): s for s in obs.states}
    assert (by[("0x0002c90300000006", 1)].lanes, by[("0x0002c90300000006", 1)].max_lanes) == (1, 4)
    assert all(s.max_lanes == 4 for k, s in by.items() if k[0] != "0x0002c90300000006" and s.lanes == 4)
    assert fabric.link_at(PortRef("0x0002c90300000006", 1)).lanes == 1


def test_the_tools_own_warnings_in_a_live_discovery_are_kept_as_warnings_not_errors():
    health = HealthRecorder()
    fabric = ibsource.discover(ReplayRunner(ibnetdiscover="mad_drops_stderr"), health, with_routes=False)
    warnings = [r for r in health.runs if r.probe == "ibnetdiscover" and r.status == "warning"]
    assert fabric.switches() and warnings
    assert any("bad status 110" in (w.error or "") for w in warnings)
    assert all(w.error.startswith("ibnetdiscover:") for w in warnings)  # source:line: the tool's text


def test_a_ca_that_stopped_answering_is_not_responding_behind_an_active_switch_port():
    from fabricdoc.model.evidence import NotRespondingEvidence

    fabric = fabric_from_ib(parse_ibnetdiscover(captured("ibnetdiscover", "healthy")))
    obs = ibsource.collect(ReplayRunner(ibnetdiscover="ca_not_responding", iblinkinfo="ca_not_responding"),
                           fabric, HealthRecorder(), interval_s=0)
    silent = [s for s in obs.states if s.state == "NoResponse"]
    assert [(fabric.label(s.node), s.port) for s in silent] == [("node0010", 1)]
    assert "leaf03[2] Active/LinkUp" in silent[0].source and not [s for s in obs.states if s.state == "Down"]
    (finding,) = [f for f in localize(fabric, obs) if f.fault == "not_responding"]
    assert (finding.kind, finding.name) == ("nic", "node0010 port 1")
    (ev,) = finding.evidence_of(NotRespondingEvidence)
    assert (ev.switch, ev.switch_port, ev.switch_state, ev.switch_phys_state, ev.far_answered) == (
        "leaf03", 2, "Active", "LinkUp", False)


def test_a_link_trained_at_sdr_on_a_qdr_fabric_expects_the_could_be_speed():
    fabric = fabric_from_ib(parse_ibnetdiscover(captured("ibnetdiscover", "sdr_on_qdr")))
    obs = ibsource.collect(ReplayRunner(ibnetdiscover="sdr_on_qdr", iblinkinfo="sdr_on_qdr"), fabric,
                           HealthRecorder(), interval_s=0)
    found = {f.name: f for f in localize(fabric, obs)}
    assert {n: f.fault for n, f in found.items()} == {"leaf01[3] -- node0003[1]": "speed_degraded",
                                                      "leaf02[2] -- node0006[1]": "width_degraded"}
    speed = {(e.lane_gbps, e.supported_lane_gbps, e.expected_from) for e in found["leaf01[3] -- node0003[1]"].evidence}
    assert speed == {(2.5, 10.0, "could_be")}
    width = {(e.lanes, e.supported_lanes, e.expected_from) for e in found["leaf02[2] -- node0006[1]"].evidence}
    assert width == {(1, 4, "majority")}  # ibsim's "Could be 12X" capped at the fabric's 4X
