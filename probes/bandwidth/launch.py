"""Start the two ranks of one bandwidth test, kill them at a hard timeout, return a PairResult.

Launchers only build argv lists (never a shell): :class:`LocalLauncher`
(processes on this machine), :class:`NetnsLauncher` (``ip netns exec NS``),
:class:`SrunLauncher` (one ``srun`` step per rank) and :class:`MpirunLauncher`
(one ``mpirun -np 2``, or ``-np N`` for a group of N). :func:`run_pair` starts every process in one new
session (its own process group), waits with a deadline and, when the
deadline passes, kills the whole group: a collective whose peer died blocks
forever, and that hang is recorded as ``status="hung"`` with its pair.

The rank program is :mod:`fabricdoc.probes.bandwidth.bwtest` (torch gloo/nccl) or an
nccl-tests binary (``sendrecv_perf``/``all_reduce_perf``, output parsed by
:func:`fabricdoc.probes.bandwidth.nccl_tests.parse_nccl_tests`). ``#wrong`` > 0 gives
``status="wrong"``, kept apart from slowness.

Group tests (:func:`run_group`) run the same programs over N ranks. Through
:class:`MpirunLauncher` with ``program="nccl-tests"`` a group's ``all_reduce`` runs
``all_reduce_perf`` and its ``alltoall`` runs ``alltoall_perf``, found beside the binary
(or in the directory) the user named; a missing binary, and fabricdoc's one-way
``fan:K`` probes (nccl-tests has none), give ``status="error"``: could not test, no evidence.
Not tested here (no GPU, no MPI build of nccl-tests): that a real ``mpirun`` places
one rank per ``--host`` slot and that the binaries run; the argv and the parsing of
real published outputs are.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from fabricdoc.probes import exec as px
from fabricdoc.probes.bandwidth.bwtest import MARKER
from fabricdoc.probes.bandwidth.nccl_tests import parse_nccl_tests
from fabricdoc.probes.bandwidth.nccl_tests_binaries import binary_for, nccl_tests_argv

from fabricdoc.errors import ParseError, ProbeError
from fabricdoc.model.records import GroupResult, PairResult, PortRef

_SAFE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$")


def safe_name(text: str, what: str = "host") -> str:
    """Refuse names that could be read as options or carry odd bytes (fabric names are untrusted)."""
    if not _SAFE_NAME.match(text):
        raise ProbeError("launch", f"refusing {what} name {text!r}: not a plain host/interface name")
    return text


@dataclass(frozen=True)
class PairSpec:
    """What to measure between two host ports."""

    src: PortRef
    dst: PortRef
    test: str = "sendrecv"  # or "all_reduce"
    backend: str = "gloo"  # or "nccl"
    size_bytes: int = 4 << 20
    iters: int = 5
    warmup: int = 1
    port: int = 29500  # rendezvous port on src
    round: int = 0
    expected_gbps: float | None = None
    program: str = "bwtest"  # or "nccl-tests"
    extra_args: tuple[str, ...] = ()


@dataclass(frozen=True)
class Proc:
    """One process to start: argv plus environment additions."""

    argv: list[str]
    env: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class GroupLaunchSpec:
    """What to measure over a group of host ports: one collective, every member a rank (in order)."""

    members: tuple[PortRef, ...]
    test: str = "alltoall"  # or "all_reduce"
    backend: str = "gloo"
    size_bytes: int = 4 << 20
    iters: int = 5
    warmup: int = 1
    port: int = 29500  # rendezvous port on the first member
    round: int = 0
    expected_gbps: float | None = None
    phase: str = "screen"
    label: str = ""
    extra_args: tuple[str, ...] = ()
    program: str = "bwtest"  # or "nccl-tests" (MpirunLauncher only)


def bwtest_argv(spec: PairSpec | GroupLaunchSpec, rank: int | None, master_addr: str, python: str | None = None,
                timeout_s: float = 60.0) -> list[str]:
    """argv of one bwtest rank (``rank=None``: the rank comes from the MPI/Slurm environment)."""
    argv = [python or sys.executable, "-m", "fabricdoc.probes.bandwidth.bwtest"]
    if rank is not None:
        argv += ["--rank", str(rank)]
    test = spec.test
    if isinstance(spec, GroupLaunchSpec):
        argv += ["--world", str(len(spec.members))]
        if test.startswith("fan:"):  # fan:K: the first K ranks send one way to the rest
            argv += ["--senders", test[4:]]
            test = "fan"
    argv += [
        "--master-addr", master_addr, "--master-port", str(spec.port),
        "--backend", spec.backend, "--test", test,
        "--size-bytes", str(spec.size_bytes), "--iters", str(spec.iters), "--warmup", str(spec.warmup),
        "--timeout", str(timeout_s * 2),  # the launcher's kill, not torch's, decides "hung"
        *spec.extra_args,
    ]  # fmt: skip
    return argv


class Launcher:
    """Builds the processes of one pair test (or group test); subclasses say where ranks run."""

    name = "launcher"
    runs_nccl_tests = False  # whether group_procs can start nccl-tests binaries

    def procs(self, spec: PairSpec, timeout_s: float) -> list[Proc]:
        raise NotImplementedError

    def group_procs(self, spec: GroupLaunchSpec, timeout_s: float) -> list[Proc]:
        raise ProbeError("launch", f"the {self.name} launcher cannot start group tests", status="unsupported")


@dataclass
class LocalLauncher(Launcher):
    """Both ranks on this machine, rendezvous on 127.0.0.1 (smoke tests, single-node GPUs)."""

    python: str | None = None
    name = "local"

    def procs(self, spec: PairSpec, timeout_s: float) -> list[Proc]:
        return [Proc(bwtest_argv(spec, r, "127.0.0.1", self.python, timeout_s)) for r in (0, 1)]

    def group_procs(self, spec: GroupLaunchSpec, timeout_s: float) -> list[Proc]:
        return [Proc(bwtest_argv(spec, r, "127.0.0.1", self.python, timeout_s)) for r in range(len(spec.members))]


@dataclass
class NetnsLauncher(Launcher):
    """Each rank inside its host's network namespace: ``ip netns exec NS python -m ...``.

    ``namespace``, ``address`` and ``ifname`` map a host port to its namespace,
    its IP address and its interface; gloo needs ``GLOO_SOCKET_IFNAME`` there
    because the hostname resolves to 127.0.0.1 inside a namespace.
    """

    namespace: Callable[[PortRef], str]
    address: Callable[[PortRef], str]
    ifname: Callable[[PortRef], str]
    python: str | None = None
    name = "netns"

    def procs(self, spec: PairSpec, timeout_s: float) -> list[Proc]:
        return self._ranks(spec, (spec.src, spec.dst), timeout_s, {})

    def group_procs(self, spec: GroupLaunchSpec, timeout_s: float) -> list[Proc]:
        return self._ranks(spec, spec.members, timeout_s, {"OMP_NUM_THREADS": "1"})

    def _ranks(self, spec: PairSpec | GroupLaunchSpec, ports: Sequence[PortRef], timeout_s: float,
               extra_env: dict[str, str]) -> list[Proc]:
        """One rank per port, in order, inside its namespace; rank 0's address is the rendezvous."""
        master = self.address(ports[0])
        out = []
        for rank, port in enumerate(ports):
            ns = safe_name(self.namespace(port), "namespace")
            ifname = safe_name(self.ifname(port), "interface")
            env = {"GLOO_SOCKET_IFNAME": ifname, "NCCL_SOCKET_IFNAME": ifname, "MASTER_ADDR": master, **extra_env}
            out.append(Proc(["ip", "netns", "exec", ns, *bwtest_argv(spec, rank, master, self.python, timeout_s)], env))
        return out


