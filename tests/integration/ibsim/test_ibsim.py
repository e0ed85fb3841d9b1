"""Real infiniband-diags against a real OpenSM on an ibsim fat-tree of 64 HCAs (marker: ibsim)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from fabricdoc.probes.health import HealthRecorder
from fabricdoc.probes.ib.ibnetdiscover import parse_ibnetdiscover
from fabricdoc.probes.ib.ibtracert import parse_ibtracert
from fabricdoc.probes.ib.runner import IbRunner

from fabricdoc.analysis.localize import localize
from fabricdoc.errors import ProbeError
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.records import PortRef
from fabricdoc.report.files import write_atomic
from fabricdoc.report.report import Report
from fabricdoc.sources import infiniband as ibsource

pytestmark = pytest.mark.ibsim


def link_names(findings, kind="link"):
    return {f.name: f.fault for f in findings if f.kind == kind}


DEGRADED = "leaf01[6] -- node0006[1]"  # conftest.fabric64 trains node0006's cable at 1X


def test_discovery_of_64_hcas_matches_the_generated_fabric(ibsim_subnet):
    from tests.helpers.ib import fabric64

    gen = fabric64()
    sim = ibsim_subnet(gen)
    runner = IbRunner.for_sim(sim)
    health = HealthRecorder()
    fabric = ibsource.discover(runner, health)
    assert fabric.summary() == {"hosts": 64, "switches": 12, "links": len(gen.links)}
    assert {n.guid: n.label for n in fabric.nodes.values()} == {n.guid: n.label for n in gen.nodes.values()}
    assert set(fabric.lfts) == {n.id for n in fabric.switches()}
    by_label = {n.label: n.id for n in fabric.nodes.values()}
    for port, lid in gen.port_lids.items():
        assert fabric.port_lids[PortRef(by_label[port.node], port.port)] == lid
    slow = fabric.link_at(PortRef(by_label["node0006"], 1))
    assert (slow.lanes, slow.max_lanes) == (1, 4)
    assert health.runs and all(r.status == "ok" for r in health.runs)


def test_lft_paths_are_the_routes_ibtracert_walks(ibsim_subnet):
    sim = ibsim_subnet()
    runner = IbRunner.for_sim(sim)
    health = HealthRecorder()
    fabric = ibsource.discover(runner, health)
    assert ibsource.check_routes(runner, fabric, health, samples=6) == 0
    assert [r.status for r in health.runs if r.probe == "ibtracert"] == ["ok"] * 6
    topo = parse_ibnetdiscover(runner.ibnetdiscover().stdout)
    by_label = {n.label: n.id for n in fabric.nodes.values()}
    pairs = [("node0001", "node0064"), ("node0010", "node0003"), ("node0033", "node0040"), ("node0017", "node0050")]
    for a, b in pairs:
        src, dst = PortRef(by_label[a], 1), PortRef(by_label[b], 1)
        trace = parse_ibtracert(runner.ibtracert(fabric.port_lids[src], fabric.port_lids[dst]).stdout)
        assert fabric.path(src, dst) == trace.links(topo.port_guids()), (a, b)
    # OpenSM spreads one leaf's destinations over the spines, and the model follows it.
    src = PortRef(by_label["node0001"], 1)
    spines_used = set()
    for i in range(57, 65):
        uplink = fabric.path(src, PortRef(by_label[f"node{i:04d}"], 1))[1]
        spines_used |= {fabric.label(end.node) for end in (uplink.a, uplink.b)} - {"leaf01"}
    assert spines_used <= {"spine01", "spine02", "spine03", "spine04"}
    assert len(spines_used) > 1


def _faults(sim) -> None:
    sim.send('PerformanceSet "leaf03"[9] PortCounters.SymbolErrorCounter=57')  # leaf03 -- spine01
    sim.send('PerformanceSet "leaf05"[10] PortCounters.LinkDownedCounter=2')  # leaf05 -- spine02
    before = sim.subnet_up_count()
    sim.send('Unlink "leaf02"[3]')  # leaf02 -- node0011
    sim.wait_resweep(before)


EXPECTED = {
    "spine01[3] -- leaf03[9]": "symbol_errors",
    "spine02[5] -- leaf05[10]": "flapping",
    "leaf02[3] -- node0011[1]": "down",
    DEGRADED: "width_degraded",
}


def test_injected_faults_each_name_their_exact_link_and_nothing_else(ibsim_subnet, tmp_path):
    sim = ibsim_subnet()
    runner = IbRunner.for_sim(sim)
    fabric = ibsource.discover(runner, HealthRecorder())
    healthy = ibsource.collect(runner, fabric, HealthRecorder(), interval_s=0)
    assert link_names(localize(fabric, healthy)) == {DEGRADED: "width_degraded"}
    baseline = write_atomic(tmp_path / "baseline.json", ibsource.sample_text(healthy))
    _faults(sim)
    obs = ibsource.collect(runner, fabric, HealthRecorder(), baseline=ibsource.load_sample(baseline))
    findings = localize(fabric, obs)
    assert link_names(findings) == EXPECTED
    assert all(f.kind == "link" for f in findings)
    for f in findings:
        assert len(f.endpoints) == 2 and all(isinstance(p, int) for _, p in f.endpoints)
    assert all(r.status == "ok" for r in obs.probes)


def test_two_samples_over_the_interval_see_faults_injected_meanwhile(ibsim_subnet):
    sim = ibsim_subnet()
    runner = IbRunner.for_sim(sim)
    fabric = ibsource.discover(runner, HealthRecorder())
    steps = []

    def progress(step, done, total):
        steps.append(step)
        if step == "interval":
            sim.send('PerformanceSet "leaf03"[9] PortCounters.SymbolErrorCounter=57')

    obs = ibsource.collect(runner, fabric, HealthRecorder(), interval_s=0.3, progress=progress)
    assert "interval" in steps and obs.interval_s >= 0.3
    assert link_names(localize(fabric, obs)) == {DEGRADED: "width_degraded", "spine01[3] -- leaf03[9]": "symbol_errors"}


def test_a_whole_leaf_unlinked_is_one_switch_finding_and_its_hosts_drain(ibsim_subnet, tmp_path):
    sim = ibsim_subnet()
    runner = IbRunner.for_sim(sim)
    fabric = ibsource.discover(runner, HealthRecorder())
    baseline = ibsource.collect(runner, fabric, HealthRecorder(), interval_s=0).after
    before = sim.subnet_up_count()
    sim.send('Unlink "leaf07"')
    sim.wait_resweep(before)
    obs = ibsource.collect(runner, fabric, HealthRecorder(), baseline=baseline)
    findings = localize(fabric, obs)
    switches = [f for f in findings if f.kind == "switch"]
    assert [(f.name, f.fault) for f in switches] == [("leaf07", "dead")]
    assert link_names(findings) == {DEGRADED: "width_degraded"}
    report = Report.build(fabric, findings, obs)
    drained = {d.node for d in report.drain}
    assert {f"node{i:04d}" for i in range(49, 57)} <= drained
    assert drained - {f"node{i:04d}" for i in range(49, 57)} <= {"node0006"}


def _stand_in(dir_: Path, name: str, body: str) -> str:
    path = dir_ / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(path)


@pytest.mark.parametrize("tool", ["ibnetdiscover", "iblinkinfo", "ibqueryerrors"])
@pytest.mark.parametrize("mode", ["missing", "hang", "truncated", "garbled"])
def test_a_broken_tool_gives_one_line_naming_it_and_the_sweep_keeps_the_rest(ibsim_subnet, tmp_path, tool, mode):
    import shutil

    sim = ibsim_subnet()
    good = IbRunner.for_sim(sim)
    fabric = ibsource.discover(good, HealthRecorder())
    baseline = ibsource.collect(good, fabric, HealthRecorder(), interval_s=0).after
    sim.send('PerformanceSet "leaf03"[9] PortCounters.SymbolErrorCounter=57')
    real = shutil.which(tool)
    body = {
        "missing": None,
        "hang": "sleep 30",
        "truncated": f'"{real}" "$@" | head -n 7; exit 0',
        "garbled": f'"{real}" "$@" | sed "3s/.*/\\x01garbage line \\xff/"',
    }[mode]
    path = str(tmp_path / "no-such-tool") if body is None else _stand_in(tmp_path, tool, body)
    runner = IbRunner.for_sim(sim, tool_paths={tool: path}, tool_timeouts={tool: 1.0})
    obs = ibsource.collect(runner, fabric, HealthRecorder(), baseline=baseline)
    failed = [r for r in obs.probes if r.status != "ok"]
    assert failed, "the broken tool was not reported"
    assert {r.probe.split()[0] for r in failed} == {tool}, failed
    for run in failed:
        assert "\n" not in run.error and run.error.startswith(tool)
    if mode == "hang":
        assert {r.status for r in failed} == {"timeout"}
    ok = {r.probe for r in obs.probes if r.status == "ok"}
    assert ok, "no other tool result was kept"
    names = link_names(localize(fabric, obs))
    if tool != "ibqueryerrors":
        assert names.get("spine01[3] -- leaf03[9]") == "symbol_errors"  # counters still came through
    if tool != "iblinkinfo":
        assert all(r.status == "ok" for r in obs.probes if r.probe == "iblinkinfo")


def test_two_subnets_run_side_by_side_on_their_own_sockets(ibsim_subnet):
    a = ibsim_subnet(fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2), name="a")
    b = ibsim_subnet(fat_tree_2(leaves=3, spines=2, hosts_per_leaf=3), name="b")
    assert a.sockname != b.sockname and a.workdir != b.workdir
    fa = ibsource.discover(IbRunner.for_sim(a), HealthRecorder())
    fb = ibsource.discover(IbRunner.for_sim(b), HealthRecorder())
    assert fa.summary()["hosts"] == 4 and fb.summary()["hosts"] == 9


def test_console_refusals_raise_and_stop_leaves_nothing_running(ibsim_subnet):
    sim = ibsim_subnet(fat_tree_2(leaves=1, spines=1, hosts_per_leaf=1))
    with pytest.raises(ProbeError, match="not found"):
        sim.send('Unlink "no-such-node"[1]')
    pids = [sim.ibsim.pid, sim.opensm.pid]
    workdir = sim.workdir
    sim.stop()
    for pid in pids:
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)
    assert not workdir.exists()


def test_an_expected_topology_file_reports_the_links_missing_now(ibsim_subnet, tmp_path):
    from fabricdoc.fabric.netfile import write_netfile
    from tests.helpers.ib import fabric64

    expected = tmp_path / "expected.net"
    expected.write_text(write_netfile(fabric64()))
    live = fabric64()
    live.link_at(PortRef("node0011", 1)).state = "down"  # never cabled in the live subnet
    sim = ibsim_subnet(live)
    runner = IbRunner.for_sim(sim)
    fabric = ibsource.expected_fabric(runner, HealthRecorder(), expected)
    assert fabric.summary()["hosts"] == 64 and len(fabric.lfts) == 12
    obs = ibsource.collect(runner, fabric, HealthRecorder(), interval_s=0)
    # iblinkinfo read leaf02[3] Down/Polling: that is the evidence; nothing else claims a state.
    assert not [s for s in obs.states if s.source.startswith("ibnetdiscover")]
    down = [s for s in obs.states if s.state == "Down"]
    assert [(fabric.label(s.node), s.port, s.phys_state, s.source) for s in down] == [
        ("leaf02", 3, "Polling", "iblinkinfo")]
    assert link_names(localize(fabric, obs)) == {DEGRADED: "width_degraded", "leaf02[3] -- node0011[1]": "down"}
    degraded = next(s for s in obs.states if fabric.label(s.node) == "node0006")
    assert (degraded.lanes, degraded.max_lanes, degraded.max_lanes_from) == (1, 4, "topology")


def test_the_sweep_command_runs_ibsim_itself_and_reuses_a_saved_baseline(tmp_path):
    import json
    import subprocess
    import sys

    from fabricdoc.fabric.netfile import write_netfile
    from tests.helpers.ib import fabric64, have_ibsim

    if not have_ibsim():
        pytest.skip("ibsim-utils, opensm or infiniband-diags not installed")
    net = tmp_path / "f.net"
    net.write_text(write_netfile(fabric64()))
    sample = tmp_path / "sample.json"
    base = [sys.executable, "-m", "fabricdoc", "sweep", "--fabric", f"ibsim:{net}", "--no-progress", "--json"]
    first = subprocess.run([*base, "--interval", "0", "--save-sample", str(sample)],
                           capture_output=True, text=True, timeout=240)
    assert first.returncode == 1, first.stderr
    report = json.loads(first.stdout)
    assert [(f["name"], f["fault"]) for f in report["findings"]] == [(DEGRADED, "width_degraded")]
    assert sample.is_file()
    again = subprocess.run([*base, "--baseline", str(sample)], capture_output=True, text=True, timeout=240)
    assert again.returncode == 1, again.stderr
    assert [f["fault"] for f in json.loads(again.stdout)["findings"]] == ["width_degraded"]


def test_a_ca_that_stops_answering_is_its_nic_not_responding_with_no_down_evidence(ibsim_subnet):
    from fabricdoc.model.evidence import NotRespondingEvidence, StateEvidence

    sim = ibsim_subnet()
    runner = IbRunner.for_sim(sim)
    fabric = ibsource.discover(runner, HealthRecorder())
    sim.send('Error "node0020"[1] 100')  # node0020's HCA drops every MAD; its cable stays up
    obs = ibsource.collect(runner, fabric, HealthRecorder(), interval_s=0)
    by_label = {n.label: n.id for n in fabric.nodes.values()}
    switch_side = next(s for s in obs.states if s.peer is None and s.source == "iblinkinfo" and s.state == "Active")
    assert (fabric.label(switch_side.node), switch_side.phys_state) == ("leaf03", "LinkUp")
    assert not [s for s in obs.states if s.state == "Down"]
    findings = localize(fabric, obs)
    silent = [f for f in findings if f.fault == "not_responding"]
    assert [(f.kind, f.name) for f in silent] == [("nic", "node0020 port 1")]
    assert by_label["node0020"] in silent[0].node_ids
    (ev,) = silent[0].evidence_of(NotRespondingEvidence)
    assert (ev.node, ev.port, ev.switch, ev.switch_state, ev.switch_phys_state, ev.far_answered) == (
        "node0020", 1, "leaf03", "Active", "LinkUp", False)
    states = [e for f in findings for e in f.evidence_of(StateEvidence)]
    assert all(e.state != "Down" for e in states)
    assert {f.name: f.fault for f in findings if f.kind == "link"} == {DEGRADED: "width_degraded"}


def _qdr(sdr_hosts: tuple[str, ...] = ()):
    """A small QDR fat-tree; the named hosts' cables are enabled for SDR only at both ends (they train at 2.5 Gb/s)."""
    fabric = fat_tree_2(leaves=2, spines=2, hosts_per_leaf=4)
    for link in fabric.links.values():
        link.lane_gbps = link.max_lane_gbps = 10.0
    for host in sdr_hosts:
        link = fabric.link_at(PortRef(host, 1))
        link.lane_gbps = link.max_lane_gbps = 2.5
    return fabric


