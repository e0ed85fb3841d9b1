"""Capture real ``perfquery`` outputs under ibsim + OpenSM (run as root, ibsim-utils installed).

    PYTHONPATH=. python3 tests/data/ib/capture_perfquery.py

Starts ibsim on ``fabric.net`` (leaf01 is LID 3, node0001 LID 4) and OpenSM, runs
every perfquery form users save against a switch and a CA, and writes each under
``perfquery/<case>/``: ``stdout.txt``, ``cmd.txt``, ``rc.txt``, ``stderr.txt`` when the
tool printed more than ibsim's ``sim_connect`` line (perfquery 44.0 prints its own
``perfquery: iberror: failed: ...`` line on stdout), and a README (command, ibsim and
infiniband-diags versions, date). Forms ibsim does not answer (``-X``, ``-T``) are kept
too, with their exit status and stderr. ``switch_loop_before`` / ``switch_loop_after`` are
``perfquery -l 3 255`` before and after ``PerformanceSet "leaf01"[5]
PortCounters.SymbolErrorCounter=57`` on the ibsim console: two samples of the same ports.
Every process started here is stopped by pid (IbSim.stop).
"""

from __future__ import annotations

import datetime
import re
import subprocess
from pathlib import Path

from fabricdoc.probes.ib.ibsim import IbSim

HERE = Path(__file__).resolve().parent
OUT = HERE / "perfquery"
SWITCH, CA = "3", "4"  # leaf01's LID, node0001's port-1 LID in fabric.net
_SIM_CONNECT = re.compile(r"^ibwarn: \[\d+\] sim_connect: attached as client .*\n?", re.M)


def _version(argv: list[str]) -> str:
    try:
        r = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except OSError:
        return "unknown"
    return (
        (r.stdout + r.stderr).strip().splitlines()[0]
        if (r.stdout + r.stderr).strip()
        else "unknown"
    )


def _deb_version(package: str) -> str:
    try:
        r = subprocess.run(
            ["dpkg-query", "-W", "-f", "${Version}", package],
            capture_output=True,
            text=True,
            timeout=10,
        )
    except OSError:
        return "unknown"
    return r.stdout.strip() or "unknown"


def main() -> None:
    today = datetime.date.today().isoformat()
    versions = (
        f"ibsim-utils {_deb_version('ibsim-utils')}, infiniband-diags {_deb_version('infiniband-diags')} "
        f"({_version(['perfquery', '--version'])}), opensm {_deb_version('opensm')}"
    )
    with IbSim(HERE / "fabric.net") as sim:

        def save(case: str, argv: list[str], note: str) -> None:
            r = subprocess.run(
                argv, env=sim.env, cwd=sim.workdir, capture_output=True, text=True, timeout=120
            )
            d = OUT / case
            d.mkdir(parents=True, exist_ok=True)
            (d / "stdout.txt").write_text(r.stdout)
            (d / "cmd.txt").write_text(" ".join(argv) + "\n")
            (d / "rc.txt").write_text(f"{r.returncode}\n")
            stderr = _SIM_CONNECT.sub("", r.stderr)
            if stderr.strip():
                (d / "stderr.txt").write_text(stderr)
            said = [ln for ln in (r.stdout + stderr).splitlines() if "iberror" in ln]
            failed = (
                f" It failed: `{said[-1]}` (perfquery prints its iberror line on stdout)."
                if said
                else ""
            )
            (d / "README.md").write_text(
                f"# perfquery / {case}\n\nReal output of `{' '.join(argv)}` (exit status {r.returncode}) under "
                f"ibsim + OpenSM on `tests/data/ib/fabric.net`, captured {today} by "
                f"`tests/data/ib/capture_perfquery.py` ({versions}).\n\n{note}{failed}\n"
            )

        save(
            "switch_loop_before",
            ["perfquery", "-l", SWITCH, "255"],
            "Every port of leaf01 (LID 3), port 0 included, before any fault: the first of two samples.",
        )
        sim.send('PerformanceSet "leaf01"[5] PortCounters.SymbolErrorCounter=57')
        fault = 'After `PerformanceSet "leaf01"[5] PortCounters.SymbolErrorCounter=57` on the ibsim console.'
        save(
            "switch_loop_after",
            ["perfquery", "-l", SWITCH, "255"],
            f"{fault} Every port of leaf01 again: the second sample (SymbolErrorCounter 0 -> 57 on port 5).",
        )
        save(
            "switch_port",
            ["perfquery", SWITCH, "5"],
            f"{fault} Basic PortCounters of leaf01 port 5.",
        )
        save("ca_port", ["perfquery", CA, "1"], "Basic PortCounters of node0001 (LID 4) port 1.")
        save(
            "switch_extended",
            ["perfquery", "-x", SWITCH, "5"],
            "PortCountersExtended of leaf01 port 5: ibsim's CapMask2 is 0, so no 64-bit error counters.",
        )
        save(
            "ca_extended", ["perfquery", "-x", CA, "1"], "PortCountersExtended of node0001 port 1."
        )
        save(
            "switch_loop_extended",
            ["perfquery", "-l", "-x", SWITCH, "255"],
            "PortCountersExtended of every port of leaf01 (port 0 included).",
        )
        save(
            "switch_all_ports",
            ["perfquery", "-a", SWITCH],
            f"{fault} `-a`: every port of leaf01 summed by perfquery, printed as port 255 (PortSelect 255).",
        )
        save(
            "switch_all_ports_extended",
            ["perfquery", "-a", "-x", SWITCH],
            "`-a -x`: the extended counters of every port of leaf01 summed, printed as port 255.",
        )
        save(
            "ca_all_ports",
            ["perfquery", "-a", CA],
            "`-a` on node0001 (one port): printed as port 255.",
        )
        save(
            "switch_rcv_error_details",
            ["perfquery", "-E", SWITCH, "5"],
            "PortRcvErrorDetails of leaf01 port 5.",
        )
        save(
            "ca_rcv_error_details",
            ["perfquery", "-E", CA, "1"],
            "PortRcvErrorDetails of node0001 port 1.",
        )
        save(
            "switch_xmit_data_sl",
            ["perfquery", "-X", SWITCH, "5"],
            "PortXmitDataSL (`-X`): ibsim does not answer this attribute.",
        )
        save(
            "switch_extended_speeds",
            ["perfquery", "-T", SWITCH, "5"],
            "PortExtendedSpeedsCounters (`-T`): ibsim does not answer this attribute.",
        )
        save("ca_xmit_data_sl", ["perfquery", "-X", CA, "1"], "PortXmitDataSL (`-X`) on a CA.")


if __name__ == "__main__":
    main()
