"""InfiniBand test helpers: captured tool outputs, whether ibsim is here, the 64-HCA test fabric."""

from __future__ import annotations

import shutil
from pathlib import Path

from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.model.records import PortRef
from fabricdoc.model.topology import Fabric

DATA = Path(__file__).resolve().parents[1] / "data" / "ib"


def captured(tool: str, case: str) -> str:
    """A real tool output captured under tests/data/ib/<tool>/<case>/stdout.txt."""
    return (DATA / tool / case / "stdout.txt").read_text()


def have_ibsim() -> bool:
    from fabricdoc.probes.ib.ibsim import find_umad2sim

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