def test_links_trained_at_sdr_on_a_qdr_fabric_are_speed_degraded_even_when_most_are(ibsim_subnet):
    from fabricdoc.model.evidence import StateEvidence

    healthy = ibsim_subnet(_qdr(), name="healthy")
    runner = IbRunner.for_sim(healthy)
    fabric = ibsource.discover(runner, HealthRecorder())
    assert localize(fabric, ibsource.collect(runner, fabric, HealthRecorder(), interval_s=0)) == []

    low = ("node0001", "node0002", "node0003", "node0005", "node0006")  # 5 of 8 host cables: the majority
    sim = ibsim_subnet(_qdr(low), name="sdr")
    runner = IbRunner.for_sim(sim)
    text = runner.iblinkinfo().stdout
    assert "2.5 Gbps Active/  LinkUp" in text and "(Could be 12X Could be 10.0 Gbps)" in text
    fabric = ibsource.discover(runner, HealthRecorder())
    findings = localize(fabric, ibsource.collect(runner, fabric, HealthRecorder(), interval_s=0))
    assert {f.name: f.fault for f in findings} == {
        f"leaf0{1 + (int(h[-1]) - 1) // 4}[{1 + (int(h[-1]) - 1) % 4}] -- {h}[1]": "speed_degraded" for h in low}
    for f in findings:
        evs = f.evidence_of(StateEvidence)
        assert evs and all((e.lane_gbps, e.supported_lane_gbps, e.expected_from) == (2.5, 10.0, "could_be")
                           for e in evs)


