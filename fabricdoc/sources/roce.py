"""RoCE / Ethernet sweep source: run ``fabricdoc probe`` on every host and gather its records.

Each host runs the host probes (netlink stats and flap watcher, tc qdisc stats,
ECN counters, ethtool -S, RDMA hw_counters, NVML) for the sweep interval and
prints JSON records; this module starts those runs in parallel with a timeout,
reads them back and aligns them with the fabric. Where a host runs is decided
by a launcher: ``local`` (this machine), ``netns`` (a network namespace named
after the host, or its ``netns`` attribute), ``srun`` (a Slurm step on the host).
A host whose probe fails or hangs is a ``ProbeRun`` error; the others are kept.

A host node's attributes in the fabric file say how to reach it::

    - {id: gpu01, kind: host, ports: 2, attrs: {netns: ns-gpu01, ifnames: {1: eth0, 2: eth1}}}
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from fabricdoc.errors import ConfigError, FabricdocError
from fabricdoc.model.records import Observations, ProbeStatus
from fabricdoc.model.topology import Fabric
from fabricdoc.probes import exec as px
from fabricdoc.probes.bandwidth.launch import safe_name
from fabricdoc.probes.health import HealthRecorder, one_line
from fabricdoc.sources.records import observations_from_records, records_from_json

LAUNCHERS = ("local", "netns", "srun", "mpirun")
Progress = Callable[[str, int, int], None]


def probe_argv(fabric: Fabric, host: str, launcher: str, interval_s: float, python: str | None = None) -> list[str]:
    """The argv (never a shell line) that probes one host for ``interval_s`` seconds."""
    node = fabric.nodes[host]
    args = ["probe", "--json", "--node", safe_name(host), "--watch", f"{interval_s:g}"]
    for port, ifname in sorted((node.attrs.get("ifnames") or {}).items(), key=lambda kv: int(kv[0])):
        args += ["--if-port", f"{safe_name(str(ifname), 'interface')}={int(port)}"]
    exe = [python or sys.executable, "-m", "fabricdoc"]
    if launcher == "local":
        return [*exe, *args]
    if launcher == "netns":
        return [*exe, *args, "--netns", safe_name(str(node.attrs.get("netns") or host), "namespace")]
    if launcher == "srun":
        return ["srun", "--nodes=1", "--ntasks=1", f"--nodelist={safe_name(host)}", "fabricdoc", *args]
    if launcher == "mpirun":
        return ["mpirun", "-np", "1", "--host", f"{safe_name(host)}:1", "fabricdoc", *args]
    raise ConfigError(f"unknown launcher {launcher!r} (one of {', '.join(LAUNCHERS)})")


def _run_one(argv: list[str], timeout_s: float) -> tuple[str, str, int | None]:
    """Run one probe through the exec seam (its group killed at the timeout)."""
    try:
        done = px.run(argv, timeout_s=timeout_s, tool="probe")
    except FabricdocError as exc:
        return "", str(exc), 127
    return done.stdout, done.stderr, done.returncode


def collect(
    fabric: Fabric,
    hosts: list[str] | None = None,
    *,
    launcher: str = "local",
    interval_s: float = 10.0,
    timeout_s: float | None = None,
    progress: Progress | None = None,
    max_parallel: int = 16,
) -> Observations:
    """Probe every host (all of the fabric's hosts by default) and merge their records."""
    names = hosts or sorted(n.id for n in fabric.hosts())
    unknown = [h for h in names if h not in fabric.nodes or fabric.nodes[h].kind != "host"]
    if unknown:
        raise ConfigError(f"--hosts: {unknown[0]!r} is not a host of fabric {fabric.name!r}")
    limit = timeout_s if timeout_s is not None else interval_s + 60.0
    argvs = {h: probe_argv(fabric, h, launcher, interval_s) for h in names}
    parts: list[Observations] = []
    health = HealthRecorder()
    done = 0

    def one(host: str):
        start = time.monotonic()
        out, err, rc = _run_one(argvs[host], limit)
        return host, out, err, rc, time.monotonic() - start

    with ThreadPoolExecutor(max_workers=max(1, min(max_parallel, len(names)))) as pool:
        for host, out, err, rc, took in pool.map(one, names):
            done += 1
            if progress:
                progress("probe", done, len(names))
            took = round(took, 3)
            if rc is None:
                health.record("probe", host, ProbeStatus.TIMEOUT, took, f"killed after {limit:g}s")
                continue
            try:
                records = records_from_json(out, source=f"probe on {host}")
            except FabricdocError as exc:
                health.record("probe", host, ProbeStatus.ERROR, took, px.last_line(err) if err.strip() else one_line(exc))
                continue
            parts.append(observations_from_records(records))
            if rc == 0:
                health.record("probe", host, ProbeStatus.OK, took)
            else:
                health.record("probe", host, ProbeStatus.ERROR, took,
                              px.last_line(err) if err.strip() else f"exit status {rc}")
    obs = Observations.merged(parts)
    obs.probes.extend(health.runs)
    obs.interval_s = obs.interval_s or interval_s
    return obs
