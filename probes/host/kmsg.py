"""Kernel messages about NICs and PCIe: link up/down, transceiver module events, thermal warnings,
firmware command timeouts, firmware health and PCIe AER errors, with real timestamps.

Input is what ``journalctl -k -o json`` (one JSON object a line, ``__REALTIME_TIMESTAMP`` in
microseconds), ``journalctl -k -o short-iso``, ``dmesg --time-format iso``, ``dmesg -T`` or plain
``dmesg`` print. Plain ``dmesg`` stamps are seconds since boot: they become epoch seconds only with
``boot_time`` (``/proc/stat`` btime when read live), else the event's timestamp is None.

Message formats are the drivers' own (mlx5 first, from drivers/net/ethernet/mellanox/mlx5/core:
``en_main.c`` "Link up"/"Link down", ``events.c`` "Port module event: module %u, %s" and
"Port module event[error]: module %u, %s, %s", "High temperature on sensors with bit set",
``cmd.c`` command timeouts, ``health.c``; Intel ice/i40e/igc/ixgbe and Broadcom bnxt_en
"NIC Link is Up|Down"; the PCI core's "PCIe Bus Error: severity=..."). EFA logs no link
messages we know of. A line in none of the accepted log formats is a ParseError naming
the line; a log line about anything else is skipped.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path

from fabricdoc.probes import exec as px

from fabricdoc.errors import ParseError, ProbeError
from fabricdoc.model.inputs import refuse_long_numbers
from fabricdoc.model.records import KernelEvent, LinkEvent

_PCI = r"[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]"
# Line prefixes: the time, an optional "host kernel:", an optional "[  123.456]" since boot.
_ISO = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?)\s+(.*)$")
_CTIME = re.compile(r"^\[(\w{3} \w{3} +\d{1,2} \d\d:\d\d:\d\d \d{4})\]\s?(.*)$")
_MONO = re.compile(r"^\[\s*(\d+\.\d+)\]\s?(.*)$")
_SYSLOG = re.compile(r"^[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d (\S+ kernel: .*)$")  # no year: time from the dmesg stamp
_HOST_KERNEL = re.compile(r"^\S+ kernel: (.*)$")
# "<function>:<line>:(pid N): " that mlx5_core_err/warn put before the text on older kernels.
_FUNC = r"(?:(?P<func>\w+):\d+:\(pid \d+\): )?"

_PATTERNS: list[tuple[str, re.Pattern[str]]] = [
    ("link", re.compile(rf"^(?P<drv>mlx5_core) (?P<pci>{_PCI}) (?P<ifname>\S+): Link (?P<state>up|down)\b")),
    ("link", re.compile(rf"^(?P<drv>ice|i40e|igc|igb|ixgbe|bnxt_en) (?P<pci>{_PCI}) (?P<ifname>\S+): "
                        r"NIC Link is (?P<state>Up|Down)\b")),
    ("module", re.compile(rf"^(?P<drv>mlx5_core) (?P<pci>{_PCI}): {_FUNC}Port module event\[error\]: "
                          r"module (?P<module>\d+), (?P<state>[^,]+), (?P<detail>.+)$")),
    ("module", re.compile(rf"^(?P<drv>mlx5_core) (?P<pci>{_PCI}): {_FUNC}Port module event: "
                          r"module (?P<module>\d+), (?P<state>.+)$")),
    ("thermal", re.compile(rf"^(?P<drv>mlx5_core) (?P<pci>{_PCI}): {_FUNC}"
                           r"(?P<detail>High temperature on sensors.*)$")),
    ("thermal", re.compile(rf"^(?P<drv>mlx5_core) (?P<pci>{_PCI}): {_FUNC}synd 0x10: (?P<detail>High temperature)$")),
    ("cmd_timeout", re.compile(rf"^(?P<drv>mlx5_core) (?P<pci>{_PCI}): {_FUNC}"
                               r"(?P<detail>.*(?:\) timeout\b|No done completion|failed to allocate command entry"
                               r"|timeout on command).*)$")),
    ("health", re.compile(rf"^(?P<drv>mlx5_core) (?P<pci>{_PCI}): {_FUNC}"
                          r"(?P<detail>device's health compromised.*|Fatal error \d+ detected"
                          r"|health recovery flow aborted.*)$")),
    ("aer", re.compile(rf"^(?P<drv>\S+) (?P<pci>{_PCI}): (?:AER: )?PCIe Bus Error: "
                       r"severity=(?P<state>[^,]+), (?P<detail>.*)$")),
]
_AER_STATES = {"corrected": "corrected", "correctable": "corrected", "uncorrected (non-fatal)": "uncorrected",
               "uncorrectable (non-fatal)": "uncorrected", "uncorrected (fatal)": "fatal",
               "uncorrectable (fatal)": "fatal"}
FORMATS = "journalctl -o json or short-iso, dmesg --time-format iso, dmesg -T or dmesg"


def _split(line: str, source: str, line_no: int, boot_time: float | None) -> tuple[float | None, str]:
    """A text log line's epoch time (None when unknown) and its kernel message."""
    m = _ISO.match(line)
    if m is not None:
        try:
            t = datetime.fromisoformat(m.group(1).replace(",", "."))
        except ValueError:
            raise ParseError(source, line_no, line, "bad ISO time") from None
        ts: float | None = (t if t.tzinfo else t.replace(tzinfo=UTC)).timestamp()
        rest = m.group(2)
    elif (m := _CTIME.match(line)) is not None:
        # dmesg -T prints the local time of the host that logged it: read it in this host's zone.
        ts = datetime.strptime(m.group(1).replace("  ", " "), "%a %b %d %H:%M:%S %Y").timestamp()
        rest = m.group(2)
    elif (m := _SYSLOG.match(line)) is not None:
        ts, rest = None, m.group(1)
        inner = _MONO.match(_HOST_KERNEL.match(rest).group(1))  # type: ignore[union-attr]
        if inner is not None and boot_time is not None:
            ts = boot_time + float(inner.group(1))
    elif (m := _MONO.match(line)) is not None:
        ts = None if boot_time is None else boot_time + float(m.group(1))
        rest = m.group(2)
    else:
        raise ParseError(source, line_no, line, f"not a kernel log line ({FORMATS})")
    hk = _HOST_KERNEL.match(rest)
    if hk is not None:
        rest = hk.group(1)
    mono = _MONO.match(rest)
    if mono is not None:  # "host kernel: [  12.345] ..." inside a timed line
        rest = mono.group(2)
    return ts, rest


