"""Fixtures for the scheduler tests: reports built from a generated fabric, and a real Slurm.

The ``slurm_cluster`` fixture starts munged, slurmctld and one slurmd per fake
node (``slurmd -N NAME``, each on its own 127.0.0.1 port) from a temp config,
waits for the nodes to be idle by polling ``sinfo``, and stops exactly the
processes it started.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from fabricdoc.generators import fat_tree_2
from fabricdoc.model import Evidence, Finding, Observations
from fabricdoc.report import Report

SLURM_NODES = ("fdsl-node0001", "fdsl-node0002", "fdsl-node0003", "fdsl-node0004")
# The generated fabric names hosts node0001..; this rule maps them to the Slurm names.
HOST_RULE = ("node(\\d+)", "fdsl-node\\1")


def wait_for(cond: Callable[[], object], timeout_s: float, what: str, interval_s: float = 0.1):
    """Poll ``cond`` until it returns something truthy or the deadline passes."""
    deadline = time.monotonic() + timeout_s
    last = None
    while time.monotonic() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval_s)
    raise TimeoutError(f"timed out after {timeout_s:g}s waiting for {what} (last: {last!r})")


def nic_down(host: str, fid: str) -> Finding:
    return Finding(
        id=fid,
        kind="nic",
        name=f"{host} mlx5_0",
        fault="down",
        severity="error",
        confidence=0.95,
        evidence=[Evidence("state", {"port": 1, "state": "Down"})],
        endpoints=None,
        node_ids=[host],
    )


def make_report(bad_hosts=(), findings=(), fabric=None, impact=None) -> Report:
    """A report over a 4-host leaf/spine fabric with the given hosts' NICs down."""
    fabric = fabric or fat_tree_2(leaves=2, spines=1, hosts_per_leaf=2)
    fs = [nic_down(h, f"F{i + 1:03d}") for i, h in enumerate(bad_hosts)] + list(findings)
    rep = Report.build(fabric, fs, Observations())
    rep.impact = impact
    return rep


@pytest.fixture
def report_file(tmp_path: Path) -> Callable[..., Path]:
    def write(name: str = "report.json", **kw) -> Path:
        path = tmp_path / name
        make_report(**kw).save(path)
        return path

    return write


# -- real Slurm ------------------------------------------------------------


def _free_ports(n: int) -> list[int]:
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


def _slurm_conf(root: Path, ports: list[int], nodes: tuple[str, ...]) -> str:
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
    ]
    for name, port in zip(nodes, node_ports, strict=True):
        lines.append(
            f"NodeName={name} NodeHostname=localhost NodeAddr=127.0.0.1 Port={port} CPUs=1 RealMemory=64 State=UNKNOWN"
        )
    lines.append("PartitionName=fdsl Nodes=ALL Default=YES State=UP")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def slurm_cluster() -> Iterator[SlurmCluster]:
    for tool in ("munged", "slurmctld", "slurmd", "sinfo", "scontrol"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} not installed (apt-get install slurm-wlm munge)")
    if os.geteuid() != 0:
        pytest.skip("the test Slurm runs with SlurmUser=root")
    root = Path(tempfile.mkdtemp(prefix="fdsl-slurm-"))
    root.chmod(0o755)  # munged insists its socket folder's parents are searchable by all
    (root / "munge").mkdir(mode=0o755)
    (root / "state").mkdir()
    (root / "spool").mkdir()
    key = root / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o600)
    conf = root / "slurm.conf"
    conf.write_text(_slurm_conf(root, _free_ports(1 + len(SLURM_NODES)), SLURM_NODES))
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


@pytest.fixture
def slurm(slurm_cluster: SlurmCluster) -> Iterator[SlurmCluster]:
    """The session's Slurm with every node idle and without a reason, before and after the test."""

    def reset() -> None:
        for node, _ in slurm_cluster.reasons().items():
            slurm_cluster.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)
        wait_for(lambda: not slurm_cluster.reasons() and slurm_cluster.all_idle(), 30, "all nodes idle again", 0.2)

    reset()
    yield slurm_cluster
    reset()
