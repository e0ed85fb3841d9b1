"""Interface stats, operstate and carrier flaps from rtnetlink (pyroute2), in any network namespace.

``collect_links`` and ``LinkWatcher`` talk to the kernel and return plain dicts
("facts"); ``parse_links`` and ``parse_link_events`` turn facts into
PortCounters, PortState and LinkEvent records. pyroute2 messages never leave
this module. The kernel's linkwatch coalesces fast carrier changes, so a watcher
can miss a down/up pair; ``IFLA_CARRIER_CHANGES`` still counts them, and
``parse_link_events`` adds the missed pairs (source ``netlink-inferred``).
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Iterable
from typing import Any

from fabricdoc.errors import ProbeError
from fabricdoc.model.records import LinkEvent, PortCounters, PortState

IFF_UP = 0x1
IFF_RUNNING = 0x40
IFF_LOOPBACK = 0x8

# rtnl_link_stats64 members we keep, under the kernel's own names.
STATS64_KEYS = (
    "rx_packets", "tx_packets", "rx_bytes", "tx_bytes", "rx_errors", "tx_errors",
    "rx_dropped", "tx_dropped", "multicast", "collisions", "rx_length_errors",
    "rx_over_errors", "rx_crc_errors", "rx_frame_errors", "rx_fifo_errors",
    "rx_missed_errors", "tx_aborted_errors", "tx_carrier_errors", "tx_fifo_errors",
    "tx_heartbeat_errors", "tx_window_errors",
)
CARRIER_KEYS = ("carrier_changes", "carrier_up_count", "carrier_down_count")

PortMap = dict[str, int] | Callable[[dict[str, Any]], int] | None


def _open(netns: str | None):
    from pyroute2 import IPRoute, NetNS

    try:
        return NetNS(netns, flags=0) if netns else IPRoute()
    except FileNotFoundError as exc:
        raise ProbeError("netlink", f"network namespace {netns!r} does not exist") from exc
    except OSError as exc:
        raise ProbeError("netlink", f"cannot open rtnetlink in {netns or 'this namespace'}: {exc}") from exc


def link_facts(msg: Any) -> dict[str, Any]:
    """The facts of one RTM_NEWLINK message as a plain dict (the pyroute2 boundary)."""
    stats = msg.get("stats64") or msg.get("stats")
    kind = None
    linkinfo = msg.get("linkinfo")
    if linkinfo is not None:
        kind = linkinfo.get("kind")
    return {
        "event": msg.get("event"),
        "index": msg.get("index"),
        "ifname": msg.get("ifname"),
        "operstate": msg.get("operstate"),
        "flags": msg.get("flags"),
        "carrier": msg.get("carrier"),
        "carrier_changes": msg.get("carrier_changes"),
        "carrier_up_count": msg.get("carrier_up_count"),
        "carrier_down_count": msg.get("carrier_down_count"),
        "mtu": msg.get("mtu"),
        "kind": kind,
        "stats64": {k: stats.get(k) for k in STATS64_KEYS} if stats is not None else None,
    }


def collect_links(netns: str | None = None) -> list[dict[str, Any]]:
    """Facts for every interface in ``netns`` (None: this process's namespace)."""
    ipr = _open(netns)
    try:
        return [link_facts(m) for m in ipr.get_links()]
    except OSError as exc:
        raise ProbeError("netlink", f"dumping links in {netns or 'this namespace'}: {exc}") from exc
    finally:
        ipr.close()


def link_is_up(facts: dict[str, Any]) -> bool:
    """Up means the kernel says so: operstate UP, or UNKNOWN with IFF_UP and IFF_RUNNING."""
    state = (facts.get("operstate") or "").upper()
    if state == "UP":
        return True
    flags = facts.get("flags") or 0
    return state == "UNKNOWN" and bool(flags & IFF_UP) and bool(flags & IFF_RUNNING)


def _port(facts: dict[str, Any], port_of: PortMap) -> int | None:
    if port_of is None:
        return facts.get("index")
    if callable(port_of):
        return port_of(facts)
    return port_of.get(facts.get("ifname") or "")


def parse_links(
    facts: Iterable[dict[str, Any]],
    node: str,
    port_of: PortMap = None,
    timestamp: float | None = None,
    include_loopback: bool = False,
) -> tuple[list[PortCounters], list[PortState]]:
    """Counters (stats64 + carrier counts, kernel names) and state of each interface.

    ``port_of`` maps an ifname to the fabric's port number (or is a function of the
    facts); interfaces it does not name are skipped. Without it the ifindex is the port.
    """
    ts = time.time() if timestamp is None else timestamp
    counters: list[PortCounters] = []
    states: list[PortState] = []
    for f in facts:
        if not include_loopback and (f.get("flags") or 0) & IFF_LOOPBACK:
            continue
        port = _port(f, port_of)
        if port is None:
            continue
        values: dict[str, int | None] = dict(f.get("stats64") or dict.fromkeys(STATS64_KEYS))
        for key in CARRIER_KEYS:
            values[key] = f.get(key)
        counters.append(PortCounters(node=node, port=port, timestamp=ts, values=values,
                                     source="netlink", ifname=f.get("ifname")))
        states.append(PortState(node=node, port=port, state="up" if link_is_up(f) else "down",
                                phys_state=f.get("operstate"), source="netlink",
                                ifname=f.get("ifname")))
    return counters, states


class LinkWatcher:
    """Records RTM_NEWLINK/RTM_DELLINK messages of one namespace for a while, in a thread.

    ``start()`` returns once the subscription is live, so a caller can then cause
    events; ``stop()`` (or the duration running out) ends it and returns the facts,
    each with ``time`` (epoch seconds when received).
    """

    def __init__(self, netns: str | None = None, duration_s: float = 60.0) -> None:
        self.netns = netns
        self.duration_s = duration_s
        self.facts: list[dict[str, Any]] = []
        self.error: BaseException | None = None
        self._ready = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="fabricdoc-linkwatch", daemon=True)

    def start(self, timeout_s: float = 10.0) -> LinkWatcher:
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise ProbeError("netlink", "link watcher did not subscribe in time", "timeout")
        if self.error is not None:
            raise _as_probe_error(self.error, self.netns)
        return self

    def stop(self, timeout_s: float = 10.0) -> list[dict[str, Any]]:
        self._stop.set()
        self._thread.join(timeout_s)
        if self.error is not None:
            raise _as_probe_error(self.error, self.netns)
        return list(self.facts)

    def wait(self) -> list[dict[str, Any]]:
        """Block until the duration has run out; return the facts."""
        self._thread.join()
        return self.stop()

    def _run(self) -> None:
        try:
            asyncio.run(self._watch())
        except BaseException as exc:  # reported to the caller by start()/stop()
            self.error = exc
        finally:
            self._ready.set()

    async def _watch(self) -> None:
        from pyroute2 import AsyncIPRoute
        from pyroute2.netlink.rtnl import RTMGRP_LINK

        kwargs = {"netns": self.netns, "flags": 0} if self.netns else {}
        async with AsyncIPRoute(**kwargs) as ipr:
            await ipr.bind(groups=RTMGRP_LINK)
            async for msg in await ipr.get_links():
                self.facts.append({**link_facts(msg), "time": time.time(), "initial": True})
            self._ready.set()
            deadline = time.monotonic() + self.duration_s
            while not self._stop.is_set() and time.monotonic() < deadline:
                left = min(0.2, deadline - time.monotonic())
                try:
                    async with asyncio.timeout(max(left, 0.01)):
                        async for msg in ipr.get():
                            if msg.get("event") in ("RTM_NEWLINK", "RTM_DELLINK"):
                                self.facts.append({**link_facts(msg), "time": time.time()})
                except TimeoutError:
                    continue