@dataclass
class SrunLauncher(Launcher):
    """One Slurm step per rank, pinned to the host with ``--nodelist`` (run inside an allocation).

    ``hostname`` maps a port to its Slurm node name; ``ifname`` (optional) to the
    NIC that gloo/NCCL should use for that port's rail.
    """

    hostname: Callable[[PortRef], str] = lambda p: p.node
    ifname: Callable[[PortRef], str] | None = None
    python: str = "python3"
    srun: str = "srun"
    extra: tuple[str, ...] = ()
    name = "srun"

    def procs(self, spec: PairSpec, timeout_s: float) -> list[Proc]:
        if spec.program == "nccl-tests":
            raise ProbeError("launch", "srun runs nccl-tests through MpirunLauncher or one srun -n 2 step")
        return self._ranks(spec, (spec.src, spec.dst), timeout_s)

    def group_procs(self, spec: GroupLaunchSpec, timeout_s: float) -> list[Proc]:
        return self._ranks(spec, spec.members, timeout_s)

    def _ranks(self, spec: PairSpec | GroupLaunchSpec, ports: Sequence[PortRef], timeout_s: float) -> list[Proc]:
        """One Slurm step per port, in rank order; rank 0's host is the rendezvous."""
        master = safe_name(self.hostname(ports[0]))
        out = []
        for rank, port in enumerate(ports):
            host = safe_name(self.hostname(port))
            env = {"MASTER_ADDR": master}
            if self.ifname:
                nic = safe_name(self.ifname(port), "interface")
                env.update(GLOO_SOCKET_IFNAME=nic, NCCL_SOCKET_IFNAME=nic)
            argv = [self.srun, "--nodes=1", "--ntasks=1", f"--nodelist={host}", "--kill-on-bad-exit=1",
                    f"--time={max(1, int(timeout_s // 60) + 1)}", "--export=ALL", *self.extra]  # fmt: skip
            out.append(Proc([*argv, *bwtest_argv(spec, rank, master, self.python, timeout_s)], env))
        return out


