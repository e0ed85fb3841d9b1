"""NIC statistics (``ethtool -S``): PFC pause, pause storms, PHY errors and discards, by the driver's names.

mlx5 names kept as they are: ``rx_prio3_pause``, ``tx_prio3_pause``,
``rx_prio3_pause_duration`` (microseconds), ``tx_pause_storm_warning_events``,
``link_down_events_phy``, ``rx_discards_phy``, ``rx_symbol_err_phy``,
``rx_corrected_bits_phy``. The mapping to fabricdoc names lives in
``fabricdoc.model.counters``. In this process's namespace the stats come through
pyroute2's ioctl (ETHTOOL_GSTATS); elsewhere, or when that fails, from the
``ethtool`` command run inside the namespace.
"""

from __future__ import annotations

import re
import shutil
import time

from fabricdoc.probes import exec as px

from fabricdoc.errors import ParseError, ProbeError
from fabricdoc.model.records import PortCounters

# Per-ring / per-queue / per-channel software counters: many, and not port health.
_PER_QUEUE = re.compile(r"^(rx|tx|ch|xdp|xsk|ptp)\d+_|_queue_\d+_|^queue_\d+_|\[\d+\]")
_LINE = re.compile(r"^\s+(\S.*?):\s+(-?\d{1,20})\s*$")  # a 64-bit counter has at most 20 digits


def parse_ethtool_stats(text: str, source: str = "ethtool -S") -> dict[str, int]:
    """``{name: value}`` from ``ethtool -S`` output, in the driver's order.

    The first line must be ``NIC statistics:``; any other line that is not
    ``<spaces>name: integer`` raises ParseError with its line number.
    """
    lines = text.splitlines()
    if not lines or lines[0].strip() != "NIC statistics:":
        first = lines[0] if lines else ""
        raise ParseError(source, 1 if lines else 0, first, "expected 'NIC statistics:'")
    stats: dict[str, int] = {}
    for no, line in enumerate(lines[1:], start=2):
        if not line.strip():
            continue
        m = _LINE.match(line)
        if m is None:
            raise ParseError(source, no, line[:120], "not a 'name: value' statistic (a name and a 64-bit integer)")
        value = int(m.group(2))
        if value < 0 or value >= 1 << 64:
            raise ParseError(source, no, line[:120], "a statistic outside a 64-bit counter")
        stats[m.group(1)] = value
    return stats


def port_stats(stats: dict[str, int], keep_per_queue: bool = False) -> dict[str, int | None]:
    """Drop per-ring/per-queue software counters (``rx0_packets``, ``rx_queue_0_drops``...)."""
    if keep_per_queue:
        return dict(stats)
    return {k: v for k, v in stats.items() if not _PER_QUEUE.search(k)}


def _ioctl_stats(ifname: str) -> dict[str, int]:
    from pyroute2.ethtool.ioctl import IoctlEthtool, NoSuchDevice, NotSupportedError

    eth = IoctlEthtool(ifname)
    try:
        return {str(k): int(v) for k, v in eth.get_statistics()}
    except NoSuchDevice as exc:
        raise ProbeError("ethtool", f"{ifname}: no such device") from exc
    except NotSupportedError as exc:
        raise ProbeError("ethtool", f"{ifname}: driver has no statistics", "unsupported") from exc
    finally:
        eth.close()


def run_ethtool(ifname: str, netns: str | None = None, timeout_s: float = 5.0) -> str:
    """Raw ``ethtool -S IFNAME`` output (inside ``netns`` through ``ip netns exec``)."""
    ethtool = shutil.which("ethtool")
    if ethtool is None:
        raise ProbeError("ethtool", "the ethtool command is not installed", "unsupported")
    argv = [ethtool, "-S", ifname]
    if netns:
        ip = shutil.which("ip")
        if ip is None:
            raise ProbeError("ethtool", "the ip command (iproute2) is not installed", "unsupported")
        argv = [ip, "netns", "exec", netns, *argv]
    done = px.run(argv, timeout_s=timeout_s, tool="ethtool")
    if done.timed_out:
        raise ProbeError("ethtool", f"ethtool -S {ifname} timed out after {timeout_s:g}s", "timeout")
    if done.returncode != 0:
        err = px.last_line(done.stderr) if done.stderr.strip() else f"exit status {done.returncode}"
        status = "unsupported" if "no stats available" in err or "Operation not supported" in err else "error"
        raise ProbeError("ethtool", f"ethtool -S {ifname}: {err}", status)
    return done.stdout


def collect_ethtool(
    ifname: str, netns: str | None = None, timeout_s: float = 5.0, use_ioctl: bool = True
) -> tuple[dict[str, int], str]:
    """Statistics of one interface and how they were read (``ioctl`` or ``ethtool``)."""
    if use_ioctl and netns is None:
        try:
            return _ioctl_stats(ifname), "ioctl"
        except ProbeError as exc:
            if "no such device" in str(exc):
                raise
        except (ImportError, OSError):
            pass
    return parse_ethtool_stats(run_ethtool(ifname, netns, timeout_s), f"ethtool -S {ifname}"), "ethtool"


def ethtool_counters(
    stats: dict[str, int], node: str, port: int, ifname: str, timestamp: float | None = None,
    keep_per_queue: bool = False,
) -> PortCounters:
    """One PortCounters (source ``ethtool``) with the driver's names as keys."""
    return PortCounters(
        node=node, port=port, timestamp=time.time() if timestamp is None else timestamp,
        values=port_stats(stats, keep_per_queue), source="ethtool", ifname=ifname,
    )