def match_message(message: str) -> tuple[str, dict[str, str]] | None:
    """``(kind, fields)`` for a kernel message this probe understands, else None."""
    for kind, pattern in _PATTERNS:
        m = pattern.match(message)
        if m is not None:
            return kind, {k: v for k, v in m.groupdict().items() if v is not None}
    return None


def _event(node: str, ts: float | None, message: str, source: str) -> KernelEvent | None:
    hit = match_message(message)
    if hit is None:
        return None
    kind, f = hit
    state = f.get("state")
    if kind == "link":
        state = state.lower() if state else None
    elif kind == "module":
        low = (state or "").lower()
        detail = f.get("detail", "")
        if "temperature" in detail.lower():
            kind, state = "thermal", "module"
        else:
            state = {"cable plugged": "plugged", "cable unplugged": "unplugged"}.get(low, "error" if detail else low)
    elif kind == "aer":
        state = _AER_STATES.get((state or "").lower(), (state or "").lower())
    return KernelEvent(node=node, timestamp=ts, kind=kind, driver=f["drv"], message=message,
                       device=f.get("pci", "").lower() or None, ifname=f.get("ifname"), state=state, source=source)


def parse_kmsg(text: str, node: str, source: str = "kmsg", boot_time: float | None = None) -> list[KernelEvent]:
    """Kernel events from a journal (JSON lines or short-iso) or dmesg text; see the module docstring."""
    refuse_long_numbers(text, source)
    out: list[KernelEvent] = []
    for line_no, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip("\r")
        if not line.strip() or line.startswith("-- "):  # journalctl's "-- Boot ..." / "-- No entries --"
            continue
        if line.startswith("{"):
            ts, message = _json_line(line, source, line_no)
        else:
            ts, message = _split(line, source, line_no, boot_time)
        ev = _event(node, ts, message.strip(), source)
        if ev is not None:
            out.append(ev)
    return out


