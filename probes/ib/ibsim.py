"""A simulated InfiniBand subnet: ibsim for a net file plus a real OpenSM, started and stopped by pid.

ibsim (Debian ``ibsim-utils``) serves MADs on abstract unix sockets named after
``IBSIM_SOCKNAME``; every client (OpenSM, the diags) gets ``LD_PRELOAD=libumad2sim.so``
and the same ``IBSIM_SOCKNAME``, and makes a fake sysfs ``./sys-<pid>`` in its
working directory, so each instance here has its own socket name and temp dir.
ibsim's console reads a fifo we keep open for writing: it spins at 100% CPU once
its console reaches end of file, so we send ``Quit`` instead of closing, and the
kernel sends it SIGTERM if this process dies first (the exec seam's death signal).

Usage::

    with IbSim(netfile) as sim:            # ibsim + OpenSM, waits for SUBNET UP
        runner = IbRunner(env=sim.env, cwd=sim.workdir)
        sim.send('Unlink "leaf01"[5]')
        sim.wait_resweep()
"""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

from fabricdoc.probes import exec as px

from fabricdoc.errors import ProbeError

UMAD2SIM_PATHS = (
    "/usr/lib/x86_64-linux-gnu/umad2sim/libumad2sim.so",
    "/usr/lib/aarch64-linux-gnu/umad2sim/libumad2sim.so",
    "/usr/lib64/umad2sim/libumad2sim.so",
    "/usr/lib/umad2sim/libumad2sim.so",
    "/usr/local/lib/umad2sim/libumad2sim.so",
)
# ibsim's compiled-in caps; bigger net files need -N/-S/-P/-L.
_DEFAULT_CAPS = {"nodes": 2048, "switches": 256, "ports": 13312, "lids": 30720}
_MASTER = "Entering MASTER state"
_SUBNET_UP = "SUBNET UP"
# How ibsim's console reports a refused command (sim_cmd.c): "# nodeid ... not found" and kin.
_CONSOLE_ERROR = re.compile(
    r"^\s*#.*(not found|bad |can't|cannot|missing|must be|not linked|unknown)|Usage:|^unknown command", re.I
)


def find_umad2sim() -> str:
    """Path of libumad2sim.so (``$FABRICDOC_UMAD2SIM`` first); ProbeError when ibsim is not installed."""
    env = os.environ.get("FABRICDOC_UMAD2SIM")
    for path in ((env,) if env else ()) + UMAD2SIM_PATHS:
        if path and os.path.exists(path):
            return path
    raise ProbeError("ibsim", "libumad2sim.so not found (install ibsim-utils)", "unsupported")


def sim_env(sockname: str, umad2sim: str | None = None) -> dict[str, str]:
    """Environment additions that make libibumad tools talk to the ibsim named ``sockname``."""
    return {"LD_PRELOAD": umad2sim or find_umad2sim(), "IBSIM_SOCKNAME": sockname}


def netfile_size(text: str) -> dict[str, int]:
    """Nodes, switches and ports a net file declares (to size ibsim's tables)."""
    nodes = switches = ports = 0
    for line in text.splitlines():
        m = re.match(r"(Switch|Hca|Ca|Rt)\s+(\d+)", line)
        if m:
            nodes += 1
            n = int(m.group(2))
            if m.group(1) == "Switch":
                switches += 1
                n += 1
            ports += n
    return {"nodes": nodes, "switches": switches, "ports": ports}


