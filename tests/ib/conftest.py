"""Fixtures for the InfiniBand tests: captured outputs, and real ibsim + OpenSM subnets."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from fabricdoc.generators import fat_tree_2
from fabricdoc.ibfabric import write_netfile
from fabricdoc.model import PortRef
from fabricdoc.topology import Fabric

DATA = Path(__file__).resolve().parents[1] / "data" / "ib"


def captured(tool: str, case: str) -> str:
    """A real tool output captured under tests/data/ib/<tool>/<case>/stdout.txt."""
    return (DATA / tool / case / "stdout.txt").read_text()


def have_ibsim() -> bool:
    from fabricdoc.probes.ibsim import find_umad2sim

    from fabricdoc.errors import ProbeError

    try:
        find_umad2sim()
    except ProbeError:
        return False
    return all(shutil.which(t) for t in ("ibsim", "opensm", "ibnetdiscover", "ibqueryerrors", "iblinkinfo"))


def fabric64() -> Fabric:
    """A 2-level fat-tree, 64 HCAs on 8 leaves and 4 spines; node0006's cable trained at 1X."""
    fabric = fat_tree_2(leaves=8, spines=4, hosts_per_leaf=8)
    fabric.link_at(PortRef("node0006", 1)).lanes = 1  # type: ignore[union-attr]
    return fabric


@pytest.fixture
def ibsim_subnet(tmp_path: Path) -> Iterator[Callable[..., object]]:
    """Start ibsim + OpenSM for a fabric (own socket and temp dir); everything is stopped by pid after."""
    if not have_ibsim():
        pytest.skip("ibsim-utils, opensm or infiniband-diags not installed")
    from fabricdoc.probes.ibsim import IbSim

    started: list[IbSim] = []

    def start(fabric: Fabric | None = None, name: str = "fabric") -> IbSim:
        net = tmp_path / f"{name}-{len(started)}.net"
        net.write_text(write_netfile(fabric or fabric64()))
        sim = IbSim(net)
        started.append(sim)
        return sim.start()

    yield start
    for sim in started:
        sim.stop()
