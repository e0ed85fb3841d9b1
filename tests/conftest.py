"""Fixtures shared by the whole suite; the code they use lives in tests/helpers/."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.helpers.ib import fabric64, have_ibsim
from tests.helpers.reports import make_report
from tests.helpers.slurm import SlurmCluster, missing_slurm, start_cluster
from tests.helpers.waiting import wait_for


@pytest.fixture(autouse=True)
def _own_default_history(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """No test ever reads or writes the user's real history store through the default path."""
    monkeypatch.setenv("FABRICDOC_HISTORY", str(tmp_path_factory.mktemp("home") / "history.sqlite"))


@pytest.fixture
def report_file(tmp_path: Path) -> Callable[..., Path]:
    """Write a report built by :func:`tests.helpers.reports.make_report` and return its path."""

    def write(name: str = "report.json", **kw) -> Path:
        path = tmp_path / name
        make_report(**kw).save(path)
        return path

    return write


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    """munged + slurmctld + one slurmd per fake node, for the whole session."""
    why = missing_slurm()
    if why:
        pytest.skip(why)
    with start_cluster() as cluster:
        yield cluster


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The session's Slurm with every node idle and without a reason, before and after the test."""

    def reset() -> None:
        for node in slurm_cluster.reasons():
            slurm_cluster.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)
        wait_for(lambda: not slurm_cluster.reasons() and slurm_cluster.all_idle(), 30, "all nodes idle again", 0.2)

    reset()
    yield slurm_cluster
    reset()


@pytest.fixture
def ibsim_subnet(tmp_path: Path) -> Iterator[Callable[..., object]]:
    """Start ibsim + OpenSM for a fabric (own socket and temp dir); everything is stopped by pid after."""
    if not have_ibsim():
        pytest.skip("ibsim-utils, opensm or infiniband-diags not installed")
    from fabricdoc.probes.ib.ibsim import IbSim

    from fabricdoc.fabric.netfile import write_netfile

    started: list[IbSim] = []

    def start(fabric=None, name: str = "fabric") -> IbSim:
        net = tmp_path / f"{name}-{len(started)}.net"
        net.write_text(write_netfile(fabric or fabric64()))
        sim = IbSim(net)
        started.append(sim)
        return sim.start()

    yield start
    for sim in started:
        sim.stop()
