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
    down = [s for s in obs.states if s.state == "Down" and s.source.startswith("ibnetdiscover")]
    assert {(fabric.label(s.node), s.port) for s in down} == {("node0011", 1), ("leaf02", 3)}
    assert link_names(localize(fabric, obs)) == {DEGRADED: "width_degraded", "leaf02[3] -- node0011[1]": "down"}


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
