"""Capture the real outputs of issue 15's cases under tests/data/ib/ (ibsim-utils, opensm, infiniband-diags).

    PYTHONPATH=. python3 tests/data/ib/capture_issue15.py

``ca_not_responding``: on ``fabric.net``, ``Error "node0010"[1] 100`` makes node0010's HCA
drop every MAD while its cable stays up; ibnetdiscover and iblinkinfo are run after.
``sdr_on_qdr``: on ``sdr_on_qdr.net`` (the same fat-tree at QDR, node0003's cable enabled for
SDR at both ends, so it trains at 2.5 Gb/s), iblinkinfo and ibnetdiscover.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from fabricdoc.probes.ib.ibsim import IbSim

from fabricdoc.fabric.netfile import write_netfile
from fabricdoc.model.records import PortRef
from tests.data.ib import capture
from tests.data.ib.capture import build_fabric

HERE = Path(__file__).resolve().parent


def save(tool: str, case: str, net: str, argv: list[str], out: str, rc: int, note: str) -> None:
    capture.save(tool, case, argv, out, rc, note, net=net, script="capture_issue15.py", sim="ibsim 0.10")


def run_all(net: Path, case: str, note: str, console: tuple[str, ...] = ()) -> None:
    with IbSim(net) as sim:
        for line in console:
            sim.send(line)
        for tool in ("ibnetdiscover", "iblinkinfo"):
            r = subprocess.run([tool], env=sim.env, cwd=sim.workdir, capture_output=True, text=True, timeout=60)
            save(tool, case, net.name, [tool], r.stdout, r.returncode, note)


def main() -> None:
    run_all(HERE / "fabric.net", "ca_not_responding",
            'After `Error "node0010"[1] 100`: node0010 answers no MAD; leaf03[2] stays Active/LinkUp.',
            ('Error "node0010"[1] 100',))
    qdr = build_fabric()
    for link in qdr.links.values():
        link.lane_gbps = link.max_lane_gbps = 10.0
    sdr = qdr.link_at(PortRef("node0003", 1))
    sdr.lane_gbps = sdr.max_lane_gbps = 2.5
    net = HERE / "sdr_on_qdr.net"
    net.write_text(write_netfile(qdr))
    run_all(net, "sdr_on_qdr", "node0003's cable is enabled for SDR at both ends of a QDR fabric: it trains at "
            "2.5 Gb/s and iblinkinfo prints `(Could be 12X Could be 10.0 Gbps)`.")


if __name__ == "__main__":
    main()