class IbSim:
    """One ibsim instance for ``netfile`` with its own socket and temp dir, plus OpenSM.

    ``start()`` returns once OpenSM logged SUBNET UP (routes programmed), reading
    its log with a deadline. ``stop()`` sends ``Quit``, waits, and kills by pid only
    if needed. Use as a context manager.
    """

    def __init__(
        self,
        netfile: str | os.PathLike[str],
        *,
        opensm: bool = True,
        start_timeout_s: float = 60.0,
        opensm_args: tuple[str, ...] = (),
        workdir: str | None = None,
    ) -> None:
        self.netfile = Path(netfile).resolve()
        self.start_timeout_s = start_timeout_s
        self.want_opensm = opensm
        self.opensm_args = opensm_args
        self.sockname = f"fabricdoc-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self._own_dir = workdir is None
        self.workdir = Path(workdir or tempfile.mkdtemp(prefix="fabricdoc-ibsim-"))
        self.fifo = self.workdir / "console"
        self.ibsim_log = self.workdir / "ibsim.log"
        self.opensm_log = self.workdir / "opensm.log"
        self.ibsim: subprocess.Popen[bytes] | None = None
        self.opensm: subprocess.Popen[bytes] | None = None
        self._console_fd: int | None = None
        self.env: dict[str, str] = {}

    # -- lifecycle --------------------------------------------------------
    def __enter__(self) -> IbSim:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> IbSim:
        try:
            text = self.netfile.read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise ProbeError("ibsim", f"cannot read net file {self.netfile}: {exc.strerror}") from exc
        self.env = {**os.environ, **sim_env(self.sockname)}
        try:
            self._start_ibsim(text)
            if self.want_opensm:
                self._start_opensm()
        except BaseException:
            self.stop()
            raise
        return self

    def _caps_args(self, text: str) -> list[str]:
        size = netfile_size(text)
        args: list[str] = []
        if size["nodes"] > _DEFAULT_CAPS["nodes"]:
            args += ["-N", str(size["nodes"] + 16)]
        if size["switches"] > _DEFAULT_CAPS["switches"]:
            args += ["-S", str(size["switches"] + 16)]
        if size["ports"] > _DEFAULT_CAPS["ports"]:
            args += ["-P", str(size["ports"] + 64)]
        if size["ports"] + 64 > _DEFAULT_CAPS["lids"]:
            args += ["-L", str(size["ports"] + 1024)]
        return args

    def _start_ibsim(self, text: str) -> None:
        os.mkfifo(self.fifo, 0o600)
        # O_RDWR never blocks on a fifo and keeps a writer open, so ibsim never sees EOF.
        self._console_fd = os.open(self.fifo, os.O_RDWR)
        stdin = os.open(self.fifo, os.O_RDONLY)
        log = open(self.ibsim_log, "wb")  # noqa: SIM115 - handed to the child
        try:
            self.ibsim = px.spawn(
                ["ibsim", *self._caps_args(text), "-s", str(self.netfile)], stdin=stdin, stdout=log,
                stderr=subprocess.STDOUT, cwd=str(self.workdir), env={**os.environ, "IBSIM_SOCKNAME": self.sockname},
                tool="ibsim", death_signal=signal.SIGTERM,
            )  # fmt: skip
        except ProbeError as exc:
            if exc.status == "unsupported":
                raise ProbeError("ibsim", "not found on PATH (install ibsim-utils)", "unsupported") from None
            raise
        finally:
            os.close(stdin)
            log.close()
        self._wait_log(self.ibsim_log, "Network simulator ready", 1, self.start_timeout_s, "ibsim", self.ibsim)

    def _start_opensm(self) -> None:
        osm_dir = self.workdir / "opensm"
        osm_dir.mkdir(exist_ok=True)
        env = {**self.env, "OSM_TMP_DIR": str(osm_dir), "OSM_CACHE_DIR": str(osm_dir)}
        out = open(self.workdir / "opensm.out", "wb")  # noqa: SIM115 - handed to the child
        try:
            # -d 2 flushes the log after every message, so SUBNET UP is readable at once.
            self.opensm = px.spawn(
                ["opensm", "-f", str(self.opensm_log), "-d", "2", *self.opensm_args], stdout=out,
                stderr=subprocess.STDOUT, cwd=str(osm_dir), env=env, tool="opensm", death_signal=signal.SIGTERM,
            )  # fmt: skip
        except ProbeError as exc:
            if exc.status == "unsupported":
                raise ProbeError("opensm", "not found on PATH (install opensm)", "unsupported") from None
            raise
        finally:
            out.close()
        self._wait_log(self.opensm_log, _MASTER, 1, self.start_timeout_s, "opensm", self.opensm)
        self._wait_log(self.opensm_log, _SUBNET_UP, 1, self.start_timeout_s, "opensm", self.opensm)

    def stop(self) -> None:
        """Stop OpenSM, then Quit ibsim through its console; kill by pid only if they linger."""
        if self.opensm is not None:
            _terminate(self.opensm, 5.0)
            self.opensm = None
        if self.ibsim is not None:
            if self.ibsim.poll() is None and self._console_fd is not None:
                with contextlib.suppress(OSError):
                    os.write(self._console_fd, b"Quit\n")
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self.ibsim.wait(timeout=5.0)
            _terminate(self.ibsim, 5.0)
            self.ibsim = None
        if self._console_fd is not None:
            os.close(self._console_fd)
            self._console_fd = None
        if self._own_dir:
            _rmtree(self.workdir)

    # -- console ----------------------------------------------------------
    def send(self, command: str, timeout_s: float = 10.0) -> str:
        """Send one console command (``Unlink "leaf01"[5]``) and return what ibsim answered.

        Waits for ibsim's next ``sim>`` prompt. A reply such as ``# nodeid "x" not found`` is
        ibsim's way to refuse (``# nodeid "x" not found``): raised as ProbeError.
        """
        if self._console_fd is None or self.ibsim is None or self.ibsim.poll() is not None:
            raise ProbeError("ibsim", "not running")
        if "\n" in command:
            raise ValueError("one console command at a time")
        before = self.ibsim_log.read_bytes().count(b"sim>")
        os.write(self._console_fd, command.encode() + b"\n")
        text = self._wait_log(self.ibsim_log, "sim>", before + 1, timeout_s, "ibsim", self.ibsim)
        reply = text.split("sim>")[before] if text.count("sim>") > before else ""
        errors = [ln for ln in reply.splitlines() if _CONSOLE_ERROR.search(ln)]
        if errors:
            raise ProbeError("ibsim", f"{command!r}: {errors[0].strip()}")
        return reply

    def subnet_up_count(self) -> int:
        try:
            return self.opensm_log.read_text(errors="replace").count(_SUBNET_UP)
        except OSError:
            return 0

    def wait_resweep(self, since: int, timeout_s: float = 60.0) -> None:
        """Wait until OpenSM logged SUBNET UP more than ``since`` times (a sweep after a change)."""
        self._wait_log(self.opensm_log, _SUBNET_UP, since + 1, timeout_s, "opensm", self.opensm)

    # -- helpers ----------------------------------------------------------
    @staticmethod
    def _wait_log(
        path: Path,
        needle: str,
        count: int,
        timeout_s: float,
        who: str,
        proc: subprocess.Popen[bytes] | None,
    ) -> str:
        deadline = time.monotonic() + timeout_s
        delay = 0.01
        text = ""
        while True:
            try:
                text = path.read_text(errors="replace")
            except OSError:
                text = ""
            if text.count(needle) >= count:
                return text
            if proc is not None and proc.poll() is not None:
                tail = text.strip().splitlines()[-1:] or ["(no output)"]
                raise ProbeError(who, f"exited with status {proc.returncode} before {needle!r}: {tail[0]}")
            if time.monotonic() > deadline:
                raise ProbeError(who, f"no {needle!r} in {path} after {timeout_s:.0f}s", "timeout")
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def _terminate(proc: subprocess.Popen[bytes], grace_s: float) -> None:
    """SIGTERM, a grace period, then the group kill; the process is reaped either way."""
    if proc.poll() is None:
        try:
            proc.terminate()
            proc.wait(timeout=grace_s)
        except subprocess.TimeoutExpired:
            pass
        except ProcessLookupError:
            pass
    px.reap(proc)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=grace_s)


def _rmtree(path: Path) -> None:
    import shutil

    shutil.rmtree(path, ignore_errors=True)
