"""A real Slurm for tests: munged, slurmctld and one ``slurmd -N`` per fake node, from a temp config.

``start_cluster`` starts them, waits for the nodes to be idle by polling ``sinfo``,
and stops exactly the processes it started.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from tests.helpers.reports import SLURM_NODES
from tests.helpers.waiting import wait_for


def free_ports(n: int) -> list[int]:
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


@dataclass
class SlurmCluster:
    conf: Path
    nodes: tuple[str, ...]
    env: dict[str, str]
    root: Path

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        cp = subprocess.run(list(argv), capture_output=True, text=True, timeout=30, env=self.env, check=False)
        if check and cp.returncode != 0:
            raise AssertionError(f"{argv} failed ({cp.returncode}): {cp.stderr.strip()}")
        return cp

    def states(self) -> dict[str, str]:
        out = self.run("sinfo", "-N", "-h", "-o", "%N|%T").stdout
        return dict(line.split("|", 1) for line in out.split())

    def reasons(self) -> dict[str, str]:
        """sinfo -R read back: node -> reason, for every node Slurm lists with a reason."""
        out = self.run("sinfo", "-R", "-N", "-h", "-o", "%N|%E").stdout
        return dict(line.split("|", 1) for line in out.splitlines() if line.strip())

    def all_idle(self) -> bool:
        st = self.states()
        return set(st) == set(self.nodes) and all(v == "idle" for v in st.values())


def slurm_conf(root: Path, ports: list[int], nodes: tuple[str, ...]) -> str:
    ctld_port, *node_ports = ports
    lines = [
        "ClusterName=fdsl",
        "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={ctld_port}",
        f"SlurmdPort={node_ports[0]}",
        "SlurmUser=root",
        "SlurmdUser=root",
        "AuthType=auth/munge",
        f"AuthInfo=socket={root}/munge/munge.sock",
        "CredType=cred/munge",
        "CommunicationParameters=NoInAddrAny",
        f"StateSaveLocation={root}/state",
        f"SlurmdSpoolDir={root}/spool/%n",
        f"SlurmctldPidFile={root}/slurmctld.pid",
        f"SlurmdPidFile={root}/slurmd-%n.pid",
        f"SlurmctldLogFile={root}/slurmctld.log",
        f"SlurmdLogFile={root}/slurmd-%n.log",
        "MailProg=/bin/true",
        "ProctrackType=proctrack/pgid",
        "TaskPlugin=task/none",
        "MpiDefault=none",
        "SwitchType=switch/none",
        "ReturnToService=2",
        "JobAcctGatherType=jobacct_gather/none",
        "AccountingStorageType=accounting_storage/none",
        "JobCompType=jobcomp/none",
        "SlurmctldTimeout=30",
        "SlurmdTimeout=300",
        # A job requeued by a failing PrologSlurmctld shows Reason=BeginTime, and a job queued behind it
        # starts, only at the next backfill pass: every 30 s by default, every second here.
        "SchedulerParameters=bf_interval=1",
    ]
    for name, port in zip(nodes, node_ports, strict=True):
        lines.append(
            f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=1 RealMemory=64 State=UNKNOWN"
        )
    lines.append("PartitionName=fdsl Nodes=ALL Default=YES State=UP")
    return "\n".join(lines) + "\n"


def missing_slurm() -> str | None:
    """Why a test Slurm cannot start here, or None."""
    for tool in ("munged", "slurmctld", "slurmd", "sinfo", "scontrol"):
        if shutil.which(tool) is None:
            return f"{tool} not installed (apt-get install slurm-wlm munge)"
    if os.geteuid() != 0:
        return "the test Slurm runs with SlurmUser=root"
    return None


@contextmanager
def start_cluster(extra_conf: str = "") -> Iterator[SlurmCluster]:
    root = Path(tempfile.mkdtemp(prefix="fdsl-slurm-"))
    root.chmod(0o755)  # munged insists its socket folder's parents are searchable by all
    (root / "munge").mkdir(mode=0o755)
    (root / "state").mkdir()
    (root / "spool").mkdir()
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = root / "slurm.conf"
    conf.write_text(slurm_conf(root, free_ports(1 + len(SLURM_NODES)), SLURM_NODES) + extra_conf)
    env = {**os.environ, "SLURM_CONF": str(conf)}
    procs: list[subprocess.Popen] = []

    def start(argv: list[str], log: str) -> subprocess.Popen:
        fh = open(root / log, "wb")  # noqa: SIM115 - closed with the process below
        p = subprocess.Popen(argv, stdout=fh, stderr=subprocess.STDOUT, env=env, start_new_session=True)
        fh.close()
        procs.append(p)
        return p

    cluster = SlurmCluster(conf, SLURM_NODES, env, root)
    try:
        sock = root / "munge" / "munge.sock"
        start(
            ["munged", "-F", f"--socket={sock}", f"--key-file={key}", f"--pid-file={root}/munged.pid",
             f"--log-file={root}/munged.log", f"--seed-file={root}/munged.seed"],
            "munged.out",
        )
        wait_for(sock.is_socket, 15, "munged's socket")
        ctld = start(["slurmctld", "-D", "-f", str(conf)], "slurmctld.out")

        def ctld_up() -> bool:
            if ctld.poll() is not None:
                raise RuntimeError(f"slurmctld exited {ctld.returncode}: {(root / 'slurmctld.out').read_text()[-2000:]}")
            return cluster.run("scontrol", "ping", check=False).returncode == 0

        wait_for(ctld_up, 30, "slurmctld to answer scontrol ping", 0.2)
        for name in SLURM_NODES:
            start(["slurmd", "-D", "-N", name, "-f", str(conf)], f"slurmd-{name}.out")
        wait_for(cluster.all_idle, 60, "every slurmd node to be idle in sinfo", 0.2)
        yield cluster
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                p.terminate()
        for p in reversed(procs):
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(timeout=5)
        shutil.rmtree(root, ignore_errors=True)