def test_the_sweep_command_fails_on_a_link_trained_at_sdr_and_passes_the_healthy_fabric(tmp_path):
    import json
    import subprocess
    import sys

    from fabricdoc.fabric.netfile import write_netfile
    from tests.helpers.ib import have_ibsim

    if not have_ibsim():
        pytest.skip("ibsim-utils, opensm or infiniband-diags not installed")
    results = {}
    for name, fabric in (("healthy", _qdr()), ("sdr", _qdr(("node0007",)))):
        net = tmp_path / f"{name}.net"
        net.write_text(write_netfile(fabric))
        results[name] = subprocess.run(
            [sys.executable, "-m", "fabricdoc", "sweep", "--fabric", f"ibsim:{net}", "--no-progress", "--json",
             "--interval", "0"], capture_output=True, text=True, timeout=240)
    assert results["healthy"].returncode == 0, results["healthy"].stdout[-2000:] + results["healthy"].stderr
    assert json.loads(results["healthy"].stdout)["findings"] == []
    assert results["sdr"].returncode == 1, results["sdr"].stderr
    found = json.loads(results["sdr"].stdout)["findings"]
    assert [(f["name"], f["fault"]) for f in found] == [("leaf02[3] -- node0007[1]", "speed_degraded")]
    assert {e.get("expected_from") for e in found[0]["evidence"] if e["type"] == "state"} == {"could_be"}


