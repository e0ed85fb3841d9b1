"""Group tests on real kernel networking with gloo: collectives through the netns launcher, and isolation
naming a cable from the groups alone.

Three leaves of two hosts and one spine, every cable a veth pair shaped with tbf to
100 Mbit/s (the bandwidth helpers' lab, tests/helpers/netns_lab.py, under our own
``fdgl`` names). Group collectives (alltoall, a one-way fan, a ring all_reduce) run
through the netns launcher and check their data. Then leaf01's uplink is shaped to
25 Mbit/s and group screening and isolation run alone (no pair tests): the
localization over the group results names that cable.

Then a load-only fault: leaf01's uplink keeps its rate for up to three flows carrying data
at once and loses 40% of the data packets of any more (NetnsLab.collapse, nftables). The
sweep's measure loop runs the pair rounds (every pair passes: one flow per cable) and
then the groups (alltoall screening and adaptive isolation); localization names that
cable, in the direction that collapsed, as a load-only fault.
Measured here: pairs 0.87-1.0 of expected (one at a time), the six-host alltoall 0.13, the 2+2
cross-leaf alltoall 0.24, one-way fans of two senders over the uplink 0.18-0.20 and of
one 0.90, fans into each leaf01 host 0.98 (a tbf whose queue was cut short did not
collapse reliably on this machine's two shared cores; dropping a counted flow's packets does).
"""

from __future__ import annotations

import pytest
from fabricdoc.probes.bandwidth import launch

from fabricdoc.analysis.localize import Options, localize
from fabricdoc.bandwidth.groups import GroupTest, expected_round, screen_rounds
from fabricdoc.bandwidth.isolate import isolate
from fabricdoc.bandwidth.runner import group_rounds
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.evidence import GroupLoadEvidence
from fabricdoc.model.expectation import GroupJudge
from fabricdoc.model.records import Observations, PortRef
from fabricdoc.sources.group_launch import group_runner
from fabricdoc.sweep import LauncherMeasure, SweepConfig, measure_and_retest
from tests.helpers.measured import usable_lab

pytestmark = [pytest.mark.netns, pytest.mark.gloo, pytest.mark.slow]

RATE_MBIT, SLOW_MBIT = 100.0, 25.0
COLLAPSED = 0.3  # a test below this share of its expected figure is what the collapse does to it


def _lab():
    mod = usable_lab("fdgl")
    mod.teardown_prefix("fdgl-")  # what an aborted run of this file left behind (our names only)
    fabric = fat_tree_2(leaves=3, spines=1, hosts_per_leaf=2, lanes=1, lane_gbps=RATE_MBIT / 1000)
    return mod, fabric


def _leaf01_uplink(fabric):
    """The one cable between leaf01 and the spine: the one the tests fault."""
    return next(k for k in fabric.links if {k.a.node, k.b.node} == {"leaf01", "spine01"})


def _address(lab, fabric) -> None:
    for host in fabric.hosts():
        port = PortRef(host.id, 1)
        host.attrs = {"netns": lab.namespace_of(port), "ifnames": {1: lab.ifname_of(port)},
                      "addresses": {1: lab.address_of(port)}}


def test_group_collectives_run_through_the_netns_launcher_and_check_their_data():
    mod, fabric = _lab()
    hosts = tuple(fabric.host_ports())
    tests = [GroupTest(hosts, "alltoall"), GroupTest((*hosts[2:], *hosts[:2]), "fan:4"),
             GroupTest(hosts, "all_reduce")]
    with mod.NetnsLab(fabric) as lab:
        launcher = launch.NetnsLauncher(namespace=lab.namespace_of, address=lab.address_of, ifname=lab.ifname_of)
        out = []
        for i, t in enumerate(tests):
            (expected,) = expected_round(fabric, [t])
            spec = launch.GroupLaunchSpec(t.members, t.test, size_bytes=1 << 20, iters=3, port=29641 + i,
                                          expected_gbps=expected)
            out.append(launch.run_group(launcher, spec, timeout_s=120))
    for g in out:
        assert (g.status, g.wrong) == ("ok", 0), (g.test, g.error)
        assert 0.05 < g.ratio < 1.2, (g.test, g.busbw_gbps, g.expected_gbps)  # measured, in the model's range