@dataclass
class MpirunLauncher(Launcher):
    """One ``mpirun -np 2 --host A:1,B:1`` for both ranks: bwtest or an nccl-tests binary."""

    hostname: Callable[[PortRef], str] = lambda p: p.node
    python: str = "python3"
    mpirun: str = "mpirun"
    nccl_binary: str | None = None  # path to sendrecv_perf / all_reduce_perf (MPI build), or their directory
    extra: tuple[str, ...] = ()
    name = "mpirun"
    runs_nccl_tests = True

    def procs(self, spec: PairSpec, timeout_s: float) -> list[Proc]:
        hosts, argv = self._mpirun(spec.port, (spec.src, spec.dst))
        if spec.program == "nccl-tests":
            if not self.nccl_binary:
                raise ProbeError("launch", "nccl-tests requested but no binary given", status="unsupported")
            return [Proc([*argv, *nccl_tests_argv(self.nccl_binary, spec.size_bytes, spec.iters, spec.warmup)])]
        return [Proc([*argv, *bwtest_argv(spec, None, hosts[0], self.python, timeout_s)])]

    def group_procs(self, spec: GroupLaunchSpec, timeout_s: float) -> list[Proc]:
        """One ``mpirun -np N`` over the group: bwtest, or the nccl-tests binary of the group's collective."""
        hosts, argv = self._mpirun(spec.port, spec.members)
        if spec.program == "nccl-tests":
            return [Proc([*argv, *nccl_tests_argv(self.group_binary(spec.test), spec.size_bytes, spec.iters,
                                                  spec.warmup)])]  # fmt: skip
        return [Proc([*argv, *bwtest_argv(spec, None, hosts[0], self.python, timeout_s)])]

    def group_binary(self, test: str) -> str:
        """The nccl-tests binary for a group's ``test``, beside :attr:`nccl_binary`; a ProbeError when
        there is none (``fan:K``) or it is not there. Checked on this machine: mpirun starts the same
        path on every host, so the binaries are expected on a shared file system."""
        if not self.nccl_binary:
            raise ProbeError("launch", "nccl-tests requested but no binary given", status="unsupported")
        binary = binary_for(self.nccl_binary, test)
        if binary is None:
            raise ProbeError("launch", f"could not test {test}: fan probes need fabricdoc's torch test, "
                             "nccl-tests has no one-way binary")  # fmt: skip
        found = os.path.isfile(binary) if os.path.dirname(binary) else shutil.which(binary) is not None
        if not found:  # a bare name is looked up on PATH, as mpirun does on each host
            raise ProbeError("launch", f"could not test {test}: no nccl-tests binary {binary}")
        return binary

    def _mpirun(self, port: int, ports: Sequence[PortRef]) -> tuple[list[str], list[str]]:
        """The hosts, and one ``mpirun`` with a slot on each (rank 0's host is the rendezvous)."""
        hosts = [safe_name(self.hostname(p)) for p in ports]
        argv = [self.mpirun, "-np", str(len(hosts)), "--host", ",".join(f"{h}:1" for h in hosts),
                "--bind-to", "none", "-x", f"MASTER_ADDR={hosts[0]}", "-x", f"MASTER_PORT={port}",
                *self.extra]  # fmt: skip
        return hosts, argv


