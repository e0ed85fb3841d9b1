"""Re-capture the real tool outputs under tests/data/ib/ (run as root with ibsim-utils, opensm, infiniband-diags).

    python3 tests/data/ib/capture.py

Writes fabric.net (a generated fat_tree_2 with one link trained at 1X), starts
ibsim + OpenSM on it, runs each tool healthy, then injects faults through the
ibsim console and runs them again. Each case directory gets the tool's stdout
(``stdout.txt``), its command line (``cmd.txt``) and its exit status
(``rc.txt``); ``truncated``/``garbled`` cases are real outputs cut or damaged
by this script, as their README says.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from fabricdoc.probes.ib.ibsim import IbSim

from fabricdoc.fabric.generators import fat_tree_2
from fabricdoc.fabric.netfile import write_netfile
from fabricdoc.model.records import PortRef

HERE = Path(__file__).resolve().parent


def build_fabric():
    fabric = fat_tree_2(leaves=4, spines=2, hosts_per_leaf=4)
    fabric.link_at(PortRef("node0006", 1)).lanes = 1  # node0006 -- leaf02[2] trains at 1X
    return fabric


def save(tool: str, case: str, argv: list[str], out: str, rc: int, note: str, net: str = "fabric.net",
         script: str = "capture.py", sim: str = "ibsim") -> None:
    d = HERE / tool / case
    d.mkdir(parents=True, exist_ok=True)
    (d / "stdout.txt").write_text(out)
    (d / "cmd.txt").write_text(" ".join(argv) + "\n")
    (d / "rc.txt").write_text(f"{rc}\n")
    (d / "README.md").write_text(
        f"# {tool} / {case}\n\nReal output of `{' '.join(argv)}` (exit status {rc}) run under "
        f"{sim} + OpenSM 3.3.23 on `tests/data/ib/{net}` by `tests/data/ib/{script}`.\n\n{note}\n"
    )


def derived(tool: str, case: str, text: str, note: str) -> None:
    d = HERE / tool / case
    d.mkdir(parents=True, exist_ok=True)
    (d / "stdout.txt").write_text(text)
    (d / "README.md").write_text(f"# {tool} / {case}\n\nDerived by `tests/data/ib/capture.py` from a real capture: {note}\n")


def main() -> None:
    net = HERE / "fabric.net"
    net.write_text(write_netfile(build_fabric()))
    with IbSim(net) as sim:

        def run(tool: str, case: str, *args: str, note: str = "") -> str:
            argv = [tool, *args]
            r = subprocess.run(argv, env=sim.env, cwd=sim.workdir, capture_output=True, text=True, timeout=60)
            save(tool, case, argv, r.stdout, r.returncode, note)
            return r.stdout

        healthy = "Healthy fabric: no faults injected (one link, node0006--leaf02[2], trained at 1X)."
        disc = run("ibnetdiscover", "healthy", note=healthy)
        run("iblinkinfo", "healthy", note=healthy)
        run("ibqueryerrors", "healthy", "--threshold-file", "/dev/null", note=healthy)
        run("ibqueryerrors", "counters", "--threshold-file", "/dev/null", "--counters", note=healthy)
        run("ibroute", "leaf01", "3", note="LFT of leaf01 (LID 3) as OpenSM programmed it.")
        run("ibroute", "spine01", "1", note="LFT of spine01 (LID 1) as OpenSM programmed it.")
        run("ibtracert", "node0001_to_node0016", "4", "22", note="Route from node0001 (LID 4) to node0016 (LID 22).")

        sim.send('PerformanceSet "leaf01"[5] PortCounters.SymbolErrorCounter=57')
        sim.send('PerformanceSet "leaf02"[6] PortCounters.LinkDownedCounter=3')
        sim.send('PerformanceSet "node0003"[1] PortCounters.PortXmitDiscards=12')
        sim.send('PerformanceSet "node0003"[1] PortCounters.PortRcvErrors=4')
        faults = (
            "Faults injected through the ibsim console: SymbolErrorCounter=57 on leaf01[5], "
            "LinkDownedCounter=3 on leaf02[6], PortXmitDiscards=12 and PortRcvErrors=4 on node0003[1]."
        )
        run("ibqueryerrors", "errors", "--threshold-file", "/dev/null", note=faults)
        run("ibqueryerrors", "errors_data_links", "--threshold-file", "/dev/null", "--data", "-r", note=faults)

        sim.send('Error "node0003"[1] 100')
        drops = faults + ' Then `Error "node0003"[1] 100`: every MAD through node0003\'s port is dropped.'
        run("iblinkinfo", "port_not_available", note=drops)
        run("ibqueryerrors", "mad_drops", "--threshold-file", "/dev/null", note=drops)
        run("ibnetdiscover", "mad_drops", note=drops)
        sim.send('Error "node0003"[1] 0')

        n = sim.subnet_up_count()
        sim.send('Unlink "leaf04"[4]')
        sim.wait_resweep(n)
        unlinked = "After `Unlink \"leaf04\"[4]` (node0016 cut off) and OpenSM's resweep."
        run("ibnetdiscover", "unlinked", note=unlinked)
        run("iblinkinfo", "unlinked", note=unlinked)
        run("ibtracert", "unreachable", "4", "22", note=unlinked + " Route to the cut-off node0016: fails.")
        n = sim.subnet_up_count()
        sim.send('Unlink "leaf03"')
        sim.wait_resweep(n)
        run("ibnetdiscover", "leaf_unlinked", note=unlinked + " Then `Unlink \"leaf03\"`: the whole leaf03 cut off.")
        run("iblinkinfo", "leaf_unlinked", note=unlinked + " Then `Unlink \"leaf03\"`.")

    lines = disc.splitlines(keepends=True)
    derived("ibnetdiscover", "truncated", "".join(lines[: len(lines) // 2]),
            "the healthy output cut after half its lines (at a line boundary).")
    derived("ibnetdiscover", "cut_mid_line", disc[: len(disc) // 3],
            "the healthy output cut in the middle of a line.")
    garbled = disc.replace('"leaf01" lid 3 4xHDR', '"leaf01" lid 3 4x\x00\x7fHDR', 1)
    derived("ibnetdiscover", "garbled", garbled, "one port line's speed replaced by control bytes.")
    iqe = (HERE / "ibqueryerrors" / "errors" / "stdout.txt").read_text()
    derived("ibqueryerrors", "truncated", iqe[: iqe.index("## Summary")],
            "the errors output without its ## Summary block.")
    li = (HERE / "iblinkinfo" / "healthy" / "stdout.txt").read_text()
    derived("iblinkinfo", "cut_mid_line", li[: len(li) // 2], "the healthy output cut in the middle.")
    rt = (HERE / "ibroute" / "leaf01" / "stdout.txt").read_text().splitlines(keepends=True)
    derived("ibroute", "truncated", "".join(rt[: len(rt) // 2]), "the leaf01 LFT cut before its trailer.")


if __name__ == "__main__":
    main()
