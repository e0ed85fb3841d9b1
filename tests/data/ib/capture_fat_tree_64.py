"""Capture a real 64-HCA fat-tree under ibsim (issue 26): its ibnetdiscover output and its LFT dump.

    PYTHONPATH=. python3 tests/data/ib/capture_fat_tree_64.py

Writes ``fat_tree_64.net``, a generated ``fat_tree_2(leaves=8, spines=4,
hosts_per_leaf=8, links_per_spine=2)`` at 4xQDR, starts ibsim + OpenSM (its
default minhop routing) on it, and saves the real output of ``ibnetdiscover``
and ``dump_fts`` under ``ibnetdiscover/fat_tree_64/`` and ``dump_fts/fat_tree_64/``
(``stdout.txt``, ``cmd.txt``, ``rc.txt``, ``README.md``, as capture.py's ``save``).

Why this shape: the other captures are a 16-host fat-tree with one cable between
each leaf and spine. Here every leaf has 8 hosts and 8 uplinks, two parallel cables
to each of 4 spines: non-blocking, as GPU fabrics are built, and which of two
parallel cables a pair crosses is told only by the LFTs OpenSM programmed, so a
slow leaf-spine cable can be placed only if paths follow the dump. 64 HCAs,
12 switches, 128 cables.

Why QDR: ibsim 0.10 trains nothing above HDR, and a benchmark rewrites the
speeds in the text (``4xQDR`` -> ``4xHDR``/``4xNDR``) to get the fabric it wants;
left at QDR, the capture is a fabric slower than the GPUs' logs say they ran.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from fabricdoc.probes.ib.ibsim import IbSim

from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.fabric.netfile import write_netfile
from tests.data.ib import capture

HERE = Path(__file__).resolve().parent
CASE = "fat_tree_64"
NET = f"{CASE}.net"


def build_fabric():
    """64 hosts on 8 leaves, each leaf cabled twice to each of 4 spines, 4xQDR everywhere."""
    return fat_tree_2(leaves=8, spines=4, hosts_per_leaf=8, links_per_spine=2, name="fat-tree-2L-64-x2",
                      lanes=4, lane_gbps=10.0)


def main() -> None:
    net = HERE / NET
    net.write_text(write_netfile(build_fabric()))
    note = ("Healthy fabric, no faults injected: 64 HCAs (node0001-node0064) on 8 leaves, each leaf cabled twice "
            "to each of 4 spines (ports 9-16: spine01 x2, spine02 x2, ...), every cable 4xQDR; OpenSM's default "
            "(minhop) routing.")
    with IbSim(net) as sim:
        for tool in ("ibnetdiscover", "dump_fts"):
            argv = [tool]
            r = subprocess.run(argv, env=sim.env, cwd=sim.workdir, capture_output=True, text=True, timeout=120)
            capture.save(tool, CASE, argv, r.stdout, r.returncode, note, net=NET,
                         script="capture_fat_tree_64.py", sim="ibsim 0.10")
            print(f"{tool}: exit {r.returncode}, {len(r.stdout.splitlines())} lines")


if __name__ == "__main__":
    main()