@dataclass
class RawRun:
    """What the processes of one test left behind."""

    status: str  # "ok" | "hung" | "error"
    returncodes: list[int | None]
    outputs: list[str]
    errors: list[str]
    duration_s: float


def run_procs(procs: Sequence[Proc], timeout_s: float) -> RawRun:
    """Start every rank through the exec seam (a process group each); kill all groups at ``timeout_s``."""
    start = time.monotonic()
    stack = contextlib.ExitStack()
    files = [
        (stack.enter_context(tempfile.TemporaryFile()), stack.enter_context(tempfile.TemporaryFile()))  # noqa: SIM115
        for _ in procs
    ]
    children: list[subprocess.Popen[bytes]] = []
    try:
        for proc, (out, err) in zip(procs, files, strict=True):
            try:
                children.append(px.spawn(proc.argv, env={**os.environ, **proc.env}, stdout=out, stderr=err))
            except ProbeError as exc:
                return RawRun("error", [], [], [str(exc)], time.monotonic() - start)
        deadline = start + timeout_s
        hung = False
        for child in children:
            try:
                child.wait(timeout=max(deadline - time.monotonic(), 0.01))
            except subprocess.TimeoutExpired:
                hung = True
                break
        for child in children:  # stray grandchildren (ip netns exec, srun steps) go with their group
            px.kill_group(child.pid)
        for child in children:
            with contextlib.suppress(subprocess.TimeoutExpired):
                child.wait(timeout=5)
        outputs, errors = [], []
        for out, err in files:
            out.seek(0)
            err.seek(0)
            outputs.append(out.read().decode(errors="replace"))
            errors.append(err.read().decode(errors="replace"))
        rcs = [c.returncode for c in children]
        status = "hung" if hung else ("ok" if all(rc == 0 for rc in rcs) else "error")
        return RawRun(status, rcs, outputs, errors, time.monotonic() - start)
    finally:
        for child in children:
            px.reap(child)
        stack.close()


_RESULT_NUMBERS = ("busbw_gbps", "algbw_gbps", "wrong")


def _result(line: str) -> dict[str, Any]:
    """One rank's result line (``MARKER`` + a JSON object), checked: an object with an integer rank, a
    status, and finite non-negative figures. Anything else (another JSON value, a list as a figure,
    a 5,000-digit number) is that rank's error, never an exception that ends the sweep."""
    try:
        rec = json.loads(line[len(MARKER):][:65536])
    except (ValueError, RecursionError):
        return {"status": "error", "error": f"a result line that is not JSON: {line[:120]!r}"}
    ok = (isinstance(rec, dict) and type(rec.get("rank")) is int and 0 <= rec["rank"] < 1 << 20
          and isinstance(rec.get("status"), str)
          and all(rec.get(k) is None or (type(rec[k]) in (int, float) and 0 <= rec[k] < 1e18) for k in _RESULT_NUMBERS))
    if not ok:
        return {"status": "error", "error": f"a result line that is not a rank's result: {line[:120]!r}"}
    return rec


