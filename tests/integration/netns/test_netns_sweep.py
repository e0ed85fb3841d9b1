"""End to end on kernel networking: a leaf/spine fabric in namespaces, gloo sweeps through the library.

The healthy lab's measure-and-re-test loop names nothing; a black-holed uplink's test hangs and is
killed at its timeout while the round finishes. The lab with a rate-limited uplink is swept once, by
the CLI (test_sweep_cli.py), which checks the screening, the re-test and the journal from its report
and journal. The same code path runs on a GPU cluster with ``backend="nccl"`` and an srun/mpirun launcher.
"""

from __future__ import annotations

import pytest
from fabricdoc.probes.bandwidth.launch import NetnsLauncher

from fabricdoc.analysis.localize import Options
from fabricdoc.bandwidth.journal import Journal, JournalHeader, plan_fingerprint, read_journal
from fabricdoc.bandwidth.plan import Plan
from fabricdoc.bandwidth.runner import run_plan
from fabricdoc.model.records import LinkKey, Observations, PortRef
from fabricdoc.sources.launchers import launcher_runner
from fabricdoc.sweep import measure_and_retest
from tests.helpers.netns_lab import NetnsLab

pytestmark = [pytest.mark.netns, pytest.mark.gloo, pytest.mark.slow,
              pytest.mark.parametrize("lab", ["leaf-spine"], indirect=True)]

BAD = LinkKey.of(PortRef("leaf02", 3), PortRef("spine01", 2))
# veth + TCP through tbf delivers ~0.85 of the shaped rate, less when a round's
# tests share the two cores; the degraded cable runs at 10% of it.
OPTIONS = Options(slow_ratio=0.5)
HUNG_TIMEOUT_S = 25.0


def _run(lab: NetnsLab, plan: Plan, journal=None, timeout_s: float = 150.0, first_round: int = 0):
    launcher = NetnsLauncher(lab.namespace_of, lab.address_of, lab.ifname_of)
    runner = launcher_runner(launcher, timeout_s=timeout_s, backend="gloo", size_bytes=2 << 20, iters=3)
    j = Journal.start(journal, JournalHeader(lab.fabric.name, plan_fingerprint(plan), "t")) if journal else None
    try:
        return run_plan(lab.fabric, plan, runner, journal=j, max_parallel=3, first_round=first_round)
    finally:
        if j is not None:
            j.close()


class _LabMeasure:
    """The sweep loop's bandwidth backend over this lab (pairs only)."""

    bidirectional = False

    def __init__(self, lab: NetnsLab) -> None:
        self.lab = lab

    def __call__(self, plan: Plan, first_round: int, into: list) -> list:
        results = _run(self.lab, plan, first_round=first_round)
        into.extend(results)
        return results


def _links(findings):
    """The cables the findings name: warnings and worse (an ``info`` cable is a suspect to re-test)."""
    return [LinkKey.of(PortRef(*f.endpoints[0]), PortRef(*f.endpoints[1])) for f in findings
            if f.kind == "link" and f.endpoints and f.severity != "info"]


def test_healthy_fabric_finds_nothing_once_its_suspects_are_retested(lab):
    # A shared machine's noise can make one screening round's cable look slow; the sweep re-tests
    # such a suspect before it blames it, so the loop as a whole names nothing on a healthy lab.
    obs = Observations()
    found = measure_and_retest(lab.fabric, obs, _LabMeasure(lab), OPTIONS)
    results = obs.pairs
    assert all(r.status == "ok" for r in results), [r.error for r in results]
    assert all(r.ratio > 0.5 for r in results), [(str(r.src), str(r.dst), r.ratio) for r in results]
    assert _links(found.findings) == [], [(str(r.src), str(r.dst), r.ratio) for r in results]


def test_black_holed_uplink_hangs_its_test_which_is_killed_and_the_round_finishes(lab, tmp_path):
    lab.degrade(BAD, loss_pct=100)
    f = lab.fabric
    ports = f.host_ports()
    through = next((s, d) for s in ports for d in ports if s.node != d.node and BAD in f.path(s, d))
    clear = next(
        (s, d) for s in ports for d in ports
        if s.node != d.node and not {s, d} & set(through)
        and BAD not in f.path(s, d) and BAD not in f.path(d, s)
        and not set(f.path(s, d)) & set(f.path(*through))
    )  # fmt: skip
    plan = Plan(f.name, [[through, clear]], False, 1, {}, 6, 1)
    # The timeout only has to outlast the clear test, which runs beside it (~10 s on two busy cores).
    results = _run(lab, plan, journal=tmp_path / "bw.jsonl", timeout_s=HUNG_TIMEOUT_S)
    by_pair = {(r.src, r.dst): r for r in results}
    # killed at the timeout (not failed before it), and promptly
    assert by_pair[through].status == "hung", by_pair[through]
    assert HUNG_TIMEOUT_S <= by_pair[through].duration_s < HUNG_TIMEOUT_S + 15, by_pair[through].duration_s
    assert by_pair[clear].status == "ok"
    assert len(read_journal(tmp_path / "bw.jsonl")[1]) == 2
