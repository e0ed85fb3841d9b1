"""The one way fabricdoc starts a process: argv (never a shell), a timeout, and a process-group kill.

Every process starts in a new session (its own process group) with
``PR_SET_PDEATHSIG`` set to SIGKILL on Linux, so neither a timeout nor a
killed fabricdoc leaves it running; every group still alive is tracked, so
:func:`kill_all` (Ctrl-C, a failing sweep) ends them all. :func:`run` is the
seam tests replace (``monkeypatch.setattr(fabricdoc.probes.exec, "run", fake)``):
callers look it up on the module at call time.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO, Any

from fabricdoc.errors import ProbeError

_PR_SET_PDEATHSIG = 1
try:  # resolved here, not in the child: a dlopen between fork and exec could deadlock
    _PRCTL: Any = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # not Linux
    _PRCTL = None
_LIVE: set[int] = set()  # process groups started here and not yet reaped
_LIVE_LOCK = threading.Lock()


@dataclass(frozen=True)
class Completed:
    """One finished (or killed) process: argv, decoded output, exit status, timing.

    ``returncode`` is None when the process was killed at its timeout.
    ``started`` is ``time.monotonic()`` at start, to merge overlapping runs.
    """

    argv: tuple[str, ...]
    stdout: str
    stderr: str
    returncode: int | None
    duration_s: float
    started: float

    @property
    def timed_out(self) -> bool:
        return self.returncode is None


def _death_signal(sig: int):
    """A preexec function: the kernel sends ``sig`` to the child when fabricdoc dies."""

    def setup() -> None:  # runs in the child between fork and exec
        if _PRCTL is not None:
            _PRCTL(_PR_SET_PDEATHSIG, sig)

    return setup


def spawn(
    argv: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    stdin: int | IO[Any] | None = subprocess.DEVNULL,
    stdout: int | IO[Any] | None = subprocess.PIPE,
    stderr: int | IO[Any] | None = subprocess.PIPE,
    tool: str | None = None,
    death_signal: int = signal.SIGKILL,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` in its own process group, tracked until :func:`reap`; ProbeError when it cannot start.

    ``death_signal`` is what the child gets when this process dies (SIGTERM for a
    server that should shut down cleanly, such as ibsim).
    """
    name = tool or os.path.basename(str(argv[0]))
    try:
        proc = subprocess.Popen(
            list(argv), stdin=stdin, stdout=stdout, stderr=stderr, env=dict(env) if env is not None else None,
            cwd=cwd, start_new_session=True, preexec_fn=_death_signal(death_signal),
        )  # fmt: skip
    except FileNotFoundError:
        raise ProbeError(name, f"cannot run {argv[0]}: not found", "unsupported") from None
    except PermissionError:
        raise ProbeError(name, f"cannot run {argv[0]}: permission denied", "error") from None
    except OSError as exc:
        raise ProbeError(name, f"cannot run {argv[0]}: {exc.strerror or exc}", "error") from None
    with _LIVE_LOCK:
        _LIVE.add(proc.pid)
    return proc


def kill_group(pid: int) -> None:
    """SIGKILL the process group led by ``pid`` (no error when it is already gone)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def reap(proc: subprocess.Popen[bytes]) -> None:
    """Kill what is left of ``proc``'s group and stop tracking it."""
    kill_group(proc.pid)
    with _LIVE_LOCK:
        _LIVE.discard(proc.pid)


def kill_all() -> int:
    """Kill every process group started here that is still tracked; returns how many."""
    with _LIVE_LOCK:
        groups = list(_LIVE)
    for pgid in groups:
        kill_group(pgid)
    return len(groups)


def run(
    argv: Sequence[str],
    *,
    timeout_s: float,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    tool: str | None = None,
) -> Completed:
    """Run ``argv`` to completion or ``timeout_s``; at the timeout the whole group is killed.

    Never raises for a failing exit status (the caller judges it); raises
    :class:`ProbeError` only when the program cannot be started.
    """
    start = time.monotonic()
    proc = spawn(argv, env=env, cwd=cwd, tool=tool)
    try:
        try:
            out, err = proc.communicate(timeout=timeout_s)
            code: int | None = proc.returncode
        except subprocess.TimeoutExpired:
            kill_group(proc.pid)
            out, err = proc.communicate()
            code = None
    finally:
        reap(proc)
    return Completed(
        tuple(str(a) for a in argv), out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace"),
        code, time.monotonic() - start, start,
    )  # fmt: skip


def last_line(text: str, skip: Sequence[str] = ()) -> str:
    """The last non-empty line of a tool's output (what it died saying), at most 200 characters."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not any(s in ln for s in skip)]
    return lines[-1][:200] if lines else "(no output)"


def read_tool(argv: Sequence[str], *, timeout_s: float, tool: str, netns: str | None = None) -> tuple[str | None, str]:
    """Run a tool that only reads (inside ``netns`` through ``ip netns exec``): ``(stdout, "")`` when it
    exited 0, else ``(None, why)``: it could not start, timed out, or the last line it printed."""
    if netns:
        ip = shutil.which("ip")
        if ip is None:
            return None, "the ip command (iproute2) is not installed"
        argv = [ip, "netns", "exec", netns, *argv]
    try:
        done = run(argv, timeout_s=timeout_s, tool=tool)
    except ProbeError as exc:
        return None, f"{tool} could not run: {exc}"
    if done.timed_out:
        return None, f"{tool} timed out after {timeout_s:g}s"
    if done.returncode != 0:
        said = done.stderr if done.stderr.strip() else done.stdout
        return None, last_line(said) if said.strip() else f"exit status {done.returncode}"
    return done.stdout, ""