def _records(outputs: Sequence[str]) -> list[dict[str, Any]]:
    return [_result(line) for text in outputs for line in text.splitlines() if line.startswith(MARKER)]


def _tail(texts: Sequence[str], limit: int = 300) -> str:
    joined = " | ".join(t.strip().splitlines()[-1] for t in texts if t.strip())
    return joined[-limit:]


def pair_result(spec: PairSpec, raw: RawRun) -> PairResult:
    """Turn what the ranks printed into one PairResult (ok / hung / wrong / error)."""
    common: dict[str, Any] = dict(
        src=spec.src, dst=spec.dst, expected_gbps=spec.expected_gbps, size_bytes=spec.size_bytes,
        duration_s=round(raw.duration_s, 3), round=spec.round, test=spec.test,
    )  # fmt: skip
    if raw.status == "hung":
        return PairResult(status="hung", busbw_gbps=None, error=f"killed after {raw.duration_s:.1f}s (hung)", **common)
    if spec.program == "nccl-tests":
        return _from_nccl_tests(spec, raw, common)
    recs = _records(raw.outputs)
    by_rank = {r.get("rank"): r for r in recs}
    bad = [r for r in recs if r.get("status") != "ok"]
    if bad or raw.status != "ok" or len(by_rank) < 2:
        why = str(bad[0].get("error") if bad else (_tail(raw.errors) or f"exit codes {raw.returncodes}"))
        status = "hung" if re.search(r"time[d ]?out|timeout", why, re.I) else "error"
        return PairResult(status=status, busbw_gbps=None, error=why, **common)
    wrong = sum(int(r.get("wrong") or 0) for r in recs)
    if spec.test == "sendrecv":
        bw = by_rank[0].get("busbw_gbps")  # the sender's clock includes the receiver's ack
        alg = by_rank[0].get("algbw_gbps")
    else:
        bw = min(r.get("busbw_gbps") or 0.0 for r in recs)
        alg = min(r.get("algbw_gbps") or 0.0 for r in recs)
    status = "wrong" if wrong else "ok"
    return PairResult(status=status, busbw_gbps=bw, algbw_gbps=alg, wrong=wrong, **common)


def _one_nccl_run(raw: RawRun, source: str) -> tuple[Any, str | None]:
    """The one complete nccl-tests run in a test's output (the launcher starts one binary), and its
    status (``wrong`` when the data check failed); else None and why (truncated, failed, several runs),
    naming the line."""
    try:
        runs = parse_nccl_tests("\n".join(raw.outputs), source=source)
    except ParseError as exc:
        return None, str(exc)
    if len(runs) != 1:
        return None, f"{len(runs)} nccl-tests runs in one test's output"
    run = runs[0]
    return run, "wrong" if run.corrupted else ("ok" if raw.status == "ok" else "error")


def _from_nccl_tests(spec: PairSpec, raw: RawRun, common: dict[str, Any]) -> PairResult:
    """One nccl-tests run's output as a PairResult: its peak busbw, ``wrong`` when the data check failed,
    ``error`` when the output does not hold exactly one complete run."""
    run, status = _one_nccl_run(raw, f"{spec.src}->{spec.dst}")
    if run is None:
        return PairResult(status="error", busbw_gbps=None, error=status, **common)
    return PairResult(
        status=status, busbw_gbps=run.peak_busbw_gbps(), algbw_gbps=run.peak_algbw_gbps(), wrong=run.wrong,
        error=None if status != "error" else _tail(raw.errors), **common,
    )  # fmt: skip


