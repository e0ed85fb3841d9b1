"""Slurm's command-line tools: run scontrol/sinfo through the exec seam, and parse what they print.

Read: node states and reasons (``sinfo -N -o '%N|%T|%E'``, with and without
``-R``), active reservations (``scontrol show res -o``) and a job's nodes
(``scontrol show job -o``). Formats as Slurm 22.05 prints them
(tests/data/slurm/, tests/data/sinfo/).
"""

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


def parse_sinfo_nodes(text: str, source: str = "sinfo -N") -> dict[str, tuple[str, str]]:
    """Parse ``sinfo -N -h -o '%N|%T|%E'`` (every node): node -> (state, reason); ``none`` is no reason."""
    return {node: (state, "" if reason == "none" else reason)
            for node, (state, reason) in parse_sinfo_reasons(text, source).items()}


def parse_sinfo_comments(text: str, source: str = "sinfo -O Comment") -> dict[str, str]:
    """Parse ``sinfo -N -h -O 'NodeList:|,Comment:'``: node -> comment (``(null)`` is none)."""
    out: dict[str, str] = {}
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        node, sep, comment = line.partition("|")
        if not sep or not node.strip():
            raise ParseError(source, no, line, "expected NODE|COMMENT")
        comment = comment.strip()
        out[node.strip()] = "" if comment == "(null)" else comment
    return out


def _fields(line: str) -> dict[str, str]:
    """``Key=Value`` fields of one ``scontrol show -o`` line (values hold no spaces in these keys)."""
    out: dict[str, str] = {}
    for part in line.split():
        key, eq, value = part.partition("=")
        if eq and key not in out:
            out[key] = value
    return out


def parse_reservations(text: str, source: str = "scontrol show res") -> list[dict[str, str]]:
    """Active reservations from ``scontrol show res -o``: name, nodes (a hostlist), flags, users."""
    out = []
    for no, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("No reservations"):
            continue
        f = _fields(line)
        if "ReservationName" not in f or "Nodes" not in f:
            raise ParseError(source, no, line, "expected ReservationName=... Nodes=... (scontrol show res -o)")
        if f.get("State", "ACTIVE") == "ACTIVE":
            out.append({"name": f["ReservationName"], "nodes": f["Nodes"], "flags": f.get("Flags", ""),
                        "users": f.get("Users", "")})
    return out


def parse_job_nodelist(text: str, source: str = "scontrol show job") -> str:
    """The NodeList (a hostlist) of ``scontrol show job -o JOBID``; refused while the job has none."""
    for no, line in enumerate(text.splitlines(), 1):
        f = _fields(line)
        if "JobId" in f:
            nodes = f.get("NodeList", "")
            if not nodes or nodes == "(null)":
                raise ParseError(source, no, line[:120], "the job has no nodes yet (NodeList=(null))")
            return nodes
    raise ParseError(source, 1, text[:120], "expected 'JobId=... NodeList=...' (scontrol show job -o)")


class SlurmTools:
    """Runs Slurm commands with a timeout each, optionally against another ``slurm.conf``."""

    def __init__(self, *, sinfo: str = "sinfo", scontrol: str = "scontrol", timeout_s: float = 30.0,
                 slurm_conf: str | None = None) -> None:
        self.sinfo = sinfo
        self.scontrol = scontrol
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

    def _read(self, argv: Sequence[str]) -> str:
        """A read-only command's stdout; a timeout or a failure is a ProbeError naming the tool."""
        tool = os.path.basename(argv[0])
        done = self._exec(argv)
        if done.timed_out:
            raise ProbeError(tool, f"timed out after {self.timeout_s:g}s (is slurmctld up?)", "timeout")
        if done.returncode != 0:
            raise ProbeError(tool, " ".join(done.stderr.split()) or f"exit status {done.returncode}")
        return done.stdout

    def reasons(self) -> dict[str, tuple[str, str]]:
        """Nodes Slurm lists with a reason (drained, draining, down): node -> (state, reason)."""
        return parse_sinfo_reasons(self._read([self.sinfo, "-R", "-N", "-h", "-o", SINFO_FORMAT]))

    def nodes(self) -> dict[str, tuple[str, str]]:
        """Every node's state and reason ("" when none): node -> (state, reason)."""
        return parse_sinfo_nodes(self._read([self.sinfo, "-N", "-h", "-o", SINFO_FORMAT]))

    def comments(self) -> dict[str, str]:
        """Every node's comment ("" when none): what comment-only mode writes instead of draining."""
        return parse_sinfo_comments(self._read([self.sinfo, "-N", "-h", "-O", "NodeList:|,Comment:"]))

    def reservations(self) -> list[dict[str, str]]:
        """The active reservations: name, nodes (hostlist), flags, users."""
        return parse_reservations(self._read([self.scontrol, "show", "res", "-o"]))

    def job_nodelist(self, job_id: str) -> str:
        """The hostlist of a job's nodes (``scontrol show job -o``)."""
        if not job_id.isdigit() and not job_id.replace("_", "").isdigit():
            raise ProbeError("scontrol", f"refusing job id {job_id[:40]!r}: not a Slurm job id")
        return parse_job_nodelist(self._read([self.scontrol, "show", "job", "-o", job_id]))