def test_group_isolation_alone_names_a_slow_uplink_from_the_groups_routed_paths():
    mod, fabric = _lab()
    uplink = _leaf01_uplink(fabric)
    # Ring all_reduce groups: gloo's ring is what the model says (tests/integration/gloo/test_measured.py,
    # within 20%) and reaches ~0.9 of a shaped link; gloo's alltoall runs its exchanges in stages, so it
    # loads cables less at once than the flow model assumes. Judged as a sweep judges them: against what
    # healthy rings reach here, noise-derived (measured: leaf rings 0.86-0.95 of expected, 6 runs of 6 named
    # the uplink), not a fixed --slow-ratio.
    options = Options()
    judge = GroupJudge()
    with mod.NetnsLab(fabric) as lab:
        _address(lab, fabric)
        lab.degrade(uplink, rate_mbit=SLOW_MBIT)
        obs = Observations()
        run = group_runner(fabric, "netns", timeout_s=120.0, size_bytes=1 << 20, iters=3)
        done = isolate(fabric, group_rounds(run, into=obs.groups), screen_rounds(fabric, fabric.host_ports(), "all_reduce"),
                       judge=judge)
    groups = [(g.label, g.test, g.status, None if g.ratio is None else round(g.ratio, 3)) for g in obs.groups]
    assert done.tests == len(obs.groups) and all(g.status == "ok" for g in obs.groups), groups
    leaf_groups = [g for g in obs.groups if g.label.startswith("leaf ")]
    assert leaf_groups and not any(judge.failed(g) for g in leaf_groups), groups
    findings = localize(fabric, obs, options)
    assert findings, groups
    first = findings[0]
    assert set(first.node_ids) == {"leaf01", "spine01"}, f"{first}; groups {groups}"
    assert first.evidence_of(GroupLoadEvidence), first


def test_a_load_only_uplink_the_pair_rounds_pass_is_found_by_the_groups_and_named():
    mod, fabric = _lab()
    uplink = _leaf01_uplink(fabric)
    # Judged as a user's sweep is: against what healthy tests of each kind reach here, noise-derived. A fixed
    # --slow-ratio 0.3 (gloo's alltoall reaches ~0.5 of the flow model's figure) passed a fan the collapse had
    # slowed to 0.39 of what fans reach, and the cable was cleared at that load (CI named a host cable).
    options = Options()
    with mod.NetnsLab(fabric) as lab:
        _address(lab, fabric)
        lab.collapse(uplink, over_flows=3, loss_pct=40.0)
        # One pair test at a time: a round's pairs share no cable, but eight torch processes on two shared
        # cores slowed each other to 0.64-0.99 of expected (one at a time: 0.88-1.0), and the learned
        # judgment rightly read a host 15% below the rest as a gray fault.
        cfg = SweepConfig(launcher="netns", size_bytes=1 << 20, test_timeout_s=60.0, pair_parallel=1)
        obs = Observations()
        found = measure_and_retest(fabric, obs, LauncherMeasure(fabric, cfg, lambda *_: None), options, groups=True)
        drops = lab.collapse_drops(uplink)
    # Enough to replay localization from a failure's message: members in rank order, and each test's round.
    pairs = [(str(p.src), str(p.dst), p.status, p.ratio, p.round) for p in obs.pairs]
    groups = [(g.label, g.test, [m.node for m in g.members], g.round, g.status,
               None if g.ratio is None else round(g.ratio, 3)) for g in obs.groups]
    crossing = [p for p in obs.pairs if uplink in fabric.path(p.src, p.dst)]
    # The pair rounds crossed the uplink and never saw the fault: one flow per cable keeps the rate (the
    # collapse takes a test to 0.03-0.2; a pair may still read a little slow from the shared machine's noise).
    assert crossing and all(p.status == "ok" and p.ratio >= COLLAPSED for p in obs.pairs), pairs
    assert drops > 0, groups  # the collapse really fired, under the groups' load
    collapsed = [f for f in found.findings if f.fault == "load_collapse"]
    named = [f.fault for f in found.findings if f.severity != "info"]  # info: noise of a shared machine
    seen = [(f.fault, f.name, str(f.severity)) for f in found.findings]
    assert named == ["load_collapse"], f"findings {seen}; pairs {pairs}; groups {groups}"
    (f,) = collapsed
    assert set(f.node_ids) == {"leaf01", "spine01"}, f"{f}; groups {groups}"
    (ev,) = f.evidence_of(GroupLoadEvidence)
    assert ev.pair_tests >= 1 and ev.failing_flows > ev.passing_flows >= 1, ev
    assert ev.toward == ("spine01", uplink.b.port if uplink.b.node == "spine01" else uplink.a.port), ev
