"""The exec seam swapped: a tool that is missing, exits non-zero or times out is could-not-test
evidence naming the tool (a ProbeRun, or a host check that could not be read), never a fault."""

from __future__ import annotations

import os
import shutil

import pytest
from fabricdoc.probes import exec as px
from fabricdoc.probes.health import HealthRecorder
from fabricdoc.probes.host import dcb
from fabricdoc.probes.ib.runner import IbRunner
from fabricdoc.probes.slurm import SlurmTools

from fabricdoc.errors import ProbeError
from fabricdoc.model.records import ProbeStatus

# How the tool ends, and the probe status each ending must give.
OUTCOMES = {
    "missing": ProbeStatus.UNSUPPORTED,
    "exits 3": ProbeStatus.ERROR,
    "times out": ProbeStatus.TIMEOUT,
}


def swap_seam(monkeypatch: pytest.MonkeyPatch, outcome: str) -> list[tuple[str, ...]]:
    """Put a stand-in for :func:`fabricdoc.probes.exec.run` that ends every tool the given way;
    returns the argv lists it was asked to run."""
    asked: list[tuple[str, ...]] = []

    def run(argv, *, timeout_s, env=None, cwd=None, tool=None) -> px.Completed:
        asked.append(tuple(argv))
        name = tool or os.path.basename(argv[0])
        if outcome == "missing":  # what the real seam raises when the program cannot start
            raise ProbeError(name, f"cannot run {argv[0]}: not found", "unsupported")
        if outcome == "times out":  # killed at its timeout: no exit status
            return px.Completed(tuple(argv), "", "", None, timeout_s, 0.0)
        return px.Completed(tuple(argv), "", f"{name}: Resource temporarily unavailable\n", 3, 0.01, 0.0)

    monkeypatch.setattr(px, "run", run)
    return asked


PROBES = {
    # probe name, the tool it runs, a step that runs it through the seam
    "ib-discovery": ("ibnetdiscover", lambda: IbRunner(tool_paths={"ibnetdiscover": "/opt/ib/ibnetdiscover"},
                                                       timeout_s=2).ibnetdiscover()),
    "slurm-reasons": ("sinfo", lambda: SlurmTools(sinfo="/opt/slurm/bin/sinfo", timeout_s=2).reasons()),
}


@pytest.mark.parametrize("outcome", OUTCOMES)
@pytest.mark.parametrize("probe", PROBES)
def test_a_tool_that_cannot_give_output_is_a_probe_run_naming_it_and_no_records(monkeypatch, probe, outcome):
    tool, step = PROBES[probe]
    asked = swap_seam(monkeypatch, outcome)
    health = HealthRecorder()
    assert health.call(probe, "fabric", step) is None  # nothing read, so nothing to judge
    assert asked and all(os.path.basename(argv[0]) == tool for argv in asked)
    (run,) = health.runs
    assert run.status == OUTCOMES[outcome]
    assert tool in run.error


@pytest.mark.parametrize("outcome", OUTCOMES)
def test_a_pfc_check_whose_dcb_cannot_answer_is_not_seen_never_failed(monkeypatch, outcome):
    monkeypatch.setattr(shutil, "which", lambda name, *a, **kw: f"/opt/bin/{name}")  # dcb "installed"
    asked = swap_seam(monkeypatch, outcome)
    check = dcb.pfc_check("node1", "eth0", port=1)
    assert [argv[:2] for argv in asked] == [("/opt/bin/dcb", "pfc")]
    assert (check.check, check.status, check.subject) == ("pfc", "unknown", "eth0")  # could not read: not seen
    assert "dcb" in check.reason and not check.values
