"""The sweep loop with ``--launcher mpirun --nccl-tests X --groups``: group tests go through the nccl-tests
launcher path instead of being refused; what nccl-tests cannot run (isolation's one-way fan probes, a
missing ``alltoall_perf``) comes back as ``error``, no evidence, and the chase stops cleanly.

The simulator stands in for the hosts through LauncherMeasure's ``runner`` / ``group_runner`` seams
(no GPU, no MPI build of nccl-tests here): fan probes take the real nccl-tests group runner, which
refuses them before starting any process; the collectives are the simulator's.
"""

from __future__ import annotations

import stat
from collections import Counter

import pytest

from fabricdoc.analysis.localize import Options
from fabricdoc.errors import ConfigError
from fabricdoc.fabric.faults import Fault
from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.expectation import GroupJudge
from fabricdoc.model.groups import fan_senders
from fabricdoc.model.records import Observations
from fabricdoc.sources.group_launch import group_runner
from fabricdoc.sources.sim.simulator import Simulator
from fabricdoc.sweep import LauncherMeasure, SweepConfig, measure_and_retest


def _bins(tmp_path, *names: str) -> str:
    for name in names:
        path = tmp_path / name
        path.write_text("#!/bin/sh\nexit 1\n")
        path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return str(tmp_path)


def _sim_pairs(sim: Simulator):
    def run(spec):
        return sim.measure_round(spec.round, [(spec.src, spec.dst)], [spec.expected_gbps], bidirectional=True)[0]

    return run


def _collapsed_uplink():
    fabric = fat_tree_2(leaves=4, spines=4, hosts_per_leaf=4)
    bad = next(k for k in fabric.links if {k.a.node, k.b.node} == {"leaf02", "spine02"})
    return fabric, Simulator(fabric, [Fault("load_collapse", port=bad.a, flows=2)], seed=0)


def test_groups_with_nccl_tests_run_and_fan_probes_come_back_as_errors_that_end_their_chase(tmp_path):
    fabric, sim = _collapsed_uplink()
    binary = _bins(tmp_path, "sendrecv_perf", "all_reduce_perf", "alltoall_perf")
    cfg = SweepConfig(fabric="roce", launcher="mpirun", nccl_tests=f"{binary}/sendrecv_perf", groups=True)
    nccl_groups = group_runner(sim.truth, "mpirun", nccl_tests=cfg.nccl_tests)

    def groups(spec):
        if fan_senders(spec.test) is not None:
            return nccl_groups(spec)  # the real nccl-tests path: refused before any process starts
        return sim.measure_groups(spec.round, [(spec.test, spec.members)], [spec.expected_gbps])[0]

    measure = LauncherMeasure(sim.truth, cfg, lambda *a: None, runner=_sim_pairs(sim), group_runner=groups)
    obs = Observations()
    found = measure_and_retest(sim.truth, obs, measure, Options(), groups=True)
    assert any(g.phase == "screen" and GroupJudge().failed(g) for g in obs.groups), "the collapsed uplink shows under load"
    fans = [g for g in obs.groups if fan_senders(g.test) is not None]
    assert fans, [(g.label, g.test, g.status) for g in obs.groups]
    assert all(g.status == "error" and "fan probes need fabricdoc's torch test" in (g.error or "") for g in fans)
    # The bisection stops at its first probe that could not run: one fan probe per chased group.
    per_chase = Counter(g.label.rsplit(", from ", 1)[1] for g in fans)
    assert set(per_chase.values()) == {1}, per_chase
    assert found.rounds == max(g.round for g in obs.groups) + 1


def test_a_missing_alltoall_perf_makes_every_group_could_not_test_and_nothing_is_chased(tmp_path):
    fabric, sim = _collapsed_uplink()
    binary = _bins(tmp_path, "sendrecv_perf")  # the directory holds no alltoall_perf
    cfg = SweepConfig(fabric="roce", launcher="mpirun", nccl_tests=binary, groups=True, full_load=True)
    measure = LauncherMeasure(sim.truth, cfg, lambda *a: None, runner=_sim_pairs(sim))
    obs = Observations()
    measure_and_retest(sim.truth, obs, measure, Options(), groups=True, full_load=True)
    assert obs.groups and {g.phase for g in obs.groups} <= {"screen", "full_load"}
    assert all(g.status == "error" for g in obs.groups)
    assert {g.error for g in obs.groups if g.test == "alltoall"} == {
        f"launch: could not test alltoall: no nccl-tests binary {tmp_path / 'alltoall_perf'}"}
    assert {g.error for g in obs.groups if g.test == "all_reduce"} == {
        f"launch: could not test all_reduce: no nccl-tests binary {tmp_path / 'all_reduce_perf'}"}
    assert measure.nccl_binary == str(tmp_path / "sendrecv_perf")  # a directory's pairs run its sendrecv_perf


def test_nccl_tests_groups_refuse_other_launchers_and_the_fan_screen(tmp_path):
    fabric, sim = _collapsed_uplink()
    binary = _bins(tmp_path, "sendrecv_perf")
    for launcher in ("srun", "local", "netns"):
        with pytest.raises(ConfigError, match="--launcher mpirun"):
            LauncherMeasure(sim.truth, SweepConfig(fabric="roce", launcher=launcher, nccl_tests=binary, groups=True),
                            lambda *a: None)
    cfg = SweepConfig(fabric="roce", launcher="mpirun", nccl_tests=binary, groups=True, group_test="fan")
    with pytest.raises(ConfigError, match="--group-test fan needs fabricdoc's torch test"):
        LauncherMeasure(sim.truth, cfg, lambda *a: None, runner=_sim_pairs(sim))  # before any pair round runs
