"""Capture the output formats real fabrics print that capture.py does not (run as root with ibsim).

    python3 tests/data/ib/capture_formats.py

Uses the same ``fabric.net`` as capture.py (write it first with capture.py), starts
ibsim + OpenSM on it and saves, each with ``cmd.txt``, ``rc.txt`` and a README:

- ``ibnetdiscover -f`` (``s= w= v=`` after each speed), ``-g`` (the ``Non-Chassis
  Nodes`` heading) and ``-p`` (the ports report);
- ``dump_fts`` (``Unicast lids ... of switch DR path slid 0; dlid 0; 0,1,6 guid ...``);
- with every MAD through node0003's port dropped (``Error "node0003"[1] 100``),
  ``ibnetdiscover``, ``dump_fts`` and ``ibroute`` of every switch run with stderr
  merged into stdout (``2>&1``), as a saved capture on a real host has them: the
  tools' ``ibwarn:`` and ``query_smp.c:NNN; ... bad status 110`` lines among the output.

The first ``ibwarn: [pid] sim_connect: attached as client ...`` line of a merged
capture comes from ibsim's libumad2sim, not from the tool.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from fabricdoc.probes.ib.ibsim import IbSim

HERE = Path(__file__).resolve().parent
SWITCH_LIDS = {"spine01": 1, "spine02": 2, "leaf01": 3, "leaf02": 8, "leaf03": 13, "leaf04": 18}


def save(tool: str, case: str, cmd: str, out: str, rc: int, note: str) -> None:
    d = HERE / tool / case
    d.mkdir(parents=True, exist_ok=True)
    (d / "stdout.txt").write_text(out)
    (d / "cmd.txt").write_text(cmd + "\n")
    (d / "rc.txt").write_text(f"{rc}\n")
    (d / "README.md").write_text(
        f"# {tool} / {case}\n\nReal output of `{cmd}` (exit status {rc}) run under ibsim + OpenSM on "
        f"`tests/data/ib/fabric.net` by `tests/data/ib/capture_formats.py`.\n\n{note}\n"
    )


def main() -> None:
    with IbSim(HERE / "fabric.net") as sim:

        def run(argv: list[str], merged: bool = False) -> tuple[str, int]:
            r = subprocess.run(argv, env=sim.env, cwd=sim.workdir, stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT if merged else subprocess.DEVNULL, text=True, timeout=120)
            return r.stdout, r.returncode

        healthy = "Healthy fabric: no faults injected (one link, node0006--leaf02[2], trained at 1X)."
        for tool, case, argv, note in (
            ("ibnetdiscover", "full", ["ibnetdiscover", "-f"], "Full output: `s=N w=N v=N` after each speed."),
            ("ibnetdiscover", "grouping", ["ibnetdiscover", "-g"], "Grouping: the `Non-Chassis Nodes` heading."),
            ("ibnetdiscover", "ports", ["ibnetdiscover", "-p"], "The ports report: one line per port."),
            ("dump_fts", "healthy", ["dump_fts"], "Every switch's LFT, headers by DR path."),
        ):
            out, rc = run(argv)
            save(tool, case, " ".join(argv), out, rc, f"{healthy} {note}")

        sim.send('Error "node0003"[1] 100')
        drops = ('`Error "node0003"[1] 100` sent to the ibsim console first: every MAD through node0003\'s '
                 "port is dropped. stderr merged into stdout (2>&1), so the tools' warnings are in the capture.")
        out, rc = run(["ibnetdiscover"], merged=True)
        save("ibnetdiscover", "mad_drops_stderr", "ibnetdiscover 2>&1", out, rc, drops)
        out, rc = run(["dump_fts"], merged=True)
        save("dump_fts", "mad_drops_stderr", "dump_fts 2>&1", out, rc, drops)
        parts, rcs = [], []
        for lid in SWITCH_LIDS.values():
            out, rc = run(["ibroute", str(lid)], merged=True)
            parts.append(out)
            rcs.append(rc)
        cmd = "for lid in " + " ".join(map(str, SWITCH_LIDS.values())) + '; do ibroute "$lid"; done 2>&1'
        save("ibroute", "all_switches_stderr", cmd, "".join(parts), max(rcs),
             drops + " One ibroute per switch, concatenated.")
        sim.send('Error "node0003"[1] 0')


if __name__ == "__main__":
    main()