def _sample_with(sim, *commands: str):
    """Discover, then two counter samples with ``commands`` sent to ibsim between them."""
    runner = IbRunner.for_sim(sim)
    fabric = ibsource.discover(runner, HealthRecorder())

    def progress(step, done, total):
        if step == "interval":
            for c in commands:
                sim.send(c)

    return fabric, ibsource.collect(runner, fabric, HealthRecorder(), interval_s=0.3, progress=progress)


def test_congestion_counters_name_the_port_where_it_builds_up_not_a_broken_link(ibsim_subnet):
    fabric, obs = _sample_with(ibsim_subnet(), 'PerformanceSet "spine01"[3] PortCounters.PortXmitDiscards=5000',
                               'PerformanceSet "spine01"[3] PortCounters.PortXmitWait=400000000')
    findings = localize(fabric, obs)
    congested = [f for f in findings if f.fault == "congestion"]
    assert [(f.kind, f.name) for f in congested] == [("port", "spine01 port 3 (to leaf03 port 9)")]
    assert congested[0].severity == "warning"
    assert link_names(findings) == {DEGRADED: "width_degraded"}  # no broken cable invented


def test_receive_errors_only_on_the_host_side_name_the_nic_and_its_cable(ibsim_subnet):
    from fabricdoc.model.evidence import CandidatesEvidence

    fabric, obs = _sample_with(ibsim_subnet(), 'PerformanceSet "node0020"[1] PortCounters.PortRcvErrors=40')
    findings = localize(fabric, obs)
    (nic,) = [f for f in findings if f.fault == "rcv_errors"]
    assert (nic.kind, nic.name) == ("nic", "node0020 port 1")
    (cands,) = nic.evidence_of(CandidatesEvidence)
    assert cands.candidates[0] == "NIC node0020 port 1" and cands.candidates[1].startswith("cable ")
    # The same host drains either way.
    from fabricdoc.report.drain import drain_list

    assert [d.node for d in drain_list(fabric, findings) if "rcv_errors" in d.reason] == ["node0020"]