def group_result(spec: GroupLaunchSpec, raw: RawRun) -> GroupResult:
    """Turn what a group's ranks printed into one GroupResult: the slowest rank's busbw (it finishes the
    collective), ``wrong`` when any rank's data check failed, ``hung`` when the launcher killed it."""
    common: dict[str, Any] = dict(
        members=spec.members, test=spec.test, expected_gbps=spec.expected_gbps, round=spec.round,
        phase=spec.phase, label=spec.label, size_bytes=spec.size_bytes, duration_s=round(raw.duration_s, 3),
    )  # fmt: skip
    if raw.status == "hung":
        return GroupResult(status="hung", busbw_gbps=None, error=f"killed after {raw.duration_s:.1f}s (hung)", **common)
    if spec.program == "nccl-tests":
        return _group_from_nccl_tests(spec, raw, common)
    recs = _records(raw.outputs)
    ranks = {r.get("rank") for r in recs}
    bad = [r for r in recs if r.get("status") != "ok"]
    if bad or raw.status != "ok" or len(ranks) < len(spec.members):
        why = str(bad[0].get("error") if bad else (_tail(raw.errors) or f"exit codes {raw.returncodes}"))
        status = "hung" if re.search(r"time[d ]?out|timeout", why, re.I) else "error"
        return GroupResult(status=status, busbw_gbps=None, error=why, **common)
    wrong = sum(int(r.get("wrong") or 0) for r in recs)
    bw = min(float(r.get("busbw_gbps") or 0.0) for r in recs)
    return GroupResult(status="wrong" if wrong else "ok", busbw_gbps=bw, wrong=wrong, **common)


def _group_from_nccl_tests(spec: GroupLaunchSpec, raw: RawRun, common: dict[str, Any]) -> GroupResult:
    """One nccl-tests run over the group as a GroupResult: its peak busbw (the collective's, which the
    slowest rank sets), ``wrong`` when the data check failed, ``error`` when the output holds no complete
    run, or a run over another number of ranks than the group has members."""
    run, status = _one_nccl_run(raw, spec.label or f"{spec.test} over {len(spec.members)} ranks")
    if run is None:
        return GroupResult(status="error", busbw_gbps=None, error=status, **common)
    if run.ranks_problem is None and run.nranks is not None and run.nranks != len(spec.members):
        return GroupResult(status="error", busbw_gbps=None, error=f"nccl-tests ran {run.nranks} ranks, the group has "
                           f"{len(spec.members)} members", **common)  # fmt: skip
    return GroupResult(status=status, busbw_gbps=run.peak_busbw_gbps(), wrong=run.wrong,
                       error=None if status != "error" else _tail(raw.errors) or f"exit codes {raw.returncodes}",
                       **common)  # fmt: skip


def run_group(launcher: Launcher, spec: GroupLaunchSpec, timeout_s: float = 120.0) -> GroupResult:
    """Run one group test with ``launcher`` (every rank at once); never raises for a failed or hung test.
    A test the launcher cannot start (no nccl-tests binary for it, a refused name) is ``status="error"``."""
    try:
        if spec.program == "nccl-tests" and not launcher.runs_nccl_tests:
            raise ProbeError("launch", f"the {launcher.name} launcher runs fabricdoc's torch test, not nccl-tests "
                             "binaries (use mpirun)", status="unsupported")  # fmt: skip
        procs = launcher.group_procs(spec, timeout_s)
    except ProbeError as exc:
        return GroupResult(members=spec.members, test=spec.test, status="error", busbw_gbps=None,
                           expected_gbps=spec.expected_gbps, round=spec.round, phase=spec.phase, label=spec.label,
                           error=str(exc))
    return group_result(spec, run_procs(procs, timeout_s))


def run_pair(launcher: Launcher, spec: PairSpec, timeout_s: float = 120.0) -> PairResult:
    """Run one pair test with ``launcher``; never raises for a failed or hung test."""
    try:
        procs = launcher.procs(spec, timeout_s)
    except ProbeError as exc:
        return PairResult(src=spec.src, dst=spec.dst, status="error", busbw_gbps=None,
                          expected_gbps=spec.expected_gbps, round=spec.round, test=spec.test, error=str(exc))  # fmt: skip
    return pair_result(spec, run_procs(procs, timeout_s))
