"""The kernel's per-namespace IP counters from ``/proc/net/netstat`` (ECN: IpExt InCEPkts...).

``InCEPkts`` counts IP packets received with ECN CE set: the receiver's view of
congestion marking anywhere on the path. The file holds pairs of lines, a
header of names and a line of values, per group (``TcpExt:``, ``IpExt:``, ...).
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fabricdoc.probes import exec as px

from fabricdoc.errors import ParseError, ProbeError
from fabricdoc.model.inputs import refuse_long_numbers

ECN_KEYS = ("InNoECTPkts", "InECT1Pkts", "InECT0Pkts", "InCEPkts")


def parse_netstat(text: str, source: str = "/proc/net/netstat") -> dict[str, dict[str, int]]:
    """``{group: {name: value}}`` from netstat text; a mismatched pair is a ParseError."""
    refuse_long_numbers(text, source)
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise ParseError(source, 0, "", "empty netstat output")
    if len(lines) % 2:
        raise ParseError(source, len(lines), lines[-1], "header line without a value line")
    out: dict[str, dict[str, int]] = {}
    for i in range(0, len(lines), 2):
        head, vals = lines[i].split(), lines[i + 1].split()
        if not head or not head[0].endswith(":") or head[0] != (vals[0] if vals else None):
            raise ParseError(source, i + 2, lines[i + 1], "value line does not match its header")
        if len(head) != len(vals):
            raise ParseError(source, i + 2, lines[i + 1],
                             f"{len(head) - 1} names but {len(vals) - 1} values")
        try:
            out[head[0][:-1]] = {k: int(v) for k, v in zip(head[1:], vals[1:], strict=True)}
        except ValueError as exc:
            raise ParseError(source, i + 2, lines[i + 1], "value is not an integer") from exc
    return out


def collect_netstat(netns: str | None = None, timeout_s: float = 5.0) -> str:
    """Raw ``/proc/net/netstat`` of ``netns`` (None: this process's namespace)."""
    if netns is None:
        try:
            return Path("/proc/net/netstat").read_text()
        except OSError as exc:
            raise ProbeError("netstat", f"cannot read /proc/net/netstat: {exc}") from exc
    ip = shutil.which("ip")
    if ip is None:
        raise ProbeError("netstat", "the ip command (iproute2) is not installed", "unsupported")
    done = px.run([ip, "netns", "exec", netns, "cat", "/proc/net/netstat"], timeout_s=timeout_s, tool="netstat")
    if done.timed_out:
        raise ProbeError("netstat", f"reading netstat in {netns!r} timed out", "timeout")
    if done.returncode != 0:
        raise ProbeError("netstat", f"netns {netns!r}: {px.last_line(done.stderr)}")
    return done.stdout


def ecn_counts(netstat: dict[str, dict[str, int]]) -> dict[str, int | None]:
    """The IpExt ECN receive counters (``None`` when the kernel lacks one)."""
    ipext = netstat.get("IpExt", {})
    return {k: ipext.get(k) for k in ECN_KEYS}