def test_overlapping_counter_faults_on_one_leaf_are_each_named_with_what_the_tools_said(ibsim_subnet):
    """Faults on top of each other: node0006's cable, trained at 1X, now also takes symbol errors, and
    node0005's cable beside it on leaf01 takes receive errors. The 1X cable stays one finding whose class
    is its width and whose evidence carries the symbol errors ibsim's counters showed; its neighbour is
    its own rcv_errors finding; nothing else is invented."""
    from fabricdoc.model.evidence import CounterEvidence

    fabric, obs = _sample_with(ibsim_subnet(), 'PerformanceSet "leaf01"[6] PortCounters.SymbolErrorCounter=300',
                               'PerformanceSet "leaf01"[5] PortCounters.PortRcvErrors=80')
    findings = {f.name: f for f in localize(fabric, obs) if f.kind in ("link", "nic")}
    assert {name: f.fault for name, f in findings.items()} == {
        DEGRADED: "width_degraded", "leaf01[5] -- node0005[1]": "rcv_errors"}
    symbol = [(e.node, e.port, e.delta) for e in findings[DEGRADED].evidence_of(CounterEvidence)
              if e.counter == "symbol_errors"]
    assert symbol == [("leaf01", 6, 300)], findings[DEGRADED].evidence


def test_real_perfquery_output_reads_back_and_two_dumps_name_the_rising_port(tmp_path):
    # Real perfquery (infiniband-diags) against OpenSM on ibsim: what a user saves and pastes into a
    # ticket. If the tool's output changed, the parser (or the analysis of the two dumps) would fail here.
    from fabricdoc.probes.ib.ibsim import IbSim
    from fabricdoc.probes.ib.perfquery import parse_perfquery

    from fabricdoc.cli.main import main
    from tests.helpers.ib import DATA, have_ibsim

    if not have_ibsim():
        pytest.skip("ibsim-utils, opensm or infiniband-diags not installed")
    with IbSim(DATA / "fabric.net") as sim:
        runner = IbRunner.for_sim(sim)
        try:
            before = runner.run("perfquery", "-l", "3", "255").stdout  # every port of leaf01 (LID 3)
            sim.send('PerformanceSet "leaf01"[5] PortCounters.SymbolErrorCounter=57')
            after = runner.run("perfquery", "-l", "3", "255").stdout
            extended = runner.run("perfquery", "-x", "4", "1").stdout  # node0001 (LID 4) port 1
            disc = runner.ibnetdiscover().stdout
        finally:
            runner.close()
    one = {s.port: s for s in parse_perfquery(after, "after").samples}
    assert one[5].lid == 3 and one[5].values["SymbolErrorCounter"] == 57
    assert all(s.values["SymbolErrorCounter"] == 0 for p, s in one.items() if p != 5)
    (ext,) = parse_perfquery(extended, "x").samples
    assert ext.attribute == "PortCountersExtended" and set(ext.width_bits.values()) == {64}
    paths = []
    for name, text, t in (("before.txt", before, 1_000_000.0), ("after.txt", after, 1_000_060.0)):
        path = tmp_path / name
        path.write_text(text)
        os.utime(path, (t, t))
        paths.append(str(path))
    (tmp_path / "disc.txt").write_text(disc)
    assert main(["analyze", "--fabric", str(tmp_path / "disc.txt"), "--perfquery", *paths, "--json",
                 "-o", str(tmp_path / "r.json")]) == 1
    report = Report.load(tmp_path / "r.json")
    (f,) = [f for f in report.findings if f.fault == "symbol_errors"]
    assert {label for label, _ in f.endpoints} == {"leaf01", "spine01"} and ("leaf01", 5) in map(tuple, f.endpoints)
