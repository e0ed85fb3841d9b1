"""Slurm's command-line tools: run scontrol/sinfo through the exec seam, and parse ``sinfo -R``."""

from __future__ import annotations

import os
from collections.abc import Sequence

from fabricdoc.probes import exec as px

from fabricdoc.errors import ParseError, ProbeError

SINFO_FORMAT = "%N|%T|%E"


def parse_sinfo_reasons(text: str, source: str = "sinfo -R") -> dict[str, tuple[str, str]]:
    """Parse ``sinfo -R -N -h -o '%N|%T|%E'``: node -> (state, reason). The reason may itself hold '|'."""
    out: dict[str, tuple[str, str]] = {}
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        parts = line.split("|", 2)
        if len(parts) != 3 or not parts[0]:
            raise ParseError(source, no, line, f"expected NODE|STATE|REASON ({SINFO_FORMAT})")
        out[parts[0].strip()] = (parts[1].strip(), parts[2].strip())
    return out


class SlurmTools:
    """Runs Slurm commands with a timeout each, optionally against another ``slurm.conf``."""

    def __init__(self, *, sinfo: str = "sinfo", timeout_s: float = 30.0, slurm_conf: str | None = None) -> None:
        self.sinfo = sinfo
        self.timeout_s = timeout_s
        self.env = {**os.environ, "SLURM_CONF": slurm_conf} if slurm_conf else None

    def _exec(self, argv: Sequence[str]) -> px.Completed:
        try:
            return px.run(argv, timeout_s=self.timeout_s, env=self.env, tool=os.path.basename(argv[0]))
        except ProbeError as exc:
            if exc.status == "unsupported":
                raise ProbeError(argv[0], "not found: is Slurm installed and on PATH (or pass --scontrol/--sinfo)?",
                                 "unsupported") from None
            raise

    def run(self, argv: Sequence[str]) -> tuple[int | None, str]:
        """Exit status (None on a timeout) and the command's output on one line."""
        done = self._exec(argv)
        if done.timed_out:
            return None, f"timed out after {self.timeout_s:g}s"
        return done.returncode, " ".join((done.stdout + " " + done.stderr).split())

    def reasons(self) -> dict[str, tuple[str, str]]:
        """Nodes Slurm lists with a reason (drained, draining, down): node -> (state, reason)."""
        done = self._exec([self.sinfo, "-R", "-N", "-h", "-o", SINFO_FORMAT])
        if done.timed_out:
            raise ProbeError("sinfo", f"timed out after {self.timeout_s:g}s (is slurmctld up?)", "timeout")
        if done.returncode != 0:
            raise ProbeError("sinfo", " ".join(done.stderr.split()) or f"exit status {done.returncode}")
        return parse_sinfo_reasons(done.stdout)