def _as_probe_error(exc: BaseException, netns: str | None) -> ProbeError:
    if isinstance(exc, ProbeError):
        return exc
    if isinstance(exc, FileNotFoundError):
        return ProbeError("netlink", f"network namespace {netns!r} does not exist")
    return ProbeError("netlink", f"link watcher failed: {type(exc).__name__}: {exc}")


def parse_link_events(
    facts: Iterable[dict[str, Any]], node: str, port_of: PortMap = None
) -> list[LinkEvent]:
    """Up/down transitions per interface from watcher facts.

    The first message of an interface (the initial dump) sets its state without
    an event. A message repeating the state while ``carrier_changes`` grew by 2k
    means k down/up pairs were coalesced by the kernel: they are added at that
    message's time with source ``netlink-inferred``. RTM_DELLINK is a down.
    """
    last: dict[int, tuple[bool, int | None, float]] = {}
    events: list[LinkEvent] = []
    for f in sorted(facts, key=lambda x: x.get("time", 0.0)):
        if (f.get("flags") or 0) & IFF_LOOPBACK:
            continue
        port = _port(f, port_of)
        index = f.get("index")
        if port is None or index is None:
            continue
        up = link_is_up(f) and f.get("event") != "RTM_DELLINK"
        changes = f.get("carrier_changes")
        ts = float(f.get("time", 0.0))
        ifname = f.get("ifname")
        prev = last.get(index)
        last[index] = (up, changes if changes is not None else (prev[1] if prev else None), ts)
        if prev is None:
            continue
        prev_up, prev_changes, prev_ts = prev
        seen = 0 if up == prev_up else 1
        missed = 0
        if changes is not None and prev_changes is not None and changes > prev_changes:
            missed = max(0, changes - prev_changes - seen) // 2
        if missed:
            # The coalesced pairs happened between the two messages: spread them evenly there.
            # Before an up (or a repeated down) the missed pairs are up-then-down, else down-then-up.
            pair = ("up", "down") if not prev_up else ("down", "up")
            step = (ts - prev_ts) / (2 * missed + 1)
            for j in range(2 * missed):
                events.append(LinkEvent(node, port, prev_ts + (j + 1) * step, pair[j % 2],
                                        "netlink-inferred", ifname))
        if up != prev_up:
            events.append(LinkEvent(node, port, ts, "up" if up else "down", "netlink", ifname))
    return events