def _json_line(line: str, source: str, line_no: int) -> tuple[float | None, str]:
    try:
        entry = json.loads(line)
    except ValueError:
        raise ParseError(source, line_no, line, "invalid JSON in a journal line") from None
    if not isinstance(entry, dict):
        raise ParseError(source, line_no, line, "a journal JSON line is an object")
    message = entry.get("MESSAGE")
    if isinstance(message, list):  # journalctl writes non-UTF-8 messages as byte arrays
        try:
            message = bytes(message).decode("utf-8", errors="replace")
        except (TypeError, ValueError):
            raise ParseError(source, line_no, line, "MESSAGE is not text or bytes") from None
    if not isinstance(message, str):
        raise ParseError(source, line_no, line, "journal entry has no MESSAGE")
    stamp = entry.get("__REALTIME_TIMESTAMP")
    try:
        ts = int(stamp) / 1e6 if stamp is not None else None
    except (TypeError, ValueError):
        raise ParseError(source, line_no, line, "__REALTIME_TIMESTAMP is not microseconds") from None
    return ts, message


def map_ports(events: list[KernelEvent], ports: dict[str, int], pci_ifnames: dict[str, list[str]]) -> list[KernelEvent]:
    """Events with ``port`` (and ``ifname`` when the PCI function has one netdev) set from the host's
    interface -> port map, the way the netlink probe numbers ports."""
    out = []
    for ev in events:
        ifname = ev.ifname
        if ifname is None and ev.device:
            names = pci_ifnames.get(ev.device, [])
            ifname = names[0] if len(names) == 1 else None
        port = ports.get(ifname) if ifname else None
        out.append(replace(ev, ifname=ifname, port=port))
    return out


def link_events(events: list[KernelEvent]) -> list[LinkEvent]:
    """The link up/down events that have a time and a port, as LinkEvents for the flap analysis."""
    return [LinkEvent(node=e.node, port=e.port, timestamp=e.timestamp, state=e.state,  # type: ignore[arg-type]
                      source="kmsg", ifname=e.ifname)
            for e in events if e.kind == "link" and e.port is not None and e.timestamp is not None
            and e.state in ("up", "down")]


def boot_time(root: str | Path = "/") -> float | None:
    """``btime`` from ``root``/proc/stat (epoch seconds of boot), None when unreadable."""
    try:
        for line in (Path(root) / "proc/stat").read_text().splitlines():
            if line.startswith("btime "):
                return float(line.split()[1])
    except (OSError, ValueError, IndexError):
        return None
    return None


def collect_kmsg(since_s: float = 86400.0, timeout_s: float = 10.0) -> tuple[str, str]:
    """This host's kernel messages of the last ``since_s`` seconds: ``(text, how)``.

    ``journalctl -k -o json`` first, then ``dmesg --time-format iso``; ProbeError (unsupported)
    when neither can run.
    """
    journalctl = shutil.which("journalctl")
    if journalctl is not None:
        since = f"@{int(time.time() - since_s)}"
        done = px.run([journalctl, "-k", "-o", "json", "--no-pager", "--since", since], timeout_s=timeout_s,
                      tool="journalctl")
        if done.returncode == 0 and done.stdout.strip():
            return done.stdout, "journalctl"
    dmesg = shutil.which("dmesg")
    if dmesg is None:
        raise ProbeError("kmsg", "neither journalctl nor dmesg could read the kernel log", "unsupported")
    done = px.run([dmesg, "--time-format", "iso"], timeout_s=timeout_s, tool="dmesg")
    if done.timed_out:
        raise ProbeError("kmsg", f"dmesg timed out after {timeout_s:g}s", "timeout")
    if done.returncode != 0:
        err = px.last_line(done.stderr) if done.stderr.strip() else f"exit status {done.returncode}"
        status = "unsupported" if "Operation not permitted" in err else "error"
        raise ProbeError("kmsg", f"dmesg: {err}", status)
    return done.stdout, "dmesg"
