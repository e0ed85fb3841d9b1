"""infiniband-diags runner: each tool run without a shell, under a timeout, through the exec seam.

:class:`IbRunner` runs ``ibnetdiscover``, ``ibqueryerrors``,
``iblinkinfo``, ``ibroute`` and ``ibtracert``; the seam kills the whole
process group when a run times out. Under ibsim it adds
``LD_PRELOAD=libumad2sim.so`` and ``IBSIM_SOCKNAME`` and runs in a scratch
directory (umad2sim writes a fake sysfs ``./sys-<pid>`` there). The parsers,
one per tool, are the sibling modules.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from fabricdoc.probes import exec as px

from fabricdoc.errors import ProbeError

TOOLS = ("ibnetdiscover", "ibqueryerrors", "iblinkinfo", "ibroute", "ibtracert")


@dataclass(frozen=True)
class ToolRun:
    """One finished tool run: its argv, output, exit status and wall time."""

    tool: str
    argv: tuple[str, ...]
    stdout: str
    stderr: str
    returncode: int
    duration_s: float
    started: float = 0.0  # time.monotonic() at start, to merge overlapping runs


def busy_time(runs: Sequence[ToolRun]) -> float:
    """Wall time during which at least one of ``runs`` was running (parallel runs counted once)."""
    total = 0.0
    end = float("-inf")
    for r in sorted(runs, key=lambda r: r.started):
        start, stop = r.started, r.started + r.duration_s
        if start > end:
            total += stop - start
            end = stop
        elif stop > end:
            total += stop - end
            end = stop
    return total


class IbRunner:
    """Runs infiniband-diags tools with a timeout each, no shell, on a real host or under ibsim.

    ``ibsim_socket`` (an ``IBSIM_SOCKNAME``) adds the umad2sim preload; ``env``
    and ``cwd`` override the environment and working directory; ``tool_paths``
    maps a tool name to the executable to run (default: found on ``PATH``);
    ``tool_timeouts`` overrides ``timeout_s`` per tool (ibnetdiscover on a large
    fabric needs longer than ibroute on one switch); ``retries`` re-runs a tool
    that exited with an error status.
    """

    def __init__(
        self,
        *,
        timeout_s: float = 30.0,
        ibsim_socket: str | None = None,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        tool_paths: Mapping[str, str] | None = None,
        tool_timeouts: Mapping[str, float] | None = None,
        extra_args: Sequence[str] = (),
        retries: int = 1,
    ) -> None:
        self.timeout_s = timeout_s
        self.retries = retries
        self.tool_timeouts = dict(tool_timeouts or {})
        self.tool_paths = dict(tool_paths or {})
        self.extra_args = tuple(extra_args)
        base = dict(os.environ if env is None else env)
        if ibsim_socket:
            from fabricdoc.probes.ib.ibsim import sim_env

            base.update(sim_env(ibsim_socket))
        self.env = base
        self._own_cwd = None
        if cwd is None and "LD_PRELOAD" in base and "umad2sim" in base["LD_PRELOAD"]:
            self._own_cwd = tempfile.mkdtemp(prefix="fabricdoc-umad2sim-")
            cwd = self._own_cwd
        self.cwd = cwd
        self.ibsim_socket = base.get("IBSIM_SOCKNAME") if "umad2sim" in base.get("LD_PRELOAD", "") else None
        self.runs: list[ToolRun] = []

    def describe(self) -> str:
        """Where the tools look: ``ibsim:<socket>`` or ``ib`` (the host's HCAs)."""
        return f"ibsim:{self.ibsim_socket}" if self.ibsim_socket else "ib"

    @classmethod
    def for_sim(cls, sim: object, **kwargs: object) -> IbRunner:
        """A runner bound to a started :class:`fabricdoc.probes.ib.ibsim.IbSim`."""
        return cls(env=sim.env, cwd=str(sim.workdir), **kwargs)  # type: ignore[attr-defined,arg-type]

    def close(self) -> None:
        if self._own_cwd:
            shutil.rmtree(self._own_cwd, ignore_errors=True)
            self._own_cwd = None

    def executable(self, tool: str) -> str:
        path = self.tool_paths.get(tool) or shutil.which(tool, path=self.env.get("PATH"))
        if not path:
            raise ProbeError(tool, "not found on PATH (install infiniband-diags)", "unsupported")
        return path

    def run(self, tool: str, *args: str, ok_codes: Sequence[int] = (0,), timeout_s: float | None = None) -> ToolRun:
        """Run one tool; ProbeError when it is missing, times out (group killed) or fails.

        A run that exits with a failure status is tried ``retries`` more times: the
        tools only read, and a lost MAD on a busy fabric fails a whole scan.
        """
        for attempt in range(self.retries + 1):
            try:
                return self._run_once(tool, args, ok_codes, timeout_s)
            except ProbeError as exc:
                if exc.status != "error" or attempt == self.retries:
                    raise
        raise AssertionError("unreachable")

    def _run_once(
        self, tool: str, args: Sequence[str], ok_codes: Sequence[int], timeout_s: float | None
    ) -> ToolRun:
        argv = (self.executable(tool), *self.extra_args, *args)
        limit = timeout_s if timeout_s is not None else self.tool_timeouts.get(tool, self.timeout_s)
        done = px.run(argv, timeout_s=limit, env=self.env, cwd=self.cwd, tool=tool)
        if done.timed_out:
            raise ProbeError(tool, f"timed out after {limit:g}s (killed)", "timeout")
        run = ToolRun(tool, done.argv, done.stdout, done.stderr, done.returncode or 0, done.duration_s, done.started)
        self.runs.append(run)
        if done.returncode not in ok_codes:
            raise ProbeError(tool, f"exit status {done.returncode}: {_last_error(run.stderr or run.stdout)}")
        return run

    # -- one method per tool ------------------------------------------------
    def ibnetdiscover(self) -> ToolRun:
        return self.run("ibnetdiscover")

    def ibqueryerrors(self, *, counters: bool = False, threshold_file: str = "/dev/null") -> ToolRun:
        """Whole-fabric error counters (``counters=False``) or data counters (``--counters``).

        Thresholds come from ``threshold_file``, default none (all zero), so every
        non-zero error counter is listed. ibqueryerrors exits 1 when it found errors.
        """
        args = ["--threshold-file", threshold_file]
        if counters:
            args.append("--counters")
        return self.run("ibqueryerrors", *args, ok_codes=(0, 1))

    def iblinkinfo(self) -> ToolRun:
        return self.run("iblinkinfo")

    def ibroute(self, lid: int) -> ToolRun:
        return self.run("ibroute", str(lid))

    def ibtracert(self, src_lid: int, dst_lid: int) -> ToolRun:
        return self.run("ibtracert", str(src_lid), str(dst_lid))


def _last_error(text: str) -> str:
    return px.last_line(text, skip=("sim_connect: attached",))

